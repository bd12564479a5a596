"""Layer 2: the meaning of a text. all-MiniLM-L6-v2 embeds each sentence and the trained
classifier (`classifier.py`, `data/classifier.npz`) gives the probability of each category and
of benign; the hold and block thresholds apply to the harm probability, 1 - P(benign).
"""

from __future__ import annotations

import re
import threading
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from inference.world import text as inference_text  # Django-free, shared with the world model
from worlds.moderation.screening.classifier import LABELS, Classifier
from worlds.moderation.screening.normalise import normalise, readable
from worlds.moderation.screening.verdicts import ALLOW, CATEGORIES, RANK, Screening, verdict_for

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

CLASSIFIER_PATH = Path(__file__).resolve().parent / "data" / "classifier.npz"  # screening_train
SINGLE_NAME_FIELDS = {"username", "display_name", "character_name"}
_MAX_CHUNKS = 12

_classifier_lock = threading.Lock()
_classifier: Classifier | None = None


def classifier() -> Classifier:
    """The semantic layer's trained model and its thresholds, loaded once per process."""
    global _classifier
    if _classifier is None:
        with _classifier_lock:
            if _classifier is None:
                _classifier = Classifier.load(CLASSIFIER_PATH)
    return _classifier


def text_encoder() -> SentenceTransformer:
    """The process's one all-MiniLM-L6-v2 (shared with the world model), loaded lazily."""
    return inference_text.load_encoder("cpu")


def embed(texts: list[str]) -> np.ndarray:
    """(N, 384) normalised sentence embeddings; one encode at a time, shared with the worker."""
    if not texts:
        return np.zeros((0, 384), dtype=np.float32)
    return inference_text.embed(texts)


def semantic_text(text: str, field: str) -> str:
    """The text as the encoder should read it for this field."""
    if field in SINGLE_NAME_FIELDS:
        # "dark_lord_99" reads as words to the encoder, not as an identifier.
        return " ".join(normalise(text).words) or text
    return readable(text)


def sentences(text: str) -> list[str]:
    """The parts scored separately (at most _MAX_CHUNKS; the rest joins the last)."""
    # Mean pooling dilutes one bad sentence in a long description: score sentences separately.
    parts = [p.strip() for p in re.split(r"(?<=[.!?;\n])\s+", text) if p.strip()]
    if len(parts) > _MAX_CHUNKS:
        parts = parts[: _MAX_CHUNKS - 1] + [" ".join(parts[_MAX_CHUNKS - 1 :])]
    return parts or [text]


def semantic_scores(texts: list[str]) -> list[dict[str, float]]:
    """Per text: the probability of each category and of "benign"."""
    probabilities = classifier().probabilities(embed(texts))
    return [dict(zip(LABELS, map(float, row), strict=True)) for row in probabilities]


def decide_semantic(
    scores: dict[str, float], *, hold: float | None = None, block: float | None = None
) -> tuple[str, str | None, float]:
    """-> (verdict, most likely harmful category, harm probability = 1 - P(benign))."""
    model = classifier()
    hold = model.hold if hold is None else hold
    block = model.block if block is None else block
    category = max(CATEGORIES, key=lambda c: scores[c])
    harm = 1.0 - scores["benign"]
    if harm >= block:
        return "block", category, harm
    if harm >= hold:
        return "hold", category, harm
    return "allow", None, harm


def semantic_screen_many(texts: list[str], *, field: str = "text", **thresholds) -> list[Screening]:
    """The semantic layer over many texts in one batch; a text's worst sentence decides."""
    chunks = [sentences(text) for text in texts]
    flat = [chunk for parts in chunks for chunk in parts]
    scores = iter(semantic_scores(flat)) if flat else iter(())
    out = []
    for parts in chunks:
        worst = ALLOW
        for _ in parts:
            verdict, category, score = decide_semantic(next(scores), **thresholds)
            if RANK[verdict] > RANK[worst.verdict] or (
                verdict == worst.verdict != "allow" and score > worst.score
            ):
                worst = verdict_for(verdict, category, field, "semantic", score)
        out.append(worst)
    return out
