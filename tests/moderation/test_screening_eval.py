"""The `screening_eval` command on the labelled evaluation set (tests/moderation/data/eval.tsv)."""

import io
import re

import pytest
from django.core.management import call_command

from worlds.moderation import evaluation


def test_the_evaluation_set_has_hundreds_of_phrases_per_category():
    counts: dict[str, int] = {}
    for label, _ in evaluation.load_rows("eval"):
        counts[label] = counts.get(label, 0) + 1
    assert set(counts) == {"sexual", "violence", "hate", "self_harm", "spam", "benign"}
    assert min(counts.values()) >= 300


def test_no_evaluation_phrase_is_a_tuning_phrase_or_an_example():
    from worlds.moderation.screening import load_examples

    evaluated = {text for _, text in evaluation.load_rows("eval")}
    tuned = {text for _, text in evaluation.load_rows("tune")}
    examples = {p for phrases in load_examples().values() for p in phrases}
    assert not evaluated & tuned
    assert not evaluated & examples


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
