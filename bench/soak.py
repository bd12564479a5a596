"""Soak test of the real stack under load, with a worker killed halfway.

Two Daphne processes, two inference workers, Redis and PostgreSQL; P players (each holding
random keys like bench/play.py, split over both Daphnes) and S spectators on ws/watch/ spread
over the sessions, for the whole run. Halfway, the worker serving the most sessions is killed
with kill -9. Prints per-minute fps and input-to-frame latency p50/p99, sessions lost,
reconnects, failover time, and every process's RSS at the start and the end.

    .venv/bin/python bench/soak.py                       # 16 players, 200 spectators, 10 min
    .venv/bin/python bench/soak.py --players 4 --spectators 20 --minutes 2

Goals: no session lost, failover <= 3 s, RSS growth < 10 %. Needs PostgreSQL and Redis like
bench/play.py (its database is dropped and created afresh). Not part of the test suite.
"""

import argparse
import asyncio
import random
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx
import websockets
from play import Player, make_players, percentile, prepare_database  # bench/ is sys.path[0]

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

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


def parse_args():
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


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


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
    rss_start = {name: rss_mb(proc.pid) for name, proc in procs.procs.items()}
    failover = None
    rss_settled = {}
    if not args.no_kill:
        await asyncio.sleep(max(0.0, started + args.minutes * 30 - time.monotonic()))
        failover = await kill_busiest(args, procs, workers, players)
        # The survivor now holds the killed worker's worlds too: its footprint from here on
        # tells a leak from the sessions it adopted.
        await asyncio.sleep(max(0.0, failover["at"] + 20 - time.monotonic()))
        rss_settled = {n: rss_mb(p.pid) for n, p in procs.procs.items() if p.poll() is None}
    await asyncio.sleep(max(0.0, until - 5 - time.monotonic()))
    rss_end = {name: rss_mb(proc.pid) for name, proc in procs.procs.items() if proc.poll() is None}
    for p in players:
        p.until = time.monotonic()
    await asyncio.gather(*tasks, return_exceptions=True)
    return {
        "players": players,
        "spectators": spectators,
        "started": started,
        "failover": failover,
        "rss": (rss_start, rss_settled, rss_end),
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


def report(args, result: dict) -> None:
    players, started = result["players"], result["started"]
    print(
        f"\nsoak: {args.players} players, {args.spectators} spectators, {args.minutes:g} min on "
        f"2 Daphne + 2 workers (all players live after {result['start_delay']:.1f} s)"
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
    rss_start, rss_settled, rss_end = result["rss"]
    print(
        f"{'process':<20} {'RSS start MB':>12} {'end MB':>7} {'growth':>7} "
        f"{'after failover MB':>17} {'growth since':>12}"
    )
    growths = []
    for name, start in rss_start.items():
        end = rss_end.get(name)
        if end is None:
            print(f"{name:<20} {start:>12.0f} {'killed':>7}")
            continue
        growth = (end - start) / start
        settled = rss_settled.get(name)
        since = (end - settled) / settled if settled else growth
        growths.append(since)  # a survivor's adopted worlds are not a leak
        settled_text = f"{settled:>17.0f} {since * 100:>11.1f}%" if settled else ""
        print(f"{name:<20} {start:>12.0f} {end:>7.0f} {growth * 100:>6.1f}% {settled_text}")
    goals = {
        "no session lost": not lost,
        "failover <= 3 s": result["failover"] is None or (after and max(after) <= 3.0),
        "RSS growth < 10% (survivors: since the failover)": all(g < 0.10 for g in growths),
    }
    print("goals: " + ", ".join(f"{k}: {'met' if v else 'NOT met'}" for k, v in goals.items()))


def main() -> None:
    args = parse_args()
    args.layer = "pubsub"
    prepare_database(args)
    slug, creds = make_players(args, args.players)
    clear_placement(args.redis_url)
    env = stack_env(database_url=args.database_url, redis_url=args.redis_url, LOG_LEVEL="WARNING")
    procs = Processes(Path(tempfile.mkdtemp(prefix="bench-soak-")), env)
    ports = [free_port(), free_port()]
    workers = {}
    try:
        for i, port in enumerate(ports):
            procs.spawn(f"daphne-{i}", daphne_argv(port))
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
    print(f"logs: {procs.logdir}")


if __name__ == "__main__":
    main()
