"""The latent canvas's terrain: which chunks a player could see that are not made yet, which
tokens the generator may draw for each tile of a world, batched draws of chunks, and the thread
that grows them ahead of the players (`TerrainGrowth`, a part of `WorldEngine`)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

import numpy as np
import torch

from inference.world import journal as jn
from inference.world import noise, spec
from inference.world.model import WorldModel
from inference.world.state import WorldState

log = logging.getLogger(__name__)

AHEAD_FRAMES = 24  # grow_ahead makes the terrain a player can reach within about a second
SOLID_TOKENS = np.array([spec.is_solid_token(t) for t in range(spec.NUM_TOKENS)])


def needed_chunks(world: WorldState, positions, reach: int) -> list[tuple[int, int]]:
    """Missing chunks a player at each position can see within ``reach`` pixels, nearest
    first."""
    needed: dict[tuple[int, int], int] = {}
    px = spec.CHUNK * spec.TILE
    for x, y in positions:
        if world.has_chunks(x, y, reach):  # the usual answer, remembered
            continue
        for cy in range((y - reach) // px, (y + reach) // px + 1):
            for cx in range((x - reach) // px, (x + reach) // px + 1):
                if (cx, cy) not in world.chunks:
                    d = abs(cx * px + px // 2 - x) + abs(cy * px + px // 2 - y)
                    needed[(cx, cy)] = min(d, needed.get((cx, cy), d))
    return sorted(needed, key=lambda k: (needed[k], k[1], k[0]))


def generate_chunks(
    model: WorldModel,
    batch: list[tuple[WorldState, tuple[int, int]]],
    device: torch.device | str = "cpu",
) -> np.ndarray:
    """One generator call for a chunk of each (world, chunk key): -> (len(batch), CHUNK, CHUNK)
    tokens, each seeded by its world and place alone."""
    m, c = model.cfg.gen_margin, spec.CHUNK
    size = c + 2 * m
    g = np.arange(size) - m
    ctx, spawn, probs, texts, seeds, allowed = [], [], [], [], [], []
    for world, (cx, cy) in batch:
        tokens = world.region(cx * c - m, cy * c - m, size, size)
        tokens[m : m + c, m : m + c] = spec.MASK_TOKEN
        ctx.append(tokens)
        spawn.append(spec.in_spawn_zone(cx * c + g[None, :], cy * c + g[:, None]))
        probs.append(world.biome_probs)
        texts.append(world.text_emb)
        seeds.append(spec.mix_hash(world.seed, cx, cy) & 0x7FFFFFFFFFFF)
        allowed.append(biome_tokens(world, cx * c + g[m : m + c], cy * c + g[m : m + c]))
    return (
        model.generator.sample(
            torch.from_numpy(np.stack(ctx)).to(device),
            torch.from_numpy(np.stack(spawn)).long().to(device),
            torch.from_numpy(np.stack(probs)).float().to(device),
            seeds,
            torch.from_numpy(np.stack(texts)).float().to(device),
            torch.from_numpy(np.stack(allowed)).to(device),
        )
        .cpu()
        .numpy()
    )


def biome_tokens(world: WorldState, tx: np.ndarray, ty: np.ndarray) -> np.ndarray:
    """The tokens the generator may draw for tiles (tx columns, ty rows) of a world:
    (NUM_TOKENS, len(ty), len(tx)) bool. Each tile takes its own biome's four kinds (never a
    thing: things come from events); in a mixed world the biome of a tile is the seeded patch
    field the simulator's mixed worlds are made of (shifted so the spawn view shows a border),
    so both biomes grow, in patches."""
    first, second = np.argsort(-world.biome_probs)[:2]
    share = float(world.biome_probs[second])
    biome = np.full((len(ty), len(tx)), first)
    if share > 0:
        dx, dy = noise.mix_origin(world.seed, share)
        second_here = noise.second_biome_at(world.seed, tx[None, :] + dx, ty[:, None] + dy, share)
        biome = np.where(second_here, second, biome)
    k = np.arange(spec.NUM_TOKENS)[:, None, None]
    allowed = (k < spec.BIOME_TOKENS) & (k // len(spec.TILE_KINDS) == biome[None])
    # the spawn zone is walkable ground, as in the simulator's worlds: the generator learned it,
    # but a draw kept in a noisy order (`gen_choice_temp`) could wall a player in at spawn
    zone = spec.in_spawn_zone(tx[None, :], ty[:, None])
    return allowed & ~(zone[None] & SOLID_TOKENS[:, None, None])


class TerrainGrowth:
    """The terrain half of `WorldEngine`: chunks made as players need them, in the step or on a
    thread of its own ahead of them. It works on the engine's worlds under its canvas lock."""

    worlds: dict[str, WorldState]
    model: WorldModel
    device: torch.device
    max_chunk: int
    generate: bool
    grow_in_step: bool
    ahead_chunks: int
    _canvas: threading.RLock
    _terrain: threading.Thread | None
    _terrain_stop: threading.Event
    _terrain_wake: threading.Event

    _log: Callable[[WorldState, jn.Entry], None]  # the engine's journal

    def grow_ahead(self, max_rounds: int = 1, frames: int = AHEAD_FRAMES) -> int:
        """Generate, nearest first, the missing chunks each world's players could reach within
        ``frames`` of walking (about a second) past the next step, at most ``max_rounds``
        chunks per world;
        -> how many. The terrain thread calls it between steps, so a step never has to
        generate terrain itself (``late_chunks`` counts when it did)."""
        # A second of walking beyond what the next step could show (which a step makes itself).
        reach = spec.FRAME // 2 + (self.max_chunk + frames) * spec.PLAYER_SPEED + 2 * spec.TILE
        missing = {}
        with self._canvas:
            worlds = list(self.worlds.items())
        for wid, world in worlds:
            positions = [(p.x, p.y) for p in list(world.players)]
            if positions:
                needed = self._needed_chunks(world, positions, reach=reach)[:max_rounds]
                if needed:
                    missing[wid] = needed
        made = self._grow(missing)
        self.ahead_chunks += made
        return made

    # ------------------------------------------------------------ the terrain thread

    def start_terrain(self) -> None:
        """Grow terrain ahead of every player on a thread of its own (idempotent)."""
        if self._terrain is not None:
            return
        self.grow_in_step = False
        self._terrain_stop.clear()
        self._terrain = threading.Thread(target=self._terrain_loop, name="terrain", daemon=True)
        self._terrain.start()

    def stop_terrain(self, timeout: float = 5.0) -> None:
        thread, self._terrain = self._terrain, None
        if thread is not None:
            self._terrain_stop.set()
            self._terrain_wake.set()
            thread.join(timeout)
        self.grow_in_step = True

    def _terrain_loop(self) -> None:
        # About half of one core: the thread rests as long as its last round took, so the frame
        # path (the engine thread) finds the cores and the GIL free soon; only a quarter of
        # that while a player's next step could show land still missing (they would be held).
        while not self._terrain_stop.is_set():
            started = time.perf_counter()
            try:
                made = self.grow_ahead(max_rounds=1)
                urgent = made and self._edge_missing()
            except Exception:  # a world dropped mid-plan, a bad canvas: log, go on
                log.exception("terrain thread: growing ahead failed")
                made = urgent = 0
            if made:
                took = time.perf_counter() - started
                self._terrain_stop.wait(took / 4 if urgent else took)
            else:
                self._terrain_wake.wait(0.05)
                self._terrain_wake.clear()

    def _edge_missing(self) -> bool:
        """Whether a chunk the next step of some player could show is still missing."""
        with self._canvas:
            worlds = list(self.worlds.values())
        return any(self._needed_chunks(w, [(p.x, p.y) for p in list(w.players)]) for w in worlds)

    def _needed_chunks(
        self, world: WorldState, positions, reach: int | None = None
    ) -> list[tuple[int, int]]:
        """Missing chunks a player at each position can see within one max-length step (or
        within ``reach`` pixels)."""
        if reach is None:
            reach = spec.FRAME // 2 + self.max_chunk * spec.PLAYER_SPEED + 2 * spec.TILE
        return needed_chunks(world, positions, reach)

    def _grow(self, missing: dict[str, list[tuple[int, int]]]) -> int:
        """Generate missing chunks; round r generates the r-th chunk of every world at once,
        so a world's chunks see each other in order and never depend on other worlds.
        -> how many were new (another thread may have made one meanwhile)."""
        if not self.generate:
            return 0  # a replay: the journal brings the terrain
        rounds = max((len(v) for v in missing.values()), default=0)
        made = 0
        for r in range(rounds):
            with self._canvas:
                batch = [
                    (self.worlds[wid], v[r])
                    for wid, v in missing.items()
                    if len(v) > r and wid in self.worlds and v[r] not in self.worlds[wid].chunks
                ]
            if not batch:
                continue
            out = generate_chunks(self.model, batch, self.device)
            with self._canvas:
                for (world, key), tokens in zip(batch, out, strict=True):
                    if key not in world.chunks:
                        world.chunks[key] = tokens.astype(np.uint8)
                        self._log(world, jn.Chunk(*key, world.chunks[key].tobytes()))
                        made += 1
        return made
