"""The world evolving by itself: every tick (`spec.TICK_FRAMES` world frames) the learned
dynamics (`dynamics.Dynamics`) advance the tiles round the players (fire spreads and burns
out, puddles fill and dry, snow settles and melts, lava cools, ash grows back) and choose each
creature's heading.

A tick is made off the frame path: at the start of tick k the engine copies what the tick
reads (`TickJob`), the dynamics thread makes it, and the engine applies it at the start of
tick k + 1 (`PendingTick`, part of the state). Without the thread the same job is made at the
end of the step that cut it; either way it is a function of the world at the start of tick k
alone, with seeded draws, so a snapshot, a replay of the journal or a replay of the same
inputs makes the same world bit for bit (on the same weights and CPU kind).

Out of sight: each chunk keeps the tick it has reached (`WorldState.clocks`). A chunk no one
was near lags, and when a player comes back it catches up, `CATCH_UP` ticks of its own per
tick of the world, so the place fast-forwards through what happened while they were away;
a Live world kept between sessions lags by the wall-clock time it stood empty
(`catch_up_kept`)."""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from inference.world import spec
from inference.world.dynamics import (
    FIRE,
    MARGIN,
    NO_PLAYER,
    SIGHT,
    CreatureBatch,
    Dynamics,
    TileBatch,
)
from inference.world.objects import is_water_token
from inference.world.state import PendingTick, WorldState

ACTIVE = 1  # chunks round a player's chunk that evolve: all its view can show
CATCH_UP = 8  # ticks of its own a lagging chunk makes per tick of the world
CATCH_UP_MAX = 480  # ticks a chunk catches up at most (2 minutes of play)
_TICK_MINUTES = spec.TICK_FRAMES / spec.FRAMES_PER_MINUTE


@dataclass
class Region:
    """A dense copy of the canvas round some of a world's evolving chunks."""

    tx0: int  # tile of [0, 0]
    ty0: int
    tokens: np.ndarray  # (H, W) int64
    cover: np.ndarray  # (H, W) uint8
    chunks: list[tuple[int, int]]  # the evolving chunks inside it (MARGIN tiles in)
    lag: list[int]  # ticks each of them catches up in this tick
    clocks: list[int]  # the tick each of them had reached: its catch-up ticks follow on


@dataclass
class TickJob:
    """What one world's tick reads, copied at its start (`make_job`)."""

    world_id: str
    tick: int
    seed: int
    weather: int
    minute: int
    regions: list[Region]
    creatures: CreatureBatch | None


def active_chunks(world: WorldState) -> list[tuple[int, int]]:
    """The chunks that exist within ACTIVE chunks of a player's, in a fixed order."""
    px = spec.CHUNK * spec.TILE
    near = {
        (p.x // px + dx, p.y // px + dy)
        for p in world.players
        for dy in range(-ACTIVE, ACTIVE + 1)
        for dx in range(-ACTIVE, ACTIVE + 1)
    }
    return sorted((k for k in near if k in world.chunks), key=lambda k: (k[1], k[0]))


def covers_near_players(world: WorldState) -> list[str]:
    """The covers lying round the players now (what a story may mention: a fire burning)."""
    seen = {
        int(c) for k in active_chunks(world) if k in world.cover for c in np.unique(world.cover[k])
    }
    return [spec.COVERS[c] for c in sorted(seen - {0})]


def _groups(chunks: list[tuple[int, int]]) -> list[list[tuple[int, int]]]:
    """Chunks split where they do not touch (players far apart evolve apart: a dense copy
    spans only one group)."""
    left, out = set(chunks), []
    while left:
        seed = min(left, key=lambda k: (k[1], k[0]))
        group, todo = {seed}, [seed]
        left.discard(seed)
        while todo:
            cx, cy = todo.pop()
            for n in ((cx + dx, cy + dy) for dy in (-1, 0, 1) for dx in (-1, 0, 1)):
                if n in left:
                    left.discard(n)
                    group.add(n)
                    todo.append(n)
        out.append(sorted(group, key=lambda k: (k[1], k[0])))
    return out


def make_job(world: WorldState, tick: int) -> TickJob:
    """Copy what tick ``tick`` of a world reads and move its chunks' clocks on (the engine
    thread, under the canvas lock)."""
    c, regions = spec.CHUNK, []
    for group in _groups(active_chunks(world)):
        lag, clocks = [], []
        for k in group:
            clock = max(world.clocks.get(k, tick - 1), tick - 1 - CATCH_UP_MAX)
            owed = min(tick - 1 - clock, CATCH_UP)
            world.clocks[k] = clock + owed + 1
            lag.append(owed)
            clocks.append(clock)
        xs, ys = [k[0] for k in group], [k[1] for k in group]
        tx0, ty0 = min(xs) * c - MARGIN, min(ys) * c - MARGIN
        w, h = (max(xs) - min(xs) + 1) * c + 2 * MARGIN, (max(ys) - min(ys) + 1) * c + 2 * MARGIN
        regions.append(
            Region(
                tx0,
                ty0,
                world.region(tx0, ty0, w, h),
                world.cover_region(tx0, ty0, w, h),
                group,
                lag,
                clocks,
            )
        )
    creatures = _creature_batch(world, tick)
    return TickJob(
        world.world_id,
        tick,
        world.seed,
        world.weather,
        world.minute,
        regions,
        creatures,
    )


def _creature_batch(world: WorldState, tick: int) -> CreatureBatch | None:
    if not world.creatures:
        return None
    v, t = 2 * SIGHT + 1, spec.TILE
    tokens, cover, player = [], [], []
    for cr in world.creatures:
        tx, ty = cr.x // t - SIGHT, cr.y // t - SIGHT
        tokens.append(world.region(tx, ty, v, v))
        cover.append(world.cover_region(tx, ty, v, v))
        offsets = [(p.x - cr.x, p.y - cr.y) for p in world.players]
        player.append(min(offsets, key=lambda o: o[0] ** 2 + o[1] ** 2, default=(NO_PLAYER,) * 2))
    n = len(world.creatures)
    return CreatureBatch(
        tokens=np.stack(tokens),
        cover=np.stack(cover),
        kind=np.array([cr.kind for cr in world.creatures], np.int64),
        player=np.array(player, np.int64),
        seed=np.full(n, world.seed, np.int64),
        tick=np.full(n, tick, np.int64),
        ident=np.array([cr.ident for cr in world.creatures], np.int64),
    )


def run_jobs(dynamics: Dynamics, jobs: list[TickJob]) -> list[PendingTick]:
    """Make the ticks of many worlds (any thread: it reads only the jobs). Each pass is one
    batched call over every chunk that takes part in it: a lagging chunk its catch-up ticks
    first, then every chunk the tick itself. A chunk's ticks are numbered on from its own
    clock, so no two of its ticks draw with the same uniforms."""
    c = spec.CHUNK
    originals = [[(r.tokens.copy(), r.cover.copy()) for r in job.regions] for job in jobs]
    passes = 1 + max((max(r.lag, default=0) for j in jobs for r in j.regions), default=0)
    for p in range(passes):
        behind = passes - 1 - p  # ticks before the job's own that this pass makes
        parts = []  # (job, region, chunk index, its tick)
        for job in jobs:
            for region in job.regions:
                for i, lag in enumerate(region.lag):
                    if lag >= behind:
                        parts.append((job, region, i, region.clocks[i] + 1 + lag - behind))
        if not parts:
            continue
        size = c + 2 * MARGIN
        tokens = np.empty((len(parts), size, size), np.int64)
        cover = np.empty((len(parts), size, size), np.uint8)
        origin = np.empty((len(parts), 2), np.int64)
        for n, (_, region, i, _) in enumerate(parts):
            ox, oy = _chunk_at(region, i)
            tokens[n] = region.tokens[oy : oy + size, ox : ox + size]
            cover[n] = region.cover[oy : oy + size, ox : ox + size]
            origin[n] = (region.tx0 + ox + MARGIN, region.ty0 + oy + MARGIN)
        minute = [  # the time of day of a catch-up tick: as long before now as it lags
            int(job.minute - (job.tick - tick) * _TICK_MINUTES) % spec.DAY_MINUTES
            for job, _, _, tick in parts
        ]
        new_tokens, new_cover = dynamics.tiles(
            TileBatch(
                tokens=tokens,
                cover=cover,
                weather=np.array([part[0].weather for part in parts], np.int64),
                minute=np.array(minute, np.int64),
                seed=np.array([part[0].seed for part in parts], np.int64),
                tick=np.array([part[3] for part in parts], np.int64),
                origin=origin,
            )
        )
        for n, (_, region, i, _) in enumerate(parts):  # after the pass: every chunk read before
            ox, oy = _chunk_at(region, i)
            inner = (slice(oy + MARGIN, oy + MARGIN + c), slice(ox + MARGIN, ox + MARGIN + c))
            region.tokens[inner] = new_tokens[n]
            region.cover[inner] = new_cover[n]
    headings = [  # creature ident -> its heading
        {}
        if job.creatures is None
        else dict(
            zip(
                job.creatures.ident.tolist(),
                dynamics.creatures(job.creatures).tolist(),
                strict=True,
            )
        )
        for job in jobs
    ]
    return [
        PendingTick(job.tick, _changes(job, was), heads)
        for job, was, heads in zip(jobs, originals, headings, strict=True)
    ]


def _chunk_at(region: Region, i: int) -> tuple[int, int]:
    """Where the patch of a region's i-th chunk starts in its arrays (x, y)."""
    cx, cy = region.chunks[i]
    return cx * spec.CHUNK - MARGIN - region.tx0, cy * spec.CHUNK - MARGIN - region.ty0


def _changes(job: TickJob, originals: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """(n, 4) tile x, tile y, token, cover of every tile the tick changed."""
    out = []
    for region, (tokens, cover) in zip(job.regions, originals, strict=True):
        ys, xs = np.nonzero((region.tokens != tokens) | (region.cover != cover))
        out.append(
            np.stack(
                [xs + region.tx0, ys + region.ty0, region.tokens[ys, xs], region.cover[ys, xs]], 1
            )
        )
    return np.concatenate(out).astype(np.int64) if out else np.zeros((0, 4), np.int64)


def apply_pending(world: WorldState, pending: PendingTick) -> None:
    """Write a made tick into the world (the engine thread, under the canvas lock)."""
    for tx, ty, token, cover in pending.tiles.tolist():
        if world.token_at(tx, ty) != token:
            world.set_token(tx, ty, token)
        world.set_cover(tx, ty, cover)
    for cr in world.creatures:
        cr.heading = pending.headings.get(cr.ident, cr.heading)


class Evolution:
    """The ticks of `WorldEngine` (a part of it, as `TerrainGrowth` is): cut at the start of a
    tick, made on the dynamics thread (or at the end of the step without it), applied at the
    start of the next."""

    dynamics: Dynamics
    worlds: dict[str, WorldState]
    _canvas: threading.RLock
    _frames: dict[str, int]

    def _init_evolution(self, dynamics: Dynamics) -> None:
        self.dynamics = dynamics
        self._cut: list[TickJob] = []  # jobs cut in this step, not yet handed on
        # world id -> the thread's making of its tick: the batch's future, the world's place in it
        self._making: dict[str, tuple[Future, int]] = {}
        self._evolver: ThreadPoolExecutor | None = None
        self.ticks_made = 0  # world ticks made (the bench's denominator)
        self.tick_seconds = 0.0  # thread seconds spent making them

    def start_evolution(self) -> None:
        """Make ticks on a thread of their own (the worker): a step only cuts and applies."""
        if self._evolver is None:
            self._evolver = ThreadPoolExecutor(1, thread_name_prefix="dynamics")

    def stop_evolution(self) -> None:
        evolver, self._evolver = self._evolver, None
        if evolver is not None:
            evolver.shutdown(wait=True)

    def _tick(self, world: WorldState) -> None:
        """The start of a tick of a world (its clock just reached one): apply the last, cut
        the next."""
        self._settle(world)
        if world.pending is not None:
            apply_pending(world, world.pending)
            world.pending = None
        if world.players:
            self._cut.append(make_job(world, spec.tick_of(world.t)))

    def _settle(self, world: WorldState) -> None:
        """The world's tick in the making, made: into ``world.pending``."""
        wid = world.world_id
        cut = [j for j in self._cut if j.world_id == wid]
        if cut:  # cut in this very step (a step of many frames crosses ticks)
            self._cut = [j for j in self._cut if j.world_id != wid]
            (world.pending,) = self._make(cut)
        elif wid in self._making:
            future, i = self._making.pop(wid)
            world.pending = future.result()[i]

    def _hand_on(self) -> None:
        """At the end of a step: the ticks cut in it are made (on the thread if it runs)."""
        jobs, self._cut = self._cut, []
        if not jobs:
            return
        if self._evolver is None:
            for job, pending in zip(jobs, self._make(jobs), strict=True):
                self.worlds[job.world_id].pending = pending
            return
        future = self._evolver.submit(self._make, jobs)
        for i, job in enumerate(jobs):
            self._making[job.world_id] = (future, i)

    def _make(self, jobs: list[TickJob]) -> list[PendingTick]:
        # World by world: float results may differ in the last bit with a batch's make-up, and a
        # world's must not depend on which other worlds ticked with it (a recording replays it
        # alone). Its own chunks are batched, the same in a replay.
        start = time.perf_counter()
        out = [run_jobs(self.dynamics, [job])[0] for job in jobs]
        self.tick_seconds += time.perf_counter() - start
        self.ticks_made += len(jobs)
        return out

    def _forget_ticks(self, world_id: str) -> None:
        self._cut = [j for j in self._cut if j.world_id != world_id]
        self._making.pop(world_id, None)

    def ignite(self, world: WorldState, tiles: list[tuple[int, int]]) -> None:
        """A fire starts on these tiles (an event), never on water: the dynamics carry it on
        (and put it out where nothing burns)."""
        for tx, ty in tiles:
            token = world.token_at(tx, ty)
            if token < spec.NUM_TOKENS and not is_water_token(token):
                world.set_cover(tx, ty, FIRE)

    def catch_up_kept(self, world_id: str, now: float) -> None:
        """A Live world back after standing empty since it was kept: its clock moves on by
        the time that passed (its chunks lag, and catch up as players come near)."""
        world = self.worlds[world_id]
        frames = int(max(0.0, now - world.kept_at) * spec.WORLD_FPS) if world.kept_at > 0 else 0
        world.kept_at = 0.0
        frames -= frames % (spec.TICK_FRAMES * spec.FRAMES_PER_MINUTE)  # ticks and minutes in step
        with self._canvas:
            self._settle(world)
            world.t += frames
            world.minute = (world.minute + frames // spec.FRAMES_PER_MINUTE) % spec.DAY_MINUTES
            for p in world.players:  # their cameras start at the present, as a newcomer's
                self._frames[p.player_id] = world.t
