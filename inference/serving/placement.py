"""Worker registry, session placement by seats, the FIFO queue, snapshots and thumbnails.

Two implementations of one interface (sessions/README.md): ``RedisPlacement`` shares the state
between web processes and worker processes; every read-modify-write runs as one Lua script, so
two web processes placing at once can never overfill a worker. ``InMemoryPlacement`` is the
embedded default (one process), guarded by a lock.

Liveness: a worker is live while its last heartbeat is younger than ``STALE_S``; heartbeats use
the store's clock (Redis ``TIME``), so worker hosts need no synchronised clocks. A session that
lost its worker (dead or shutting down) becomes an *orphan* until a live worker has room for all
its seats. Django-free: this module runs on GPU hosts with only the package and a REDIS_URL.

Seats: in a shared world several players share one session on one worker, and each player costs
the worker a slot; so a worker's load is the total seats of its sessions, not their number.
"""

import threading
import time
from collections import deque
from typing import Protocol

import redis

from inference.serving import placement_lua as lua

STALE_S = 1.5  # a worker whose heartbeat is older than this is dead
HEARTBEAT_S = 0.5
SNAPSHOT_TTL_S = 3600  # a snapshot outlives its session by at most this
STATS_TTL_S = 86400


class Placement(Protocol):
    def register_worker(self, name: str, *, device: str, capacity: int) -> None: ...
    def heartbeat(self, name: str, *, load: int, fps: float) -> bool: ...
    def deregister(self, name: str) -> None: ...
    def live_workers(self) -> list[dict]: ...
    def reserve_slot(self, session_id: str, seats: int = 1) -> str | None: ...
    def release_slot(self, session_id: str) -> None: ...
    def add_seat(self, session_id: str) -> bool: ...
    def remove_seat(self, session_id: str) -> None: ...
    def seats_of(self, session_id: str) -> int: ...
    def worker_of(self, session_id: str) -> str | None: ...
    def sessions_of(self, name: str) -> set[str]: ...
    def enqueue(self, session_id: str, *, front: bool = False) -> None: ...
    def dequeue_next(self) -> str | None: ...
    def queue_position(self, session_id: str) -> int | None: ...
    def remove_from_queue(self, session_id: str) -> None: ...
    def save_snapshot(self, session_id: str, data: bytes) -> None: ...
    def load_snapshot(self, session_id: str) -> bytes | None: ...
    def delete_snapshot(self, session_id: str) -> None: ...
    def save_thumbnail(self, session_id: str, jpeg: bytes) -> None: ...
    def load_thumbnail(self, session_id: str) -> bytes | None: ...
    def delete_thumbnail(self, session_id: str) -> None: ...
    def thumbnails_saved(self, session_ids: list[str]) -> set[str]: ...
    def record_frames(self, session_id: str, frames: int) -> None: ...
    def session_frames(self, session_id: str) -> int: ...
    def reap(self, *, stale_s: float = STALE_S) -> tuple[list[str], list[tuple[str, str]]]: ...
    def handover(self, name: str) -> list[tuple[str, str]]: ...


# --- Redis -----------------------------------------------------------------------------------
# Keys, under a prefix P:  P:workers (set of names), P:w:<name> (hash: device, capacity,
# last_beat ms, fps, load as the worker reports it, draining), P:ws:<name> (set: sessions placed
# there), P:s2w (hash: session -> worker), P:seats (hash: session -> seats, placed or orphaned),
# P:queue (list, FIFO), P:orphans (list: sessions waiting to be re-placed), P:snap:<session>
# (bytes), P:thumb:<session> (JPEG bytes), P:frames:<session> (int). Scripts touch keys derived
# from the prefix, so this targets a single Redis (not Redis Cluster).


def _text(value) -> str | None:
    return value.decode() if isinstance(value, bytes) else value


def _pairs(flat) -> list[tuple[str, str]]:
    flat = [_text(v) for v in flat]
    return list(zip(flat[0::2], flat[1::2], strict=True))


def _seat_count(seats: int) -> int:
    if int(seats) < 1:
        raise ValueError(f"a session needs at least one seat, not {seats}")
    return int(seats)


class RedisPlacement:
    def __init__(self, redis_url: str, *, prefix: str = "px:play", client=None) -> None:
        self.prefix = prefix
        self._r = client or redis.Redis.from_url(redis_url)
        self._register = self._r.register_script(lua.REGISTER)
        self._heartbeat = self._r.register_script(lua.HEARTBEAT)
        self._deregister = self._r.register_script(lua.DEREGISTER)
        self._reserve = self._r.register_script(lua.RESERVE)
        self._release = self._r.register_script(lua.RELEASE)
        self._add_seat = self._r.register_script(lua.ADD_SEAT)
        self._remove_seat = self._r.register_script(lua.REMOVE_SEAT)
        self._load = self._r.register_script(lua.LOAD)
        self._enqueue = self._r.register_script(lua.ENQUEUE)
        self._reap = self._r.register_script(lua.REAP)
        self._handover = self._r.register_script(lua.HANDOVER)

    def _key(self, *parts: str) -> str:
        return ":".join((self.prefix, *parts))

    # Registry
    def register_worker(self, name: str, *, device: str, capacity: int) -> None:
        self._register(args=[self.prefix, name, device, int(capacity)])

    def heartbeat(self, name: str, *, load: int, fps: float) -> bool:
        """False when the worker was reaped meanwhile: its sessions now live elsewhere."""
        return bool(self._heartbeat(args=[self.prefix, name, int(load), round(float(fps), 2)]))

    def deregister(self, name: str) -> None:
        self._deregister(args=[self.prefix, name])

    def live_workers(self) -> list[dict]:
        now_s, now_us = self._r.time()
        now_ms = now_s * 1000 + now_us // 1000
        workers = []
        for raw in sorted(self._r.smembers(self._key("workers"))):
            name = _text(raw)
            info = {_text(k): _text(v) for k, v in self._r.hgetall(self._key("w", name)).items()}
            if not info or now_ms - int(info["last_beat"]) >= STALE_S * 1000:
                continue
            workers.append(
                {
                    "name": name,
                    "device": info["device"],
                    "capacity": int(info["capacity"]),
                    "load": int(self._load(args=[self.prefix, name])),
                    "fps": float(info["fps"]),
                    "last_beat": int(info["last_beat"]) / 1000,
                    "draining": info["draining"] == "1",
                }
            )
        return workers

    # Placement
    def reserve_slot(self, session_id: str, seats: int = 1) -> str | None:
        """The worker now holding the session (idempotent, whatever ``seats``), or None: no
        live worker has ``seats`` free seats."""
        args = [self.prefix, str(session_id), int(STALE_S * 1000), _seat_count(seats)]
        return _text(self._reserve(args=args))

    def release_slot(self, session_id: str) -> None:
        """Frees all the session's seats (and forgets their count)."""
        self._release(args=[self.prefix, str(session_id)])

    def add_seat(self, session_id: str) -> bool:
        """One more player in a placed session; False: its worker is full, or it is not placed."""
        return bool(self._add_seat(args=[self.prefix, str(session_id)]))

    def remove_seat(self, session_id: str) -> None:
        """One player fewer; a session keeps at least one seat until release_slot."""
        self._remove_seat(args=[self.prefix, str(session_id)])

    def seats_of(self, session_id: str) -> int:
        """Seats the session holds (an orphan keeps its count); 0 when released or unknown."""
        return int(self._r.hget(self._key("seats"), str(session_id)) or 0)

    def worker_of(self, session_id: str) -> str | None:
        return _text(self._r.hget(self._key("s2w"), str(session_id)))

    def sessions_of(self, name: str) -> set[str]:
        return {_text(s) for s in self._r.smembers(self._key("ws", name))}

    def orphans(self) -> list[str]:
        return [_text(s) for s in self._r.lrange(self._key("orphans"), 0, -1)]

    def reap(self, *, stale_s: float = STALE_S) -> tuple[list[str], list[tuple[str, str]]]:
        """-> (dead workers removed, [(session, new worker)] placed from the orphans)."""
        dead, placed = self._reap(args=[self.prefix, int(stale_s * 1000)])
        return [_text(d) for d in dead], _pairs(placed)

    def handover(self, name: str) -> list[tuple[str, str]]:
        """Drain ``name``: -> [(session, new worker)]; the rest wait as orphans."""
        return _pairs(self._handover(args=[self.prefix, name, int(STALE_S * 1000)]))

    # FIFO queue of sessions waiting for a slot; positions are 1-based (1 = next).
    def enqueue(self, session_id: str, *, front: bool = False) -> None:
        # front: back to the head it was just taken from (a reservation lost to a race).
        self._enqueue(args=[self.prefix, str(session_id), "1" if front else "0"])

    def dequeue_next(self) -> str | None:
        return _text(self._r.lpop(self._key("queue")))

    def queue_position(self, session_id: str) -> int | None:
        index = self._r.lpos(self._key("queue"), str(session_id))
        return None if index is None else index + 1

    def remove_from_queue(self, session_id: str) -> None:
        self._r.lrem(self._key("queue"), 0, str(session_id))

    def queue_length(self) -> int:
        return self._r.llen(self._key("queue"))

    # Snapshots and counters
    def save_snapshot(self, session_id: str, data: bytes) -> None:
        self._r.set(self._key("snap", str(session_id)), data, ex=SNAPSHOT_TTL_S)

    def load_snapshot(self, session_id: str) -> bytes | None:
        return self._r.get(self._key("snap", str(session_id)))

    def delete_snapshot(self, session_id: str) -> None:
        self._r.delete(self._key("snap", str(session_id)))

    # Thumbnails for the Live listing; they expire like snapshots.
    def save_thumbnail(self, session_id: str, jpeg: bytes) -> None:
        self._r.set(self._key("thumb", str(session_id)), jpeg, ex=SNAPSHOT_TTL_S)

    def load_thumbnail(self, session_id: str) -> bytes | None:
        return self._r.get(self._key("thumb", str(session_id)))

    def delete_thumbnail(self, session_id: str) -> None:
        self._r.delete(self._key("thumb", str(session_id)))

    def thumbnails_saved(self, session_ids: list[str]) -> set[str]:
        """Which of these sessions have a thumbnail: one round trip, no image bytes."""
        ids = [str(sid) for sid in session_ids]
        if not ids:
            return set()
        pipe = self._r.pipeline(transaction=False)
        for sid in ids:
            pipe.exists(self._key("thumb", sid))
        return {sid for sid, found in zip(ids, pipe.execute(), strict=True) if found}

    def record_frames(self, session_id: str, frames: int) -> None:
        """Frames generated so far (the worker writes it; the web side copies it at the end)."""
        self._r.set(self._key("frames", str(session_id)), int(frames), ex=STATS_TTL_S)

    def session_frames(self, session_id: str) -> int:
        return int(self._r.get(self._key("frames", str(session_id))) or 0)


# --- In memory -------------------------------------------------------------------------------
class InMemoryPlacement:
    """The same contract for one process (embedded default); one lock makes each call atomic."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._workers: dict[str, dict] = {}
        self._placed: dict[str, set[str]] = {}  # worker -> sessions
        self._s2w: dict[str, str] = {}
        self._seats: dict[str, int] = {}  # session -> seats, placed or orphaned
        self._queue: deque[str] = deque()
        self._orphans: deque[str] = deque()
        self._snapshots: dict[str, bytes] = {}
        self._thumbnails: dict[str, bytes] = {}
        self._frames: dict[str, int] = {}

    def _orphan_all(self, name: str) -> None:
        for sid in self._placed.pop(name, set()):
            self._s2w.pop(sid, None)
            self._orphans.append(sid)

    def _live(self, name: str, now: float, stale_s: float = STALE_S) -> bool:
        info = self._workers.get(name)
        return info is not None and now - info["last_beat"] < stale_s

    def _load(self, name: str) -> int:
        return sum(self._seats.get(sid, 1) for sid in self._placed.get(name, ()))

    def _pick(self, now: float, need: int = 1) -> str | None:
        candidates = []
        for name, info in self._workers.items():
            load = self._load(name)
            free = info["capacity"] - load
            if self._live(name, now) and not info["draining"] and free >= need:
                candidates.append((load, -free, name))
        return min(candidates)[2] if candidates else None

    def _assign(self, sid: str, name: str) -> None:
        self._placed.setdefault(name, set()).add(sid)
        self._s2w[sid] = name

    def register_worker(self, name: str, *, device: str, capacity: int) -> None:
        with self._lock:
            self._orphan_all(name)
            self._workers[name] = {
                "device": device,
                "capacity": int(capacity),
                "last_beat": time.monotonic(),
                "fps": 0.0,
                "draining": False,
            }

    def heartbeat(self, name: str, *, load: int, fps: float) -> bool:
        with self._lock:
            info = self._workers.get(name)
            if info is None:
                return False
            info.update(last_beat=time.monotonic(), fps=float(fps))
            return True

    def deregister(self, name: str) -> None:
        with self._lock:
            self._orphan_all(name)
            self._workers.pop(name, None)

    def live_workers(self) -> list[dict]:
        now = time.monotonic()
        wall_offset = time.time() - now
        with self._lock:
            return [
                {
                    "name": name,
                    "device": info["device"],
                    "capacity": info["capacity"],
                    "load": self._load(name),
                    "fps": info["fps"],
                    "last_beat": info["last_beat"] + wall_offset,
                    "draining": info["draining"],
                }
                for name, info in sorted(self._workers.items())
                if self._live(name, now)
            ]

    def reserve_slot(self, session_id: str, seats: int = 1) -> str | None:
        sid, need = str(session_id), _seat_count(seats)
        with self._lock:
            if sid in self._s2w:
                return self._s2w[sid]
            best = self._pick(time.monotonic(), need)
            if best is not None:
                self._assign(sid, best)
                self._seats[sid] = need
            return best

    def release_slot(self, session_id: str) -> None:
        sid = str(session_id)
        with self._lock:
            name = self._s2w.pop(sid, None)
            if name is not None:
                self._placed.get(name, set()).discard(sid)
            if sid in self._orphans:
                self._orphans.remove(sid)
            self._seats.pop(sid, None)

    def add_seat(self, session_id: str) -> bool:
        sid = str(session_id)
        with self._lock:
            name = self._s2w.get(sid)
            info = self._workers.get(name) if name is not None else None
            if info is None or info["capacity"] - self._load(name) < 1:
                return False
            self._seats[sid] = self._seats.get(sid, 1) + 1
            return True

    def remove_seat(self, session_id: str) -> None:
        sid = str(session_id)
        with self._lock:
            if self._seats.get(sid, 0) > 1:
                self._seats[sid] -= 1

    def seats_of(self, session_id: str) -> int:
        with self._lock:
            return self._seats.get(str(session_id), 0)

    def worker_of(self, session_id: str) -> str | None:
        with self._lock:
            return self._s2w.get(str(session_id))

    def sessions_of(self, name: str) -> set[str]:
        with self._lock:
            return set(self._placed.get(name, ()))

    def orphans(self) -> list[str]:
        with self._lock:
            return list(self._orphans)

    def reap(self, *, stale_s: float = STALE_S) -> tuple[list[str], list[tuple[str, str]]]:
        now = time.monotonic()
        with self._lock:
            dead = [n for n in sorted(self._workers) if not self._live(n, now, stale_s)]
            for name in dead:
                self._orphan_all(name)
                del self._workers[name]
            placed = []
            while self._orphans:
                best = self._pick(now, self._seats.get(self._orphans[0], 1))
                if best is None:
                    break  # FIFO: a later, smaller orphan does not jump the head
                sid = self._orphans.popleft()
                self._assign(sid, best)
                placed.append((sid, best))
            return dead, placed

    def handover(self, name: str) -> list[tuple[str, str]]:
        now = time.monotonic()
        with self._lock:
            if name in self._workers:
                self._workers[name]["draining"] = True
            placed = []
            for sid in sorted(self._placed.pop(name, set())):
                self._s2w.pop(sid, None)
                best = self._pick(now, self._seats.get(sid, 1))
                if best is None:
                    self._orphans.append(sid)
                else:
                    self._assign(sid, best)
                    placed.append((sid, best))
            return placed

    def enqueue(self, session_id: str, *, front: bool = False) -> None:
        with self._lock:
            if str(session_id) not in self._queue:
                if front:
                    self._queue.appendleft(str(session_id))
                else:
                    self._queue.append(str(session_id))

    def dequeue_next(self) -> str | None:
        with self._lock:
            return self._queue.popleft() if self._queue else None

    def queue_position(self, session_id: str) -> int | None:
        with self._lock:
            try:
                return self._queue.index(str(session_id)) + 1
            except ValueError:
                return None

    def remove_from_queue(self, session_id: str) -> None:
        with self._lock:
            if str(session_id) in self._queue:
                self._queue.remove(str(session_id))

    def queue_length(self) -> int:
        with self._lock:
            return len(self._queue)

    def save_snapshot(self, session_id: str, data: bytes) -> None:
        with self._lock:
            self._snapshots[str(session_id)] = bytes(data)

    def load_snapshot(self, session_id: str) -> bytes | None:
        with self._lock:
            return self._snapshots.get(str(session_id))

    def delete_snapshot(self, session_id: str) -> None:
        with self._lock:
            self._snapshots.pop(str(session_id), None)

    def save_thumbnail(self, session_id: str, jpeg: bytes) -> None:
        with self._lock:
            self._thumbnails[str(session_id)] = bytes(jpeg)

    def load_thumbnail(self, session_id: str) -> bytes | None:
        with self._lock:
            return self._thumbnails.get(str(session_id))

    def delete_thumbnail(self, session_id: str) -> None:
        with self._lock:
            self._thumbnails.pop(str(session_id), None)

    def thumbnails_saved(self, session_ids: list[str]) -> set[str]:
        with self._lock:
            return {str(sid) for sid in session_ids if str(sid) in self._thumbnails}

    def record_frames(self, session_id: str, frames: int) -> None:
        with self._lock:
            self._frames[str(session_id)] = int(frames)

    def session_frames(self, session_id: str) -> int:
        with self._lock:
            return self._frames.get(str(session_id), 0)
