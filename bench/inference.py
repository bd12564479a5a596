"""Inference throughput: batched stepping vs one session at a time, 1 to 32 sessions.

    .venv/bin/python bench/inference.py [--chunk 8] [--rounds 8] [--threads 1]

Every session is its own world with one player holding a key. "batched" steps all sessions in
one engine.step call; "sequential" makes one call per session, on the same engine and weights in
the same run, the same walks. With the terrain thread running as the worker serves: on land made
beforehand for the whole walk (what batching the frame path gives; "frames held": frames a player
waited at the edge of land not made yet, 0 expected), and on land made for part of it, the thread
growing the rest meanwhile (a column of its own: unpaced, that squeezes a second of terrain into
a tenth of one). Then into new land with the terrain made inside the steps (MaskGIT in the step:
the worker never does this, but it shows what batching the generator gives). Then a second
table: 8 players walking into new land at 24 steps a second, with the terrain made inside the
steps vs grown ahead on the engine's terrain thread (``WorldEngine.start_terrain``, as the
worker runs it), and how often a player was held at the edge of a chunk not made yet.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from inference.world.engine import AHEAD_FRAMES, WorldEngine  # noqa: E402

PROMPTS = [
    "a quiet meadow",
    "a snowy forest at night",
    "a desert in the rain",
    "a coral reef under the sea",
    "city streets at dusk",
    "a volcanic wasteland under falling ash",
    "a jungle running down to a beach",
    "a cherry blossom garden with petals in the air",
]
KEYS = [frozenset(k) for k in ("d", "s", "a", "w", "sd", "wa")]


# open-vocabulary things in view of each player with --things (dragon flies, lighthouse lights)
THINGS = "a dragon flies over a lighthouse beside a lantern"


def make_sessions(engine: WorldEngine, n: int, things: int = 0) -> tuple[list[str], list[str]]:
    wids, pids = [], []
    for i in range(n):
        wids.append(engine.create_world(prompt=PROMPTS[i % len(PROMPTS)], seed=500 + i))
        pids.append(engine.add_player(wids[-1]))
        for _ in range(things):
            engine.apply_event(wids[-1], THINGS, near=pids[-1])
    return wids, pids


def run(engine, pids, chunk, rounds, batched: bool) -> tuple[float, float]:
    """-> (aggregate frames/s, median latency of one step call in ms)."""
    keys = {p: KEYS[i % len(KEYS)] for i, p in enumerate(pids)}
    latencies = []
    start = time.perf_counter()
    for _ in range(rounds):
        groups = [pids] if batched else [[p] for p in pids]
        for group in groups:
            t = time.perf_counter()
            engine.step({p: keys[p] for p in group}, {p: chunk for p in group})
            latencies.append(time.perf_counter() - t)
    elapsed = time.perf_counter() - start
    return len(pids) * chunk * rounds / elapsed, 1000 * statistics.median(latencies)


def alternate(engine, wids, pids, args) -> tuple:
    """Batched and sequential runs from the same snapshots, alternating `--pairs` times each
    so a machine that slows down or speeds up meanwhile (a shared VM does) weighs on both alike,
    with the terrain thread running. -> medians (batched fps, ms, sequential fps, ms), the
    median ratio and frames held at the edge of land not made (0 expected)."""
    ready, snaps = {True: [], False: []}, [engine.snapshot(w) for w in wids]
    held = engine.held_frames
    for _ in range(args.pairs):
        for batched in (True, False):
            for snap in snaps:
                engine.restore(snap)
            engine.start_terrain()  # as the worker serves: steps make none, it grows ahead
            ready[batched].append(run(engine, pids, args.chunk, args.rounds, batched))
            engine.stop_terrain()
    b_fps, b_ms = (statistics.median(r[k] for r in ready[True]) for k in (0, 1))
    s_fps, s_ms = (statistics.median(r[k] for r in ready[False]) for k in (0, 1))
    pairs = zip(ready[True], ready[False], strict=True)
    ratio = statistics.median(b[0] / q[0] for b, q in pairs)
    return b_fps, b_ms, s_fps, s_ms, ratio, engine.held_frames - held


def walking(
    engine: WorldEngine, players: int, frames: int, thread: bool, fps: float, things: int = 0
) -> dict:
    """Players walking straight into new land, one frame per step for all of them at ``fps``
    steps a second (as a worker answers held keys); ``thread``: the terrain thread grows the
    land ahead and steps make none. -> step ms p50/p99, chunks steps made, held share."""
    wids, pids = make_sessions(engine, players, things)
    keys = {p: frozenset("d") for p in pids}
    if thread:
        engine.start_terrain()
    late, held, moved, times = engine.late_chunks, engine.held_frames, engine.moved_frames, []
    next_at = time.perf_counter()
    for _ in range(frames):
        t = time.perf_counter()
        engine.step(keys, {p: 1 for p in pids})
        times.append(1000 * (time.perf_counter() - t))
        next_at += 1 / fps
        time.sleep(max(0.0, next_at - time.perf_counter()))
    engine.stop_terrain()
    for wid in wids:
        engine.drop_world(wid)
    times.sort()
    moved = engine.moved_frames - moved
    return {
        "p50": statistics.median(times),
        "p99": times[int(0.99 * (len(times) - 1))],
        "late": engine.late_chunks - late,
        "held": engine.held_frames - held,
        "moved": moved,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunk", type=int, default=1, help="frames per step call per session")
    parser.add_argument("--rounds", type=int, default=32)
    parser.add_argument("--pairs", type=int, default=6, help="alternations on land made ahead")
    # torch threads: 1, as a worker runs (INFERENCE_THREADS)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--device", default="cpu", help="torch device of the engine (cuda:0)")
    parser.add_argument("--sessions", default="1,2,4,8,16,32")
    parser.add_argument("--walk-frames", type=int, default=240, help="terrain-ahead table")
    parser.add_argument(
        "--things", type=int, default=0, help=f"times {THINGS!r} is said in each world"
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    engine = WorldEngine.load(device=args.device)
    print(
        f"device={args.device} bf16={engine.decoder.bf16} "
        f"threads={args.threads} chunk={args.chunk} rounds={args.rounds} "
        f"frame={engine.frame_size}x{engine.frame_size} things said={args.things}"
    )
    print(
        "| sessions | batched fps | sequential fps | speed-up | batched step ms "
        "| sequential step ms | frames held | speed-up, thread growing meanwhile "
        "| new land: batched fps | sequential fps | speed-up |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    best = 0.0
    for n in (int(s) for s in args.sessions.split(",")):
        wids, pids = make_sessions(engine, n, args.things)
        run(engine, pids, args.chunk, 1, batched=True)  # warm-up
        # each pair of runs starts from the same snapshots, so both modes do the same work
        # (same walks, same terrain growth) and differ only in how the sessions are batched
        snaps = [engine.snapshot(w) for w in wids]
        new = [run(engine, pids, args.chunk, args.rounds, batched=True)]
        for snap in snaps:
            engine.restore(snap)
        new.append(run(engine, pids, args.chunk, args.rounds, batched=False))
        # The same walks with the terrain thread running, as the worker serves, twice: on land
        # made beforehand for the whole walk (the thread keeps ahead and finds nothing to make:
        # what batching the frame path gives), and on land made for the first `rounds` frames
        # only, the thread growing the rest meanwhile. Unpaced, 32 rounds take about 0.1 s
        # batched against 1.3 s at 24 fps, so the second makes a second's terrain in a tenth of
        # one and weighs on the quicker (batched) mode most; the walking table below measures
        # the thread at the pace of play.
        measured = []
        for ahead in (args.rounds * args.chunk + AHEAD_FRAMES, args.rounds * args.chunk):
            for snap in snaps:
                engine.restore(snap)
            while engine.grow_ahead(max_rounds=64, frames=ahead):
                pass
            measured.append(alternate(engine, wids, pids, args))
        (b_fps, b_ms, s_fps, s_ms, ratio, held), (*_, busy_ratio, _) = measured
        best = max(best, b_fps)
        print(
            f"| {n} | {b_fps:.0f} | {s_fps:.0f} | {ratio:.1f}x | {b_ms:.1f} | {s_ms:.1f} "
            f"| {held} | {busy_ratio:.1f}x "
            f"| {new[0][0]:.0f} | {new[1][0]:.0f} | {new[0][0] / new[1][0]:.1f}x |",
            flush=True,
        )
        for wid in list(engine.worlds):
            engine.drop_world(wid)

    print(f"\nsessions at 24 fps this device could draw (best batched fps / 24): {best / 24:.1f}")

    # Terrain ahead: 8 players walking into new land for --walk-frames frames (10 s at 24 fps),
    # steps that generate terrain themselves vs the terrain thread.
    print()
    print(
        "| 8 players walking, 24 steps/s | step p50 ms | step p99 ms "
        "| chunks a step had to make | player frames held at an edge |"
    )
    print("| --- | --- | --- | --- | --- |")
    for thread in (False, True):
        r = walking(engine, 8, args.walk_frames, thread, fps=24.0, things=args.things)
        label = "terrain thread" if thread else "terrain made in the step"
        share = 100 * r["held"] / max(1, r["moved"])
        print(
            f"| {label} | {r['p50']:.1f} | {r['p99']:.1f} | {r['late']} "
            f"| {r['held']} of {r['moved']} ({share:.1f}%) |",
            flush=True,
        )


if __name__ == "__main__":
    main()
