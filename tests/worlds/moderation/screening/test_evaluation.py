"""The `screening_eval` command on the labelled splits (worlds/moderation/screening/data/)."""

import io
import re

import pytest
from django.core.management import call_command

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
    for split in ("eval", "handwritten"):
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
