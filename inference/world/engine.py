"""WorldEngine: many worlds (each with one or more players) in memory, stepped in batches.

Every frame comes from the network: the terrain generator grows each world's latent canvas
as players explore, and one renderer forward decodes every frame of every player in a step
call. Kinematics (keys -> avatar motion, blocked where the collision head says a tile is
solid) and creature wandering are integer rules shared with the simulator via `spec`.
Not thread-safe: one caller at a time.
"""

from __future__ import annotations

import logging
import uuid
from pathlib import Path

import numpy as np
import torch

from inference.world import spec as ws
from inference.world import text as text_encoder
from inference.world.model import ModelConfig, WorldModel
from inference.world.state import (
    CreatureState,
    PlayerState,
    SnapshotError,
    WorldState,
    snapshot_bytes,
    state_from_bytes,
)

log = logging.getLogger(__name__)

WEIGHTS_DIR = Path(__file__).resolve().parents[1] / "weights"
DEFAULT_WEIGHTS = WEIGHTS_DIR / "world_model.safetensors"
INITIAL_CREATURES = 2
AHEAD_FRAMES = 24  # grow_ahead makes the terrain a player can reach within about a second
DECODE_BATCH = 512  # frames per renderer forward (bounds memory, not results)

__all__ = ["PromptError", "SnapshotError", "UnsupportedEvent", "WorldEngine"]


class PromptError(ValueError):
    """Empty, too long (> 500 chars) or unusable text."""


class UnsupportedEvent(PromptError):
    """Text naming nothing this model can do: ``unsupported``, not moderation's ``rejected``."""


def _check_text(text: str) -> str:
    if not isinstance(text, str) or not text.strip():
        raise PromptError("text is empty")
    if len(text) > ws.MAX_PROMPT_CHARS:
        raise PromptError(f"text is longer than {ws.MAX_PROMPT_CHARS} characters")
    return " ".join(text.split())


class WorldEngine:
    """Holds many worlds (each with one or more players) in memory and steps them in batches."""

    def __init__(self, model: WorldModel, device: str = "cpu"):
        self.device = torch.device(device)
        self.model = model.to(self.device).eval()
        self.model.renderer.freeze()
        self.solid = self.model.solid_table().cpu().numpy()  # (NUM_TOKENS + 2,) bool
        self.frame_size = ws.FRAME
        self.max_chunk = model.cfg.max_chunk
        self.worlds: dict[str, WorldState] = {}
        self._player_world: dict[str, str] = {}
        self._frames: dict[str, int] = {}  # player id -> world frames its camera has made
        self.late_chunks = 0  # chunks a step had to generate itself (grow_ahead was too late)
        self.ahead_chunks = 0  # chunks grow_ahead generated before anyone needed them

    @classmethod
    def load(cls, device: str = "cpu", weights: str | None = None) -> WorldEngine:
        """Load the shipped weights (inference/weights/) onto device; the text encoder too."""
        path = Path(weights) if weights else DEFAULT_WEIGHTS
        if path.exists():
            model = WorldModel.from_file(path)
        else:
            log.warning("no world model weights at %s: using fresh random weights", path)
            torch.manual_seed(0)
            model = WorldModel(ModelConfig())
        text_encoder.load_encoder("cpu")
        return cls(model, device)

    # ------------------------------------------------------------ worlds and players

    def create_world(self, *, prompt: str, seed: int) -> str:
        prompt = _check_text(prompt)
        heads = self._text_heads(prompt, self.model.prompt_heads)
        probs = torch.softmax(heads["biome"], -1).numpy().astype(np.float32)
        world = WorldState(
            world_id=uuid.uuid4().hex,
            seed=int(seed) & 0x7FFFFFFF,
            prompt=prompt,
            biome_probs=probs,
            weather=int(heads["weather"].argmax()),
            time=int(heads["time"].argmax()),
        )
        self.worlds[world.world_id] = world
        creature = int(heads["creature"].argmax()) - 1
        if creature >= 0:
            for _ in range(INITIAL_CREATURES):
                self._spawn_creature(world, creature, 0, 0)
        self._grow({world.world_id: self._needed_chunks(world, [(0, 0)])})
        return world.world_id

    def add_player(self, world_id: str, slot: int | None = None) -> str:
        """A new avatar at its slot's spawn point; ``slot`` (its colour) defaults to the next."""
        world = self._world(world_id)
        slot = world.next_slot if slot is None else int(slot)
        player = PlayerState(uuid.uuid4().hex, slot, *ws.player_spawn(slot))
        world.next_slot = max(world.next_slot, slot) + 1
        world.players.append(player)
        self._player_world[player.player_id] = world_id
        self._frames[player.player_id] = world.t  # a newcomer's camera starts at the present
        self._grow({world_id: self._needed_chunks(world, [(player.x, player.y)])})
        return player.player_id

    def remove_player(self, player_id: str) -> None:
        self._frames.pop(player_id, None)
        world_id = self._player_world.pop(player_id, None)
        if world_id in self.worlds:
            world = self.worlds[world_id]
            world.players = [p for p in world.players if p.player_id != player_id]

    def drop_world(self, world_id: str) -> None:
        world = self.worlds.pop(world_id, None)
        for p in world.players if world else []:
            self._player_world.pop(p.player_id, None)
            self._frames.pop(p.player_id, None)

    def players(self, world_id: str) -> list[str]:
        return [p.player_id for p in self._world(world_id).players]

    def apply_event(self, world_id: str, text: str, near: str | None = None) -> None:
        """Change a running world from text, around player ``near`` (default: the first);
        raises PromptError if nothing is recognised."""
        world = self._world(world_id)
        heads = self._text_heads(_check_text(text), self.model.event_heads)
        choice = {k: int(v.argmax()) - 1 for k, v in heads.items()}  # -1: no such event
        if all(v < 0 for v in choice.values()):
            raise UnsupportedEvent("no world event recognised in the text")
        by = [p for p in world.players if p.player_id == near]
        anchor = (by or world.players or [PlayerState("", 0, 0, 0)])[0]
        if choice["weather"] >= 0:
            world.weather = choice["weather"]
        if choice["time"] >= 0:
            world.time = choice["time"]
        if choice["creature"] >= 0:
            self._spawn_creature(world, choice["creature"], anchor.x, anchor.y)
        if choice["feature"] >= 0:
            self._add_feature(world, choice["feature"], anchor.x, anchor.y)

    def snapshot(self, world_id: str) -> bytes:
        return snapshot_bytes(self._world(world_id))

    def restore(self, data: bytes) -> str:
        world = state_from_bytes(data)
        self.drop_world(world.world_id)
        self.worlds[world.world_id] = world
        for p in world.players:
            self._player_world[p.player_id] = world.world_id
            self._frames[p.player_id] = world.t
        return world.world_id

    # ------------------------------------------------------------ stepping

    @torch.no_grad()
    def step(self, keys: dict[str, frozenset[str]], chunk: dict[str, int]) -> dict[str, np.ndarray]:
        """One batched call. keys: player_id -> held keys now; chunk: player_id -> frames
        wanted (1..max_chunk). Returns player_id -> uint8 array (T, H, W, 3), T == chunk[pid].
        Players of the same world step together; every world in the call shares one forward."""
        lengths = self._check_chunks(keys, chunk)
        by_world: dict[str, list[PlayerState]] = {}
        for pid in lengths:
            world = self._world(self._player_world[pid])
            player = next(p for p in world.players if p.player_id == pid)
            by_world.setdefault(world.world_id, []).append(player)
        late = {
            wid: self._needed_chunks(self.worlds[wid], [(p.x, p.y) for p in players])
            for wid, players in by_world.items()
        }
        self.late_chunks += sum(len(v) for v in late.values())
        self._grow(late)
        scenes: list[tuple] = []
        owners: list[str] = []
        for wid, players in by_world.items():
            world = self.worlds[wid]
            dirs = {p.player_id: ws.keys_to_dir(keys.get(p.player_id, ())) for p in players}
            for i in range(max(lengths[p.player_id] for p in players)):
                moving = [p for p in players if i < lengths[p.player_id]]
                self._advance(world, moving, dirs)
                for p in moving:
                    scenes.append(self._scene(world, p))
                    owners.append(p.player_id)
        frames = self._render(scenes)
        out: dict[str, list[np.ndarray]] = {pid: [] for pid in lengths}
        for pid, frame in zip(owners, frames, strict=True):
            out[pid].append(frame)
        return {pid: np.stack(v) for pid, v in out.items()}

    def _check_chunks(self, keys, chunk) -> dict[str, int]:
        lengths = {}
        for pid, n in chunk.items():
            if pid not in self._player_world:
                raise KeyError(f"unknown player {pid!r}")
            if not isinstance(n, int) or not 1 <= n <= self.max_chunk:
                raise ValueError(f"chunk for {pid!r} must be 1..{self.max_chunk}, got {n!r}")
            lengths[pid] = n
        for pid in keys:
            if pid not in self._player_world:
                raise KeyError(f"unknown player {pid!r}")
        return lengths

    def _advance(self, world: WorldState, moving: list[PlayerState], dirs) -> None:
        """One frame of the stepping players: each moves; creatures wander and the clock ticks
        once per frame of the world, not once per camera. In a shared world the cameras step in
        batches of their own, so the world keeps the pace of its furthest camera (``_frames``:
        frames made per player) instead of running as many times faster as it has players."""

        def is_solid(tx: int, ty: int) -> bool:
            return bool(self.solid[world.token_at(tx, ty)])

        ahead = False
        for p in moving:
            dx, dy = dirs[p.player_id]
            p.x, p.y = ws.move(p.x, p.y, dx, dy, ws.PLAYER_SPEED, is_solid)
            made = self._frames.get(p.player_id, world.t) + 1
            self._frames[p.player_id] = made
            ahead |= made > world.t
        if not ahead:
            return
        for c in world.creatures:
            dx, dy = ws.creature_dir(world.seed, c.ident, world.t)
            c.x, c.y = ws.move(c.x, c.y, dx, dy, ws.CREATURE_SPEED, is_solid)
        world.t += 1

    def _scene(self, world: WorldState, viewer: PlayerState) -> tuple:
        half, s = ws.FRAME // 2, ws.SPRITE // 2
        left, top = viewer.x - half, viewer.y - half
        tx0, ty0 = left // ws.TILE - 1, top // ws.TILE - 1
        tokens = world.region(tx0, ty0, ws.WINDOW, ws.WINDOW)
        entities = [(ws.AVATAR_COLORS + c.kind, c.x, c.y) for c in world.creatures]
        entities += [
            (p.slot % ws.AVATAR_COLORS, p.x, p.y) for p in world.players if p is not viewer
        ]
        entities.append((viewer.slot % ws.AVATAR_COLORS, viewer.x, viewer.y))  # own avatar on top
        sprites = np.full((ws.MAX_SPRITES, 3), -1, dtype=np.int64)
        visible = [
            (k, x - left - s, y - top - s)
            for k, x, y in entities
            if -ws.SPRITE < x - left - s < ws.FRAME and -ws.SPRITE < y - top - s < ws.FRAME
        ]
        for i, v in enumerate(visible[-ws.MAX_SPRITES :]):
            sprites[i] = v
        cond = world.weather * len(ws.TIMES) + world.time
        return (
            tokens,
            (left % ws.TILE, top % ws.TILE),
            cond,
            ws.overlay_phase(world.weather, world.t),
            sprites,
        )

    def _render(self, scenes: list[tuple]) -> list[np.ndarray]:
        frames = []
        for start in range(0, len(scenes), DECODE_BATCH):
            part = scenes[start : start + DECODE_BATCH]
            tokens, offset, cond, phase, sprites = (
                np.stack([s[i] for s in part]) for i in range(5)
            )
            dev = self.device
            img = self.model.renderer(
                torch.from_numpy(tokens).to(dev),
                torch.from_numpy(offset).long().to(dev),
                torch.from_numpy(cond).long().to(dev),
                torch.from_numpy(phase).long().to(dev),
                torch.from_numpy(sprites).to(dev),
            )
            img = torch.nan_to_num(img, nan=0.0, posinf=1.0, neginf=0.0).clamp(0, 1)
            frames.extend((img * 255).round().to(torch.uint8).cpu().numpy())
        return frames

    # ------------------------------------------------------------ the latent canvas

    def grow_ahead(self, max_rounds: int = 1) -> int:
        """Generate, nearest first, the missing chunks each world's players could reach within
        about a second (AHEAD_FRAMES of walking) past the next step, at most ``max_rounds``
        chunks per world;
        -> how many. The worker calls it between steps, so a step rarely has to generate
        terrain itself (``late_chunks`` counts when it did)."""
        # A second of walking beyond what the next step could show (which a step makes itself).
        reach = ws.FRAME // 2 + (self.max_chunk + AHEAD_FRAMES) * ws.PLAYER_SPEED + 2 * ws.TILE
        missing = {}
        for wid, world in self.worlds.items():
            if world.players:
                positions = [(p.x, p.y) for p in world.players]
                needed = self._needed_chunks(world, positions, reach=reach)[:max_rounds]
                if needed:
                    missing[wid] = needed
        self._grow(missing)
        made = sum(len(v) for v in missing.values())
        self.ahead_chunks += made
        return made

    def _needed_chunks(
        self, world: WorldState, positions, reach: int | None = None
    ) -> list[tuple[int, int]]:
        """Missing chunks a player at each position can see within one max-length step (or
        within ``reach`` pixels)."""
        if reach is None:
            reach = ws.FRAME // 2 + self.max_chunk * ws.PLAYER_SPEED + 2 * ws.TILE
        needed: dict[tuple[int, int], int] = {}
        px = ws.CHUNK * ws.TILE
        for x, y in positions:
            for cy in range((y - reach) // px, (y + reach) // px + 1):
                for cx in range((x - reach) // px, (x + reach) // px + 1):
                    if (cx, cy) not in world.chunks:
                        d = abs(cx * px + px // 2 - x) + abs(cy * px + px // 2 - y)
                        needed[(cx, cy)] = min(d, needed.get((cx, cy), d))
        return sorted(needed, key=lambda k: (needed[k], k[1], k[0]))

    def _grow(self, missing: dict[str, list[tuple[int, int]]]) -> None:
        """Generate missing chunks; round r generates the r-th chunk of every world at once,
        so a world's chunks see each other in order and never depend on other worlds."""
        rounds = max((len(v) for v in missing.values()), default=0)
        m, c = self.model.cfg.gen_margin, ws.CHUNK
        size = c + 2 * m
        g = np.arange(size) - m
        for r in range(rounds):
            batch = [(wid, v[r]) for wid, v in missing.items() if len(v) > r]
            ctx, spawn, probs, seeds = [], [], [], []
            for wid, (cx, cy) in batch:
                world = self.worlds[wid]
                tokens = world.region(cx * c - m, cy * c - m, size, size)
                tokens[m : m + c, m : m + c] = ws.MASK_TOKEN
                ctx.append(tokens)
                tx, ty = cx * c + g[None, :], cy * c + g[:, None]
                lo, hi = ws.SPAWN_ZONE
                spawn.append((tx >= lo) & (tx <= hi) & (ty >= lo) & (ty <= hi))
                probs.append(_sharpen(world.biome_probs))
                seeds.append(ws.mix_hash(world.seed, cx, cy) & 0x7FFFFFFFFFFF)
            dev = self.device
            out = (
                self.model.generator.sample(
                    torch.from_numpy(np.stack(ctx)).to(dev),
                    torch.from_numpy(np.stack(spawn)).long().to(dev),
                    torch.from_numpy(np.stack(probs)).to(dev),
                    seeds,
                )
                .cpu()
                .numpy()
            )
            for (wid, key), tokens in zip(batch, out, strict=True):
                self.worlds[wid].chunks[key] = tokens.astype(np.uint8)

    def _spawn_creature(self, world: WorldState, kind: int, x: int, y: int) -> None:
        dx, dy = ws.spawn_offset(world.seed, world.t, world.spawned)
        world.creatures.append(CreatureState(kind, x + dx, y + dy, world.spawned))
        world.spawned += 1

    def _add_feature(self, world: WorldState, feature: int, x: int, y: int) -> None:
        cx, cy = ws.feature_center(x, y)
        self._grow({world.world_id: self._needed_chunks(world, [(cx * ws.TILE, cy * ws.TILE)])})
        token = ws.token_of(world.biome, ws.FEATURE_KIND[ws.FEATURES[feature]])
        for dy in range(-2, 3):
            for dx in range(-2, 3):
                if dx * dx + dy * dy <= 4:
                    world.set_token(cx + dx, cy + dy, token)

    # ------------------------------------------------------------ helpers

    def describe(self, world_id: str) -> dict:
        """A world's live conditions by name (read-only), for text about it (`narrative`)."""
        world = self._world(world_id)
        return {
            "biome": ws.BIOMES[world.biome],
            "weather": ws.WEATHERS[world.weather],
            "time": ws.TIMES[world.time],
            "creatures": [ws.CREATURES[c.kind] for c in world.creatures],
        }

    def _world(self, world_id: str) -> WorldState:
        try:
            return self.worlds[world_id]
        except KeyError:
            raise KeyError(f"unknown world {world_id!r}") from None

    def _text_heads(self, text: str, heads) -> dict[str, torch.Tensor]:
        emb = torch.from_numpy(text_encoder.embed([text])).to(self.device)
        with torch.no_grad():
            out = heads(emb)
        return {k: torch.nan_to_num(v[0].float()).cpu() for k, v in out.items()}


def _sharpen(probs: np.ndarray) -> np.ndarray:
    """The generator is trained on one-hot biomes; sharpen the prompt's soft mix toward it."""
    p = np.nan_to_num(np.asarray(probs, dtype=np.float64), nan=0.0) ** 4 + 1e-12
    return (p / p.sum()).astype(np.float32)
