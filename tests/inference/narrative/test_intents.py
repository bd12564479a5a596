"""The intent head: what a player's line to a character asks for, by class of line."""

import numpy as np
import pytest

from inference.narrative import intent_training, intents
from inference.world import text as text_encoder

# Worded apart from both splits (data/intents_*.tsv): each class, in words the head never saw.
UNSEEN = {
    "machine": ["are you a program pretending to be a person", "is a computer answering me",
                "you're a bot, aren't you?", "are you an artificial intelligence"],
    "name": ["what do folks call you", "who are you, old man?", "what's your name, ferryman?",
             "tell me what you're called"],
    "place": ["where on earth are we", "what is this spot called", "what kind of place is this?"],
    "weather": ["will it rain tonight", "is a storm on the way", "how's the sky looking today"],
    "time": ["what's the hour", "is it nearly night", "has the sun come up"],
    "creatures": ["do any animals live around here", "have you seen any wolves",
                  "what beasts roam these parts"],
    "change": ["please make it snow", "could you bring a fox here", "make the rain stop",
               "build us a bridge"],
    "other": ["are you a fisherman?", "where did you grow up?", "I'm scared, can you help me?",
              "what's your favourite song", "are you happy?", "thanks for the help"],
}  # fmt: skip
CASES = [(label, line) for label, lines in UNSEEN.items() for line in lines]


def test_the_test_lines_are_in_neither_split():
    seen = {t.lower() for split in ("train", "tune") for _, t in intents.load_split(split)}
    assert not seen & {line.lower() for _, line in CASES}


@pytest.mark.parametrize(("label", "line"), CASES)
def test_a_line_is_read_as_what_it_asks(label, line):
    assert intents.read(line) == label


def test_a_question_about_the_weather_is_no_wish_for_it():
    assert intents.read("is it going to rain?") == "weather"
    assert intents.read("make it rain") == "change"


def test_the_shipped_head_reads_the_tuning_split_well():
    assert intent_training.accuracy(intents.head(), intents.load_split("tune")) >= 0.9


def test_the_shipped_head_loads_and_a_head_for_other_labels_is_refused(tmp_path):
    head = intents.head()
    assert head.weights.shape == (text_encoder.TEXT_DIM, len(intents.LABELS))
    assert 0.0 <= head.min_confidence < 1.0
    path = tmp_path / "other.npz"
    np.savez(path, weights=np.zeros((384, 2)), bias=np.zeros(2), min_confidence=np.float32(0.5),
             labels=np.array(["change", "other"]))  # fmt: skip
    with pytest.raises(ValueError, match="other labels"):
        intents.IntentHead.load(path)


def test_fitting_learns_the_labels_it_is_given():
    rows = intents.load_split("train")
    weights, bias = intent_training.fit(
        text_encoder.embed([t for _, t in rows]), [label for label, _ in rows]
    )
    head = intents.IntentHead(weights, bias, 0.0)
    assert intent_training.accuracy(head, rows) >= 0.95
