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

from inference.world import spec as ws

_U = np.uint64
# Training draws world seeds below this; evaluation uses seeds at or above it.
TRAIN_SEED_LIMIT = 2**30


def _hash(*arrays) -> np.ndarray:
    """Vectorised splitmix64 over broadcast integer arrays -> uint64 array."""
    with np.errstate(over="ignore"):
        h = np.full(np.broadcast(*arrays).shape, 0x9E3779B97F4A7C15, dtype=_U)
        for a in arrays:
            h ^= np.asarray(a).astype(np.int64).astype(_U)
            h += _U(0x9E3779B97F4A7C15)
            z = h
            z = (z ^ (z >> _U(30))) * _U(0xBF58476D1CE4E5B9)
            z = (z ^ (z >> _U(27))) * _U(0x94D049BB133111EB)
            h = z ^ (z >> _U(31))
    return h


def _unit(h: np.ndarray) -> np.ndarray:
    return (h >> _U(11)).astype(np.float64) / float(1 << 53)


def _value_noise(seed, salt: int, x, y, scale) -> np.ndarray:
    """Smooth lattice value noise in [0, 1) with lattice spacing `scale` tiles."""
    fx, fy = x / scale, y / scale
    x0, y0 = np.floor(fx), np.floor(fy)
    ux, uy = fx - x0, fy - y0
    ux, uy = ux * ux * (3 - 2 * ux), uy * uy * (3 - 2 * uy)
    x0, y0 = x0.astype(np.int64), y0.astype(np.int64)

    def corner(dx, dy):
        return _unit(_hash(seed, salt, x0 + dx, y0 + dy))

    top = corner(0, 0) * (1 - ux) + corner(1, 0) * ux
    bottom = corner(0, 1) * (1 - ux) + corner(1, 1) * ux
    return top * (1 - uy) + bottom * uy


# Per biome: water lattice scale, water threshold, obstacle threshold, obstacle density,
# variant threshold. Chosen so every biome has open ground to walk on.
_BIOME_PARAMS = np.array(
    [
        [6, 0.78, 0.62, 0.55, 0.55],  # meadow
        [6, 0.82, 0.48, 0.65, 0.50],  # forest
        [8, 0.86, 0.66, 0.40, 0.50],  # desert
        [7, 0.80, 0.60, 0.50, 0.50],  # snow
        [10, 0.68, 0.72, 0.45, 0.50],  # coast
        [6, 0.85, 0.56, 0.75, 0.60],  # town
        [6, 0.84, 0.46, 0.80, 0.50],  # cave
    ]
)


def terrain_tokens(seed, biome, tx, ty) -> np.ndarray:
    """Procedural tile tokens for tiles (tx, ty); seed and biome broadcast against them."""
    tx, ty = np.asarray(tx, dtype=np.int64), np.asarray(ty, dtype=np.int64)
    biome = np.asarray(biome, dtype=np.int64)
    p = _BIOME_PARAMS[biome]
    while p.ndim < tx.ndim + 1:  # broadcast per-sample params over the tile axes
        p = p[..., None, :]
    water = _value_noise(seed, 1, tx, ty, p[..., 0]) > p[..., 1]
    dense = _value_noise(seed, 2, tx, ty, 3.0) > p[..., 2]
    sparse = _unit(_hash(seed, 4, tx, ty)) < p[..., 3]
    obstacle = dense & sparse
    variant = _value_noise(seed, 3, tx, ty, 4.0) > p[..., 4]
    kind = np.where(water, 3, np.where(obstacle, 2, np.where(variant, 1, 0)))
    lo, hi = ws.SPAWN_ZONE
    spawn = (tx >= lo) & (tx <= hi) & (ty >= lo) & (ty <= hi)
    kind = np.where(spawn & (kind >= 2), 0, kind)
    return (biome * len(ws.TILE_KINDS) + kind).astype(np.int64)


def spawn_zone_mask(tx, ty) -> np.ndarray:
    lo, hi = ws.SPAWN_ZONE
    return (tx >= lo) & (tx <= hi) & (ty >= lo) & (ty <= hi)


# ---------------------------------------------------------------- appearance

_PALETTE = {  # biome: ground, ground_var, obstacle, water (RGB 0-255)
    "meadow": [(86, 160, 60), (98, 170, 70), (36, 96, 40), (60, 110, 200)],
    "forest": [(72, 94, 46), (58, 122, 62), (26, 66, 30), (50, 90, 150)],
    "desert": [(222, 196, 132), (204, 172, 112), (62, 142, 72), (70, 160, 190)],
    "snow": [(236, 240, 246), (192, 216, 236), (30, 82, 62), (150, 190, 226)],
    "coast": [(238, 220, 162), (200, 182, 132), (120, 116, 112), (30, 92, 172)],
    "town": [(150, 140, 130), (100, 150, 72), (172, 72, 52), (82, 142, 212)],
    "cave": [(70, 60, 56), (92, 82, 76), (38, 34, 34), (150, 82, 200)],
}


def _tile_texture(biome: str, kind: int) -> np.ndarray:
    rng = np.random.default_rng(1000 + ws.BIOMES.index(biome) * 10 + kind)
    base = np.array(_PALETTE[biome][kind], dtype=np.float64)
    tex = base + rng.normal(0, 10, (ws.TILE, ws.TILE, 3))
    yy, xx = np.mgrid[0 : ws.TILE, 0 : ws.TILE]
    if kind == 1:  # dots: flowers, moss tufts, ripples, gravel
        accent = {"meadow": (235, 220, 80), "desert": (180, 150, 95), "town": (80, 130, 60)}
        color = np.array(accent.get(biome, base * 0.8))
        if biome == "desert":
            tex[(yy % 4) == 1] = color
        else:
            for y, x in rng.integers(0, ws.TILE, (4, 2)):
                tex[y, x] = color
    elif kind == 2:  # obstacle: round canopy / block with a dark outline
        ring = ((yy - 3.5) ** 2 + (xx - 3.5) ** 2) > 11
        if biome == "town":
            tex[yy % 3 == 0] = base * 0.7  # roof tiles
            ring = (yy == 0) | (yy == 7) | (xx == 0) | (xx == 7)
        ground = np.array(_PALETTE[biome][0], dtype=np.float64)
        tex[ring] = ground * 0.75
    elif kind == 3:  # water: ripple lines
        tex[(yy + xx // 3) % 4 == 0] = np.minimum(base * 1.3 + 20, 255)
    return np.clip(tex, 0, 255) / 255.0


TEXTURES = np.stack(
    [_tile_texture(b, k) for b in ws.BIOMES for k in range(len(ws.TILE_KINDS))]
)  # (NUM_TOKENS, 8, 8, 3) float in [0, 1]

_SHAPES = {
    "avatar": [
        "..####..",
        ".#oooo#.",
        ".#o##o#.",
        "..####..",
        ".######.",
        "########",
        ".######.",
        ".##..##.",
    ],
    "fox": [
        "........",
        "#.....#.",
        "##...##.",
        "#######.",
        ".#####..",
        "..####.#",
        "..#..#.#",
        "........",
    ],
    "deer": [
        "#.#.....",
        ".#......",
        ".##.....",
        ".######.",
        "..#####.",
        "..#...#.",
        "..#...#.",
        "........",
    ],
    "rabbit": [
        "..#.#...",
        "..#.#...",
        "..###...",
        ".#####..",
        ".#####..",
        "..###.#.",
        "........",
        "........",
    ],
    "wolf": [
        "#....#..",
        "##..##..",
        "######..",
        "#######.",
        ".######.",
        ".#....#.",
        ".#....#.",
        "........",
    ],
    "bird": [
        "........",
        "#......#",
        ".#....#.",
        "..####..",
        "...##...",
        "........",
        "........",
        "........",
    ],
}
_SPRITE_COLORS = {
    "avatar": list(ws.AVATAR_RGB),
    "fox": (230, 120, 30),
    "deer": (150, 100, 55),
    "rabbit": (215, 210, 200),
    "wolf": (110, 110, 120),
    "bird": (25, 25, 30),
}


def _sprite(shape: str, color) -> np.ndarray:
    rows = _SHAPES[shape]
    out = np.zeros((ws.SPRITE, ws.SPRITE, 4))
    for y, row in enumerate(rows):
        for x, ch in enumerate(row):
            if ch == "#":
                out[y, x] = (*np.array(color) / 255.0, 1.0)
            elif ch == "o":  # avatar face
                out[y, x] = (0.95, 0.8, 0.65, 1.0)
    return out


SPRITES = np.stack(
    [_sprite("avatar", c) for c in _SPRITE_COLORS["avatar"]]
    + [_sprite(c, _SPRITE_COLORS[c]) for c in ws.CREATURES]
)  # (SPRITE_KINDS, 8, 8, 4)

_TIME_AFFINE = {
    "day": ((1.0, 1.0, 1.0), (0.0, 0.0, 0.0)),
    "dusk": ((1.0, 0.78, 0.62), (0.06, 0.02, 0.04)),
    "night": ((0.38, 0.42, 0.6), (0.0, 0.01, 0.06)),
}
_WEATHER_AFFINE = {
    "clear": ((1.0, 1.0, 1.0), (0.0, 0.0, 0.0)),
    "rain": ((0.78, 0.8, 0.88), (0.02, 0.03, 0.06)),
    "snow": ((0.85, 0.87, 0.9), (0.12, 0.12, 0.13)),
    "fog": ((0.45, 0.45, 0.45), (0.33, 0.34, 0.36)),
}


def _combined_affine() -> np.ndarray:
    out = np.zeros((len(ws.WEATHERS) * len(ws.TIMES), 2, 3))
    for w, wn in enumerate(ws.WEATHERS):
        for t, tn in enumerate(ws.TIMES):
            ts, tb = map(np.array, _TIME_AFFINE[tn])
            wsc, wb = map(np.array, _WEATHER_AFFINE[wn])
            out[w * len(ws.TIMES) + t] = (ts * wsc, tb * wsc + wb)
    return out


COND_AFFINE = _combined_affine()  # (12, 2, 3): scale, shift per weather x time


def _overlay(weather: str) -> np.ndarray:
    out = np.zeros((ws.OVERLAY, ws.OVERLAY, 4))
    rng = np.random.default_rng(50 + ws.WEATHERS.index(weather))
    if weather == "rain":
        for y, x in rng.integers(0, ws.OVERLAY, (14, 2)):
            for k in range(3):
                out[(y + k) % ws.OVERLAY, x] = (0.75, 0.8, 0.95, 0.55)
    elif weather == "snow":
        for y, x in rng.integers(0, ws.OVERLAY, (18, 2)):
            out[y, x] = (1.0, 1.0, 1.0, 0.9)
    return out


OVERLAYS = np.stack([_overlay(w) for w in ws.WEATHERS])  # (4, 32, 32, 4)


# ---------------------------------------------------------------- scenes and rendering


@dataclass
class Scene:
    """Everything a frame shows, batched: the decoder's input and the renderer's."""

    tokens: np.ndarray  # (B, WINDOW, WINDOW) int tile tokens around the camera
    offset: np.ndarray  # (B, 2) int sub-tile pixel offset (x, y) of the frame in the window
    cond: np.ndarray  # (B,) int weather * len(TIMES) + time
    phase: np.ndarray  # (B, 2) int overlay scroll (x, y)
    sprites: np.ndarray  # (B, MAX_SPRITES, 3) int kind (-1 none), screen x, screen y


def window_origin(cam_x: int, cam_y: int) -> tuple[int, int, int, int]:
    """First tile of the decode window and the pixel offset of the frame inside it."""
    left, top = cam_x - ws.FRAME // 2, cam_y - ws.FRAME // 2
    return left // ws.TILE - 1, top // ws.TILE - 1, left % ws.TILE, top % ws.TILE


def render(scene: Scene) -> np.ndarray:
    """Scene -> (B, 64, 64, 3) uint8 frames."""
    b = scene.tokens.shape[0]
    n, t, f = ws.WINDOW, ws.TILE, ws.FRAME
    img = TEXTURES[scene.tokens]  # (B, n, n, 8, 8, 3)
    img = img.transpose(0, 1, 3, 2, 4, 5).reshape(b, n * t, n * t, 3)
    ys = t + scene.offset[:, 1, None] + np.arange(f)  # (B, 64)
    xs = t + scene.offset[:, 0, None] + np.arange(f)
    img = img[np.arange(b)[:, None, None], ys[:, :, None], xs[:, None, :]]  # (B, 64, 64, 3)
    img = img.copy()
    for e in range(scene.sprites.shape[1]):
        kind, sx, sy = scene.sprites[:, e, 0], scene.sprites[:, e, 1], scene.sprites[:, e, 2]
        for i in np.nonzero(kind >= 0)[0]:
            _paste(img[i], SPRITES[kind[i]], sx[i], sy[i])
    aff = COND_AFFINE[scene.cond]  # (B, 2, 3)
    img = img * aff[:, None, None, 0] + aff[:, None, None, 1]
    weather = scene.cond // len(ws.TIMES)
    oy = (np.arange(f)[None, :] + scene.phase[:, 1, None]) % ws.OVERLAY  # (B, 64)
    ox = (np.arange(f)[None, :] + scene.phase[:, 0, None]) % ws.OVERLAY
    ov = OVERLAYS[weather[:, None, None], oy[:, :, None], ox[:, None, :]]  # (B, 64, 64, 4)
    img = img * (1 - ov[..., 3:]) + ov[..., :3] * ov[..., 3:]
    return np.clip(np.round(img * 255), 0, 255).astype(np.uint8)


def _paste(img: np.ndarray, sprite: np.ndarray, sx: int, sy: int) -> None:
    f, s = ws.FRAME, ws.SPRITE
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
    """One seeded world: terrain, weather, time of day, creatures and players."""

    seed: int
    biome: int
    weather: int = 0
    time: int = 0
    t: int = 0
    players: list[list[int]] = field(default_factory=list)  # [x, y, slot]
    creatures: list[Creature] = field(default_factory=list)
    overrides: dict[tuple[int, int], int] = field(default_factory=dict)
    spawned: int = 0

    def tokens(self, tx, ty) -> np.ndarray:
        out = terrain_tokens(self.seed, self.biome, tx, ty)
        for (ox, oy), tok in self.overrides.items():
            out = np.where((tx == ox) & (ty == oy), tok, out)
        return out

    def is_solid(self, tx: int, ty: int) -> bool:
        tok = int(self.tokens(np.array(tx), np.array(ty)))
        return tok % len(ws.TILE_KINDS) in ws.SOLID_KINDS

    def add_player(self) -> int:
        slot = len(self.players)
        self.players.append([*ws.player_spawn(slot), slot])
        return slot

    def spawn_creature(self, kind: int, near: int = 0) -> None:
        px, py = self.players[near][:2] if self.players else (0, 0)
        dx, dy = ws.spawn_offset(self.seed, self.t, self.spawned)
        self.creatures.append(Creature(kind, px + dx, py + dy, self.spawned))
        self.spawned += 1

    def add_feature(self, feature: int, near: int = 0) -> None:
        cx, cy = ws.feature_center(*self.players[near][:2])
        kind = ws.FEATURE_KIND[ws.FEATURES[feature]]
        for dy in range(-2, 3):
            for dx in range(-2, 3):
                if dx * dx + dy * dy <= 4:
                    self.overrides[(cx + dx, cy + dy)] = self.biome * len(ws.TILE_KINDS) + kind

    def step(self, keys: list) -> None:
        """Advance one frame; keys[i] is the held key set of player i."""
        for player, held in zip(self.players, keys, strict=True):
            dx, dy = ws.keys_to_dir(held)
            player[0], player[1] = ws.move(
                player[0], player[1], dx, dy, ws.PLAYER_SPEED, self.is_solid
            )
        for c in self.creatures:
            dx, dy = ws.creature_dir(self.seed, c.ident, self.t)
            c.x, c.y = ws.move(c.x, c.y, dx, dy, ws.CREATURE_SPEED, self.is_solid)
        self.t += 1

    def scene(self, viewer: int) -> Scene:
        cx, cy, _ = self.players[viewer]
        tx0, ty0, ox, oy = window_origin(cx, cy)
        ty, tx = np.mgrid[ty0 : ty0 + ws.WINDOW, tx0 : tx0 + ws.WINDOW]
        sprites = np.full((1, ws.MAX_SPRITES, 3), -1)
        entities = [(slot % ws.AVATAR_COLORS, x, y) for x, y, slot in self.players]
        # the viewer's own avatar is drawn last, on top
        entities.append(entities.pop(viewer))
        entities = [(ws.AVATAR_COLORS + c.kind, c.x, c.y) for c in self.creatures] + entities
        visible = [
            (k, x - cx + ws.FRAME // 2 - ws.SPRITE // 2, y - cy + ws.FRAME // 2 - ws.SPRITE // 2)
            for k, x, y in entities
        ]
        visible = [
            v for v in visible if -ws.SPRITE < v[1] < ws.FRAME and -ws.SPRITE < v[2] < ws.FRAME
        ]
        for i, v in enumerate(visible[-ws.MAX_SPRITES :]):
            sprites[0, i] = v
        return Scene(
            tokens=self.tokens(tx, ty)[None],
            offset=np.array([[ox, oy]]),
            cond=np.array([self.weather * len(ws.TIMES) + self.time]),
            phase=np.array([ws.overlay_phase(self.weather, self.t)]),
            sprites=sprites,
        )

    def render(self, viewer: int = 0) -> np.ndarray:
        return render(self.scene(viewer))[0]


def random_scenes(
    rng: np.random.Generator,
    batch: int,
    sprite_prob: float = 0.6,
    max_sprites: int = ws.MAX_SPRITES,
    seeds: tuple[int, int] = (0, TRAIN_SEED_LIMIT),
) -> tuple:
    """A batch of random scenes from random worlds: (scene, biome per sample)."""
    seed = rng.integers(*seeds, batch)
    biome = rng.integers(0, len(ws.BIOMES), batch)
    cam = rng.integers(-3000, 3000, (batch, 2))
    cam[rng.random(batch) < 0.2] //= 50  # often near the spawn zone
    tiles = np.array([window_origin(x, y) for x, y in cam])  # (B, 4)
    g = np.arange(ws.WINDOW)
    tx = tiles[:, 0, None, None] + g[None, None, :]
    ty = tiles[:, 1, None, None] + g[None, :, None]
    tokens = terrain_tokens(seed[:, None, None], biome[:, None, None], tx, ty)
    sprites = np.full((batch, ws.MAX_SPRITES, 3), -1)
    for i in range(batch):
        if rng.random() < sprite_prob:
            n = rng.integers(1, max_sprites + 1)
            sprites[i, :n, 0] = rng.integers(0, ws.SPRITE_KINDS, n)
            sprites[i, :n, 1:] = rng.integers(-ws.SPRITE + 1, ws.FRAME, (n, 2))
    cond = rng.integers(0, len(ws.WEATHERS) * len(ws.TIMES), batch)
    phase = rng.integers(0, ws.OVERLAY, (batch, 2))
    scene = Scene(tokens=tokens, offset=tiles[:, 2:], cond=cond, phase=phase, sprites=sprites)
    return scene, biome


def random_windows(rng: np.random.Generator, batch: int, margin: int = 4) -> tuple:
    """Token windows of one chunk plus `margin` tiles around it: generator training data.

    Returns (tokens (B, S, S), spawn mask (B, S, S), biome (B,)) with S = CHUNK + 2 * margin.
    """
    seed = rng.integers(0, TRAIN_SEED_LIMIT, batch)
    biome = rng.integers(0, len(ws.BIOMES), batch)
    chunk = rng.integers(-40, 40, (batch, 2))
    chunk[rng.random(batch) < 0.25] = rng.integers(-1, 1, (1, 2))  # spawn chunks
    g = np.arange(ws.CHUNK + 2 * margin) - margin
    tx = chunk[:, 0, None, None] * ws.CHUNK + g[None, None, :]
    ty = chunk[:, 1, None, None] * ws.CHUNK + g[None, :, None]
    tokens = terrain_tokens(seed[:, None, None], biome[:, None, None], tx, ty)
    return tokens, spawn_zone_mask(tx, ty), biome
