"""llama.cpp's side of a decode step: a context of one KV stream per sequence, a step's tokens
laid into its batch, and a step timed on a context of its own (how the embedded weights choose
their encoding and attention on this CPU, ``backends/embedded_lm.py``)."""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from inference.narrative.lm import LMError

if TYPE_CHECKING:
    from llama_cpp._internals import LlamaContext, LlamaModel


class HeldSequence(Protocol):
    seq_id: int
    tokens: list[int]  # what this sequence's KV cells hold, in order


@dataclass(eq=False)
class _Held:
    seq_id: int
    tokens: list[int] = field(default_factory=list)


def fill_batch(batch, plan: list[tuple[HeldSequence, list[int], bool]]) -> tuple:
    """The plan's tokens laid into `batch` (a llama_batch), each after what its slot holds.
    -> (the batch, [(slot, batch index)] of the tokens whose logits are asked for)."""
    n, outputs = 0, []
    for slot, tokens, wants in plan:
        start = len(slot.tokens)
        for j, token in enumerate(tokens):
            batch.token[n] = token
            batch.pos[n] = start + j
            batch.n_seq_id[n] = 1
            batch.seq_id[n][0] = slot.seq_id
            batch.logits[n] = wants and j == len(tokens) - 1
            n += 1
        if wants:
            outputs.append((slot, n - 1))
    batch.n_tokens = n
    return batch, outputs


def open_context(model: LlamaModel, sequences: int, n_ctx_seq: int, threads: int,
                 step_tokens: int, flash_attention: bool) -> LlamaContext:  # fmt: skip
    """A llama.cpp context of `sequences` KV streams of `n_ctx_seq` cells each."""
    import llama_cpp
    from llama_cpp import _internals
    from llama_cpp._utils import suppress_stdout_stderr

    params = llama_cpp.llama_context_default_params()
    params.n_ctx = n_ctx_seq * sequences  # llama.cpp gives each sequence its share
    params.n_batch = params.n_ubatch = step_tokens
    params.n_seq_max = sequences
    params.n_threads = params.n_threads_batch = threads
    params.kv_unified = False  # a KV stream per sequence
    params.flash_attn_type = (
        llama_cpp.LLAMA_FLASH_ATTN_TYPE_AUTO
        if flash_attention
        else llama_cpp.LLAMA_FLASH_ATTN_TYPE_DISABLED
    )
    params.swa_full = True  # Gemma's sliding-window layers keep all a slot's tokens: reusable
    params.no_perf = True
    with suppress_stdout_stderr(disable=False):
        return _internals.LlamaContext(model=model, params=params, verbose=False)


def step_time(model: LlamaModel, *, flash_attention: bool, sequences: int = 8, held: int = 96,
              read: int = 24, threads: int = 1, rounds: int = 3) -> float:  # fmt: skip
    """Median seconds of a step as most are when every sequence talks: a token for each of
    `sequences` - 1 sequences and a newcomer's line of `read` tokens for the last, each after
    `held` of its own. Timed on a context of its own (~0.5-1 s for SmolLM2), so weights and
    attention are chosen on this CPU."""
    import llama_cpp
    from llama_cpp import _internals

    context = open_context(model, sequences, 2 * held, threads, held, flash_attention)
    batch = _internals.LlamaBatch(n_tokens=held, embd=0, n_seq_max=1)
    token = max(0, int(llama_cpp.llama_vocab_bos(model.vocab)))
    slots = [_Held(i) for i in range(sequences)]

    def decode(plan) -> float:
        began = time.perf_counter()
        if llama_cpp.llama_decode(context.ctx, fill_batch(batch.batch, plan)[0]) != 0:
            raise LMError("llama_decode failed while timing a step")
        return time.perf_counter() - began

    try:
        decode([(slots[0], [token] * held, False)])
        for slot in slots[1:]:  # the same cells copied, not read again
            llama_cpp.llama_memory_seq_cp(context.memory, 0, slot.seq_id, -1, -1)
        for slot in slots:
            slot.tokens = [token] * held
        step = [(slot, [token], True) for slot in slots[:-1]] + [(slots[-1], [token] * read, True)]
        times = []
        for _ in range(rounds):
            times.append(decode(step))
            for slot in slots:
                llama_cpp.llama_memory_seq_rm(context.memory, slot.seq_id, held, -1)
        return statistics.median(times)
    finally:
        context.close()
