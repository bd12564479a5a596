"""Narrative benchmark: story pairs and character replies per second at 1, 4 and 8 concurrent
sessions, and the frame rate of 8 live players while they chat beside the same without chat,
in one run.

    .venv/bin/python bench/narrative.py [--seconds 20] [--backend embedded|openai|off]

Part 1 drives the narrator through the worker's own generation runner (one thread, sessions in
turn), each session asking for its next pair (or reply) as soon as the last one came back.
Part 2 runs a real InferenceWorker in this process (in-memory channel layer and placement,
the shipped world model) with 8 character sessions, each player holding a key: first N seconds
without chat, then N seconds in which every player says a line, waits for the whole reply and
says the next. Prints markdown tables. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
import uuid
from concurrent.futures import wait
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from inference.narrative import engine  # noqa: E402
from inference.narrative.backends import NarrativeConfig  # noqa: E402
from inference.narrative.evaluate import ORDINARY, PERSONAS, STORIES  # noqa: E402
from inference.narrative.narrator import Narrator  # noqa: E402
from inference.narrative.runner import GenerationRunner  # noqa: E402
from inference.world import text as text_encoder  # noqa: E402

FPS = 24.0
PLAYERS = 8


def throughput(narrator: Narrator, sessions: int, seconds: float, kind: str) -> dict:
    """Each session keeps one job in flight; -> jobs/s, latency p50/p99, grammar share."""
    runner = GenerationRunner(name="bench", per_session=2, max_jobs=64)
    latencies: list[float] = []
    grammar = 0
    states = {}
    for i in range(sessions):
        opening, world = STORIES[i % len(STORIES)]
        if kind == "pairs":
            states[i] = (engine.story_start(opening, world), world)
        else:
            states[i] = (engine.character_start(PERSONAS[i % len(PERSONAS)]), world)
    in_flight = {}
    end = time.monotonic() + seconds

    def submit(i: int, turn: int):
        state, world = states[i]
        if kind == "pairs":
            job = lambda d, s=state, w=world: narrator.offer(s, w, turn, d)  # noqa: E731
        else:
            line = ORDINARY[turn % len(ORDINARY)]
            job = lambda d, s=state, w=world: narrator.reply(s, w, line, turn, d)  # noqa: E731
        in_flight[i] = (runner.submit(str(i), job, timeout_s=30.0), time.monotonic(), turn)

    for i in range(sessions):
        submit(i, 0)
    done_jobs = 0
    while in_flight:
        wait([f for f, _, _ in in_flight.values()], return_when="FIRST_COMPLETED")
        for i, (future, started, turn) in list(in_flight.items()):
            if not future.done():
                continue
            del in_flight[i]
            answer = future.result()
            latencies.append(time.monotonic() - started)
            done_jobs += 1
            grammar += answer.backend == "grammar"
            state = answer.state
            if kind == "pairs":  # pick the first option and go on
                state, _ = engine.story_pick(state, state.choice_id, 0)
            else:
                state = replace(state, memory=state.memory[-2:])
            states[i] = (state, states[i][1])
            if time.monotonic() < end:
                submit(i, turn + 1)
    elapsed = seconds + max(0.0, time.monotonic() - end)
    runner.close()
    latencies.sort()
    return {
        "rate": done_jobs / elapsed,
        "p50": statistics.median(latencies),
        "p99": latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))],
        "grammar": grammar / max(1, done_jobs),
    }


# --- part 2: frames of 8 live players, with and without chat --------------------------------


async def frames_while(seconds: float, chat: bool, worker, layer, sessions: list[str]) -> dict:
    from inference.serving.messages import session_group, worker_channel

    counts = dict.fromkeys(sessions, 0)
    replies: list[float] = []
    firsts: list[float] = []
    channels = {}
    for sid in sessions:
        channels[sid] = await layer.new_channel()
        await layer.group_add(session_group(sid), channels[sid])
    stop = time.monotonic() + seconds
    said: dict[str, float] = {}
    first_seen: set[str] = set()

    async def say(sid: str, turn: int):
        said[sid] = time.monotonic()
        first_seen.discard(sid)
        text = ORDINARY[turn % len(ORDINARY)]
        message = {"type": "session.say", "session_id": sid, "text": text}
        await layer.send(worker_channel(worker.name), message)

    async def pump(sid: str):
        turn = 0
        if chat:
            await say(sid, turn)
        while time.monotonic() < stop:
            try:
                message = await asyncio.wait_for(layer.receive(channels[sid]), 0.5)
            except TimeoutError:
                continue
            if message["type"] == "session.frame":
                counts[sid] += 1
            elif chat and message["type"] == "session.say" and message["speaker"] != "you":
                if message.get("partial") and sid not in first_seen:
                    first_seen.add(sid)
                    firsts.append(time.monotonic() - said[sid])
                elif not message.get("partial"):
                    replies.append(time.monotonic() - said[sid])
                    turn += 1
                    await say(sid, turn)

    await asyncio.gather(*(pump(sid) for sid in sessions))
    for sid in sessions:
        await layer.group_discard(session_group(sid), channels[sid])
    fps = [counts[sid] / seconds for sid in sessions]
    return {
        "fps_mean": statistics.mean(fps),
        "fps_min": min(fps),
        "replies": len(replies),
        "reply_p50": statistics.median(replies) if replies else float("nan"),
        "first_p50": statistics.median(firsts) if firsts else float("nan"),
    }


async def live_players(narrator: Narrator, seconds: float) -> tuple[dict, dict]:
    from channels.layers import InMemoryChannelLayer

    from inference.serving.messages import worker_channel
    from inference.serving.placement import InMemoryPlacement
    from inference.serving.worker import InferenceWorker

    layer = InMemoryChannelLayer(capacity=1000)
    placement = InMemoryPlacement()
    worker = InferenceWorker(
        name="bench", channel_layer=layer, placement=placement, capacity=PLAYERS, fps=FPS,
        narrator=narrator,
    )  # fmt: skip
    task = asyncio.create_task(worker.run())
    await worker.wait_ready(120)
    sessions = [str(uuid.uuid4()) for _ in range(PLAYERS)]

    async def attach(i: int, sid: str) -> None:
        placement.reserve_slot(sid)
        message = {"type": "session.attach", "session_id": sid, "prompt": "a quiet meadow",
                   "seed": 40 + i, "category": "characters",
                   "character": PERSONAS[i % len(PERSONAS)]}  # fmt: skip
        await layer.send(worker_channel(worker.name), message)

    for i, sid in enumerate(sessions):
        await attach(i, sid)
    # On a loaded machine a late heartbeat can get the worker reaped and its sessions dropped:
    # attach what is missing again rather than wait for it forever.
    give_up = time.monotonic() + 300
    while sum(s.status.value == "live" for s in worker.sessions.values()) < PLAYERS:
        if time.monotonic() > give_up:
            raise RuntimeError(f"only {len(worker.sessions)} of {PLAYERS} sessions went live")
        await asyncio.sleep(5.0)
        for i, sid in enumerate(sessions):
            if sid not in worker.sessions:
                await attach(i, sid)
    for i, sid in enumerate(sessions):  # every player walks, so the canvas keeps growing
        keys = {
            "type": "session.input",
            "session_id": sid,
            "seq": 1,
            "keys": ["d" if i % 2 else "s"],
        }
        await layer.send(worker_channel(worker.name), keys)
    await asyncio.sleep(10.0)  # warm: the first chunks grown, buffers full
    # Quiet, chatting, quiet again: a drift of the shared machine shows as two quiet rows apart.
    before = await frames_while(seconds, False, worker, layer, sessions)
    chatting = await frames_while(seconds, True, worker, layer, sessions)
    after = await frames_while(seconds, False, worker, layer, sessions)
    quiet = {k: (before[k] + after[k]) / 2 for k in ("fps_mean", "fps_min")}
    quiet["rows"] = (before, after)
    await worker.stop(handover=False)
    await task
    return quiet, chatting


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--backend", choices=("embedded", "openai", "off"))
    parser.add_argument("--skip-frames", action="store_true", help="part 1 only")
    parser.add_argument("--frames-only", action="store_true", help="part 2 only")
    args = parser.parse_args()
    config = NarrativeConfig.from_env()
    if args.backend:
        config = replace(config, backend=args.backend)
    narrator = Narrator.from_config(config)
    narrator.warm_up()
    text_encoder.embed(["warm up"])
    print(f"narrator: {narrator.backends}; {args.seconds:.0f} s per cell\n")
    print("| sessions | pairs/s | pair p50 | pair p99 | grammar | replies/s | reply p50 | "
          "reply p99 | grammar |")  # fmt: skip
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for n in () if args.frames_only else (1, 4, 8):
        pairs = throughput(narrator, n, args.seconds, "pairs")
        replies = throughput(narrator, n, args.seconds, "replies")
        print(f"| {n} | {pairs['rate']:.2f} | {pairs['p50']:.2f} s | {pairs['p99']:.2f} s | "
              f"{pairs['grammar']:.0%} | {replies['rate']:.2f} | {replies['p50']:.2f} s | "
              f"{replies['p99']:.2f} s | {replies['grammar']:.0%} |", flush=True)  # fmt: skip
    if args.skip_frames:
        return
    quiet, chatting = asyncio.run(live_players(narrator, args.seconds))
    drop = 1 - chatting["fps_mean"] / quiet["fps_mean"] if quiet["fps_mean"] else float("nan")
    print(f"\n{PLAYERS} live players at a {FPS:.0f} fps target, {args.seconds:.0f} s each:\n")
    print("| | fps mean | fps min | replies | first partial p50 | whole reply p50 |")
    print("| --- | --- | --- | --- | --- | --- |")
    labels = ("without chat, before", "without chat, after")
    for label, row in zip(labels, quiet["rows"], strict=True):
        print(f"| {label} | {row['fps_mean']:.1f} | {row['fps_min']:.1f} | - | - | - |")
    print(f"| all chatting | {chatting['fps_mean']:.1f} | {chatting['fps_min']:.1f} | "
          f"{chatting['replies']} | {chatting['first_p50']:.2f} s | "
          f"{chatting['reply_p50']:.2f} s |")  # fmt: skip
    print(f"\nframe rate drop while chatting: {drop:.1%}")


if __name__ == "__main__":
    main()
