"""What a player's line to a character asks for, read by one trained head over MiniLM.

A softmax regression over all-MiniLM-L6-v2 sentence embeddings (``inference.world.text``), as
moderation's screening reads text: it tells a line that asks who the character is ("machine",
"name"), asks of the live world ("place", "weather", "time", "creatures"), asks for a change
the world can make ("change": "make it rain", not "is it raining?"), or is anything else
("other"). It learns from ``data/intents_train.tsv``; its one threshold (below it a line is
"other") comes from ``data/intents_tune.tsv``. ``python -m inference.narrative.intent_training``
fits both and writes ``data/intent_head.npz``.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from inference.world import text as text_encoder

DATA_DIR = Path(__file__).resolve().parent / "data"
HEAD_PATH = DATA_DIR / "intent_head.npz"
LABELS = ("machine", "name", "place", "weather", "time", "creatures", "change", "other")
WHO = ("machine", "name")  # who or what the character is
WORLD = ("place", "weather", "time", "creatures")  # what the frames show (grammar.WORLD_INTENTS)
OTHER = "other"


@dataclass(frozen=True)
class IntentHead:
    weights: np.ndarray  # (384, len(LABELS)) float32
    bias: np.ndarray  # (len(LABELS),) float32
    min_confidence: float  # below this probability of its best label a line is "other"

    def probabilities(self, embeddings: np.ndarray) -> np.ndarray:
        """(N, 384) unit embeddings -> (N, len(LABELS)) probabilities."""
        logits = embeddings.astype(np.float32) @ self.weights + self.bias  # (N, L)
        logits -= logits.max(axis=1, keepdims=True)
        p = np.exp(logits)
        return p / p.sum(axis=1, keepdims=True)

    def labels(self, embeddings: np.ndarray) -> list[str]:
        """The intent of each embedded line ("other" where the head is unsure)."""
        p = self.probabilities(embeddings)
        best = p.argmax(axis=1)
        return [LABELS[k] if p[i, k] >= self.min_confidence else OTHER for i, k in enumerate(best)]

    def save(self, path: Path) -> None:
        np.savez(
            path,
            weights=self.weights.astype(np.float32),
            bias=self.bias.astype(np.float32),
            min_confidence=np.float32(self.min_confidence),
            labels=np.array(LABELS),
        )

    @classmethod
    def load(cls, path: Path) -> IntentHead:
        with np.load(path, allow_pickle=False) as data:
            if tuple(str(x) for x in data["labels"]) != LABELS:
                raise ValueError(f"{path}: trained for other labels {list(data['labels'])}")
            return cls(data["weights"], data["bias"], float(data["min_confidence"]))


_lock = threading.Lock()
_head: IntentHead | None = None


def head() -> IntentHead:
    """The shipped head, loaded once per process."""
    global _head
    if _head is None:
        with _lock:
            if _head is None:
                _head = IntentHead.load(HEAD_PATH)
    return _head


def read(line: str) -> str:
    """The intent of one player's line: one of LABELS."""
    return head().labels(text_encoder.embed([line]))[0]


def load_split(name: str) -> list[tuple[str, str]]:
    """(label, text) rows of ``data/intents_<name>.tsv`` ("label<TAB>text" after a header)."""
    lines = (DATA_DIR / f"intents_{name}.tsv").read_text().splitlines()[1:]
    rows = [tuple(line.split("\t", 1)) for line in lines if line.strip()]
    unknown = {label for label, _ in rows} - set(LABELS)
    if unknown:
        raise ValueError(f"intents_{name}.tsv: unknown labels {sorted(unknown)}")
    return rows
