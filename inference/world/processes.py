"""Which process an event text starts ("a fire starts in the forest": fire), read by one trained
head over the text's MiniLM embedding (``inference.world.text``).

A small MLP (or a softmax regression: the file holds one to many layers) from the embedding to
the classes ``("none", *spec.PROCESSES)``. "build a campfire" places a thing and "the sky is on
fire" is a sunset: the head learns those near misses as "none" from
``training/data/processes.tsv`` and the phrasing bank's every other event. Its one threshold
(below it a text starts no process) comes from a share of the training rows kept apart.
``python -m inference.training.process_head`` fits it and writes ``weights/process_head.npz``.
Django-free and torch-free: numpy alone reads it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from inference.world import spec
from inference.world import text as text_encoder

HEAD_PATH = Path(__file__).resolve().parents[1] / "weights" / "process_head.npz"
CLASSES = ("none", *spec.PROCESSES)  # class k > 0 is spec.PROCESSES[k - 1]


@dataclass(frozen=True)
class ProcessHead:
    layers: tuple[
        tuple[np.ndarray, np.ndarray], ...
    ]  # (weights (in, out), bias (out,)), ReLU between
    threshold: float  # a text starts its likeliest process where that reaches this probability

    def probabilities(self, embeddings: np.ndarray) -> np.ndarray:
        """(N, TEXT_DIM) unit embeddings -> (N, len(CLASSES)) probabilities."""
        x = embeddings.astype(np.float32)
        for i, (w, b) in enumerate(self.layers):
            x = x @ w + b
            if i < len(self.layers) - 1:
                x = np.maximum(x, 0.0)
        x -= x.max(axis=1, keepdims=True)
        p = np.exp(x)
        return p / p.sum(axis=1, keepdims=True)

    def processes(self, embeddings: np.ndarray) -> np.ndarray:
        """(N,) int: the index into spec.PROCESSES each embedded text starts, -1 for none."""
        p = self.probabilities(embeddings)[:, 1:]  # (N, PROCESSES)
        best = p.argmax(axis=1)
        return np.where(p[np.arange(len(p)), best] >= self.threshold, best, -1)

    def save(self, path: Path) -> None:
        arrays = {f"w{i}": w.astype(np.float32) for i, (w, _) in enumerate(self.layers)}
        arrays |= {f"b{i}": b.astype(np.float32) for i, (_, b) in enumerate(self.layers)}
        np.savez(path, **arrays, threshold=np.float32(self.threshold), classes=np.array(CLASSES))

    @classmethod
    def load(cls, path: Path) -> ProcessHead:
        with np.load(path, allow_pickle=False) as data:
            if tuple(str(c) for c in data["classes"]) != CLASSES:
                raise ValueError(f"{path}: trained for other classes {list(data['classes'])}")
            n = sum(1 for k in data.files if k.startswith("w"))
            layers = tuple((data[f"w{i}"], data[f"b{i}"]) for i in range(n))
            return cls(layers, float(data["threshold"]))


_lock = threading.Lock()
_head: ProcessHead | None = None


def head() -> ProcessHead:
    """The shipped head, loaded once per process."""
    global _head
    if _head is None:
        with _lock:
            if _head is None:
                _head = ProcessHead.load(HEAD_PATH)
    return _head


def read(text: str, emb: np.ndarray | None = None) -> int:
    """The process an event text starts: an index into spec.PROCESSES, or -1 for none."""
    if emb is None:
        emb = text_encoder.embed([text])[0]
    return int(head().processes(emb[None])[0])
