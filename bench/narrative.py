"""Narrative benchmark: story pairs and character replies per second at 1, 4 and 8 concurrent
sessions asking without pause (the flood) and replies at 8 sessions at a human pace, and the
frame rate of 8 live players while they chat both ways beside the same without chat, in one run.

    .venv/bin/python bench/narrative.py [--seconds 20] [--sessions 1 4 8] [--backend ...]
        [--no-screen] [--stories N]

Every generated line (each partial of a reply too) passes moderation's play screening, as in
the worker (``--no-screen``: none, as the bench did before December 2).

Part 1 first times a pick alone (``pick_waits``): its line and next pair written one after the
other, as the worker did before December 6, beside the same with the line written beside the
pair (``Narrator.offer`` with the pick). Then it drives the narrator through the worker's own
generation runner (``NARRATIVE_LM_CONCURRENCY`` jobs at once, never two of a session), each
session asking for its next pair (after picking the first option: the pick's line too, as the
worker asks) or reply as soon as the last one came back; for replies also the time to the
model's first piece. Characters keep their whole memory, as the worker keeps it; each one's
first reply (its card read cold, every session at once) is timed apart, before the window. Then
the paced run: replies at the largest session count, each session's next line an exponential gap
of mean ``PACE_S`` (6 s: reading the reply, typing the next line) after its reply came, for
``PACED_LONGER`` times the window. Per cell, what the embedded model's decode loop did
(``DecoderWatch``): prompt tokens per request reused from its sequence and evaluated, long
reads, tokens generated, tokens/s. Last, one long talk alone (``long_talk``: 40 exchanges, the
world changing every 5): what the model read per turn, the memory's folds, the reply time.

Part 2 runs a real InferenceWorker in this process (in-memory channel layer and placement, the
shipped world model) with 8 character sessions (``--stories N``: the last N story worlds, whose
players pick an option where the others say a line and wait for the next pair, its pick's line
with it, where they wait for the reply), each player holding a key: N seconds without
chat, N seconds in which every player says a line, waits for the whole reply and says the next,
2N seconds in which each says its next line a paced gap after the reply, then N seconds without
chat again; per player the frame rate of each window and the replies, with the first partial
line and the whole reply p50/p99 of each chat window and the decode loop's account. The tables
are printed before the worker is stopped. If the worker's run() ends mid-run the bench exits
with its exception instead of waiting; a stop that hangs is reported and cut short; a stage that
makes no progress within its bound (``Watchdog``) prints every thread's stack and every asyncio
task's, and the bench exits with status 3.

Part 1 prints markdown tables, part 2 one per player (as bench/play.py does). Medians and p99s
only: nothing here is asserted. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import asyncio
import faulthandler
import logging
import os
import random
import statistics
import sys
import threading
import time
import uuid
from concurrent.futures import wait
from dataclasses import dataclass, field, replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from inference.narrative import engine, wording  # noqa: E402
from inference.narrative.backends import NarrativeConfig  # noqa: E402
from inference.narrative.evaluate import ORDINARY, PERSONAS, STORIES  # noqa: E402
from inference.narrative.narrator import Narrator  # noqa: E402
from inference.narrative.runner import GenerationRunner  # noqa: E402
from inference.serving import messages as m  # noqa: E402
from inference.serving.session import SessionStatus  # noqa: E402
from inference.world import text as text_encoder  # noqa: E402

FPS = 24.0
PLAYERS = 8
# The paced runs: a player reads the reply and types the next line, an exponential gap of this
# mean (seconds) after the reply came; the paced window runs this many times as long as the
# flood's, so it holds as many replies to take medians of.
PACE_S = 6.0
PACED_LONGER = 2.0


class FirstPiece:
    """Wraps a model to time, per thread, its first streamed piece that is not blank: the
    runner runs each job on one thread, and the job streams on that thread."""

    def __init__(self, lm) -> None:
        self.lm = lm
        self.name = lm.name
        self._job = threading.local()

    def __getattr__(self, name):  # load() and the rest, as the model has them
        return getattr(self.lm, name)

    def begin(self) -> None:
        self._job.first = None

    def first(self) -> float | None:
        return getattr(self._job, "first", None)

    def complete(self, prompt, sampling):
        yield from self._timed(self.lm.complete(prompt, sampling))

    def chat(self, messages, sampling, prefill=""):
        yield from self._timed(self.lm.chat(messages, sampling, prefill=prefill))

    def _timed(self, pieces):
        for piece in pieces:
            if getattr(self._job, "first", False) is None and piece.strip():  # after begin()
                self._job.first = time.monotonic()
            yield piece


LONG_READ = 64  # prompt tokens evaluated for one request past which it counts as a long read


class DecoderWatch:
    """What an embedded model's decode loop did between ``__init__`` and ``read()``: per
    request the prompt tokens evaluated and reused and the tokens generated (medians), and the
    loop's tokens per second of step time. Empty for a model without a decoder (openai)."""

    def __init__(self, lm) -> None:
        self.decoder = getattr(lm, "decoder", None) if lm is not None else None
        if self.decoder is None:
            return
        d = self.decoder
        self.seen = {id(stats) for stats in d.finished}
        self.start = (d.evaluated, d.generated, d.step_s, d.steps, time.monotonic())

    def read(self) -> dict:
        if self.decoder is None:
            return {}
        d = self.decoder
        done = [stats for stats in d.finished if id(stats) not in self.seen]
        evaluated, generated, step_s, steps, began = self.start
        busy = d.step_s - step_s
        tokens = d.evaluated - evaluated + d.generated - generated

        def median(values):
            return statistics.median(values) if values else float("nan")

        def mean(values):
            return statistics.fmean(values) if values else float("nan")

        return {
            "requests": len(done),
            "prompt": median([s.prompt for s in done]),
            "reused": median([s.reused for s in done]),
            "evaluated": median([s.evaluated for s in done]),
            "evaluated_mean": mean([s.evaluated for s in done]),
            "generated": median([s.generated for s in done]),
            "generated_mean": mean([s.generated for s in done]),
            "long_reads": sum(s.evaluated > LONG_READ for s in done),
            "long_share": sum(s.evaluated for s in done if s.evaluated > LONG_READ)
            / max(1, sum(s.evaluated for s in done)),
            "prefill_s": median([s.prefill_s for s in done]),
            "decode_s": median([s.decode_s for s in done]),
            "tokens_per_s": tokens / busy if busy else float("nan"),
            "ms_per_step": 1000 * busy / max(1, d.steps - steps),
            "busy": busy / max(1e-9, time.monotonic() - began),
        }


def throughput(
    narrator: Narrator, sessions: int, seconds: float, kind: str, gap_s: float = 0.0
) -> dict:
    """Each session keeps one job in flight, on a runner as the worker makes it (the narrator's
    concurrency), and asks again as soon as its answer comes (``gap_s`` 0: the flood) or after
    an exponential gap of mean ``gap_s`` (a player reading and typing); -> jobs/s, latency
    p50/p99, first piece p50/p99 (replies), grammar share, and what the decode loop did
    (``DecoderWatch``). A character keeps its whole memory, as the worker keeps it. Each
    character's first reply (its card read cold, every session at once) comes before the
    window and is timed apart (``cold_p50``): in the window a session's sequence holds its
    card, as it does for a player after the first line."""
    runner = GenerationRunner(
        name="bench", per_session=2, max_jobs=64, concurrency=narrator.concurrency
    )
    timer = narrator.chat_lm if isinstance(narrator.chat_lm, FirstPiece) else None
    rng = random.Random(sessions)
    latencies: list[float] = []
    firsts: list[float] = []
    grammar = 0
    states = {}
    for i in range(sessions):
        opening, world = STORIES[i % len(STORIES)]
        if kind == "pairs":
            states[i] = (engine.story_start(opening, world), world, None)
        else:
            states[i] = (engine.character_start(PERSONAS[i % len(PERSONAS)]), world, None)
    in_flight = {}
    due: dict[int, tuple[float, int]] = {}  # session -> (when it asks next, its turn)

    def reply(state, world, line, turn, deadline):
        # -> (answer, when its first piece came); the line is said when the job starts, as
        # the worker's runner starts it (a wait in the runner's queue counts in the latency).
        if timer is not None:
            timer.begin()
        answer = narrator.reply(state, world, line, turn, deadline)
        return answer, timer.first() if timer is not None else None

    def submit(i: int, turn: int):
        state, world, picked = states[i]
        if kind == "pairs":  # after a pick, its line too, as the worker asks (``Narrator.offer``)
            job = lambda d, s=state, w=world: (narrator.offer(s, w, turn, d, picked), None)  # noqa: E731
        else:
            line = ORDINARY[turn % len(ORDINARY)]
            job = lambda d, s=state, w=world: reply(s, w, line, turn, d)  # noqa: E731
        in_flight[i] = (runner.submit(str(i), job, timeout_s=30.0), time.monotonic(), turn)

    def gap() -> float:
        return rng.expovariate(1.0 / gap_s) if gap_s > 0 else 0.0

    cold = []
    if kind == "replies":
        for i in range(sessions):
            submit(i, 0)
        for i, (future, started, _) in list(in_flight.items()):
            answer, _ = future.result()
            cold.append(time.monotonic() - started)
            states[i] = (answer.state, states[i][1], None)
        in_flight.clear()
    watch = DecoderWatch(narrator.story_lm if kind == "pairs" else narrator.chat_lm)
    end = time.monotonic() + seconds
    now = time.monotonic()
    for i in range(sessions):
        due[i] = (now + gap(), 1 if cold else 0)
    done_jobs = 0
    while in_flight or due:
        now = time.monotonic()
        for i, (when, turn) in list(due.items()):
            if when <= now:
                del due[i]
                submit(i, turn)
        if not in_flight:
            time.sleep(max(0.0, min(when for when, _ in due.values()) - now))
            continue
        next_due = min((when for when, _ in due.values()), default=None)
        timeout = None if next_due is None else max(0.0, next_due - now)
        wait([f for f, _, _ in in_flight.values()], timeout, return_when="FIRST_COMPLETED")
        for i, (future, started, turn) in list(in_flight.items()):
            if not future.done():
                continue
            del in_flight[i]
            answer, first = future.result()
            latencies.append(time.monotonic() - started)
            if first is not None:
                firsts.append(first - started)
            done_jobs += 1
            grammar += answer.backend == "grammar"
            state, world, picked = answer.state, states[i][1], None
            if kind == "pairs":  # pick the first option, apply it and go on
                state, picked = engine.story_pick(state, state.choice_id, 0)
                world = engine.apply_to_description(world, picked.event)
            states[i] = (state, world, picked)
            next_at = time.monotonic() + gap()
            if next_at < end:
                due[i] = (next_at, turn + 1)
    elapsed = seconds + max(0.0, time.monotonic() - end)
    runner.close()
    return {
        "rate": done_jobs / elapsed,
        "count": done_jobs,
        "p50": percentile(latencies, 0.5),
        "p99": percentile(latencies, 0.99),
        "first_p50": percentile(firsts, 0.5),
        "first_p99": percentile(firsts, 0.99),
        "grammar": grammar / max(1, done_jobs),
        "cold_p50": percentile(cold, 0.5),
        "decoder": watch.read(),
    }


def first_replies(narrator: Narrator, rounds: int = 2) -> dict[str, list[float]]:
    """One session at a time, a character's first reply: its card read cold in the reply, or
    read ahead (``Narrator.preread``, as the worker does while the greeting shows) and only
    the reply timed. Each card is one no sequence holds yet (a number after the name)."""
    out: dict[str, list[float]] = {"cold": [], "ahead": []}
    for k in range(rounds):
        for i, persona in enumerate(PERSONAS):
            world = STORIES[i % len(STORIES)][1]
            for mode in out:
                card = {**persona, "name": f"{persona['name']} {k}{mode[0]}"}
                state, _ = engine.character_greet(engine.character_start(card))
                if mode == "ahead":
                    narrator.preread(state, world, time.monotonic() + 30)
                started = time.monotonic()
                narrator.reply(state, world, ORDINARY[i % len(ORDINARY)], 1, started + 30)
                out[mode].append(time.monotonic() - started)
    return out


def pick_waits(narrator: Narrator, rounds: int = 2) -> dict[str, list[float]]:
    """One session alone, the wait from a pick to its line and the next pair: the line written
    and then the pair (``narrate``, then ``offer``: the worker before December 6) or the line
    beside the pair (``offer`` with the pick), each from the same pick, in turns."""
    out: dict[str, list[float]] = {"in turn": [], "beside": []}
    for k in range(rounds):
        for i, (opening, world) in enumerate(STORIES):
            story = narrator.offer(engine.story_start(opening, world), world, k, _soon()).state
            story, picked = engine.story_pick(story, story.choice_id, (i + k) % 2)
            after = engine.apply_to_description(world, picked.event)
            for mode in ("in turn", "beside") if (i + k) % 2 else ("beside", "in turn"):
                started = time.monotonic()
                if mode == "beside":
                    narrator.offer(story, after, k + 1, _soon(), picked)
                else:
                    told = narrator.narrate(story, picked, after, _soon()).state
                    narrator.offer(told, after, k + 1, _soon())
                out[mode].append(time.monotonic() - started)
    return out


def _soon() -> float:
    return time.monotonic() + 30.0


def print_throughput(narrator: Narrator, seconds: float, sessions: tuple[int, ...]) -> None:
    if narrator.story_lm is not None:
        waits = pick_waits(narrator)
        turn, beside = (percentile(waits[m], 0.5) for m in ("in turn", "beside"))
        print("\n| a pick's line and next pair, alone | line, then pair p50 | line beside the "
              "pair p50 | ratio | picks |")  # fmt: skip
        print("| --- | --- | --- | --- | --- |")
        print(f"| {narrator.story_lm.name} | {turn:.2f} s | {beside:.2f} s | "
              f"{beside / turn:.2f} | {len(waits['beside'])} each |")  # fmt: skip
    if narrator.chat_lm is not None:
        first = first_replies(narrator)
        print("\n| a session's first reply, alone | card read in the reply p50 | card read ahead "
              "while the greeting shows p50 | replies |")  # fmt: skip
        print("| --- | --- | --- | --- |")
        print(f"| {narrator.chat_lm.name} | {percentile(first['cold'], 0.5):.2f} s | "
              f"{percentile(first['ahead'], 0.5):.2f} s | {len(first['cold'])} each |")  # fmt: skip
    print(f"\nrunner: {narrator.concurrency} job(s) at once; flood: each session asks again as "
          f"soon as its answer comes; paced: replies only, {max(sessions)} sessions, each "
          f"asking an exponential gap of mean {PACE_S:g} s after its reply came")  # fmt: skip
    print("\n| sessions | pairs/s (each with its pick's line) | pair p50 | pair p99 | grammar "
          "| replies/s | reply 1st piece p50 | reply 1st piece p99 | reply p50 | reply p99 "
          "| grammar | first replies p50 (cards read cold, all at once, before the window) "
          "|")  # fmt: skip
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    loops = []

    def row(label: str, pairs: dict | None, replies: dict) -> None:
        cells = "| | | | " if pairs is None else (
            f"{pairs['rate']:.2f} | {pairs['p50']:.2f} s | {pairs['p99']:.2f} s | "
            f"{pairs['grammar']:.0%} | ")  # fmt: skip
        print(f"| {label} | {cells}{replies['rate']:.2f} | {replies['first_p50']:.2f} s | "
              f"{replies['first_p99']:.2f} s | {replies['p50']:.2f} s | {replies['p99']:.2f} s | "
              f"{replies['grammar']:.0%} | {replies['cold_p50']:.2f} s |", flush=True)  # fmt: skip

    for n in sessions:
        pairs = throughput(narrator, n, seconds, "pairs")
        replies = throughput(narrator, n, seconds, "replies")
        loops += [(str(n), "pairs", pairs["decoder"]), (str(n), "replies", replies["decoder"])]
        row(str(n), pairs, replies)
    n = max(sessions)
    paced = throughput(narrator, n, PACED_LONGER * seconds, "replies", gap_s=PACE_S)
    loops.append((f"{n} paced", "replies", paced["decoder"]))
    row(f"{n} paced ({paced['count']} replies)", None, paced)
    print_loops(loops)
    if narrator.chat_lm is not None:
        print_long_talk(narrator)


LONG_TALK = 40  # exchanges of the long talk
WORLD_EVERY = 5  # its world changes every this many exchanges


def long_talk(narrator: Narrator, exchanges: int = LONG_TALK, every: int = WORLD_EVERY) -> dict:
    """One character talking alone for `exchanges` turns while its world changes every `every`
    (the time of day moving on, the weather turning), as a long session goes: what the model
    read per turn (the decoder's account), how often the memory folded, the reply time. Its
    card is one no sequence holds yet, read ahead as the worker reads it while the greeting
    shows; every turn after that is counted."""
    persona = PERSONAS[0]
    _, world = STORIES[0]
    card = {**persona, "name": f"{persona['name']} {uuid.uuid4().hex[:4]}"}
    state, _ = engine.character_greet(engine.character_start(card))
    narrator.preread(state, world, time.monotonic() + 30)
    watch, folds, times = DecoderWatch(narrator.chat_lm), 0, []
    weathers, hours = ("clear", "rain", "fog", "snow"), ("dawn", "day", "dusk", "night")
    for turn in range(exchanges):
        if turn and turn % every == 0:
            k = turn // every
            world = {**world, "weather": weathers[k % 4], "time": hours[(k + 1) % 4]}
        started = time.monotonic()
        answer = narrator.reply(state, world, ORDINARY[turn % len(ORDINARY)], turn, started + 30)
        times.append(time.monotonic() - started)
        folds += bool(answer.state.summary) and answer.state.summary != state.summary
        state = answer.state
    return {"decoder": watch.read(), "folds": folds, "p50": percentile(times, 0.5),
            "p99": percentile(times, 0.99), "exchanges": exchanges}  # fmt: skip


def print_long_talk(narrator: Narrator) -> None:
    talk = long_talk(narrator)
    d = talk["decoder"]
    if not d:
        return
    print(f"\none talk alone: {talk['exchanges']} exchanges, the world changing every "
          f"{WORLD_EVERY}")  # fmt: skip
    print("\n| prompt tokens (median) | evaluated per turn (mean) | reads of > "
          f"{LONG_READ} (their share of evaluated) | memory folds | generated (mean) | reply "
          "p50 | reply p99 |")  # fmt: skip
    print("| --- | --- | --- | --- | --- | --- | --- |")
    print(f"| {d['prompt']:.0f} | {d['evaluated']:.0f} ({d['evaluated_mean']:.0f}) | "
          f"{d['long_reads']} ({d['long_share']:.0%}) | {talk['folds']} | {d['generated']:.0f} "
          f"({d['generated_mean']:.0f}) | {talk['p50']:.2f} s | {talk['p99']:.2f} s |",
          flush=True)  # fmt: skip


def print_loops(loops: list[tuple[str, str, dict]]) -> None:
    """Where a request's time went, per cell: medians (and means) per model request (a pair
    reads up to 3 completions), and the decode loop's throughput while it ran."""
    loops = [(n, kind, d) for n, kind, d in loops if d]
    if not loops:
        return
    print(
        "\n| sessions | requests of | model requests | prompt tokens | reused | evaluated "
        f"(mean) | reads of > {LONG_READ} (their share of evaluated) | generated (mean) | seated "
        "to 1st token | 1st token to end | loop tokens/s | ms/step | loop busy |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for n, kind, d in loops:
        print(
            f"| {n} | {kind} | {d['requests']} | {d['prompt']:.0f} | {d['reused']:.0f} | "
            f"{d['evaluated']:.0f} ({d['evaluated_mean']:.0f}) | {d['long_reads']} "
            f"({d['long_share']:.0%}) | {d['generated']:.0f} "
            f"({d['generated_mean']:.0f}) | {d['prefill_s']:.2f} s | {d['decode_s']:.2f} s | "
            f"{d['tokens_per_s']:.0f} | {d['ms_per_step']:.0f} | {d['busy']:.0%} |"
        )


# --- part 2: frames of 8 live players, with and without chat --------------------------------

START_S = 240.0  # every world built and live (8 builds queue on one engine thread)
WARM_S = 10.0  # the first chunks grown, buffers full
STOP_S = 30.0  # a graceful stop; past it the worker's task is cancelled
SLACK_S = 60.0  # how far past its own bound a stage may run before the watchdog ends the bench


class Watchdog:
    """Ends a run that stops making progress. Each stage says how long it may take
    (``expect``); past that and ``SLACK_S`` more, the watchdog's thread prints what every thread
    and every asyncio task of the loop is waiting on and exits the process with status 3. (Runs
    on the loaded machine sat for good with the event loop idle in select, unexplained: the
    next one that does says where.)"""

    def __init__(self) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None
        self._stage, self._deadline = "starting", float("inf")
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="bench-watchdog", daemon=True)
        self._thread.start()

    def expect(self, stage: str, within_s: float) -> None:
        with self._lock:
            self._stage, self._deadline = stage, time.monotonic() + within_s + SLACK_S
        print(f"[bench] {stage} (at most {within_s:.0f} s)", file=sys.stderr, flush=True)

    def stop(self) -> None:
        self._done.set()

    def _watch(self) -> None:
        while not self._done.wait(1.0):
            with self._lock:
                stage, late = self._stage, time.monotonic() > self._deadline
            if late:
                self._dump(stage)
                os._exit(3)

    def _dump(self, stage: str) -> None:
        print(f"\n[bench] STALLED in {stage!r}: every thread, then every asyncio task",
              file=sys.stderr, flush=True)  # fmt: skip
        faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
        if self.loop is not None:
            for task in list(asyncio.all_tasks(self.loop)):  # read from this thread: a sketch
                print(f"--- {task.get_name()}: {task!r}", file=sys.stderr)
                task.print_stack(limit=8, file=sys.stderr)
        sys.stderr.flush()


def run_bounded(main, watchdog: Watchdog):
    """asyncio.run(main), with a bounded end: asyncio.run waits without a bound for the default
    executor's threads (Python 3.11), so one thread stuck in a worker's ``to_thread`` call would
    hold the bench after its last table. -> main's result, and the names of threads left."""
    loop = asyncio.new_event_loop()
    watchdog.loop = loop
    try:
        result = loop.run_until_complete(main)
        pending = asyncio.all_tasks(loop)
        for task in pending:
            task.cancel()
        if pending:
            loop.run_until_complete(asyncio.wait(pending, timeout=STOP_S))
        watchdog.expect("shutting down the default executor", STOP_S)
        try:
            loop.run_until_complete(asyncio.wait_for(loop.shutdown_default_executor(), STOP_S))
        except TimeoutError:
            pass
    finally:
        loop.close()
    left = [t.name for t in threading.enumerate() if t.name.startswith("asyncio_")]
    return result, left


class WorkerDied(RuntimeError):
    """The in-process worker's ``run()`` ended (or a bench listener failed) mid-measurement."""


@dataclass
class Player:
    """One live session as its player's socket sees it: frames counted, lines said and heard."""

    session_id: str
    index: int
    character: str  # who answers: the persona's name (the echo of our own line has another)
    story: bool = False  # a story world's player: picks an option instead of saying a line
    choice_id: str = ""  # the pair on offer (story players), as the last choices message said
    channel: str = ""
    status: str = ""  # the last session.status state
    frames: int = 0  # frames received so far
    chatting: bool = False
    gap_s: float = 0.0  # the next line follows a reply at once (0), or after a gap of this mean
    turn: int = 0
    said_at: float = 0.0
    answered: bool = True  # the last line said has its whole reply
    streamed: bool = False  # the reply to the line in flight sent a partial line
    firsts: list[float] = field(default_factory=list)  # first partial line, s after saying
    replies: list[float] = field(default_factory=list)  # whole reply (next pair), s after saying
    whole: int = 0  # replies with no partial line before the final one (the grammar's, or a
    # model's whose stream stopped at a sentence the reply drops)
    errors: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Talk:
    """One player's replies in one chat window."""

    firsts: tuple[float, ...]
    replies: tuple[float, ...]
    whole: int

    @classmethod
    def of(cls, player: Player) -> Talk:
        return cls(tuple(player.firsts), tuple(player.replies), player.whole)


def frame_groups(session_id: str) -> list[str]:
    """Where the worker sends this player's frames: the session's group, and (multi-player
    sessions) slot 0's camera group; each frame goes to one of them, so none is counted twice."""
    groups = [m.session_group(session_id)]
    if hasattr(m, "camera_group"):
        groups.append(m.camera_group(session_id, 0))
    return groups


async def while_alive(awaitable, watched: list[asyncio.Task]):
    """Await ``awaitable``; if a watched task (the worker's ``run()``, a listener) ends first,
    raise WorkerDied from its exception instead of waiting on a worker that is gone."""
    job = asyncio.ensure_future(awaitable)
    await asyncio.wait({job, *watched}, return_when=asyncio.FIRST_COMPLETED)
    if job.done():
        return job.result()
    job.cancel()
    await asyncio.gather(job, return_exceptions=True)
    ended = next(t for t in watched if t.done())
    exc = None if ended.cancelled() else ended.exception()
    raise WorkerDied(f"{ended.get_name()} ended mid-run: {exc!r}") from exc


async def say(layer, worker, player: Player) -> None:
    """The player's next line, or a story player's pick of the pair on offer."""
    player.said_at, player.streamed, player.answered = time.monotonic(), False, False
    if player.story:
        option = player.turn % 2
        message = m.Choose(session_id=player.session_id, choice_id=player.choice_id, option=option)
    else:
        text = ORDINARY[player.turn % len(ORDINARY)]
        message = m.Say(session_id=player.session_id, text=text)
    await layer.send(m.worker_channel(worker.name), message.to_message())


async def say_later(layer, worker, player: Player, rng: random.Random) -> None:
    """The player's next line, after an exponential gap of mean ``gap_s`` (reading the reply,
    typing), if the window is still open then."""
    await asyncio.sleep(rng.expovariate(1.0 / player.gap_s))
    if player.chatting:
        await say(layer, worker, player)


async def listen(layer, worker, player: Player) -> None:
    """Everything the worker sends this player; while chatting, the next line follows each
    whole reply (at once, or after a gap). The only receive() on the channel, for the run."""
    rng, later = random.Random(player.index), set()
    while True:
        message = await layer.receive(player.channel)
        kind = message["type"]
        if kind == "session.frame":
            player.frames += 1
        elif kind == "session.status":
            player.status = message["state"]
        elif kind == "session.choices" and message["choice_id"] not in ("", player.choice_id):
            player.choice_id = message["choice_id"]  # a new pair: what the last pick waited for
            if player.chatting and not player.answered:
                player.replies.append(time.monotonic() - player.said_at)
                await answered(layer, worker, player, rng, later)
            else:
                player.answered = True
        elif kind == "session.error":  # a refused line: this player stops chatting
            player.errors.append(message["code"])
        elif kind == "session.say" and player.chatting and message["speaker"] == player.character:
            took = time.monotonic() - player.said_at
            if message.get("partial"):
                if not player.streamed:
                    player.streamed = True
                    player.firsts.append(took)
                continue
            player.replies.append(took)
            player.whole += not player.streamed
            await answered(layer, worker, player, rng, later)
        elif kind == "session.say" and message["speaker"] == player.character:
            player.answered |= not message.get(
                "partial"
            )  # the reply to a line of a window that has closed


async def answered(layer, worker, player: Player, rng: random.Random, later: set) -> None:
    """The answer to the player's line (or pick) came; its next one follows at once, or after
    a gap (``say_later``)."""
    player.turn += 1
    player.answered = True
    if player.gap_s > 0:
        task = asyncio.create_task(say_later(layer, worker, player, rng))
        later.add(task)
        task.add_done_callback(later.discard)
    else:
        await say(layer, worker, player)


async def attach(layer, worker, placement, player: Player) -> None:
    persona = PERSONAS[player.index % len(PERSONAS)]
    card = m.CharacterCard(
        name=persona["name"], persona=persona["persona"], greeting=persona["greeting"],
        examples=tuple(persona.get("examples", ())),
    )  # fmt: skip
    placement.reserve_slot(player.session_id)
    message = m.Attach(
        session_id=player.session_id, prompt="a quiet meadow", seed=40 + player.index,
        category="characters", character=card,
    )  # fmt: skip
    if player.story:
        opening = STORIES[player.index % len(STORIES)][0]
        message = replace(message, category="stories", character=None, story_opening=opening)
    await layer.send(m.worker_channel(worker.name), message.to_message())


async def all_live(layer, worker, placement, players: list[Player], watched) -> None:
    """Attach every player and wait until each session is live. On a loaded machine a late
    heartbeat can get the worker reaped and its sessions dropped: attach what is missing again."""
    for player in players:
        await attach(layer, worker, placement, player)
    give_up = time.monotonic() + START_S
    while True:
        live = [p for p in players if getattr(worker.sessions.get(p.session_id), "status", None)
                is SessionStatus.LIVE]  # fmt: skip
        if len(live) == len(players):
            return
        if time.monotonic() > give_up:
            states = {p.index: p.status or "nothing heard" for p in players if p not in live}
            raise RuntimeError(f"{len(live)} of {len(players)} sessions live after "
                               f"{START_S:.0f} s; the others: {states}")  # fmt: skip
        await while_alive(asyncio.sleep(2.0), watched)
        for player in players:
            if player.session_id not in worker.sessions:
                await attach(layer, worker, placement, player)


async def phase(
    seconds: float, players: list[Player], watched, chat_with=None, gap_s: float = 0.0
) -> list[float]:
    """One measured window; -> each player's frames per second in it. ``chat_with``: (layer,
    worker) to chat through: every player says a line, waits for the whole reply and says the
    next, at once (``gap_s`` 0) or after an exponential gap of mean ``gap_s`` (the first line
    too, so the players do not all speak at once). Each player's replies of the window are in
    its ``firsts``, ``replies`` and ``whole``."""
    for player in players:
        player.firsts, player.replies, player.whole = [], [], 0
    counted = [p.frames for p in players]
    started = time.monotonic()
    if chat_with is not None:
        rng, first_lines = random.Random(len(players)), []
        for player in players:
            player.chatting, player.gap_s = True, gap_s
            if gap_s > 0:
                first_lines.append(asyncio.create_task(say_later(*chat_with, player, rng)))
            else:
                await say(*chat_with, player)
    await while_alive(asyncio.sleep(seconds), watched)
    for player in players:
        player.chatting = False  # a reply still on its way is not counted
    elapsed = time.monotonic() - started
    fps = [(p.frames - n) / elapsed for p, n in zip(players, counted, strict=True)]
    give_up = time.monotonic() + 15.0
    while not all(p.answered for p in players) and time.monotonic() < give_up:
        await while_alive(asyncio.sleep(0.2), watched)  # the next window starts with none due
    return fps


async def stop_worker(worker, task: asyncio.Task) -> None:
    """Stop the worker, bounded: a stop that hangs is reported and its task cancelled, so the
    bench ends either way."""
    if not task.done():
        try:
            await asyncio.wait_for(worker.stop(handover=False), STOP_S)
        except TimeoutError:
            print(f"warning: worker.stop() did not return in {STOP_S:.0f} s; cancelling its "
                  "task", file=sys.stderr, flush=True)  # fmt: skip
            task.cancel()
        await asyncio.wait({task}, timeout=STOP_S)
    if not task.done():
        raise RuntimeError(f"the worker's run() did not end within {STOP_S:.0f} s of cancelling")


async def live_players(
    narrator: Narrator, seconds: float, watchdog: Watchdog, report, stories: int = 0
) -> dict:
    """A real worker in this process (in-memory layer and placement, the shipped world model)
    with 8 sessions, every player walking: quiet, chatting, quiet again (a drift of the shared
    machine shows as two quiet rows apart). The last `stories` are story worlds, whose players
    pick an option where the others say a line, and wait for the next pair where they wait for
    the reply. ``report(result)`` is called before the worker is stopped."""
    from channels.layers import InMemoryChannelLayer

    from inference.serving.config import WorkerConfig
    from inference.serving.placement import InMemoryPlacement
    from inference.serving.worker import InferenceWorker

    layer = InMemoryChannelLayer(capacity=1000)
    placement = InMemoryPlacement()
    config = WorkerConfig(name="bench", capacity=PLAYERS, fps=FPS)
    worker = InferenceWorker(config, channel_layer=layer, placement=placement, narrator=narrator)
    task = asyncio.create_task(worker.run(), name="worker.run()")
    players = [
        Player(str(uuid.uuid4()), i, PERSONAS[i % len(PERSONAS)]["name"])
        if i < PLAYERS - stories
        else Player(str(uuid.uuid4()), i, "", story=True)
        for i in range(PLAYERS)
    ]
    listeners: list[asyncio.Task] = []
    try:
        watchdog.expect("loading the world model", 120)
        await while_alive(worker.wait_ready(120), [task])
        for player in players:
            player.channel = await layer.new_channel()
            for group in frame_groups(player.session_id):
                await layer.group_add(group, player.channel)
            listener = listen(layer, worker, player)
            listeners.append(asyncio.create_task(listener, name=f"listener {player.index}"))
        watched = [task, *listeners]
        watchdog.expect(f"building {PLAYERS} worlds", START_S)
        await all_live(layer, worker, placement, players, watched)
        for player in players:  # every player walks, so the canvas keeps growing
            keys = ("d",) if player.index % 2 else ("s",)
            message = m.Input(session_id=player.session_id, seq=1, keys=keys)
            await layer.send(m.worker_channel(worker.name), message.to_message())
        watchdog.expect("warming up", WARM_S)
        warm = await phase(WARM_S, players, watched)
        if not all(warm):
            silent = [p.index for p, fps in zip(players, warm, strict=True) if not fps]
            raise RuntimeError(f"players {silent} got no frames in {WARM_S:.0f} s of warm-up "
                               f"(listening on {frame_groups('<id>')})")  # fmt: skip
        watchdog.expect("measuring without chat", seconds)
        before = await phase(seconds, players, watched)
        watchdog.expect("measuring while chatting", seconds + 15)
        watch, story_watch = DecoderWatch(narrator.chat_lm), DecoderWatch(narrator.story_lm)
        chatting = await phase(seconds, players, watched, chat_with=(layer, worker))
        flood, flood_loop = [Talk.of(p) for p in players], watch.read()
        story_flood_loop = story_watch.read()
        watchdog.expect("measuring while chatting at a human pace", PACED_LONGER * seconds + 15)
        watch, story_watch = DecoderWatch(narrator.chat_lm), DecoderWatch(narrator.story_lm)
        paced_fps = await phase(
            PACED_LONGER * seconds, players, watched, chat_with=(layer, worker), gap_s=PACE_S
        )
        paced, paced_loop = [Talk.of(p) for p in players], watch.read()
        story_paced_loop = story_watch.read()
        watchdog.expect("measuring without chat again", seconds)
        after = await phase(seconds, players, watched)
        result = {
            "players": players, "before": before, "chatting": chatting, "after": after,
            "flood": flood, "paced_fps": paced_fps, "paced": paced,
            "loops": [("8 live, flood", "replies", flood_loop),
                      ("8 live, paced", "replies", paced_loop)],
            "story_loops": [("8 live, flood", "pairs", story_flood_loop),
                            ("8 live, paced", "pairs", story_paced_loop)] if stories else [],
        }  # fmt: skip
        report(result)
    finally:
        watchdog.expect("stopping the worker", 2 * STOP_S)
        for listener in listeners:
            listener.cancel()
        await asyncio.gather(*listeners, return_exceptions=True)
        await stop_worker(worker, task)
    if not task.cancelled() and task.exception() is not None:  # it failed while stopping
        raise WorkerDied(f"the worker's run() failed: {task.exception()!r}") from task.exception()
    return result


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def print_frames(result: dict, seconds: float) -> None:
    players, before, after = result["players"], result["before"], result["after"]
    chatting, paced_fps = result["chatting"], result["paced_fps"]
    flood, paced = result["flood"], result["paced"]
    quiet = [(b + a) / 2 for b, a in zip(before, after, strict=True)]
    print(
        f"\n{PLAYERS} live players at a {FPS:g} fps target: {seconds:g} s without chat, "
        f"{seconds:g} s chatting (flood: the next line as soon as the reply is whole), "
        f"{PACED_LONGER * seconds:g} s chatting at a human pace (the next line an exponential "
        f"gap of mean {PACE_S:g} s after the reply), {seconds:g} s without chat again"
    )
    print(f"{'player':>6} {'character':>13} {'fps before':>10} {'fps flood':>9} "
          f"{'fps paced':>9} {'fps after':>9} {'flood/quiet':>11} {'replies':>7} "
          f"{'paced':>5} {'whole':>5} {'errors':>6}")  # fmt: skip
    for i, p in enumerate(players):
        ratio = chatting[i] / quiet[i] if quiet[i] else float("nan")
        print(f"{p.index:>6} {p.character or 'story':>13} {before[i]:>10.1f} {chatting[i]:>9.1f} "
              f"{paced_fps[i]:>9.1f} {after[i]:>9.1f} {ratio:>11.2f} "
              f"{len(flood[i].replies):>7} {len(paced[i].replies):>5} "
              f"{flood[i].whole + paced[i].whole:>5} {len(p.errors):>6}")  # fmt: skip
    median_quiet = statistics.median(quiet)
    ratios = {
        window: statistics.median(fps) / median_quiet if median_quiet else float("nan")
        for window, fps in (("flood", chatting), ("paced", paced_fps))
    }
    print(f"{'median':>6} {'':>13} {statistics.median(before):>10.1f} "
          f"{statistics.median(chatting):>9.1f} {statistics.median(paced_fps):>9.1f} "
          f"{statistics.median(after):>9.1f} {ratios['flood']:>11.2f} "
          f"{sum(len(t.replies) for t in flood):>7} {sum(len(t.replies) for t in paced):>5} "
          f"{sum(t.whole for t in flood + paced):>5} "
          f"{sum(len(p.errors) for p in players):>6}")  # fmt: skip
    story = [p.story for p in players]
    for window, every, length in (
        ("flood", flood, seconds),
        ("paced", paced, PACED_LONGER * seconds),
    ):
        talks = [t for t, picks in zip(every, story, strict=True) if not picks]
        firsts = [x for t in talks for x in t.firsts]
        replies = [x for t in talks for x in t.replies]
        print(f"{window}: {len(replies)} replies ({len(replies) / length:.2f}/s; "
              f"{sum(t.whole for t in talks)} 'whole': no partial line before the final); first "
              f"partial line p50 {percentile(firsts, 0.5):.2f} s p99 "
              f"{percentile(firsts, 0.99):.2f} s, whole reply p50 "
              f"{percentile(replies, 0.5):.2f} s p99 {percentile(replies, 0.99):.2f} s, "
              f"fps drop {1 - ratios[window]:.1%}")  # fmt: skip
        if any(story):
            waits = [x for t, picks in zip(every, story, strict=True) if picks for x in t.replies]
            print(f"{window}, stories: {len(waits)} picks ({len(waits) / length:.2f}/s); from a "
                  f"pick to the next pair p50 {percentile(waits, 0.5):.2f} s p99 "
                  f"{percentile(waits, 0.99):.2f} s")  # fmt: skip
    drop = 1 - ratios["flood"]
    print(f"goal (median fps drop while chatting <= 10%, flood): {drop:.1%}, "
          f"{'met' if drop <= 0.10 else 'NOT met'}")  # fmt: skip
    print_loops(result["loops"] + result["story_loops"])


def play_screen():
    """The screening the worker passes its narrator (``sessions.worker_client``): every partial
    and final line through moderation's blocklist and MiniLM layers, on the generation threads."""
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gallery.settings")
    os.environ.setdefault("DEBUG", "true")  # the embedded defaults: no production secrets needed
    django.setup()
    from sessions.worker_client import screen_generated_line

    return screen_generated_line


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument(
        "--sessions",
        type=int,
        nargs="+",
        default=[1, 4, 8],
        help="part 1's flood cells (the paced run takes the largest)",
    )
    parser.add_argument("--backend", choices=("embedded", "openai", "off"))
    parser.add_argument(
        "--no-screen",
        action="store_true",
        help="skip moderation's screening of each generated line (the worker always screens)",
    )
    parser.add_argument("--skip-frames", action="store_true", help="part 1 only")
    parser.add_argument("--frames-only", action="store_true", help="part 2 only")
    parser.add_argument(
        "--stories",
        type=int,
        default=0,
        choices=range(PLAYERS + 1),
        metavar=f"0-{PLAYERS}",
        help="part 2: this many of the 8 live sessions are story worlds, picking as they chat",
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    config = NarrativeConfig.from_env()
    if args.backend:
        config = replace(config, backend=args.backend)
    screen = wording.allow_all if args.no_screen else play_screen()
    narrator = Narrator.from_config(config, screen=screen)
    if narrator.chat_lm is not None:
        narrator.chat_lm = FirstPiece(narrator.chat_lm)  # part 1 times the replies' first piece
    narrator.warm_up()
    text_encoder.embed(["warm up"])
    screening = "none" if args.no_screen else "moderation's play screening, as the worker's"
    print(f"narrator: {narrator.backends}; {args.seconds:.0f} s per cell; screening: {screening}")
    if not args.frames_only:
        print_throughput(narrator, args.seconds, tuple(args.sessions))
    if not args.skip_frames:
        watchdog = Watchdog()
        report = lambda result: print_frames(result, args.seconds)  # noqa: E731
        players = live_players(narrator, args.seconds, watchdog, report, args.stories)
        _, left = run_bounded(players, watchdog)
        watchdog.stop()
        if left:  # the tables are out; exiting would wait for these threads without a bound
            print(f"warning: the worker left threads running after its stop: {left}",
                  file=sys.stderr, flush=True)  # fmt: skip
            sys.stdout.flush()
            os._exit(4)


if __name__ == "__main__":
    main()
