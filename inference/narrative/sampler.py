"""Choosing a sequence's next token from its logits, in numpy, as llama.cpp's sampler chain
would; the runs of tokens a request's output may not repeat (``Sampling.avoid``); and the
tokens its grammar allows (``Sampling.grammar``, llama.cpp's GBNF)."""

from __future__ import annotations

import ctypes

import numpy as np

from inference.narrative.lm import LMError, Sampling

# Sampling as llama-cpp-python's create_completion did it (its defaults): repetition penalty over
# the last 64 generated tokens, top-k 40, top-p, min-p 0.05, temperature.
TOP_K = 40
MIN_P = 0.05
PENALTY_LAST_N = 64
# A request's output may not repeat this many tokens running of its `Sampling.avoid` lines (as
# transformers' encoder_no_repeat_ngram_size): the token that would complete such a run is
# banned. A character's replies otherwise copied its earlier ones turn after turn, and each
# copy dropped afterwards cost a second writing (``character_replies.fresh``).
AVOID_RUN = 4
# A grammar first judges only this many of the likeliest tokens: one of them almost always fits,
# and judging a whole vocabulary (Gemma's 262k words) every token would cost more than the step.
GRAMMAR_SHORTLIST = 256
_TOKEN_DATA = np.dtype([("id", "<i4"), ("logit", "<f4"), ("p", "<f4")])  # llama_token_data


class GrammarConstraint:
    """A request's GBNF grammar in llama.cpp's grammar sampler: which tokens may come next, and
    the tokens that came. LMError where the grammar does not parse."""

    def __init__(self, vocab: int, grammar: str, root: str = "root") -> None:
        import llama_cpp

        self._llama = llama_cpp
        self._sampler = llama_cpp.llama_sampler_init_grammar(vocab, grammar.encode(), root.encode())
        if not self._sampler:
            raise LMError("the request's grammar does not parse")

    def allowed(self, tokens: np.ndarray) -> np.ndarray:
        """(n,) bool: which of `tokens` the grammar takes next."""
        data = np.zeros(len(tokens), dtype=_TOKEN_DATA)
        data["id"] = tokens
        candidates = self._llama.llama_token_data_array(
            data=data.ctypes.data_as(self._llama.llama_token_data_p),
            size=len(tokens),
            selected=-1,
            sorted=False,
        )
        self._llama.llama_sampler_apply(self._sampler, ctypes.byref(candidates))
        return np.isfinite(data["logit"])  # a token the grammar refuses gets -inf

    def accept(self, token: int) -> None:
        self._llama.llama_sampler_accept(self._sampler, token)

    def close(self) -> None:
        if self._sampler:
            self._llama.llama_sampler_free(self._sampler)
            self._sampler = None


def allowed_tokens(logits: np.ndarray, grammar: GrammarConstraint) -> np.ndarray:
    """The ids of the tokens the grammar takes next (a banned one, at -inf, never): the
    shortlist of the likeliest judged first, the whole vocabulary where none of them fits.
    LMError where nothing does."""
    k = min(GRAMMAR_SHORTLIST, logits.size)
    short = np.argpartition(logits, -k)[-k:]
    for candidates in (short, np.arange(logits.size)):
        ok = candidates[grammar.allowed(candidates) & np.isfinite(logits[candidates])]
        if ok.size:
            return ok
    raise LMError("no token fits the request's grammar")


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
    grammar: GrammarConstraint | None = None,
) -> int:
    """One token from a sequence's logits (n_vocab,), picked as llama.cpp's sampler chain picks
    it: penalty on the recently generated tokens, top-k, top-p, min-p, temperature (0: the most
    likely token); never one of `banned`, and only one that `grammar` allows."""
    logits = np.array(logits, dtype=np.float32)  # a copy: llama.cpp owns the buffer
    if s.repeat_penalty != 1.0 and recent:
        seen = np.unique(np.asarray(recent[-PENALTY_LAST_N:], dtype=np.int64))
        hit = logits[seen]
        logits[seen] = np.where(hit > 0, hit / s.repeat_penalty, hit * s.repeat_penalty)
    if banned:
        logits[banned] = -np.inf
    # Under a grammar only the tokens it allows are drawn from (a vocabulary of -inf with a few
    # left would also do, but numpy's partition of so many equal values is slow).
    pool = allowed_tokens(logits, grammar) if grammar is not None else None
    values = logits if pool is None else logits[pool]
    if s.temperature <= 0:
        return _token(pool, int(np.argmax(values)))
    k = min(TOP_K, values.size)
    top = np.argpartition(values, -k)[-k:]
    top = top[np.argsort(values[top])[::-1]]  # (k,) most likely first
    z = values[top].astype(np.float64)
    p = _softmax(z)
    if s.top_p < 1.0:  # the fewest tokens whose probabilities add up to top_p
        n = int(np.searchsorted(np.cumsum(p), s.top_p)) + 1
        top, z, p = top[:n], z[:n], p[:n]
    keep = p >= MIN_P * p[0]
    top, z = top[keep], z[keep]
    return _token(pool, int(top[rng.choice(top.size, p=_softmax(z / s.temperature))]))


def _token(pool: np.ndarray | None, index: int) -> int:
    return index if pool is None else int(pool[index])


def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max())
    return e / e.sum()
