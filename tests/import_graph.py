"""Our import graph, as grimp builds it: its import circles, and for each import-linter contract
in pyproject.toml whether it is kept and whether an import crossing it breaks it.

Run as a script it prints the contract results as JSON: import-linter's contract classes
cannot be built once twisted (loaded by Django Channels in the test process) has added
``__provides__`` to every class's dir(), so the tests check contracts in a fresh interpreter.
"""

import json
import tomllib
from copy import deepcopy
from pathlib import Path

import grimp

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"
CONFIG = tomllib.loads(PYPROJECT.read_text())["tool"]["importlinter"]
PACKAGES = tuple(CONFIG["root_packages"])
CONTRACTS = CONFIG["contracts"]
CONTRACT_TYPES = ("forbidden", "layers")


def build_graph() -> grimp.ImportGraph:
    return grimp.build_graph(
        *PACKAGES, include_external_packages=CONFIG["include_external_packages"], cache_dir=None
    )


def import_cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Every set of our modules that import each other round (Tarjan's strongly connected
    components, iterative: the graph is deep enough to reach Python's recursion limit)."""
    ours = {m for m in graph.modules if m.split(".")[0] in PACKAGES}
    edges = {m: sorted(graph.find_modules_directly_imported_by(m) & ours) for m in ours}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles = []
    for root in sorted(ours):
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            module, i = work.pop()
            if i == 0:
                index[module] = low[module] = len(index)
                stack.append(module)
                on_stack.add(module)
            if i < len(edges[module]):
                work.append((module, i + 1))
                nxt = edges[module][i]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[module] = min(low[module], index[nxt])
                continue
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[module])
            if low[module] == index[module]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == module:
                        break
                if len(component) > 1:
                    cycles.append(sorted(component))
    return sorted(cycles)


def _contract(options: dict):
    from importlinter import configuration
    from importlinter.contracts.forbidden import ForbiddenContract
    from importlinter.contracts.layers import LayersContract

    configuration.configure()  # what lint-imports sets up first (the checks time themselves)
    # As import-linter's TOML reader passes them: booleans as "true" and "false".
    options = {k: str(v).lower() if isinstance(v, bool) else v for k, v in options.items()}
    session = {"root_packages": list(PACKAGES)}
    session["include_external_packages"] = str(CONFIG["include_external_packages"]).lower()
    contract_type = {"forbidden": ForbiddenContract, "layers": LayersContract}[options["type"]]
    return contract_type(name=options["name"], session_options=session, contract_options=options)


def _layer_modules(layer: str) -> list[str]:
    parts = layer.replace("|", ":").split(":")
    return [part.strip().strip("()") for part in parts]


def _crossings(options: dict) -> list[tuple[str, str]]:
    """Imports that each break the contract: a source importing a forbidden module; for layers,
    each layer importing the one above it."""
    if options["type"] == "forbidden":
        return [(options["source_modules"][0], options["forbidden_modules"][0])]
    layers = [_layer_modules(layer) for layer in options["layers"]]
    return [(lower[0], higher[0]) for higher, lower in zip(layers, layers[1:], strict=False)]


def contract_results(graph: grimp.ImportGraph) -> dict[str, dict]:
    """Per contract: kept on our graph as it is, and the crossing imports that did not break it."""
    results = {}
    for options in CONTRACTS:
        contract = _contract(options)
        unbroken = []
        for importer, imported in _crossings(options):
            crossed = deepcopy(graph)
            crossed.add_import(importer=importer, imported=imported)
            if contract.check(crossed, verbose=False).kept:
                unbroken.append(f"{importer} -> {imported}")
        kept = contract.check(deepcopy(graph), verbose=False).kept
        results[options["name"]] = {"kept": kept, "unbroken": unbroken}
    return results


if __name__ == "__main__":
    print(json.dumps(contract_results(build_graph())))
