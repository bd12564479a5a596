"""The players of bench/play.py: WebSocket clients holding random keys, the sessions they open
(single or shared rooms), and a worker killed mid-run."""

from __future__ import annotations

import asyncio
import json
import random
import sys
import time

from bench.play_stack import Stack

KEY_SETS = [[], ["w"], ["a"], ["s"], ["d"], ["w", "d"], ["s", "a"], ["space"]]
STATS_SETTLE_S = 5.5  # a little over the workers' STATS_EVERY_S


class Player:
    def __init__(self, index: int, session_id: str, rng: random.Random, slot: int = 0):
        self.index, self.session_id, self.rng, self.slot = index, session_id, rng, slot
        self.seq = 0
        self.sent_at: dict[int, float] = {}  # seq of a key change -> send time
        self.pending: list[int] = []  # key changes not yet seen in a frame
        self.latencies: list[float] = []
        self.frames = 0
        self.gaps = 0
        self.last_frame_no: int | None = None
        self.last_frame_at: float | None = None
        self.intervals: list[float] = []  # seconds between consecutive frames, measured
        self.measuring = False
        self.killed_at: float | None = None  # when its worker was killed (--kill)
        self.resumed_after: float | None = None  # seconds from the kill to a restored frame
        self.notes: list[str] = []  # JSON messages, for a failed run's diagnosis

    async def play(self, url: str, cookie: str, origin: str, until: float) -> None:
        self.until = until  # moved up once the measured window is known
        import websockets

        from inference.serving.frames import FLAG_RESTORED, decode_header

        async with websockets.connect(
            url,
            origin=origin,
            proxy=None,
            compression=None,
            max_size=2**20,
            additional_headers={"Cookie": f"sessionid={cookie}"},
        ) as ws:
            sender = asyncio.create_task(self._hold_keys(ws))
            try:
                while time.monotonic() < self.until:
                    try:
                        message = await asyncio.wait_for(
                            ws.recv(), max(0.01, self.until - time.monotonic())
                        )
                    except TimeoutError:
                        break
                    if not isinstance(message, bytes):
                        self.notes.append(message)
                        continue
                    _, flags, frame_no, seq = decode_header(message)
                    now = time.monotonic()
                    if self.killed_at and self.resumed_after is None and flags & FLAG_RESTORED:
                        self.resumed_after = now - self.killed_at
                    self._on_frame(frame_no, seq, now)
            finally:
                sender.cancel()

    def _on_frame(self, frame_no: int, seq: int, now: float) -> None:
        if self.measuring and self.last_frame_at is not None:
            self.intervals.append(now - self.last_frame_at)
        self.last_frame_at = now
        if self.measuring:
            self.frames += 1
            if self.last_frame_no is not None and frame_no > self.last_frame_no + 1:
                self.gaps += frame_no - self.last_frame_no - 1
        self.last_frame_no = frame_no
        while self.pending and self.pending[0] <= seq:
            change = self.pending.pop(0)
            if self.measuring:
                self.latencies.append(now - self.sent_at.pop(change))

    async def _hold_keys(self, ws) -> None:
        keys, change_at = [], 0.0
        while time.monotonic() < self.until:
            now = time.monotonic()
            self.seq += 1
            if now >= change_at:
                keys = self.rng.choice([k for k in KEY_SETS if k != keys])
                change_at = now + self.rng.uniform(0.3, 1.2)
                self.sent_at[self.seq] = now
                self.pending.append(self.seq)
            await ws.send(json.dumps({"type": "input", "seq": self.seq, "keys": keys}))
            await asyncio.sleep(min(0.25, max(0.01, change_at - time.monotonic())))


def _auth(creds: dict) -> dict:
    return {"Authorization": f"Token {creds['token']}"}


def _refused(what: str, response) -> SystemExit:
    request = response.request
    return SystemExit(
        f"{what}: {request.method} {request.url} {request.content.decode()!r} -> "
        f"{response.status_code} {response.text}"
    )


async def open_single(http, slug: str, players: list[dict]) -> list[tuple[str, int]]:
    """One session per player; -> [(session id, slot 0)]."""
    seated = []
    for creds in players:
        response = await http.post("/api/sessions/", json={"world": slug}, headers=_auth(creds))
        response.raise_for_status()
        seated.append((response.json()["id"], 0))
    return seated


async def open_rooms(http, slug: str, players: list[dict], per_room: int) -> list[tuple[str, int]]:
    """Shared public sessions of ``per_room`` players: the first of each group creates one,
    the others join it; -> [(session id, slot)] per player."""
    seated = []
    for first in range(0, len(players), per_room):
        creator, *joiners = players[first : first + per_room]
        body = {"world": slug, "shared": True, "public": True}
        response = await http.post("/api/sessions/", json=body, headers=_auth(creator))
        if response.status_code != 201 or response.json().get("max_players", 0) < per_room:
            raise _refused(f"a room for {per_room} players", response)
        session_id = response.json()["id"]
        seated.append((session_id, 0))
        for creds in joiners:
            response = await http.post(
                f"/api/sessions/{session_id}/join/", json={}, headers=_auth(creds)
            )
            if response.status_code != 201 or "slot" not in (response.json().get("player") or {}):
                raise _refused("joining a room", response)
            seated.append((session_id, response.json()["player"]["slot"]))
    return seated


async def run_players(
    args, stack: Stack, slug: str, players: list[dict], per_room: int = 0
) -> dict:
    """Open the players' sessions (alone, or ``per_room`` to a shared one), play, measure, end."""
    import httpx

    rng = random.Random(args.seed)
    base = f"http://127.0.0.1:{stack.port}"
    async with httpx.AsyncClient(base_url=base, timeout=30) as http:
        if per_room:
            seated = await open_rooms(http, slug, players, per_room)
        else:
            seated = await open_single(http, slug, players)
    bench = [
        Player(i, sid, random.Random(rng.random()), slot) for i, (sid, slot) in enumerate(seated)
    ]
    # Worlds are built one after another on the worker (seconds each on a busy CPU): the
    # measured window starts once every player has its first frame.
    until = time.monotonic() + args.start_timeout + args.warmup + args.seconds
    tasks = [
        asyncio.create_task(
            p.play(
                f"ws://127.0.0.1:{stack.port}/ws/play/{p.session_id}/", creds["cookie"], base, until
            )
        )
        for p, creds in zip(bench, players, strict=True)
    ]
    deadline = time.monotonic() + args.start_timeout
    while any(p.last_frame_no is None for p in bench) and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
    started_after = time.monotonic() - (deadline - args.start_timeout)
    await asyncio.sleep(args.warmup)
    terrain_start = stack.terrain_stats()
    cpu_start = stack.cpu_seconds()
    for p in bench:
        p.measuring = True
    measured_from = time.monotonic()
    await asyncio.sleep(args.seconds)
    window = time.monotonic() - measured_from
    cpu_end = stack.cpu_seconds()
    for p in bench:
        p.measuring = False
    await asyncio.sleep(STATS_SETTLE_S)  # the workers' next stats lines cover the window
    terrain_end = stack.terrain_stats()
    failover = await kill_a_worker(stack, bench) if args.kill else None
    for p in bench:
        p.until = time.monotonic()
    for p, outcome in zip(bench, await asyncio.gather(*tasks, return_exceptions=True), strict=True):
        if isinstance(outcome, BaseException):
            print(f"player {p.index}: {outcome!r} after {p.notes[-3:]}", file=sys.stderr)
        elif p.last_frame_no is None:
            print(
                f"player {p.index} (slot {p.slot}): no frame; got {p.notes[-3:]}", file=sys.stderr
            )
    async with httpx.AsyncClient(base_url=base, timeout=30) as http:
        # Each player leaves: a single session ends, a room ends with its last player.
        for p, creds in zip(bench, players, strict=True):
            await http.delete(f"/api/sessions/{p.session_id}/", headers=_auth(creds))
    return {
        "failover": failover,
        "started_after": started_after,
        "players": bench,
        "window": window,
        "worker_cpu": cpu_end[0] - cpu_start[0],
        "daphne_cpu": cpu_end[1] - cpu_start[1],
        "terrain": {k: terrain_end[k] - terrain_start[k] for k in terrain_end},
    }


async def kill_a_worker(stack: Stack, bench: list) -> dict:
    """kill -9 the worker serving the most sessions; -> how long until each resumed."""
    from inference.serving.placement import RedisPlacement

    placement = RedisPlacement(stack.args.redis_url)
    serving = {p.session_id: placement.worker_of(p.session_id) for p in bench}
    victim = max(stack.names, key=lambda name: list(serving.values()).count(name))
    moved = [p for p in bench if serving[p.session_id] == victim]
    killed_at = time.monotonic()
    for p in moved:
        p.killed_at = killed_at
    stack.names[victim].kill()
    deadline = killed_at + 30
    while any(p.resumed_after is None for p in moved) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    return {"worker": victim, "after": [p.resumed_after for p in moved]}
