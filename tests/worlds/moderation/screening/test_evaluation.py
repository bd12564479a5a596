"""The `screening_eval` command on the labelled splits (worlds/moderation/screening/data/)."""

import io
import re

import pytest
from django.core.management import call_command

from worlds.moderation import screening
from worlds.moderation.screening import evaluation
from worlds.moderation.screening.training import load_examples


def test_the_evaluation_set_has_hundreds_of_phrases_per_category():
    counts: dict[str, int] = {}
    for label, _ in evaluation.load_rows("eval"):
        counts[label] = counts.get(label, 0) + 1
    assert set(counts) == {"sexual", "violence", "hate", "self_harm", "spam", "benign"}
    assert min(counts.values()) >= 300


def test_no_evaluation_phrase_is_a_tuning_phrase_or_an_example():
    tuned = {text for _, text in evaluation.load_rows("tune")}
    examples = {p for phrases in load_examples().values() for p in phrases}
    for split in ("eval", "handwritten", "heldout", "dialogue"):
        evaluated = {text for _, text in evaluation.load_rows(split)}
        assert not evaluated & tuned, split
        assert not evaluated & examples, split


def test_the_command_also_measures_the_handwritten_set():
    # Written by hand, not from the generator's templates: the harder, more honest measure.
    labels = {label for label, _ in evaluation.load_rows("handwritten")}
    assert labels == {"sexual", "violence", "hate", "self_harm", "spam", "benign"}
    out = io.StringIO()
    call_command("screening_eval", "--split", "handwritten", stdout=out)
    assert "split=handwritten" in out.getvalue()
    assert re.search(r"harmful recall [\d.]+ .* positives [\d.]+", out.getvalue())


@pytest.mark.slow
def test_the_command_prints_the_table_and_meets_the_goal():
    out = io.StringIO()
    call_command("screening_eval", stdout=out)
    text = out.getvalue()
    for category in ("sexual", "violence", "hate", "self_harm", "spam", "benign"):
        assert category in text
    recall, fp = map(
        float, re.search(r"harmful recall ([\d.]+) .* positives ([\d.]+)", text).groups()
    )
    assert recall >= 0.90
    assert fp <= 0.05


def test_the_heldout_split_is_hand_written_with_weapons_extremism_and_conversation():
    counts: dict[str, int] = {}
    for label, _ in evaluation.load_rows("heldout"):
        counts[label] = counts.get(label, 0) + 1
    assert sum(counts.values()) >= 150
    assert counts["conversation"] >= 40
    assert counts["weapons"] >= 25 and counts["extremism"] >= 25
    assert counts["benign"] >= 30  # look-alikes: a bomb-sniffing dog, a war museum


def test_screening_meets_the_goal_on_the_heldout_split():
    # Never trained on and not used to fit thresholds (see screening/training.py).
    rows = evaluation.measure(evaluation.score(evaluation.load_rows("heldout")))
    assert evaluation.harmful_recall(rows) >= 0.90
    # 4 of its 40 look-alikes ("a lecture on the history of terrorism"): two more than before the
    # dialogue examples (December 3), the price of no longer refusing ordinary talk with a
    # character (13 of dialogue.tsv's 60 lines before, 5 after; test below)
    assert evaluation.false_positive_rate(rows, "benign") <= 0.10
    assert evaluation.false_positive_rate(rows, "conversation") <= 0.02


def test_ordinary_dialogue_both_ways_is_let_through_and_harm_in_it_is_not():
    # dialogue.tsv: lines players say to characters and lines characters answer, written apart
    # from examples_dialogue.txt; before those examples 13 of its 60 were refused or held
    # ("do you have any advice for me?" as self-harm); 5 of 40 model replies were swapped for
    # the grammar's canned lines, 2 after.
    rows = evaluation.measure(evaluation.score(evaluation.load_rows("dialogue")))
    assert evaluation.false_positive_rate(rows, "conversation") <= 0.1
    assert evaluation.harmful_recall(rows) >= 0.9


def test_a_player_asking_a_character_for_advice_is_not_refused():
    for line in ("do you have any advice for me?", "any words of wisdom before I go?"):
        assert screening.screen_text(line, field="say").verdict == "allow", line
    assert screening.screen_text("give me advice on how to end my life", field="say").blocked


def test_the_command_prints_the_confusion_table_of_the_heldout_split():
    out = io.StringIO()
    call_command("screening_eval", "--split", "heldout", stdout=out)
    text = out.getvalue()
    assert "conversation false positives" in text
    header = next(line for line in text.splitlines() if line.startswith("label "))
    assert header.split()[:4] == ["label", "n", "allow", "sexual"]
    assert "weapons" in header and "extremism" in header
    weapons = next(line for line in text.splitlines() if line.startswith("weapons "))
    assert weapons.split()[1] == "30"  # the row counts every weapons phrase of the split
