"""Soak test of the real stack under load, with a worker killed halfway.

Two Daphne processes, two inference workers, Redis and PostgreSQL; P players (each holding
random keys like bench/play.py, split over both Daphnes) and S spectators on ws/watch/ spread
over the sessions, for the whole run. Halfway, the worker serving the most sessions is killed
with kill -9. Prints per-minute fps and input-to-frame latency p50/p99, sessions lost,
reconnects, failover time, and every process's RSS each minute with its growth over the run.

    .venv/bin/python bench/soak.py                       # 16 players, 200 spectators, 10 min
    .venv/bin/python bench/soak.py --players 4 --spectators 20 --minutes 2
    .venv/bin/python bench/soak.py --minutes 30 --malloc-arena-max 2    # one side of an A/B
    .venv/bin/python bench/soak.py --minutes 30 --tracemalloc           # where the growth is

Goals: no session lost, failover <= 3 s, every process's RSS grows < 10 % from minute 5 (a
third of the run under 10 minutes) to the end; the surviving worker from the later of that and
the failover settling, as it adopts the killed worker's sessions. Needs PostgreSQL and Redis
like bench/play.py (its database is dropped and created afresh). Not part of the test suite.
"""

import argparse
import asyncio
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx
import websockets

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.play import percentile  # noqa: E402
from bench.play_players import Player  # noqa: E402
from bench.play_stack import make_players, prepare_database  # noqa: E402
from inference.serving.placement import RedisPlacement  # noqa: E402
from tests.stack import (  # noqa: E402
    Processes,
    clear_placement,
    daphne_argv,
    free_port,
    stack_env,
    worker_argv,
)

WS_OPTIONS = {"proxy": None, "compression": None, "max_size": 2**20}
TRACEMALLOC_EVERY_S = 60  # between a worker's tracemalloc reports in its log
TRACEMALLOC_HEAD = "tracemalloc: top 15 sites"  # how the worker command starts a report


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--players", type=int, default=16)
    parser.add_argument("--spectators", type=int, default=200)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--fps", type=float, default=24.0)
    parser.add_argument("--start-timeout", type=float, default=300.0)
    parser.add_argument("--database-url", default="postgres://postgres@127.0.0.1:5432/bench_soak")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/12")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-kill", action="store_true", help="no kill -9 halfway")
    parser.add_argument(
        "--malloc-arena-max", type=int, help="MALLOC_ARENA_MAX for every started process"
    )
    parser.add_argument(
        "--tracemalloc",
        action="store_true",
        help=f"workers log their top allocation sites every {TRACEMALLOC_EVERY_S} s",
    )
    return parser.parse_args()


class SoakPlayer(Player):
    """A bench/play.py player that reconnects when its socket drops and timestamps its frames."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.frame_times: list[float] = []
        self.latency_times: list[tuple[float, float]] = []  # (when, latency)
        self.reconnects = 0
        self.ended: str | None = None

    def _on_frame(self, frame_no: int, seq: int, now: float) -> None:
        before = len(self.latencies)
        super()._on_frame(frame_no, seq, now)
        self.frame_times.append(now)
        self.latency_times += [(now, x) for x in self.latencies[before:]]

    async def soak(self, url: str, cookie: str, origin: str, until: float) -> None:
        self.until = until  # moved once every player is live
        while time.monotonic() < self.until and self.ended is None:
            try:
                await self.play(url, cookie, origin, self.until)
            except (websockets.ConnectionClosed, OSError) as exc:
                close = getattr(exc, "rcvd", None)
                # 1000 follows an "ended" status; 44xx: not found, forbidden, ended.
                if close is not None and (close.code == 1000 or 4400 <= close.code < 4500):
                    last = self.notes[-1] if self.notes else ""
                    self.ended = f"closed {close.code} {close.reason} {last}"
                    return
                self.reconnects += 1
                await asyncio.sleep(0.5)


class Spectator:
    def __init__(self, session_id: str):
        self.session_id = session_id
        self.frames = 0
        self.reconnects = 0

    async def watch(self, url: str, origin: str, until: float) -> None:
        while time.monotonic() < until:
            try:
                async with websockets.connect(url, origin=origin, **WS_OPTIONS) as ws:
                    while time.monotonic() < until:
                        try:
                            message = await asyncio.wait_for(ws.recv(), until - time.monotonic())
                        except TimeoutError:
                            return
                        if isinstance(message, bytes):
                            self.frames += 1
            except (websockets.ConnectionClosed, OSError):
                self.reconnects += 1
                await asyncio.sleep(0.5)


def rss_mb(pid: int) -> float | None:
    """VmRSS in MB; None once the process is gone (a killed worker, between kill and reaping)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return None


def rss_sample(procs: Processes) -> dict[str, float]:
    """Every live process's RSS in MB, by name."""
    sample = {name: rss_mb(proc.pid) for name, proc in procs.procs.items() if proc.poll() is None}
    return {name: mb for name, mb in sample.items() if mb is not None}


async def sample_rss_each_minute(procs: Processes, started: float, end: float, rows: list) -> None:
    """Append (seconds since start, label, sample) at every whole minute before ``end``."""
    minute = 1
    while started + 60 * minute < end - 1:
        await asyncio.sleep(max(0.0, started + 60 * minute - time.monotonic()))
        rows.append((time.monotonic() - started, "", rss_sample(procs)))
        minute += 1


async def soak(args, procs: Processes, ports: list[int], workers: dict, slug, creds) -> dict:
    rng = random.Random(args.seed)
    sessions = []
    for i, c in enumerate(creds):
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{ports[i % 2]}", timeout=60) as h:
            response = await h.post(
                "/api/sessions/",
                json={"world": slug, "public": True},
                headers={"Authorization": f"Token {c['token']}"},
            )
            response.raise_for_status()
            sessions.append(response.json()["id"])
    players = [SoakPlayer(i, sid, random.Random(rng.random())) for i, sid in enumerate(sessions)]
    until = time.monotonic() + args.start_timeout + args.minutes * 60
    tasks = []
    for i, (p, c) in enumerate(zip(players, creds, strict=True)):
        base = f"http://127.0.0.1:{ports[i % 2]}"
        url = f"ws://127.0.0.1:{ports[i % 2]}/ws/play/{p.session_id}/"
        tasks.append(asyncio.create_task(p.soak(url, c["cookie"], base, until)))
    deadline = time.monotonic() + args.start_timeout
    while any(p.last_frame_no is None for p in players) and time.monotonic() < deadline:
        await asyncio.sleep(0.5)
    started = time.monotonic()
    until = started + args.minutes * 60
    for p in players:
        p.until, p.measuring = until, True
    spectators = [Spectator(sessions[i % len(sessions)]) for i in range(args.spectators)]
    for i, s in enumerate(spectators):
        port = ports[i % 2]
        url = f"ws://127.0.0.1:{port}/ws/watch/{s.session_id}/"
        tasks.append(asyncio.create_task(s.watch(url, f"http://127.0.0.1:{port}", until)))
    await asyncio.sleep(5)  # spectators connected: the starting footprint
    rss = [(time.monotonic() - started, "start", rss_sample(procs))]  # (s, label, {name: MB})
    tasks.append(asyncio.create_task(sample_rss_each_minute(procs, started, until - 5, rss)))
    failover = None
    settled_s = None
    if not args.no_kill:
        await asyncio.sleep(max(0.0, started + args.minutes * 30 - time.monotonic()))
        rss.append((time.monotonic() - started, "before kill -9", rss_sample(procs)))
        failover = await kill_busiest(args, procs, workers, players)
        # The survivor now holds the killed worker's worlds too: its footprint from here on
        # tells a leak from the sessions it adopted.
        await asyncio.sleep(max(0.0, failover["at"] + 20 - time.monotonic()))
        settled_s = time.monotonic() - started
        rss.append((settled_s, "failover settled", rss_sample(procs)))
    await asyncio.sleep(max(0.0, until - 5 - time.monotonic()))
    rss.append((time.monotonic() - started, "end", rss_sample(procs)))
    for p in players:
        p.until = time.monotonic()
    await asyncio.gather(*tasks, return_exceptions=True)
    return {
        "players": players,
        "spectators": spectators,
        "started": started,
        "failover": failover,
        "rss": sorted(rss, key=lambda row: row[0]),
        "settled_s": settled_s,
        "workers": list(workers),
        "start_delay": started - (deadline - args.start_timeout),
    }


async def kill_busiest(args, procs: Processes, workers: dict, players: list) -> dict:
    placement = RedisPlacement(args.redis_url)
    serving = {p.session_id: placement.worker_of(p.session_id) for p in players}
    victim = max(workers, key=lambda name: list(serving.values()).count(name))
    moved = [p for p in players if serving[p.session_id] == victim]
    killed_at = time.monotonic()
    for p in moved:
        p.killed_at = killed_at
    workers[victim].kill()
    while any(p.resumed_after is None for p in moved) and time.monotonic() < killed_at + 30:
        await asyncio.sleep(0.05)
    return {"worker": victim, "at": killed_at, "after": [p.resumed_after for p in moved]}


def clock(seconds: float) -> str:
    return f"{int(seconds // 60)}:{int(seconds % 60):02d}"


def rss_window_start_s(args) -> float:
    """Minute 5, or a third of a run under 10 minutes (where minute 5 leaves too little)."""
    return 300.0 if args.minutes >= 10 else args.minutes * 20


def rss_window(rows: list, name: str, from_s: float) -> tuple[tuple, tuple]:
    """((s, MB), (s, MB)): the first sample of ``name`` at or after ``from_s`` (its first when
    none is) and its last."""
    seen = [(s, sample[name]) for s, _, sample in rows if name in sample]
    first = next(((s, mb) for s, mb in seen if s >= from_s - 0.5), seen[0])
    return first, seen[-1]


def report_rss(args, result: dict) -> tuple[bool, str]:
    """Print the RSS table, one row per sample and one column per process, with each
    process's growth over its window; return (goal met, the windows used)."""
    rows, settled_s = result["rss"], result["settled_s"]
    names = list(rows[0][2])
    killed = result["failover"]["worker"] if result["failover"] else None
    from_s = rss_window_start_s(args)
    survivor_from_s = max(from_s, settled_s) if settled_s is not None else from_s
    widths = [max(10, len(name)) for name in names]
    print("RSS MB per process (VmRSS), since all players are live")
    print(f"{'time':>6} " + " ".join(f"{n:>{w}}" for n, w in zip(names, widths, strict=True)))
    for s, label, sample in rows:
        label = f"kill -9 {killed}" if label == "before kill -9" else label
        cells = [
            f"{sample[n]:>{w}.1f}" if n in sample else f"{'-':>{w}}"
            for n, w in zip(names, widths, strict=True)
        ]
        print(f"{clock(s):>6} {' '.join(cells)}  {label}".rstrip())
    window, growth, whole = [], [], []
    growths = []
    for name in names:
        if name == killed:
            window.append("killed")
            growth.append("-")
            whole.append("-")
            continue
        survivor = name in result["workers"] and killed is not None
        (s0, mb0), (s1, mb1) = rss_window(rows, name, survivor_from_s if survivor else from_s)
        growths.append((mb1 - mb0) / mb0)
        window.append(f"{clock(s0)}-{clock(s1)}")
        growth.append(f"{growths[-1] * 100:+.1f}%")
        whole.append(f"{(mb1 - rows[0][2][name]) / rows[0][2][name] * 100:+.1f}%")
    for label, cells in (("window", window), ("growth", growth), ("run", whole)):
        print(f"{label:>6} " + " ".join(f"{c:>{w}}" for c, w in zip(cells, widths, strict=True)))
    print("(growth: over the window, for the goal; run: from the start sample to the end)")
    used = f"{clock(from_s)} to the end"
    if killed is not None:
        used += f", surviving worker from {clock(survivor_from_s)} (failover settled)"
    return all(g < 0.10 for g in growths), used


def print_tracemalloc(logdir: Path, workers: list[str]) -> None:
    """The last tracemalloc report in each worker's log."""
    for name in workers:
        text = (logdir / f"{name}.log").read_text(errors="replace")
        at = text.rfind(TRACEMALLOC_HEAD)
        if at < 0:
            print(f"{name}: no tracemalloc report in its log")
            continue
        head, *rest = text[at:].splitlines()
        print(f"{name}: {head}")
        print("\n".join([f"  {line}" for line in rest if ": size=" in line][:15]))


def report(args, result: dict) -> None:
    players, started = result["players"], result["started"]
    arena = os.environ.get("MALLOC_ARENA_MAX", "unset (glibc default)")
    arena = arena if args.malloc_arena_max is None else args.malloc_arena_max
    print(
        f"\nsoak: {args.players} players, {args.spectators} spectators, {args.minutes:g} min on "
        f"2 Daphne + 2 workers (all players live after {result['start_delay']:.1f} s)\n"
        f"MALLOC_ARENA_MAX={arena}, tracemalloc "
        + (
            f"on in the workers (every {TRACEMALLOC_EVERY_S} s; its traces count in their RSS)"
            if args.tracemalloc
            else "off"
        )
    )
    print(f"{'minute':>6} {'fps/player':>10} {'min fps':>8} {'lat p50 ms':>10} {'lat p99 ms':>10}")
    minutes = int(args.minutes + 0.999)
    for m in range(minutes):
        lo, hi = started + 60 * m, started + 60 * min(m + 1, args.minutes)
        span = max(hi - lo, 1e-3)
        fps = [sum(lo <= t < hi for t in p.frame_times) / span for p in players]
        lat = [x for p in players for t, x in p.latency_times if lo <= t < hi]
        mark = ""
        if result["failover"] and lo <= result["failover"]["at"] < hi:
            mark = "  <- kill -9"
        print(
            f"{m + 1:>6} {statistics.mean(fps):>10.1f} {min(fps):>8.1f} "
            f"{percentile(lat, 0.5) * 1000:>10.0f} {percentile(lat, 0.99) * 1000:>10.0f}{mark}"
        )
    lost = [p for p in players if p.ended or (p.killed_at and p.resumed_after is None)]
    spectator_frames = sum(s.frames for s in result["spectators"])
    reconnects = sum(p.reconnects for p in players)
    spectator_reconnects = sum(s.reconnects for s in result["spectators"])
    print(
        f"sessions lost: {len(lost)} of {len(players)}"
        + "".join(f"\n  player {p.index}: {p.ended or 'never resumed'}" for p in lost)
    )
    print(f"reconnects: players {reconnects}, spectators {spectator_reconnects}")
    print(
        f"spectator frames: {spectator_frames} "
        f"({spectator_frames / max(1, args.spectators) / (args.minutes * 60):.1f} fps each)"
    )
    after = []
    if result["failover"]:
        after = [a for a in result["failover"]["after"] if a is not None]
        print(
            f"kill -9 {result['failover']['worker']}: {len(after)} of "
            f"{len(result['failover']['after'])} sessions resumed, after p50 "
            f"{percentile(after, 0.5):.2f} s, max {max(after, default=float('nan')):.2f} s"
        )
    rss_met, rss_used = report_rss(args, result)
    goals = {
        "no session lost": not lost,
        "failover <= 3 s": result["failover"] is None or (after and max(after) <= 3.0),
        f"RSS growth < 10% ({rss_used})": rss_met,
    }
    print("goals: " + ", ".join(f"{k}: {'met' if v else 'NOT met'}" for k, v in goals.items()))


def main() -> None:
    args = parse_args()
    args.layer = "pubsub"
    prepare_database(args)
    slug, creds = make_players(args, args.players)
    clear_placement(args.redis_url)
    # Sessions outlive the run: at the default maximum length (30 minutes) a 30-minute soak's
    # sessions, started a few seconds before its clock, all ended just before its end.
    max_seconds = int(args.start_timeout + args.minutes * 60 + 600)
    extra = {"LOG_LEVEL": "WARNING", "SESSION_MAX_SECONDS": str(max_seconds)}
    if args.malloc_arena_max is not None:
        extra["MALLOC_ARENA_MAX"] = str(args.malloc_arena_max)
    env = stack_env(database_url=args.database_url, redis_url=args.redis_url, **extra)
    procs = Processes(Path(tempfile.mkdtemp(prefix="bench-soak-")), env)
    ports = [free_port(), free_port()]
    workers = {}
    try:
        for i, port in enumerate(ports):
            procs.spawn(f"daphne-{i}", daphne_argv(port))
        if args.tracemalloc:  # the workers only: Processes starts each child with its .env
            # Not PYTHONTRACEMALLOC=1: the worker starts tracing once ready (see its command).
            procs.env = {**env, "PARALLAX_TRACEMALLOC_EVERY_S": str(TRACEMALLOC_EVERY_S)}
        for i in range(2):
            name = f"soak-{i}-{uuid.uuid4().hex[:4]}"
            # Either worker must hold every session once the other is killed.
            workers[name] = procs.spawn(
                name, worker_argv(name, capacity=args.players, fps=args.fps)
            )
        placement = RedisPlacement(args.redis_url)
        for port in ports:
            procs.wait_up(port=port, placement=placement, workers=2, timeout=args.start_timeout)
        result = asyncio.run(soak(args, procs, ports, workers, slug, creds))
    finally:
        procs.stop()
        clear_placement(args.redis_url)
    report(args, result)
    if args.tracemalloc:
        killed = result["failover"]["worker"] if result["failover"] else None
        print_tracemalloc(procs.logdir, [name for name in workers if name != killed])
    print(f"logs: {procs.logdir}")


if __name__ == "__main__":
    main()
