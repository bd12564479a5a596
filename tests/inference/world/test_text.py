"""The MiniLM embedding cache keeps what is used again and again."""

import time

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


def test_texts_another_thread_is_embedding_are_not_embedded_twice(monkeypatch):
    """8 first replies at once each embedded the same ~80 asks: a thread that waited for the
    encoder takes what the one before it embedded."""
    import threading

    monkeypatch.setattr(text, "_cache", {})
    encoder = text.load_encoder()
    encoded: list[str] = []
    inside = threading.Event()

    class Counting:
        def encode(self, texts, **kwargs):
            encoded.extend(texts)
            inside.set()
            time.sleep(0.3)  # the second thread arrives while this one encodes
            return encoder.encode(texts, **kwargs)

    monkeypatch.setattr(text, "load_encoder", lambda device="cpu": Counting())
    asks = [f"an ask read by every reply, number {i}" for i in range(12)]
    first = threading.Thread(target=text.embed, args=(asks,))
    first.start()
    assert inside.wait(10)
    second = text.embed(["a new line", *asks])
    first.join()
    assert sorted(encoded) == sorted([*asks, "a new line"])  # each text once
    assert np.allclose(second[1:], text.embed(asks))
