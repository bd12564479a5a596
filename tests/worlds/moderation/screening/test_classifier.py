"""The semantic layer's softmax regression: fitting, thresholds, the shipped weights."""

import numpy as np
import pytest

from worlds.moderation.screening import classifier, screen_text
from worlds.moderation.screening.classifier import LABELS, Classifier
from worlds.moderation.screening.semantic import CLASSIFIER_PATH, embed


def test_fit_learns_to_tell_harm_from_benign_on_embeddings():
    rows = [
        ("violence", "stab him until he bleeds"),
        ("violence", "cut off the prisoner's hands"),
        ("spam", "buy cheap pills online now"),
        ("spam", "click this link to win money"),
        ("benign", "a calm lake at dawn"),
        ("benign", "the fox naps under the oak"),
        ("sexual", "she takes off all her clothes"),
        ("hate", "those people are vermin"),
        ("self_harm", "i want to cut my wrists"),
    ]
    x = embed([t for _, t in rows])
    weights, bias = classifier.fit(x, [label for label, _ in rows])
    model = Classifier(weights, bias, hold=0.5, block=0.9)
    p = model.probabilities(embed(["slice his throat open", "a sunny meadow"]))
    assert p.shape == (2, len(LABELS)) and np.allclose(p.sum(axis=1), 1.0)
    assert LABELS[p[0].argmax()] == "violence"
    assert LABELS[p[1].argmax()] == "benign"


def test_threshold_for_lets_through_at_most_the_given_share():
    benign = np.array([0.9, 0.8, 0.3, 0.2, 0.1, 0.1, 0.05, 0.0, 0.0, 0.0], dtype=np.float32)
    t = classifier.threshold_for(benign, 0.1)
    assert (benign >= t).sum() == 1
    assert classifier.threshold_for(benign, 0.0) > 0.9


def test_the_shipped_model_loads_with_sane_thresholds(tmp_path):
    model = Classifier.load(CLASSIFIER_PATH)
    assert model.weights.shape == (384, len(LABELS))
    assert 0.0 < model.hold <= model.block < 1.0
    model.save(tmp_path / "copy.npz")
    assert Classifier.load(tmp_path / "copy.npz").hold == model.hold


def test_a_model_for_other_labels_is_refused(tmp_path):
    path = tmp_path / "other.npz"
    np.savez(path, weights=np.zeros((384, 2)), bias=np.zeros(2), thresholds=np.array([0.5, 0.9]),
             labels=np.array(["spam", "benign"]))  # fmt: skip
    with pytest.raises(ValueError, match="other labels"):
        Classifier.load(path)


@pytest.mark.parametrize("line", ["Pfft.", "Ahem.", "Huh, strange.", "Oi!"])
def test_short_interjections_in_dialogue_are_allowed(line):
    assert screen_text(line, field="say").allowed
