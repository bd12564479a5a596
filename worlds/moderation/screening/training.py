"""Fitting the semantic layer: what it learns from and how its thresholds are chosen.

`manage.py screening_train` is the shell; it writes `data/classifier.npz`. The evaluation split
and the hand-written splits are never trained on or used to pick thresholds.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from worlds.moderation.screening import classifier
from worlds.moderation.screening.evaluation import load_rows
from worlds.moderation.screening.normalise import readable
from worlds.moderation.screening.semantic import embed
from worlds.moderation.screening.verdicts import CATEGORIES

DATA_DIR = Path(__file__).resolve().parent / "data"
# "category | phrase" per line. The dialogue lines teach the classifier that talk with a
# character (advice, danger, loss, faith) is benign; the thresholds come from the other benign
# phrases, the look-alikes (counted too, the dialogue lines raised hold from 0.53 to about 0.6
# and harmful recall on the handwritten split fell from 0.88 to 0.81-0.83).
DIALOGUE_FILE = "examples_dialogue.txt"
# What a player asks a character for help with, harmful or only alike ("how do I make a fire"):
# like the dialogue lines, its benign asks teach the classifier but do not set its thresholds.
ASKS_FILE = "examples_asks.txt"
EXAMPLE_FILES = ("examples.txt", "examples_generated.txt", DIALOGUE_FILE, ASKS_FILE)
TRAINING_SPLITS = ("tune",)


def load_examples(names: tuple[str, ...] = EXAMPLE_FILES) -> dict[str, list[str]]:
    examples: dict[str, list[str]] = {c: [] for c in (*CATEGORIES, "benign")}
    lines = []
    for name in names:
        path = DATA_DIR / name
        if path.exists():
            lines += path.read_text().splitlines()
    for line in lines:
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        category, phrase = (part.strip() for part in line.split("|", 1))
        examples[category].append(phrase)
    return examples


def training_rows() -> list[tuple[str, str]]:
    """What the classifier learns from: the example sets and the tuning split, never eval."""
    examples = [(c, p) for c, phrases in load_examples().items() for p in phrases]
    return examples + [row for split in TRAINING_SPLITS for row in load_rows(split)]


@dataclass(frozen=True)
class TrainingConfig:
    # Thresholds come from 5-fold cross-validated harm on the benign training phrases but the
    # dialogue lines: hold flags at most `hold_fp` of them (3.5%: the set holds ~250 deliberately
    # hard look-alikes; at 2.5% with the dialogue examples "the men who bombed the station are
    # heroes" passed), block at most `block_fp`.
    hold_fp: float = 0.035
    block_fp: float = 0.005
    l2: float = 1e-5  # weight decay of the softmax regression
    balance_power: float = 0.5  # 1: every label weighs the same; 0.5: square-root balancing


def train(config: TrainingConfig = TrainingConfig()) -> tuple[classifier.Classifier, int]:
    """Fit the semantic classifier on `training_rows()` and pick its thresholds.
    -> (the classifier, how many phrases it learnt from)."""
    rows = training_rows()
    texts = [readable(text) for _, text in rows]
    labels = [label for label, _ in rows]
    embeddings = embed(texts)
    fitting = {"l2": config.l2, "balance_power": config.balance_power}
    harm = classifier.cross_validated_harm(embeddings, labels, **fitting)
    # talk with a character teaches, but the look-alikes alone set the thresholds
    dialogue = set(load_examples((DIALOGUE_FILE, ASKS_FILE))["benign"])
    benign = harm[np.array([label == "benign" and text not in dialogue for label, text in rows])]
    weights, bias = classifier.fit(embeddings, labels, **fitting)
    hold = classifier.threshold_for(benign, config.hold_fp)
    block = max(classifier.threshold_for(benign, config.block_fp), hold)
    return classifier.Classifier(weights, bias, hold=hold, block=block), len(rows)
