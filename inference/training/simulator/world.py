"""The reference simulator: a seeded, procedural, top-down tile world rendered with numpy.

It makes training data and labels for the world model and is the yardstick of the
evaluation; it never serves a frame. Everything is vectorised over a batch so training can
draw thousands of frames per second on two cores.

A frame is rendered from a *scene*: the tile tokens around the camera, the sub-tile offset,
weather, time of day, the world clock and the sprites in view. The model's decoder is trained
to render the same scenes, so the scene is the interface between the two.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from inference.training.simulator.appearance import (
    ATMOSPHERE_AFFINE,
    OVERLAYS,
    SOLID,
    SPRITES,
    TEXTURES,
    light_affine,
)
from inference.world import spec
from inference.world.noise import hash_grid, second_biome_at, unit, value_noise

# Training draws world seeds below this; evaluation uses seeds at or above it.
TRAIN_SEED_LIMIT = 2**30


# Per biome: water lattice scale, water threshold, obstacle threshold, obstacle density,
# variant threshold. Chosen so every biome has open ground to walk on.
_BIOME_PARAMS = np.array(
    [
        [6, 0.78, 0.62, 0.55, 0.55],  # meadow
        [6, 0.82, 0.48, 0.65, 0.50],  # forest
        [8, 0.86, 0.66, 0.40, 0.50],  # desert
        [7, 0.80, 0.60, 0.50, 0.50],  # snow
        [10, 0.68, 0.72, 0.45, 0.50],  # beach
        [6, 0.85, 0.56, 0.75, 0.60],  # city
        [6, 0.84, 0.46, 0.80, 0.50],  # cave
        [7, 0.76, 0.58, 0.55, 0.45],  # reef
        [6, 0.74, 0.60, 0.55, 0.55],  # volcanic
        [6, 0.80, 0.44, 0.70, 0.45],  # jungle
        [5, 0.66, 0.58, 0.45, 0.50],  # swamp
        [6, 0.86, 0.52, 0.60, 0.55],  # ruins
        [9, 0.80, 0.60, 0.60, 0.50],  # canyon
        [6, 0.82, 0.58, 0.50, 0.45],  # blossom
        [6, 0.80, 0.50, 0.70, 0.50],  # ice_cave
        [6, 0.82, 0.52, 0.60, 0.45],  # autumn
    ]
)
assert len(_BIOME_PARAMS) == len(spec.BIOMES)


def terrain_tokens(seed, biome, tx, ty, biome2=-1, mix=0.0) -> np.ndarray:
    """Procedural tile tokens for tiles (tx, ty); seed, biome, biome2 (-1: none) and mix (the
    second biome's share) broadcast against them. A mixed world is patches of both biomes."""
    tx, ty = np.asarray(tx, dtype=np.int64), np.asarray(ty, dtype=np.int64)
    biome = np.asarray(biome, dtype=np.int64)
    biome2 = np.asarray(biome2, dtype=np.int64)
    second = (biome2 >= 0) & second_biome_at(seed, tx, ty, mix)
    biome = np.where(second, biome2, biome)
    p = _BIOME_PARAMS[biome]  # (..., 5), per tile
    water = value_noise(seed, 1, tx, ty, p[..., 0]) > p[..., 1]
    dense = value_noise(seed, 2, tx, ty, 3.0) > p[..., 2]
    sparse = unit(hash_grid(seed, 4, tx, ty)) < p[..., 3]
    obstacle = dense & sparse
    variant = value_noise(seed, 3, tx, ty, 4.0) > p[..., 4]
    kind = np.where(water, 3, np.where(obstacle, 2, np.where(variant, 1, 0)))
    kind = np.where(spec.in_spawn_zone(tx, ty) & (kind >= 2), 0, kind)
    return (biome * len(spec.TILE_KINDS) + kind).astype(np.int64)


# ---------------------------------------------------------------- scenes and rendering


@dataclass
class Scene:
    """Everything a frame shows, batched: the decoder's input and the renderer's."""

    tokens: np.ndarray  # (B, W, W) int render tokens around the camera (W = frame / TILE + 3)
    offset: np.ndarray  # (B, 2) int sub-tile pixel offset (x, y) of the frame in the window
    weather: np.ndarray  # (B,) int atmosphere
    minute: np.ndarray  # (B,) int minute of the day
    phase: np.ndarray  # (B, 2) int overlay scroll (x, y)
    sprites: np.ndarray  # (B, MAX_SPRITES, 3) int kind (-1 none), screen x, screen y

    @property
    def frame(self) -> int:
        return (self.tokens.shape[-1] - 3) * spec.TILE


def window_origin(cam_x: int, cam_y: int, frame: int = spec.FRAME) -> tuple[int, int, int, int]:
    """First tile of the decode window and the pixel offset of the frame inside it."""
    left, top = cam_x - frame // 2, cam_y - frame // 2
    return left // spec.TILE - 1, top // spec.TILE - 1, left % spec.TILE, top % spec.TILE


def sprite_cover(scene: Scene) -> np.ndarray:
    """(B, F, F) bool: the pixels some sprite of each scene covers (the sprites' shapes)."""
    b, f, s = len(scene.weather), scene.frame, spec.SPRITE
    cover = np.zeros((b, f + 2 * s, f + 2 * s), dtype=bool)  # room for sprites half off-frame
    for i, e in zip(*np.nonzero(scene.sprites[:, :, 0] >= 0), strict=True):
        kind, sx, sy = scene.sprites[i, e]
        if -s <= sx <= f and -s <= sy <= f:
            cover[i, sy + s : sy + 2 * s, sx + s : sx + 2 * s] |= SPRITES[kind][..., 3] > 0
    return cover[:, s : s + f, s : s + f]


def render(scene: Scene) -> np.ndarray:
    """Scene -> (B, F, F, 3) uint8 frames (F = 128 for a full window)."""
    b = scene.tokens.shape[0]
    n, t, f = scene.tokens.shape[-1], spec.TILE, scene.frame
    img = TEXTURES[scene.tokens]  # (B, n, n, 8, 8, 3)
    img = img.transpose(0, 1, 3, 2, 4, 5).reshape(b, n * t, n * t, 3)
    ys = t + scene.offset[:, 1, None] + np.arange(f)  # (B, F)
    xs = t + scene.offset[:, 0, None] + np.arange(f)
    img = img[np.arange(b)[:, None, None], ys[:, :, None], xs[:, None, :]]  # (B, F, F, 3)
    img = img.copy()
    for e in range(scene.sprites.shape[1]):
        kind, sx, sy = scene.sprites[:, e, 0], scene.sprites[:, e, 1], scene.sprites[:, e, 2]
        for i in np.nonzero(kind >= 0)[0]:
            _paste(img[i], SPRITES[kind[i]], sx[i], sy[i])
    light = light_affine(scene.minute)  # (B, 2, 3)
    atmo = ATMOSPHERE_AFFINE[scene.weather]
    scale = light[:, 0] * atmo[:, 0]
    shift = light[:, 1] * atmo[:, 0] + atmo[:, 1]
    img = img * scale[:, None, None] + shift[:, None, None]
    oy = (np.arange(f)[None, :] + scene.phase[:, 1, None]) % spec.OVERLAY  # (B, F)
    ox = (np.arange(f)[None, :] + scene.phase[:, 0, None]) % spec.OVERLAY
    ov = OVERLAYS[scene.weather[:, None, None], oy[:, :, None], ox[:, None, :]]  # (B, F, F, 4)
    img = img * (1 - ov[..., 3:]) + ov[..., :3] * ov[..., 3:]
    return np.clip(np.round(img * 255), 0, 255).astype(np.uint8)


def _paste(img: np.ndarray, sprite: np.ndarray, sx: int, sy: int) -> None:
    f, s = img.shape[0], spec.SPRITE
    x0, y0, x1, y1 = max(sx, 0), max(sy, 0), min(sx + s, f), min(sy + s, f)
    if x0 >= x1 or y0 >= y1:
        return
    sp = sprite[y0 - sy : y1 - sy, x0 - sx : x1 - sx]
    a = sp[..., 3:]
    img[y0:y1, x0:x1] = img[y0:y1, x0:x1] * (1 - a) + sp[..., :3] * a


# ---------------------------------------------------------------- a running world


@dataclass
class Creature:
    kind: int
    x: int
    y: int
    ident: int


@dataclass
class SimWorld:
    """One seeded world: terrain (one biome or two mixed), atmosphere, the minute of the day,
    creatures, placed things and players."""

    seed: int
    biome: int
    biome2: int = -1
    mix: float = 0.0
    weather: int = 0
    minute: int = spec.TIME_MINUTES[1]
    t: int = 0
    players: list[list[int]] = field(default_factory=list)  # [x, y, slot]
    creatures: list[Creature] = field(default_factory=list)
    overrides: dict[tuple[int, int], int] = field(default_factory=dict)
    spawned: int = 0

    @property
    def time(self) -> int:
        return spec.time_label(self.minute)

    def tokens(self, tx, ty) -> np.ndarray:
        out = terrain_tokens(self.seed, self.biome, tx, ty, self.biome2, self.mix)
        for (ox, oy), tok in self.overrides.items():
            out = np.where((tx == ox) & (ty == oy), tok, out)
        return out

    def is_solid(self, tx: int, ty: int) -> bool:
        return bool(SOLID[int(self.tokens(np.array(tx), np.array(ty)))])

    def add_player(self) -> int:
        slot = len(self.players)
        self.players.append([*spec.player_spawn(slot), slot])
        return slot

    def spawn_creature(self, kind: int, near: int = 0) -> None:
        px, py = self.players[near][:2] if self.players else (0, 0)
        dx, dy = spec.spawn_offset(self.seed, self.t, self.spawned)
        self.creatures.append(Creature(kind, px + dx, py + dy, self.spawned))
        self.spawned += 1

    def place(self, thing: int, near: int = 0) -> None:
        for tx, ty, token in spec.place_cells(thing, *self.players[near][:2]):
            self.overrides[(tx, ty)] = token

    def step(self, keys: list) -> None:
        """Advance one frame; keys[i] is the held key set of player i."""
        for player, held in zip(self.players, keys, strict=True):
            dx, dy = spec.keys_to_dir(held)
            player[0], player[1] = spec.move(
                player[0], player[1], dx, dy, spec.PLAYER_SPEED, self.is_solid
            )
        for c in self.creatures:
            dx, dy = spec.creature_dir(self.seed, c.ident, self.t)
            c.x, c.y = spec.move(c.x, c.y, dx, dy, spec.CREATURE_SPEED, self.is_solid)
        self.t += 1
        if self.t % spec.FRAMES_PER_MINUTE == 0:
            self.minute = (self.minute + 1) % spec.DAY_MINUTES

    def scene(self, viewer: int) -> Scene:
        cx, cy, _ = self.players[viewer]
        tx0, ty0, ox, oy = window_origin(cx, cy)
        ty, tx = np.mgrid[ty0 : ty0 + spec.WINDOW, tx0 : tx0 + spec.WINDOW]
        sprites = np.full((1, spec.MAX_SPRITES, 3), -1)
        entities = [(slot % spec.AVATAR_COLORS, x, y) for x, y, slot in self.players]
        # the viewer's own avatar is drawn last, on top
        entities.append(entities.pop(viewer))
        entities = [(spec.AVATAR_COLORS + c.kind, c.x, c.y) for c in self.creatures] + entities
        visible = [
            (
                k,
                x - cx + spec.FRAME // 2 - spec.SPRITE // 2,
                y - cy + spec.FRAME // 2 - spec.SPRITE // 2,
            )
            for k, x, y in entities
        ]
        visible = [
            v
            for v in visible
            if -spec.SPRITE < v[1] < spec.FRAME and -spec.SPRITE < v[2] < spec.FRAME
        ]
        for i, v in enumerate(visible[-spec.MAX_SPRITES :]):
            sprites[0, i] = v
        return Scene(
            tokens=self.tokens(tx, ty)[None],
            offset=np.array([[ox, oy]]),
            weather=np.array([self.weather]),
            minute=np.array([self.minute]),
            phase=np.array([spec.overlay_phase(self.weather, self.t)]),
            sprites=sprites,
        )

    def render(self, viewer: int = 0) -> np.ndarray:
        return render(self.scene(viewer))[0]


def random_biomes(rng: np.random.Generator, batch: int, mixed: float = 0.3) -> tuple:
    """(biome, biome2 (-1: none), mix) per sample: a share of worlds mixes two biomes."""
    biome = rng.integers(0, len(spec.BIOMES), batch)
    other = (biome + rng.integers(1, len(spec.BIOMES), batch)) % len(spec.BIOMES)
    biome2 = np.where(rng.random(batch) < mixed, other, -1)
    mix = np.where(biome2 >= 0, rng.uniform(0.35, 0.65, batch), 0.0)
    return biome, biome2, mix


def random_minutes(rng: np.random.Generator, batch: int) -> np.ndarray:
    """Minutes of the day: half at the named moments, half anywhere."""
    named = np.array(spec.TIME_MINUTES)[rng.integers(0, len(spec.TIMES), batch)]
    return np.where(rng.random(batch) < 0.5, named, rng.integers(0, spec.DAY_MINUTES, batch))


def random_scenes(
    rng: np.random.Generator,
    batch: int,
    sprite_prob: float = 0.6,
    max_sprites: int = spec.MAX_SPRITES,
    seeds: tuple[int, int] = (0, TRAIN_SEED_LIMIT),
    frame: int = spec.FRAME,
    things: float = 0.15,
    mixed: float = 0.3,
    covers: float = 0.0,
) -> tuple:
    """A batch of random scenes from random worlds: (scene, biome per sample). ``frame`` may
    be smaller than the served 128 (the renderer is the same function at any size: training
    on 64-pixel crops costs a quarter). A share of the tiles are placed things, a share
    (``mixed``) of the worlds mix two biomes, and a share ``covers`` of the tiles lie under a
    cover (render tokens, `spec.render_tokens`)."""
    seed = rng.integers(*seeds, batch)
    biome, biome2, mix = random_biomes(rng, batch, mixed)
    cam = rng.integers(-3000, 3000, (batch, 2))
    cam[rng.random(batch) < 0.2] //= 50  # often near the spawn zone
    tiles = np.array([window_origin(x, y, frame) for x, y in cam])  # (B, 4)
    g = np.arange(frame // spec.TILE + 3)
    tx = tiles[:, 0, None, None] + g[None, None, :]
    ty = tiles[:, 1, None, None] + g[None, :, None]
    tokens = terrain_tokens(
        seed[:, None, None], biome[:, None, None], tx, ty, biome2[:, None, None], mix[:, None, None]
    )
    if things:
        placed = rng.random(tokens.shape) < things * (rng.random(batch) < 0.5)[:, None, None]
        tokens = np.where(
            placed, spec.BIOME_TOKENS + rng.integers(0, len(spec.THINGS), tokens.shape), tokens
        )
    if covers:  # drawn only when asked: the other callers' random streams stay as they were
        covered = rng.random(tokens.shape) < covers
        cover = np.where(covered, rng.integers(1, len(spec.COVERS), tokens.shape), 0)
        tokens = spec.render_tokens(tokens, cover)
    sprites = np.full((batch, spec.MAX_SPRITES, 3), -1)
    for i in range(batch):
        if rng.random() < sprite_prob:
            n = rng.integers(1, max_sprites + 1)
            sprites[i, :n, 0] = rng.integers(0, spec.SPRITE_KINDS, n)
            sprites[i, :n, 1:] = rng.integers(-spec.SPRITE + 1, frame, (n, 2))
    weather = rng.integers(0, len(spec.WEATHERS), batch)
    phase = rng.integers(0, spec.OVERLAY, (batch, 2))
    scene = Scene(
        tokens=tokens,
        offset=tiles[:, 2:],
        weather=weather,
        minute=random_minutes(rng, batch),
        phase=phase,
        sprites=sprites,
    )
    return scene, biome


def random_windows(rng: np.random.Generator, batch: int, margin: int = 4) -> tuple:
    """Token windows of one chunk plus `margin` tiles around it: generator training data.

    Returns (tokens (B, S, S), spawn mask (B, S, S), biome, biome2, mix) with
    S = CHUNK + 2 * margin.
    """
    seed = rng.integers(0, TRAIN_SEED_LIMIT, batch)
    biome, biome2, mix = random_biomes(rng, batch)
    chunk = rng.integers(-40, 40, (batch, 2))
    chunk[rng.random(batch) < 0.25] = rng.integers(-1, 1, (1, 2))  # spawn chunks
    g = np.arange(spec.CHUNK + 2 * margin) - margin
    tx = chunk[:, 0, None, None] * spec.CHUNK + g[None, None, :]
    ty = chunk[:, 1, None, None] * spec.CHUNK + g[None, :, None]
    tokens = terrain_tokens(
        seed[:, None, None], biome[:, None, None], tx, ty, biome2[:, None, None], mix[:, None, None]
    )
    return tokens, spec.in_spawn_zone(tx, ty), biome, biome2, mix
