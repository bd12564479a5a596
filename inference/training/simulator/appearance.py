"""How the simulator's world looks: tile and thing textures, sprites, the light of each time of
day and the atmosphere overlays, all drawn procedurally with numpy."""

from __future__ import annotations

import numpy as np

from inference.world import spec

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
assert tuple(_PALETTE) == spec.BIOMES
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
    rng = np.random.default_rng(1000 + spec.BIOMES.index(biome) * 10 + kind)
    base = np.array(_PALETTE[biome][kind], dtype=np.float64)
    tex = base + rng.normal(0, 10, (spec.TILE, spec.TILE, 3))
    yy, xx = np.mgrid[0 : spec.TILE, 0 : spec.TILE]
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
            for y, x in rng.integers(0, spec.TILE, (4, 2)):
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
    rng = np.random.default_rng(3000 + spec.THINGS.index(thing))
    yy, xx = np.mgrid[0 : spec.TILE, 0 : spec.TILE]
    r2 = (yy - 3.5) ** 2 + (xx - 3.5) ** 2

    def fill(rgb, noise=8):
        return np.array(rgb, dtype=np.float64) + rng.normal(0, noise, (spec.TILE, spec.TILE, 3))

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
        for y, x in rng.integers(0, spec.TILE, (5, 2)):
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
        for i, (y, x) in enumerate(rng.integers(0, spec.TILE, (7, 2))):
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


def _cover_texture(cover: str) -> np.ndarray:
    """The tile of a cover lying over a tile (`spec.COVERS`): it hides what lies under it."""
    rng = np.random.default_rng(4000 + spec.COVERS.index(cover))
    yy, xx = np.mgrid[0 : spec.TILE, 0 : spec.TILE]
    r2 = (yy - 3.5) ** 2 + (xx - 3.5) ** 2

    def fill(rgb, noise=8):
        return np.array(rgb, dtype=np.float64) + rng.normal(0, noise, (spec.TILE, spec.TILE, 3))

    if cover == "fire":  # flames licking up from dark, scorched ground
        tex = fill((58, 30, 20))
        tips = np.array([3, 1, 2, 4, 2, 0, 2, 3])  # tongues of flame: each column's tip row
        tex[yy >= tips[xx]] = (232, 84, 22)
        tex[(yy >= tips[xx] + 2) & (xx > 0) & (xx < 7)] = (252, 156, 36)
        tex[(yy >= tips[xx] + 3) & (xx > 1) & (xx < 6)] = (255, 226, 96)  # the hot core
    elif cover == "ash":  # grey-black ash, a few embers still glowing
        tex = fill((46, 43, 42), noise=6)
        tex[(yy + 2 * xx) % 5 == 0] = (68, 64, 62)  # paler drifts
        for y, x in rng.integers(0, spec.TILE, (3, 2)):
            tex[y, x] = (236, 96, 32)
    elif cover == "puddle":  # sky-blue sheen of still water, a darker wet rim
        tex = fill((120, 178, 226), noise=5)
        tex[r2 > 9] = (64, 92, 112)
        tex[(r2 <= 9) & ((yy - xx) % 5 == 0) & (yy < 5)] = (200, 228, 248)  # glints
    elif cover == "snow":  # settled snow, a faint blue-grey speckle
        tex = fill((244, 246, 250), noise=3)
        for y, x in rng.integers(0, spec.TILE, (6, 2)):
            tex[y, x] = (196, 208, 222)
    else:  # pragma: no cover - every cover has a branch above
        raise ValueError(cover)
    return np.clip(tex, 0, 255) / 255.0


# Rows by render token (`spec.render_tokens`): the canvas tokens, UNKNOWN and MASK (never
# drawn: black), then the covers.
TEXTURES = np.stack(
    [_tile_texture(b, k) for b in spec.BIOMES for k in range(len(spec.TILE_KINDS))]
    + [_thing_texture(t) for t in spec.THINGS]
    + [np.zeros((spec.TILE, spec.TILE, 3))] * 2
    + [_cover_texture(c) for c in spec.COVERS[1:]]
)  # (RENDER_TOKENS, 8, 8, 3) float in [0, 1]
assert len(TEXTURES) == spec.RENDER_TOKENS
# A burning tile blocks movement; ash, puddles and snow are walked on, whatever lies under them.
SOLID = np.array(
    [spec.is_solid_token(t) for t in range(spec.NUM_TOKENS + 2)]
    + [c == "fire" for c in spec.COVERS[1:]]
)

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
    "avatar": list(spec.AVATAR_RGB),
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
    out = np.zeros((spec.SPRITE, spec.SPRITE, 4))
    for y, row in enumerate(rows):
        for x, ch in enumerate(row):
            if ch == "#":
                out[y, x] = (*np.array(color) / 255.0, 1.0)
            elif ch == "o":  # faces and eyes
                out[y, x] = (*_EYES.get(shape, (0.05, 0.05, 0.05)), 1.0)
    return out


SPRITES = np.stack(
    [_sprite("avatar", c) for c in _SPRITE_COLORS["avatar"]]
    + [_sprite(c, _SPRITE_COLORS[c]) for c in spec.CREATURES]
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
    m = np.asarray(minute, dtype=np.float64) % spec.DAY_MINUTES
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
assert tuple(WEATHER_AFFINE) == spec.WEATHERS
ATMOSPHERE_AFFINE = np.array([WEATHER_AFFINE[w] for w in spec.WEATHERS])  # (9, 2, 3)


def _overlay(weather: str) -> np.ndarray:
    o = spec.OVERLAY
    out = np.zeros((o, o, 4))
    rng = np.random.default_rng(50 + spec.WEATHERS.index(weather))
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


OVERLAYS = np.stack([_overlay(w) for w in spec.WEATHERS])  # (9, 32, 32, 4)
