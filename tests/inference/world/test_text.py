"""The MiniLM embedding cache keeps what is used again and again."""

import numpy as np

from inference.world import text


def test_the_cache_forgets_the_least_recently_used_texts_first(monkeypatch):
    monkeypatch.setattr(text, "_cache", {})
    monkeypatch.setattr(text, "_CACHE_MAX", 8)
    exemplar = text.embed(["a campfire crackles to life"])[0]
    for i in range(20):  # an exemplar read on every reply stays among new lines
        text.embed([f"line number {i}", "a campfire crackles to life"])
        assert len(text._cache) <= 8
    assert "a campfire crackles to life" in text._cache
    assert "line number 0" not in text._cache  # used once, long ago
    # what the cache answers is what the encoder gives
    again = text.embed(["a campfire crackles to life"])[0]
    assert np.allclose(again, exemplar)
    assert text.embed(["line number 0"])[0] @ exemplar < 0.99
