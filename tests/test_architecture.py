"""The import graph of our four packages: no module imports one that imports it back (even
through others, even inside a function), and every import-linter contract in pyproject.toml
breaks when an import crosses it, so a contract that checks nothing cannot hide."""

import json
import subprocess
import sys
from copy import deepcopy

import grimp
import pytest

from tests.import_graph import CONTRACT_TYPES, CONTRACTS, PYPROJECT, build_graph, import_cycles


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return build_graph()


@pytest.fixture(scope="module")
def contract_results() -> dict[str, dict]:
    # A fresh interpreter: see tests/import_graph.py for why not this one.
    run = subprocess.run(
        [sys.executable, "-m", "tests.import_graph"],
        cwd=PYPROJECT.parent,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(run.stdout)


def test_the_cycle_finder_finds_a_circle_through_three_modules(graph):
    circled = deepcopy(graph)
    circled.add_import(importer="worlds.ratelimit", imported="sessions.client_ip")
    circled.add_import(importer="sessions.client_ip", imported="gallery.lookalike")
    circled.add_import(importer="gallery.lookalike", imported="worlds.ratelimit")
    circles = import_cycles(circled)
    assert ["gallery.lookalike", "sessions.client_ip", "worlds.ratelimit"] in circles


def test_no_module_imports_one_that_imports_it_back(graph):
    circles = import_cycles(graph)
    assert circles == [], "import circles:\n" + "\n".join(" <-> ".join(c) for c in circles)


def test_every_contract_is_of_a_type_checked_here_and_one_is_layers():
    assert {c["type"] for c in CONTRACTS} <= set(CONTRACT_TYPES)
    assert any(c["type"] == "layers" for c in CONTRACTS)
    assert not any(c.get("allow_indirect_imports") for c in CONTRACTS if c["type"] == "layers")


@pytest.mark.parametrize("name", [c["name"] for c in CONTRACTS])
def test_each_contract_is_kept_and_breaks_when_an_import_crosses_it(contract_results, name):
    result = contract_results[name]
    assert result["kept"]
    assert result["unbroken"] == [], "these imports crossed it unnoticed"


def test_every_web_module_sits_in_a_layer(graph):
    # Layers take no wildcards, so worlds/ and its moderation are listed module by module: a new
    # module left off its line would go unchecked.
    (layers,) = [c["layers"] for c in CONTRACTS if c["type"] == "layers"]
    listed = {name.strip() for layer in layers for name in layer.split(":")}
    top = {m for m in graph.modules if m.count(".") == 1 and m.startswith("worlds.")}
    top |= {m for m in graph.modules if m.count(".") == 2 and m.startswith("worlds.moderation.")}
    top -= {"worlds.moderation"}
    assert top - listed == set(), "add these to their layer in pyproject.toml"
    assert {"gallery", "sessions", "inference"} <= listed
