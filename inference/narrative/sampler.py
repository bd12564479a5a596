"""Choosing a sequence's next token from its logits, in numpy, as llama.cpp's sampler chain
would; and the runs of tokens a request's output may not repeat (``Sampling.avoid``)."""

from __future__ import annotations

import numpy as np

from inference.narrative.lm import Sampling

# Sampling as llama-cpp-python's create_completion did it (its defaults): repetition penalty over
# the last 64 generated tokens, top-k 40, top-p, min-p 0.05, temperature.
TOP_K = 40
MIN_P = 0.05
PENALTY_LAST_N = 64
# A request's output may not repeat this many tokens running of its `Sampling.avoid` lines (as
# transformers' encoder_no_repeat_ngram_size): the token that would complete such a run is
# banned. A character's replies otherwise copied its earlier ones turn after turn, and each
# copy dropped afterwards cost a second writing (``characters.fresh``).
AVOID_RUN = 4


def run_bans(lines: list[list[int]], run: int = AVOID_RUN) -> dict[tuple[int, ...], list[int]]:
    """For tokenised lines: each `run - 1` tokens running -> the tokens that followed them."""
    bans: dict[tuple[int, ...], set[int]] = {}
    for tokens in lines:
        for i in range(len(tokens) - run + 1):
            bans.setdefault(tuple(tokens[i : i + run - 1]), set()).add(tokens[i + run - 1])
    return {head: sorted(nexts) for head, nexts in bans.items()}


def sample(
    logits: np.ndarray,
    recent: list[int],
    s: Sampling,
    rng: np.random.Generator,
    banned: list[int] | None = None,
) -> int:
    """One token from a sequence's logits (n_vocab,), picked as llama.cpp's sampler chain picks
    it: penalty on the recently generated tokens, top-k, top-p, min-p, temperature (0: the most
    likely token); never one of `banned`."""
    logits = np.array(logits, dtype=np.float32)  # a copy: llama.cpp owns the buffer
    if s.repeat_penalty != 1.0 and recent:
        seen = np.unique(np.asarray(recent[-PENALTY_LAST_N:], dtype=np.int64))
        hit = logits[seen]
        logits[seen] = np.where(hit > 0, hit / s.repeat_penalty, hit * s.repeat_penalty)
    if banned:
        logits[banned] = -np.inf
    if s.temperature <= 0:
        return int(np.argmax(logits))
    k = min(TOP_K, logits.size)
    top = np.argpartition(logits, -k)[-k:]
    top = top[np.argsort(logits[top])[::-1]]  # (k,) most likely first
    z = logits[top].astype(np.float64)
    p = _softmax(z)
    if s.top_p < 1.0:  # the fewest tokens whose probabilities add up to top_p
        n = int(np.searchsorted(np.cumsum(p), s.top_p)) + 1
        top, z, p = top[:n], z[:n], p[:n]
    keep = p >= MIN_P * p[0]
    top, z = top[keep], z[keep]
    return int(top[rng.choice(top.size, p=_softmax(z / s.temperature))])


def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max())
    return e / e.sum()
