"""Continuous batching for the embedded models: many streams, one llama.cpp context, one loop.

``EmbeddedLM.complete`` (``backends/embedded_lm.py``), called from any thread, hands its prompt
to the model's ``BatchDecoder`` as a ``Request`` and reads the text back from the request's own
queue. The decoder's loop thread owns the llama.cpp context. Once per step it seats waiting
requests in free sequences, plans the step (``_plan``: one token for each sequence that is
generating, then prompt tokens of the newcomers up to the step's budget), runs it in one
``llama_decode`` and samples one token for each sequence whose prompt is in, in numpy
(``sampler.sample``). Requests join and leave between steps, as in vLLM's engine core; a request
that fails (a prompt too long, a decode error) fails alone.

Each sequence of the KV cache (a ``Slot``) keeps the tokens it last held, and a request takes the
free slot whose tokens share the longest prefix with its prompt: a character's next turn, or a
story's next pair, evaluates only what is new since its last prompt, even when other sessions
ran in between. (``PromptStates`` did this by copying whole states in and out; here nothing is
copied.)

The context keeps one KV stream per sequence (``kv_unified=False``): a token attends only to its
own sequence's cells, not to all eight sequences' with a mask. Every decoder of a process takes
one lock for its step (decode and sampling), so with 1 thread each the narrative keeps to one
core however many models run, and the frames keep the other.
"""

from __future__ import annotations

import ctypes
import enum
import itertools
import logging
import queue
import statistics
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from inference.narrative.llama_batch import fill_batch, open_context
from inference.narrative.lm import LMError, Sampling
from inference.narrative.sampler import AVOID_RUN, GrammarConstraint, run_bans, sample
from inference.narrative.stream_text import StreamText

log = logging.getLogger(__name__)

MIN_SHARED = 16  # fewer shared tokens than this and a request takes the least recently used slot
COPY_MIN = 48  # another sequence holds this many more of a prompt: its cells are copied over
# At most this many tokens in one step: newcomers' prompts go in chunks. With a KV stream per
# sequence llama.cpp runs a step as one pass over the weights per run length (the decoding
# sequences' one token each, then the prompt chunks), and a pass costs about 25-37 ms before its
# tokens (bfloat16 SmolLM2, 1 thread; ~0.55 ms a token after): so the prompt chunks of a step
# are all one length (``_plan``), and a long read (a fold of the memory, ~200 tokens) goes in one
# pass, not four. llama.cpp reserves logits for a whole step (vocabulary x step tokens floats):
# a step is at most STEP_LOGITS_BYTES of them (SmolLM2 256 tokens, Gemma's 262k words 64).
STEP_TOKENS = 256
MIN_STEP_TOKENS = 64
STEP_LOGITS_BYTES = 64 * 2**20
# With the shipped 4-bit weights llama.cpp's CPU build may pay a fixed cost in the output layer
# (logits over the vocabulary) for a decode with 2 outputs or more: measured on 1 thread on an
# AMD EPYC, Gemma 12 ms for 1 token, 45 ms for 2, 55 for 4, 65 for 8; SmolLM2 6, 16, 26, 40.
# There, up to SPLIT_MAX outputs, each gets a call of its own. On an Intel Xeon without
# AVX512-BF16 the same files cost nothing of the kind (Gemma 61 ms for 1, 59 for 2), and calls of
# one made 2 sequences 1.5x and 4 sequences 3x slower: so for the shipped files the decoder
# measures which way this CPU goes when it starts (``_measure_split``). The bfloat16 and Q8_0
# weights' products batch (SmolLM2 10 ms for 1, 13 for 2; Gemma 18 and 25): one call, always.
# By ``backends.run_weights``; None: measured.
SPLIT_MAX = 4
SPLIT_OUTPUTS = {"shipped": None, "bf16": 1, "q8": 1}
STEP_LOCK = threading.Lock()  # one step at a time in this process, whichever model


def split_outputs_for(two_calls: list[float], one_call: list[float]) -> int:
    """SPLIT_MAX where two outputs took less time (median) in two calls than in one, else 1."""
    faster = statistics.median(two_calls) < statistics.median(one_call)
    return SPLIT_MAX if faster else 1


class Status(enum.Enum):
    WAITING = "waiting"  # in the queue, no slot yet
    PREFILL = "prefill"  # its prompt is being evaluated, a chunk per step
    DECODE = "decode"  # a token per step
    FINISHED = "finished"


_END = object()  # the last item on a request's queue when it ends well


@dataclass(eq=False)
class Request:
    prompt: str
    sampling: Sampling
    out: queue.SimpleQueue = field(default_factory=queue.SimpleQueue)  # text, then _END or error
    status: Status = Status.WAITING
    cancelled: bool = False  # its reader went away: the loop drops it at the next step
    pending: list[int] = field(default_factory=list)  # to evaluate: prompt left, or last token
    generated: list[int] = field(default_factory=list)
    evaluated: int = 0  # prompt tokens it evaluated (the rest were in its slot already)
    text: StreamText | None = None
    rng: np.random.Generator | None = None
    queued_at: float = field(default_factory=time.monotonic)
    stats: RequestStats | None = None  # filled in as it runs; kept in ``finished`` after
    bans: dict[tuple[int, ...], list[int]] = field(default_factory=dict)  # ``run_bans``
    grammar: GrammarConstraint | None = None  # from ``Sampling.grammar``, while it runs


@dataclass
class RequestStats:
    """Where one request's time and tokens went (``BatchDecoder.finished`` keeps the last
    ones): what the bench reads to say what a reply costs."""

    seq_id: int = -1  # the sequence (slot) it ran in
    prompt: int = 0  # tokens of its prompt
    reused: int = 0  # of them, found in its slot's KV cells
    evaluated: int = 0  # of them, evaluated for it (prompt - reused)
    generated: int = 0  # tokens sampled
    waited_s: float = 0.0  # in the queue, no slot yet
    prefill_s: float = 0.0  # seated until its first token was sampled
    decode_s: float = 0.0  # first token sampled until the end


@dataclass(eq=False)
class Slot:
    seq_id: int
    tokens: list[int] = field(default_factory=list)  # what this sequence's KV cells hold, in order
    request: Request | None = None
    used_at: int = 0  # the decoder's clock when it was last given or freed


def _folds(slot: Slot, tokens: list[int], n: int = 8) -> bool:
    """Whether `tokens` is the slot's conversation with its middle folded: a character whose
    memory folded into its summary (``character.character_remember``) shares only its card with
    its own sequence, as a second player of the character shares it with the first one's, but
    the turns the fold kept whole are in its own sequence further on. True when MIN_SHARED of
    the prompt's runs of `n` tokens past the shared card are in the slot past it too."""
    start = _common_prefix(slot.tokens, tokens)
    held = {tuple(slot.tokens[i : i + n]) for i in range(start, len(slot.tokens) - n + 1)}
    runs = (tuple(tokens[i : i + n]) for i in range(start, len(tokens) - n + 1))
    return sum(run in held for run in runs) >= MIN_SHARED


def _common_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


class BatchDecoder:
    """One model's llama.cpp context with ``sequences`` sequences of ``n_ctx_seq`` tokens each,
    and the thread that decodes them together. ``generate`` may be called from any thread."""

    def __init__(
        self,
        model,  # llama_cpp._internals.LlamaModel
        *,
        sequences: int = 8,
        n_ctx_seq: int = 1024,
        threads: int = 1,
        step_tokens: int = STEP_TOKENS,
        split_outputs: int | None = None,  # None: measured on this CPU (``_measure_split``)
        flash_attention: bool = True,  # False: attention as plain products (``FLASH_ATTENTION``)
        name: str = "decode",
    ) -> None:
        import llama_cpp
        from llama_cpp import _internals

        n_vocab = int(llama_cpp.llama_vocab_n_tokens(model.vocab))
        step_tokens = max(MIN_STEP_TOKENS, min(step_tokens, STEP_LOGITS_BYTES // (4 * n_vocab)))
        self._context = open_context(
            model, sequences, n_ctx_seq, threads, step_tokens, flash_attention
        )
        self._model = model
        self._ctx = self._context.ctx
        self._memory = self._context.memory
        self._batch = _internals.LlamaBatch(n_tokens=step_tokens, embd=0, n_seq_max=1)
        self._llama = llama_cpp
        self.n_vocab = n_vocab
        self.n_ctx_seq = int(llama_cpp.llama_n_ctx_seq(self._ctx))
        self.n_swa = int(llama_cpp.llama_model_n_swa(model.model))
        self.step_tokens = step_tokens
        self.name = name
        if split_outputs is None:  # one sequence never has two outputs: nothing to measure
            split_outputs = self._measure_split() if sequences > 1 else 1
        self.split_outputs = split_outputs
        self.slots = [Slot(i) for i in range(sequences)]
        self._piece_buffer = ctypes.create_string_buffer(64)
        # Each token's text and end-of-generation flag, asked of llama.cpp once: every ctypes
        # call lets go of the GIL, and in the worker the frame and event-loop threads then hold
        # it for up to a switch interval (5 ms) before the loop gets it back.
        self._pieces: dict[int, bytes] = {}
        self._eog: dict[int, bool] = {}
        self._waiting: deque[Request] = deque()
        self._cond = threading.Condition()
        self._closed = False
        self._clock = itertools.count(1)
        self.evaluated = 0  # prompt tokens evaluated, all requests together
        self.reused = 0  # prompt tokens found in a slot's cache instead
        self.copied = 0  # of those, copied from another slot's cells (``_copy_prefix``)
        self.generated = 0  # tokens sampled, all requests together
        self.steps = 0
        self.step_s = 0.0  # time spent in llama_decode and sampling, all steps together
        self.finished: deque[RequestStats] = deque(maxlen=4096)  # the last requests' stats
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    def _measure_split(self, rounds: int = 3) -> int:
        """SPLIT_MAX if two one-output calls take less time than one two-output call on this
        CPU, else 1 (no split). Timed on two short sequences before the loop starts (a few
        decodes: ~0.3 s for Gemma on a slow core), which are cleared again after."""
        llama = self._llama
        token = max(0, int(llama.llama_vocab_bos(self._model.vocab)))
        held = [token] * 8
        slots = [Slot(0), Slot(1)]  # stand-ins: the decoder's slots are made after

        def decode(plan: list[tuple[Slot, list[int], bool]]) -> float:
            batch, _ = fill_batch(self._batch.batch, plan)
            began = time.perf_counter()
            if llama.llama_decode(self._ctx, batch) != 0:
                raise LMError("llama_decode failed while measuring")
            return time.perf_counter() - began

        in_two_calls, in_one_call = [], []
        with STEP_LOCK:
            try:
                decode([(slot, held, False) for slot in slots])
                for slot in slots:
                    slot.tokens = held
                for _ in range(rounds):
                    in_two_calls.append(sum(decode([(slot, [token], True)]) for slot in slots))
                    for slot in slots:
                        llama.llama_memory_seq_rm(self._memory, slot.seq_id, len(held), -1)
                    in_one_call.append(decode([(slot, [token], True) for slot in slots]))
                    for slot in slots:
                        llama.llama_memory_seq_rm(self._memory, slot.seq_id, len(held), -1)
            finally:
                for slot in slots:
                    llama.llama_memory_seq_rm(self._memory, slot.seq_id, 0, -1)
        split = split_outputs_for(in_two_calls, in_one_call)
        ms = [1000 * statistics.median(t) for t in (in_two_calls, in_one_call)]
        log.info(
            "%s: 2 outputs in 2 calls %.1f ms, in 1 call %.1f ms: %s",
            self.name, *ms, "split" if split > 1 else "one call",
        )  # fmt: skip
        return split

    # --- the client side (any thread) ------------------------------------------------------
    def in_flight(self) -> int:
        """Requests waiting or generating now (read without the lock: a hint, not a count)."""
        return len(self._waiting) + sum(slot.request is not None for slot in self.slots)

    def generate(self, prompt: str, sampling: Sampling) -> Iterator[str]:
        """The completion of `prompt`, in pieces as they come. Closing the iterator early (a
        deadline, enough sentences) frees its sequence at the next step."""
        request = Request(prompt, sampling)
        with self._cond:
            if self._closed:
                raise LMError("the decoder is closed")
            self._waiting.append(request)
            self._cond.notify()
        try:
            while True:
                items = [request.out.get()]
                while True:  # what came meanwhile goes out as one piece
                    try:
                        items.append(request.out.get_nowait())
                    except queue.Empty:
                        break
                text = "".join(item for item in items if isinstance(item, str))
                if text:
                    yield text
                if isinstance(items[-1], BaseException):
                    raise items[-1]
                if items[-1] is _END:
                    return
        finally:
            request.cancelled = True

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._thread.join(10)

    # --- the loop (its own thread) ---------------------------------------------------------
    def _loop(self) -> None:
        try:
            while True:
                with self._cond:
                    while not self._closed and not self._waiting and not self._busy():
                        self._cond.wait()
                    if self._closed:
                        return
                    free = sum(slot.request is None for slot in self.slots)
                    seated = min(free, len(self._waiting))
                    newcomers = [self._waiting.popleft() for _ in range(seated)]
                for request in newcomers:
                    self._seat(request)
                self._drop_cancelled()
                plan = self._plan()
                if plan:
                    with STEP_LOCK:
                        began = time.perf_counter()
                        for call in self._calls(plan):
                            self._step(call)
                        self.step_s += time.perf_counter() - began
                    self.steps += 1
        except Exception:
            log.exception("the decode loop failed; its requests fail with it")
        finally:
            with self._cond:
                self._closed = True
                left = [*self._waiting, *(s.request for s in self.slots if s.request)]
                self._waiting.clear()
            for request in left:
                request.out.put(LMError("the decoder stopped"))

    def _busy(self) -> bool:
        return any(slot.request is not None for slot in self.slots)

    def _seat(self, request: Request) -> None:
        """Give a waiting request the free slot sharing the longest prefix with its prompt,
        keeping that prefix's KV cells and dropping the rest."""
        if request.cancelled:
            return
        try:
            tokens = self._model.tokenize(request.prompt.encode("utf-8"), True, True)
            if not tokens or len(tokens) >= self.n_ctx_seq:
                raise LMError(f"a prompt of {len(tokens)} tokens does not fit in a sequence of "
                              f"{self.n_ctx_seq}")  # fmt: skip
            if request.sampling.grammar:
                request.grammar = GrammarConstraint(self._model.vocab, request.sampling.grammar)
        except Exception as exc:
            request.out.put(exc if isinstance(exc, LMError) else LMError(str(exc)))
            return
        shared = {s.seq_id: _common_prefix(s.tokens, tokens) for s in self.slots}
        slot = self._choose(tokens, shared)
        # A prompt all in the cache still has its last token evaluated: the first sample needs
        # its logits.
        keep = min(shared[slot.seq_id], len(tokens) - 1)
        keep = self._copy_prefix(slot, shared, keep, last=len(tokens) - 1)
        memory, seq = self._memory, slot.seq_id
        if keep < len(slot.tokens) and not self._llama.llama_memory_seq_rm(memory, seq, keep, -1):
            keep = 0
        if keep and self._llama.llama_memory_seq_pos_min(memory, seq) > max(0, keep - self.n_swa):
            keep = 0  # a sliding window dropped cells the rest would attend to
        if keep == 0:
            self._llama.llama_memory_seq_rm(memory, seq, -1, -1)
        slot.tokens = slot.tokens[:keep]
        slot.request, slot.used_at = request, next(self._clock)
        request.pending = tokens[keep:]
        request.evaluated = len(request.pending)
        request.status = Status.PREFILL
        request.text = StreamText(tuple(request.sampling.stop))
        # A line mid-reply follows a space: tokenised so, its words are the tokens generated.
        request.bans = run_bans(
            [
                self._model.tokenize(f" {line.strip()}".encode(), False, False)
                for line in request.sampling.avoid
            ]
        )
        request.rng = np.random.default_rng(request.sampling.seed)
        request.stats = RequestStats(
            seq_id=slot.seq_id, prompt=len(tokens), reused=keep, evaluated=len(request.pending),
            waited_s=time.monotonic() - request.queued_at,
        )  # fmt: skip
        self.evaluated += len(request.pending)
        self.reused += keep

    def _copy_prefix(self, slot: Slot, shared: dict[int, int], keep: int, last: int) -> int:
        """Where another sequence holds COPY_MIN tokens more of the prompt than `slot` (every
        story prompt opens with the same examples, and with more prompts than sequences a slot
        rarely holds its own), its cells are copied onto `slot` (llama.cpp copies the stream at
        the next decode: a few ms) instead of read again (~4-6 ms a token); `slot.tokens` then
        are the other's, to be cut at the prefix. `shared`: each slot's tokens in common with
        the prompt; `last`: the most a prompt may keep. -> the tokens of the prompt `slot` holds."""
        others = [s for s in self.slots if s is not slot]
        donor = max(others, key=lambda s: shared[s.seq_id], default=None)
        most = min(shared[donor.seq_id], last) if donor else 0
        if donor is None or most < keep + COPY_MIN:
            return keep
        self._llama.llama_memory_seq_rm(self._memory, slot.seq_id, -1, -1)
        self._llama.llama_memory_seq_cp(self._memory, donor.seq_id, slot.seq_id, -1, -1)
        slot.tokens = list(donor.tokens)
        self.copied += most
        return most

    def _choose(self, tokens: list[int], shared: dict[int, int]) -> Slot:
        """The free slot whose cells this prompt goes on from (it shares at least MIN_SHARED
        tokens and half of what the slot holds), the one sharing most; else the slot of the
        conversation this prompt folds (``_folds``); else the least recently used. A slot
        holding most of another session's prompt is not taken for a few shared tokens (two
        players of one character, a card in common): each would then evict the other's cache
        turn after turn while other slots stood empty. `shared`: each slot's tokens in common
        with the prompt."""
        free = [slot for slot in self.slots if slot.request is None]
        goes_on = [s for s in free if shared[s.seq_id] >= max(MIN_SHARED, (len(s.tokens) + 1) // 2)]
        if goes_on:
            return max(goes_on, key=lambda s: (shared[s.seq_id], -s.used_at))
        folded = [s for s in free if shared[s.seq_id] >= MIN_SHARED and _folds(s, tokens)]
        if folded:
            return max(folded, key=lambda s: (shared[s.seq_id], -s.used_at))
        return min(free, key=lambda s: s.used_at)

    def _drop_cancelled(self) -> None:
        for slot in self.slots:
            if slot.request is not None and slot.request.cancelled:
                self._free(slot)  # its cells stay: its session's next turn may reuse them

    def _plan(self) -> list[tuple[Slot, list[int], bool]]:
        """This step's (slot, tokens, sample after?): a token for every sequence generating,
        then a chunk of each newcomer's prompt, oldest first, in what room is left: chunks of
        one length (the shortest prompt left, or the room shared out), so that they take one
        pass over the weights together (``STEP_TOKENS``)."""
        busy = [slot for slot in self.slots if slot.request is not None]
        plan = [(s, s.request.pending, True) for s in busy if s.request.status is Status.DECODE]
        room = self.step_tokens - len(plan)
        prefill = sorted((s for s in busy if s.request.status is Status.PREFILL),
                         key=lambda s: s.used_at)[: max(room, 0)]  # fmt: skip
        if prefill:
            size = min(min(len(s.request.pending) for s in prefill), room // len(prefill))
            for slot in prefill:
                chunk = slot.request.pending[:size]
                plan.append((slot, chunk, len(chunk) == len(slot.request.pending)))
        return plan

    def _calls(self, plan: list[tuple[Slot, list[int], bool]]) -> list[list]:
        """The step as llama_decode calls: one, unless it has 2 to ``split_outputs`` outputs;
        then a call per output, the prompt chunks that sample nothing with the first."""
        sampled = [entry for entry in plan if entry[2]]
        if not 2 <= len(sampled) <= self.split_outputs:
            return [plan]
        rest = [entry for entry in plan if not entry[2]]
        return [[sampled[0], *rest], *([entry] for entry in sampled[1:])]

    def _step(self, plan: list[tuple[Slot, list[int], bool]]) -> None:
        """Decode the plan's tokens in one batch and sample where asked. If the batch fails,
        each sequence is tried alone, so only the one at fault fails."""
        batch, outputs = fill_batch(self._batch.batch, plan)
        rc = self._llama.llama_decode(self._ctx, batch)
        if rc != 0:
            for slot, _, _ in plan:  # what was decoded of a failed batch may have stayed
                self._llama.llama_memory_seq_rm(self._memory, slot.seq_id, len(slot.tokens), -1)
            if len(plan) == 1:
                self._fail(plan[0][0], LMError(f"llama_decode returned {rc}"), clear=True)
            else:
                for entry in plan:
                    self._step([entry])
            return
        for slot, tokens, _ in plan:
            slot.tokens.extend(tokens)
            slot.request.pending = slot.request.pending[len(tokens) :]
        if outputs:  # every output's logits in one call, in the batch's order
            pointer = self._llama.llama_get_logits(self._ctx)
            rows = np.ctypeslib.as_array(pointer, shape=(len(outputs), self.n_vocab))
            for (slot, _), logits in zip(outputs, rows, strict=True):
                self._sample(slot, logits)

    def _sample(self, slot: Slot, logits: np.ndarray) -> None:
        request = slot.request
        s = request.sampling
        try:
            head = tuple(request.generated[-(AVOID_RUN - 1) :])
            bans = request.bans.get(head)
            token = sample(logits, request.generated, s, request.rng, bans, request.grammar)
            if request.grammar is not None:
                request.grammar.accept(token)
            request.generated.append(token)
            self.generated += 1
            if len(request.generated) == 1:
                request.stats.prefill_s = time.monotonic() - request.queued_at
                request.stats.prefill_s -= request.stats.waited_s
            eog = self._eog.get(token)
            if eog is None:
                eog = self._eog[token] = bool(
                    self._llama.llama_vocab_is_eog(self._model.vocab, token)
                )
            if eog:
                self._finish(slot)
                return
            piece = request.text.add(self._piece(token))
            if piece:
                request.out.put(piece)
            full = 0 < s.max_tokens <= len(request.generated)
            if request.text.stopped or full or len(slot.tokens) + 1 >= self.n_ctx_seq:
                self._finish(slot)
                return
            request.pending, request.status = [token], Status.DECODE
        except Exception as exc:
            self._fail(slot, exc)

    def _piece(self, token: int) -> bytes:
        if token in self._pieces:
            return self._pieces[token]
        self._pieces[token] = self._piece_of(token)
        return self._pieces[token]

    def _piece_of(self, token: int) -> bytes:
        to_piece, vocab = self._llama.llama_token_to_piece, self._model.vocab
        n = to_piece(vocab, token, self._piece_buffer, len(self._piece_buffer), 0, False)
        if n < 0:  # a longer piece than the buffer
            self._piece_buffer = ctypes.create_string_buffer(-n)
            n = to_piece(vocab, token, self._piece_buffer, len(self._piece_buffer), 0, False)
        return self._piece_buffer.raw[:n]

    def _finish(self, slot: Slot) -> None:
        request = slot.request
        tail = request.text.flush()
        if tail:
            request.out.put(tail)
        self._free(slot)  # first: a reader that has its end finds its stats in ``finished``
        request.out.put(_END)

    def _fail(self, slot: Slot, exc: Exception, *, clear: bool = False) -> None:
        request = slot.request
        if clear:
            self._llama.llama_memory_seq_rm(self._memory, slot.seq_id, -1, -1)
            slot.tokens = []
        self._free(slot)
        request.out.put(exc if isinstance(exc, LMError) else LMError(repr(exc)))

    def _free(self, slot: Slot) -> None:
        if slot.request.grammar is not None:
            slot.request.grammar.close()
        stats = slot.request.stats
        if stats is not None:
            stats.generated = len(slot.request.generated)
            spent = time.monotonic() - slot.request.queued_at
            stats.decode_s = max(0.0, spent - stats.waited_s - stats.prefill_s)
            self.finished.append(stats)
        slot.request.status = Status.FINISHED
        slot.request = None
        slot.used_at = next(self._clock)
