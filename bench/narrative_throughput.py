"""Part 1 of bench/narrative.py: story pairs and character replies per second at 1, 4 and 8
concurrent sessions (the flood), replies at a human pace, the picks' waits, the first replies
and one long talk, with what the embedded model's decode loop did in each cell."""

from __future__ import annotations

import random
import statistics
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import wait

from inference.narrative.character import character_greet, character_start
from inference.narrative.evaluate import ORDINARY, PERSONAS, STORIES
from inference.narrative.narrator import Narrator
from inference.narrative.runner import GenerationRunner
from inference.narrative.story import story_pick, story_start
from inference.narrative.world_words import apply_to_description

FPS = 24.0
PLAYERS = 8
# The paced runs: a player reads the reply and types the next line, an exponential gap of this
# mean (seconds) after the reply came; the paced window runs this many times as long as the
# flood's, so it holds as many replies to take medians of.
PACE_S = 6.0
PACED_LONGER = 2.0


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


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

    def complete(self, prompt, sampling) -> Iterator[str]:
        yield from self._timed(self.lm.complete(prompt, sampling))

    def chat(self, messages, sampling, prefill="") -> Iterator[str]:
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
            states[i] = (story_start(opening, world), world, None)
        else:
            states[i] = (character_start(PERSONAS[i % len(PERSONAS)]), world, None)
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
                state, picked = story_pick(state, state.choice_id, 0)
                world = apply_to_description(world, picked.event)
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
                state, _ = character_greet(character_start(card))
                if mode == "ahead":
                    narrator.preread(state, world, time.monotonic() + 30)
                started = time.monotonic()
                narrator.reply(state, world, ORDINARY[i % len(ORDINARY)], 1, started + 30)
                out[mode].append(time.monotonic() - started)
    return out


def pick_waits(narrator: Narrator, rounds: int = 2) -> dict[str, list[float]]:
    """One session alone, the wait from a pick to its line and the next pair: the line written
    and then the pair (``narrate``, then ``offer``) or the line
    beside the pair (``offer`` with the pick), each from the same pick, in turns."""
    out: dict[str, list[float]] = {"in turn": [], "beside": []}
    for k in range(rounds):
        for i, (opening, world) in enumerate(STORIES):
            story = narrator.offer(story_start(opening, world), world, k, _soon()).state
            story, picked = story_pick(story, story.choice_id, (i + k) % 2)
            after = apply_to_description(world, picked.event)
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
    state, _ = character_greet(character_start(card))
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
