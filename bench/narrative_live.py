"""Part 2 of bench/narrative.py: the frame rate of 8 live players on a real InferenceWorker in
this process, without chat, while they chat (flood and paced) and without chat again."""

from __future__ import annotations

import asyncio
import faulthandler
import os
import random
import statistics
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field, replace
from typing import Any

from bench.narrative_throughput import (
    FPS,
    PACE_S,
    PACED_LONGER,
    PLAYERS,
    DecoderWatch,
    percentile,
    print_loops,
)
from inference.narrative.evaluate import ORDINARY, PERSONAS, STORIES
from inference.narrative.narrator import Narrator
from inference.serving import messages as m
from inference.serving.session import SessionStatus

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


def run_bounded(main, watchdog: Watchdog) -> tuple[Any, list[str]]:
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


async def while_alive(awaitable, watched: list[asyncio.Task]) -> Any:
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
