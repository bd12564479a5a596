"""Reading an event text as the start of a process ("a fire starts in the forest": fire)."""

import numpy as np
import pytest

from inference.training import process_head
from inference.training.simulator import phrasing
from inference.world import processes, spec
from inference.world.prompts import UnsupportedEvent

FIRE = spec.PROCESSES.index("fire")


def _held_out(label: str, group: str | None = None) -> list[str]:
    return [
        r.text
        for r in process_head.load_rows()
        if r.split == "held_out" and r.label == label and group in (None, r.group)
    ]


def _process(engine, text: str) -> int:
    try:
        return engine.read_event(text)["process"]
    except UnsupportedEvent:  # nothing read at all: no fire either
        return -1


def test_held_out_fire_phrasings_mostly_start_a_fire(engine):
    texts = _held_out("fire")
    read = [_process(engine, t) == FIRE for t in texts]
    assert np.mean(read) >= 0.9, [t for t, r in zip(texts, read, strict=True) if not r]


def test_a_campfire_fireflies_and_a_sunset_start_no_fire(engine):
    for text in phrasing.THING_EVENTS["campfire"]:
        choice = engine.read_event(text)
        assert choice["process"] == -1, text
        assert choice["thing"] == spec.THINGS.index("campfire"), text
    for text in phrasing.WEATHER_EVENTS["fireflies"]:
        choice = engine.read_event(text)
        assert choice["process"] == -1, text
        assert choice["weather"] == spec.WEATHERS.index("fireflies"), text
    for text in (*phrasing.TIME_EVENTS["dusk"], *_held_out("none", "sky")):
        assert processes.read(text) == -1, text


def test_a_text_that_only_starts_a_fire_is_no_unsupported_event_and_places_nothing(engine):
    for text in ("a wildfire breaks out", "a fire starts in the forest", "the trees catch fire"):
        choice = engine.read_event(text)  # no UnsupportedEvent
        assert choice["process"] == FIRE, text
        # the event head alone read each as a campfire or trees: what burns is no new thing
        assert choice["thing"] == -1, text
        assert choice["objects"] == [], text


def test_a_fire_comes_beside_another_event(engine):
    choice = engine.read_event("it starts to rain and the forest catches fire")
    assert choice["process"] == FIRE
    assert choice["weather"] == spec.WEATHERS.index("rain")
    assert engine.read_event("it starts to rain")["process"] == -1


def test_suggestions_can_offer_a_fire(engine):
    assert spec.EVENT_PHRASES["process"] == {"fire": "a fire starts"}
    assert "a fire starts" in engine.nearest_events("the whole valley is burning")
    assert "a fire starts" not in engine.nearest_events("a horse gallops by")


def test_the_shipped_head_reads_the_spec_processes():
    head = processes.head()
    assert processes.CLASSES == ("none", *spec.PROCESSES)
    assert head.layers[-1][0].shape[1] == len(processes.CLASSES)
    assert 0.0 < head.threshold < 1.0


def test_fitting_is_seeded_and_a_head_survives_saving(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 384)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64)
    config = process_head.HeadConfig(steps=20)
    a, b = process_head.fit(x, y, config), process_head.fit(x, y, config)
    assert all(np.array_equal(wa, wb) for (wa, _), (wb, _) in zip(a.layers, b.layers, strict=True))
    path = tmp_path / "head.npz"
    a.save(path)
    loaded = processes.ProcessHead.load(path)
    assert np.allclose(loaded.probabilities(x), a.probabilities(x))
    assert loaded.threshold == pytest.approx(a.threshold)
