"""The one open-vocabulary reader: the vocabulary as data, spans, the calibrated "none"."""

import json

import pytest
from safetensors import safe_open

from inference.world import concepts as vocab
from inference.world.reading import FUNCTION_WORDS, _spans
from inference.world.sprites import WEIGHTS


def test_the_vocabulary_is_data_with_a_tenth_never_trained():
    concepts = vocab.load()
    assert len(concepts) >= 700
    assert len({c.name for c in concepts}) == len(concepts)
    unseen = sum(c.split == "unseen" for c in concepts) / len(concepts)
    assert 0.07 < unseen < 0.13
    groups = {c.group for c in concepts}
    for kind in ("animal-mammal", "plant-flower", "place-building", "transport-water"):
        assert kind in groups


def test_the_weights_hold_no_names():
    with safe_open(str(WEIGHTS), framework="pt") as f:
        meta = f.metadata()
        keys = list(f.keys())
    assert set(meta) <= {"config", "steps", "seed"}
    assert json.loads(meta["config"])["size"] >= 16
    parts = {"sprites", "behaviour", "reader", "name_min", "more_min"}
    assert all(k.split(".")[0] in parts for k in keys)


def test_spans_are_runs_of_words_that_are_not_all_function_words():
    spans = dict(_spans("A dragon flies over the lighthouse!"))
    assert spans["dragon"] == (1, 2)
    assert spans["the lighthouse"] == (4, 6)
    assert spans["a dragon flies over the lighthouse"] == (0, 6)
    assert all(not set(s.split()) <= FUNCTION_WORDS for s in spans)
    assert _spans("the of a") == [("the of a", (0, 3))]  # the whole text, named by nothing


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a dragon flies over the lighthouse", {"dragon", "lighthouse"}),
        ("an elephant and a giraffe", {"elephant", "giraffe"}),
    ],
)
def test_each_thing_a_text_names_is_read_from_its_own_words(engine, text, expected):
    got = [m.concept.name for m in engine.reader.things(text)]
    for word in expected:  # itself or a kind of it ("sea dragon")
        assert any(word in name.split() for name in got), (text, got)


@pytest.mark.parametrize(
    "text", ["the crowd goes wild", "everyone feels hopeful", "make it more exciting"]
)
def test_text_naming_no_thing_names_none(engine, text):
    assert engine.reader.things(text) == []


def test_sprites_are_drawn_by_the_network_with_hard_alpha(engine):
    by_name = vocab.by_name()
    a, b = (engine.reader.sprite(by_name[n]) for n in ("dragon", "lighthouse"))
    assert a.shape == (16, 16, 4) and a.dtype.name == "uint8"
    assert set(a[..., 3].flatten().tolist()) <= {0, 255}
    assert 20 < (a[..., 3] > 0).sum() < 256  # a shape, not a square
    assert (a != b).any()
