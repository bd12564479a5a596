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
assert len(_BIOME_PARAMS) == len(ws.BIOMES)


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
    kind = np.where(ws.in_spawn_zone(tx, ty) & (kind >= 2), 0, kind)
    return (biome * len(ws.TILE_KINDS) + kind).astype(np.int64)


# ---------------------------------------------------------------- appearance

_PALETTE = {  # biome: ground, ground_var, obstacle, water (RGB 0-255)
    "meadow": [(86, 160, 60), (98, 170, 70), (36, 96, 40), (60, 110, 200)],
    "forest": [(72, 94, 46), (58, 122, 62), (26, 66, 30), (50, 90, 150)],
    "desert": [(222, 196, 132), (204, 172, 112), (62, 142, 72), (70, 160, 190)],
    "snow": [(236, 240, 246), (192, 216, 236), (30, 82, 62), (150, 190, 226)],
    "beach": [(238, 220, 162), (214, 196, 146), (120, 116, 112), (30, 92, 172)],
    "city": [(104, 104, 112), (150, 150, 146), (84, 96, 134), (82, 142, 212)],
    "cave": [(70, 60, 56), (92, 82, 76), (38, 34, 34), (150, 82, 200)],
    "reef": [(36, 112, 150), (44, 146, 128), (236, 108, 128), (12, 40, 96)],
    "volcanic": [(52, 42, 42), (88, 52, 40), (24, 20, 26), (240, 92, 20)],
    "jungle": [(38, 112, 40), (66, 146, 38), (14, 66, 24), (58, 122, 112)],
    "swamp": [(82, 92, 52), (104, 112, 62), (62, 50, 34), (66, 86, 58)],
    "ruins": [(162, 152, 130), (138, 128, 108), (108, 98, 88), (70, 120, 150)],
    "canyon": [(192, 102, 60), (170, 84, 48), (118, 58, 38), (60, 110, 162)],
    "blossom": [(122, 182, 92), (232, 170, 202), (238, 138, 188), (90, 150, 212)],
    "ice_cave": [(182, 222, 242), (148, 198, 230), (88, 148, 202), (28, 58, 110)],
    "autumn": [(172, 122, 52), (204, 92, 32), (178, 58, 22), (60, 100, 150)],
}
assert tuple(_PALETTE) == ws.BIOMES
_ACCENT = {  # the dots of ground_var
    "meadow": (235, 220, 80),
    "desert": (180, 150, 95),
    "city": (230, 220, 120),
    "reef": (250, 200, 90),
    "volcanic": (250, 120, 40),
    "jungle": (230, 60, 90),
    "blossom": (250, 230, 240),
    "autumn": (240, 170, 40),
    "swamp": (150, 160, 70),
}


def _tile_texture(biome: str, kind: int) -> np.ndarray:
    rng = np.random.default_rng(1000 + ws.BIOMES.index(biome) * 10 + kind)
    base = np.array(_PALETTE[biome][kind], dtype=np.float64)
    tex = base + rng.normal(0, 10, (ws.TILE, ws.TILE, 3))
    yy, xx = np.mgrid[0 : ws.TILE, 0 : ws.TILE]
    ground = np.array(_PALETTE[biome][0], dtype=np.float64)
    if kind == 0 and biome == "city":  # asphalt with a lane mark
        tex[3:5, 1:3] = (220, 220, 200)
    elif kind == 1:  # dots: flowers, moss tufts, ripples, gravel, lane paving
        color = np.array(_ACCENT.get(biome, base * 0.8))
        if biome in ("desert", "canyon"):
            tex[(yy % 4) == 1] = color if biome == "desert" else base * 0.85
        elif biome in ("city", "ruins"):
            tex[(yy == 0) | (xx == 0)] = base * 0.75  # paving slabs
        else:
            for y, x in rng.integers(0, ws.TILE, (4, 2)):
                tex[y, x] = color
    elif kind == 2:  # obstacle: round canopy / block with a dark outline
        ring = ((yy - 3.5) ** 2 + (xx - 3.5) ** 2) > 11
        if biome in ("city", "ruins"):
            tex[yy % 3 == 0] = base * 0.7  # windows / brick courses
            ring = (yy == 0) | (yy == 7) | (xx == 0) | (xx == 7)
        elif biome in ("reef",):
            tex[(xx + yy) % 3 == 0] = base * 1.15  # coral branches
        elif biome in ("ice_cave", "cave", "volcanic", "canyon"):
            ring = ((yy - 3.5) ** 2 + (xx - 3.5) ** 2) > 13  # boulders
            tex[(yy < 3) & (xx < 4)] = np.minimum(base * 1.35 + 15, 255)  # a highlight
        tex[ring] = ground * 0.75
    elif kind == 3:  # water (lava, bog, deep trench): ripple lines
        tex[(yy + xx // 3) % 4 == 0] = np.minimum(base * 1.3 + 20, 255)
        if biome == "volcanic":
            tex[(yy * 3 + xx) % 7 == 0] = (255, 210, 60)
    return np.clip(tex, 0, 255) / 255.0


def _thing_texture(thing: str) -> np.ndarray:
    """The biome-independent tile of a placed thing (rows of a small pattern)."""
    rng = np.random.default_rng(3000 + ws.THINGS.index(thing))
    yy, xx = np.mgrid[0 : ws.TILE, 0 : ws.TILE]
    r2 = (yy - 3.5) ** 2 + (xx - 3.5) ** 2

    def fill(rgb, noise=8):
        return np.array(rgb, dtype=np.float64) + rng.normal(0, noise, (ws.TILE, ws.TILE, 3))

    if thing == "campfire":
        tex = fill((70, 52, 40))
        tex[r2 > 10] = (120, 120, 120)  # stones
        tex[r2 < 6] = (250, 140, 30)
        tex[r2 < 2.5] = (255, 230, 90)
    elif thing == "house":
        tex = fill((168, 58, 46))
        tex[yy % 2 == 0] = (140, 44, 36)  # roof tiles
        tex[(yy == 0) | (yy == 7) | (xx == 0) | (xx == 7)] = (70, 40, 30)
    elif thing == "bridge":
        tex = fill((150, 104, 58))
        tex[:, ::3] = (104, 70, 38)  # planks
        tex[(yy == 0) | (yy == 7)] = (80, 54, 30)  # rails
    elif thing == "path":
        tex = fill((196, 170, 124))
        for y, x in rng.integers(0, ws.TILE, (5, 2)):
            tex[y, x] = (150, 130, 100)
    elif thing == "trees":
        tex = fill((40, 110, 40))
        tex[r2 > 11] = (90, 70, 40)
        tex[(yy < 4) & (xx > 3) & (r2 < 11)] = (70, 150, 60)
    elif thing == "lava_pool":
        tex = fill((236, 84, 18))
        tex[(yy * 3 + xx) % 5 == 0] = (255, 220, 70)
    elif thing == "ruins":
        tex = fill((150, 146, 136))
        tex[(yy % 4 == 0) | ((xx + 4 * (yy // 4)) % 8 == 0)] = (96, 92, 86)  # bricks
        tex[(yy < 3) & (xx > 4)] = (70, 64, 60)  # broken corner
    elif thing == "statue":
        tex = fill((60, 62, 66))
        tex[(r2 < 5) | ((xx > 2) & (xx < 5) & (yy > 3))] = (206, 206, 200)
    elif thing == "pond":
        tex = fill((56, 112, 206))
        tex[(yy + xx // 3) % 4 == 0] = (120, 170, 236)
    elif thing == "flowers":
        tex = fill((84, 156, 60))
        colors = ((240, 60, 80), (250, 220, 60), (240, 240, 250), (160, 80, 220))
        for i, (y, x) in enumerate(rng.integers(0, ws.TILE, (7, 2))):
            tex[y, x] = colors[i % len(colors)]
    elif thing == "rocks":
        tex = fill((118, 114, 108))
        tex[r2 > 12] = (80, 76, 72)
        tex[(yy < 3) & (xx < 4)] = (170, 166, 160)
    elif thing == "tent":
        tex = fill((214, 192, 140))
        tex[np.abs(xx - 3.5) > yy / 2 + 0.5] = (60, 80, 50)  # a triangle of canvas
        tex[(yy > 4) & (np.abs(xx - 3.5) < 1)] = (90, 60, 40)  # the door
    elif thing == "well":
        tex = fill((140, 136, 128))
        tex[r2 < 6] = (20, 40, 80)
        tex[r2 > 13] = (90, 120, 60)
    elif thing == "fence":
        tex = fill((96, 150, 66))
        tex[:, 3:5] = (130, 90, 50)
        tex[1::4, 1:7] = (150, 104, 60)  # rails
    else:  # pragma: no cover - every thing has a branch above
        raise ValueError(thing)
    return np.clip(tex, 0, 255) / 255.0


TEXTURES = np.stack(
    [_tile_texture(b, k) for b in ws.BIOMES for k in range(len(ws.TILE_KINDS))]
    + [_thing_texture(t) for t in ws.THINGS]
)  # (NUM_TOKENS, 8, 8, 3) float in [0, 1]
SOLID = np.array([ws.is_solid_token(t) for t in range(ws.NUM_TOKENS)])

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
    "fish": [
        "........",
        "...###..",
        "#.#####.",
        "######o#",
        "#.#####.",
        "...###..",
        "........",
        "........",
    ],
    "crab": [
        "#......#",
        "##....##",
        ".#.##.#.",
        "..####..",
        ".######.",
        "#.#..#.#",
        "........",
        "........",
    ],
    "frog": [
        "........",
        ".o#..#o.",
        ".######.",
        "########",
        ".######.",
        "##....##",
        "........",
        "........",
    ],
    "bear": [
        "##....##",
        "########",
        "#o####o#",
        "########",
        ".######.",
        "########",
        "##....##",
        "........",
    ],
    "cat": [
        "#...#...",
        "##.##...",
        "#####..#",
        "#o#o#..#",
        ".####.#.",
        "..#####.",
        "..#..#..",
        "........",
    ],
    "butterfly": [
        "........",
        "##...##.",
        "###.###.",
        ".##o##..",
        "###.###.",
        "##...##.",
        "........",
        "........",
    ],
    "ghost": [
        "..####..",
        ".######.",
        "##o##o##",
        "########",
        "########",
        "########",
        "#.##.##.",
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
    "fish": (250, 150, 40),
    "crab": (220, 50, 40),
    "frog": (60, 190, 60),
    "bear": (100, 64, 40),
    "cat": (60, 60, 64),
    "butterfly": (80, 160, 250),
    "ghost": (236, 240, 255),
}
_EYES = {"avatar": (0.95, 0.8, 0.65), "ghost": (0.1, 0.1, 0.15)}


def _sprite(shape: str, color) -> np.ndarray:
    rows = _SHAPES[shape]
    out = np.zeros((ws.SPRITE, ws.SPRITE, 4))
    for y, row in enumerate(rows):
        for x, ch in enumerate(row):
            if ch == "#":
                out[y, x] = (*np.array(color) / 255.0, 1.0)
            elif ch == "o":  # faces and eyes
                out[y, x] = (*_EYES.get(shape, (0.05, 0.05, 0.05)), 1.0)
    return out


SPRITES = np.stack(
    [_sprite("avatar", c) for c in _SPRITE_COLORS["avatar"]]
    + [_sprite(c, _SPRITE_COLORS[c]) for c in ws.CREATURES]
)  # (SPRITE_KINDS, 8, 8, 4), alpha exactly 0 or 1

# Light over the day: keyframes (minute, RGB scale, RGB shift), linear in between. Every
# keyframe sits on a half hour, so the model's 48-entry light table can hold it exactly.
LIGHT_KEYS = (
    (0, (0.36, 0.40, 0.58), (0.0, 0.01, 0.06)),
    (300, (0.36, 0.40, 0.58), (0.0, 0.01, 0.06)),
    (390, (0.86, 0.70, 0.92), (0.07, 0.03, 0.09)),  # dawn: cool rose, unlike dusk's orange
    (480, (1.0, 1.0, 1.0), (0.0, 0.0, 0.0)),
    (1020, (1.0, 1.0, 1.0), (0.0, 0.0, 0.0)),
    (1110, (1.0, 0.78, 0.62), (0.06, 0.02, 0.04)),
    (1230, (0.36, 0.40, 0.58), (0.0, 0.01, 0.06)),
    (1440, (0.36, 0.40, 0.58), (0.0, 0.01, 0.06)),
)


def light_affine(minute) -> np.ndarray:
    """(B,) minutes of the day -> (B, 2, 3) RGB scale and shift of the light."""
    m = np.asarray(minute, dtype=np.float64) % ws.DAY_MINUTES
    keys = np.array([k[0] for k in LIGHT_KEYS], dtype=np.float64)
    vals = np.array([[k[1], k[2]] for k in LIGHT_KEYS])  # (K, 2, 3)
    out = np.empty((*m.shape, 2, 3))
    for i in range(2):
        for c in range(3):
            out[..., i, c] = np.interp(m, keys, vals[:, i, c])
    return out


WEATHER_AFFINE = {
    "clear": ((1.0, 1.0, 1.0), (0.0, 0.0, 0.0)),
    "rain": ((0.78, 0.8, 0.88), (0.02, 0.03, 0.06)),
    "snow": ((0.85, 0.87, 0.9), (0.12, 0.12, 0.13)),
    "fog": ((0.45, 0.45, 0.45), (0.33, 0.34, 0.36)),
    "thunderstorm": ((0.52, 0.55, 0.68), (0.0, 0.01, 0.05)),
    "sandstorm": ((0.66, 0.56, 0.42), (0.27, 0.19, 0.08)),
    "ash": ((0.6, 0.56, 0.55), (0.1, 0.07, 0.06)),
    "petals": ((1.0, 0.94, 0.97), (0.04, 0.0, 0.03)),
    "fireflies": ((0.86, 0.9, 0.84), (0.0, 0.01, 0.0)),
}
assert tuple(WEATHER_AFFINE) == ws.WEATHERS
ATMOSPHERE_AFFINE = np.array([WEATHER_AFFINE[w] for w in ws.WEATHERS])  # (9, 2, 3)


def _overlay(weather: str) -> np.ndarray:
    o = ws.OVERLAY
    out = np.zeros((o, o, 4))
    rng = np.random.default_rng(50 + ws.WEATHERS.index(weather))
    if weather in ("rain", "thunderstorm"):
        drops, length = (14, 3) if weather == "rain" else (26, 5)
        color = (0.75, 0.8, 0.95, 0.55) if weather == "rain" else (0.82, 0.86, 1.0, 0.7)
        for y, x in rng.integers(0, o, (drops, 2)):
            for k in range(length):
                out[(y + k) % o, x] = color
    elif weather == "snow":
        for y, x in rng.integers(0, o, (18, 2)):
            out[y, x] = (1.0, 1.0, 1.0, 0.9)
    elif weather == "fog":
        for y, x in rng.integers(0, o, (10, 2)):
            for k in range(6):
                out[y, (x + k) % o] = (0.9, 0.9, 0.92, 0.35)
    elif weather == "sandstorm":
        for y, x in rng.integers(0, o, (24, 2)):
            for k in range(4):
                out[y, (x + k) % o] = (0.86, 0.7, 0.45, 0.6)
    elif weather == "ash":
        for i, (y, x) in enumerate(rng.integers(0, o, (22, 2))):
            out[y, x] = (0.25, 0.24, 0.24, 0.85) if i % 2 else (0.75, 0.72, 0.7, 0.85)
    elif weather == "petals":
        for y, x in rng.integers(0, o, (12, 2)):
            out[y, x] = out[y, (x + 1) % o] = (1.0, 0.7, 0.85, 0.95)
    elif weather == "fireflies":
        for y, x in rng.integers(0, o, (8, 2)):
            out[y, x] = (1.0, 1.0, 0.55, 1.0)
            for dy, dx in ((0, 1), (1, 0), (0, -1), (-1, 0)):
                out[(y + dy) % o, (x + dx) % o] = (0.85, 0.95, 0.3, 0.45)
    return out


OVERLAYS = np.stack([_overlay(w) for w in ws.WEATHERS])  # (9, 32, 32, 4)


# ---------------------------------------------------------------- scenes and rendering


@dataclass
class Scene:
    """Everything a frame shows, batched: the decoder's input and the renderer's."""

    tokens: np.ndarray  # (B, W, W) int tile tokens around the camera (W = frame / TILE + 3)
    offset: np.ndarray  # (B, 2) int sub-tile pixel offset (x, y) of the frame in the window
    weather: np.ndarray  # (B,) int atmosphere
    minute: np.ndarray  # (B,) int minute of the day
    phase: np.ndarray  # (B, 2) int overlay scroll (x, y)
    sprites: np.ndarray  # (B, MAX_SPRITES, 3) int kind (-1 none), screen x, screen y

    @property
    def frame(self) -> int:
        return (self.tokens.shape[-1] - 3) * ws.TILE


def window_origin(cam_x: int, cam_y: int, frame: int = ws.FRAME) -> tuple[int, int, int, int]:
    """First tile of the decode window and the pixel offset of the frame inside it."""
    left, top = cam_x - frame // 2, cam_y - frame // 2
    return left // ws.TILE - 1, top // ws.TILE - 1, left % ws.TILE, top % ws.TILE


def sprite_cover(scene: Scene) -> np.ndarray:
    """(B, F, F) bool: the pixels some sprite of each scene covers (the sprites' shapes)."""
    b, f, s = len(scene.weather), scene.frame, ws.SPRITE
    cover = np.zeros((b, f + 2 * s, f + 2 * s), dtype=bool)  # room for sprites half off-frame
    for i, e in zip(*np.nonzero(scene.sprites[:, :, 0] >= 0), strict=True):
        kind, sx, sy = scene.sprites[i, e]
        if -s <= sx <= f and -s <= sy <= f:
            cover[i, sy + s : sy + 2 * s, sx + s : sx + 2 * s] |= SPRITES[kind][..., 3] > 0
    return cover[:, s : s + f, s : s + f]


def render(scene: Scene) -> np.ndarray:
    """Scene -> (B, F, F, 3) uint8 frames (F = 128 for a full window)."""
    b = scene.tokens.shape[0]
    n, t, f = scene.tokens.shape[-1], ws.TILE, scene.frame
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
    oy = (np.arange(f)[None, :] + scene.phase[:, 1, None]) % ws.OVERLAY  # (B, F)
    ox = (np.arange(f)[None, :] + scene.phase[:, 0, None]) % ws.OVERLAY
    ov = OVERLAYS[scene.weather[:, None, None], oy[:, :, None], ox[:, None, :]]  # (B, F, F, 4)
    img = img * (1 - ov[..., 3:]) + ov[..., :3] * ov[..., 3:]
    return np.clip(np.round(img * 255), 0, 255).astype(np.uint8)


def _paste(img: np.ndarray, sprite: np.ndarray, sx: int, sy: int) -> None:
    f, s = img.shape[0], ws.SPRITE
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
    minute: int = ws.TIME_MINUTES[1]
    t: int = 0
    players: list[list[int]] = field(default_factory=list)  # [x, y, slot]
    creatures: list[Creature] = field(default_factory=list)
    overrides: dict[tuple[int, int], int] = field(default_factory=dict)
    spawned: int = 0

    @property
    def time(self) -> int:
        return ws.time_label(self.minute)

    def tokens(self, tx, ty) -> np.ndarray:
        out = terrain_tokens(self.seed, self.biome, tx, ty, self.biome2, self.mix)
        for (ox, oy), tok in self.overrides.items():
            out = np.where((tx == ox) & (ty == oy), tok, out)
        return out

    def is_solid(self, tx: int, ty: int) -> bool:
        return bool(SOLID[int(self.tokens(np.array(tx), np.array(ty)))])

    def add_player(self) -> int:
        slot = len(self.players)
        self.players.append([*ws.player_spawn(slot), slot])
        return slot

    def spawn_creature(self, kind: int, near: int = 0) -> None:
        px, py = self.players[near][:2] if self.players else (0, 0)
        dx, dy = ws.spawn_offset(self.seed, self.t, self.spawned)
        self.creatures.append(Creature(kind, px + dx, py + dy, self.spawned))
        self.spawned += 1

    def place(self, thing: int, near: int = 0) -> None:
        for tx, ty, token in ws.place_cells(thing, *self.players[near][:2]):
            self.overrides[(tx, ty)] = token

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
        if self.t % ws.FRAMES_PER_MINUTE == 0:
            self.minute = (self.minute + 1) % ws.DAY_MINUTES

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
            weather=np.array([self.weather]),
            minute=np.array([self.minute]),
            phase=np.array([ws.overlay_phase(self.weather, self.t)]),
            sprites=sprites,
        )

    def render(self, viewer: int = 0) -> np.ndarray:
        return render(self.scene(viewer))[0]


def random_biomes(rng: np.random.Generator, batch: int, mixed: float = 0.3) -> tuple:
    """(biome, biome2 (-1: none), mix) per sample: a share of worlds mixes two biomes."""
    biome = rng.integers(0, len(ws.BIOMES), batch)
    other = (biome + rng.integers(1, len(ws.BIOMES), batch)) % len(ws.BIOMES)
    biome2 = np.where(rng.random(batch) < mixed, other, -1)
    mix = np.where(biome2 >= 0, rng.uniform(0.35, 0.65, batch), 0.0)
    return biome, biome2, mix


def random_minutes(rng: np.random.Generator, batch: int) -> np.ndarray:
    """Minutes of the day: half at the named moments, half anywhere."""
    named = np.array(ws.TIME_MINUTES)[rng.integers(0, len(ws.TIMES), batch)]
    return np.where(rng.random(batch) < 0.5, named, rng.integers(0, ws.DAY_MINUTES, batch))


def random_scenes(
    rng: np.random.Generator,
    batch: int,
    sprite_prob: float = 0.6,
    max_sprites: int = ws.MAX_SPRITES,
    seeds: tuple[int, int] = (0, TRAIN_SEED_LIMIT),
    frame: int = ws.FRAME,
    things: float = 0.15,
    mixed: float = 0.3,
) -> tuple:
    """A batch of random scenes from random worlds: (scene, biome per sample). ``frame`` may
    be smaller than the served 128 (the renderer is the same function at any size: training
    on 64-pixel crops costs a quarter). A share of the tiles are placed things, a share
    (``mixed``) of the worlds mix two biomes."""
    seed = rng.integers(*seeds, batch)
    biome, biome2, mix = random_biomes(rng, batch, mixed)
    cam = rng.integers(-3000, 3000, (batch, 2))
    cam[rng.random(batch) < 0.2] //= 50  # often near the spawn zone
    tiles = np.array([window_origin(x, y, frame) for x, y in cam])  # (B, 4)
    g = np.arange(frame // ws.TILE + 3)
    tx = tiles[:, 0, None, None] + g[None, None, :]
    ty = tiles[:, 1, None, None] + g[None, :, None]
    tokens = terrain_tokens(
        seed[:, None, None], biome[:, None, None], tx, ty, biome2[:, None, None], mix[:, None, None]
    )
    if things:
        placed = rng.random(tokens.shape) < things * (rng.random(batch) < 0.5)[:, None, None]
        tokens = np.where(
            placed, ws.BIOME_TOKENS + rng.integers(0, len(ws.THINGS), tokens.shape), tokens
        )
    sprites = np.full((batch, ws.MAX_SPRITES, 3), -1)
    for i in range(batch):
        if rng.random() < sprite_prob:
            n = rng.integers(1, max_sprites + 1)
            sprites[i, :n, 0] = rng.integers(0, ws.SPRITE_KINDS, n)
            sprites[i, :n, 1:] = rng.integers(-ws.SPRITE + 1, frame, (n, 2))
    weather = rng.integers(0, len(ws.WEATHERS), batch)
    phase = rng.integers(0, ws.OVERLAY, (batch, 2))
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
    g = np.arange(ws.CHUNK + 2 * margin) - margin
    tx = chunk[:, 0, None, None] * ws.CHUNK + g[None, None, :]
    ty = chunk[:, 1, None, None] * ws.CHUNK + g[None, :, None]
    tokens = terrain_tokens(
        seed[:, None, None], biome[:, None, None], tx, ty, biome2[:, None, None], mix[:, None, None]
    )
    return tokens, ws.in_spawn_zone(tx, ty), biome, biome2, mix
