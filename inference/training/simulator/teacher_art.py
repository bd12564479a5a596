"""The rich teacher's tables (`teacher.py`), built once at import: 12-px tiles, the standing
bodies of tall tiles, what each tile casts, emits and reflects.

Every table is indexed by render token (`spec.render_tokens`). Textures are the simulator's
8-px ones upscaled with the sprites' resampling (their palettes and pixel art stay) plus a
little fine grain, so a biome reads the same in both renderers.
"""

from __future__ import annotations

import numpy as np

from inference.training.simulator.appearance import _PALETTE, SPRITES, TEXTURES
from inference.world import spec
from inference.world.sprite_scale import resample_sprites

P = 12  # output pixels per tile
H = 6  # most a tall tile stands up over the tile behind, output pixels
Q = 3  # output pixels per shadow/light cell
C = P // Q  # cells per tile side
T = spec.RENDER_TOKENS
_K = len(spec.TILE_KINDS)
_THING = {name: spec.BIOME_TOKENS + i for i, name in enumerate(spec.THINGS)}
_COVER = {name: spec.FIRST_COVER_TOKEN - 1 + i for i, name in enumerate(spec.COVERS) if i}

# tall obstacles by biome: a tree on a trunk, a boulder, or a building
_CANOPY = {"meadow", "forest", "desert", "snow", "reef", "jungle", "swamp", "blossom", "autumn"}
_BLOCK = {"city", "ruins"}
_WATERY = {_THING["pond"], _COVER["puddle"]}  # reflect the sky, besides water tiles
_LAVA = {spec.token_of(spec.BIOMES.index("volcanic"), 3), _THING["lava_pool"]}
# light each burning thing gives (1: a pool of full strength round one tile)
LIGHT_GIVERS = {_COVER["fire"]: 1.0, _THING["campfire"]: 1.2} | dict.fromkeys(_LAVA, 0.6)
_yy, _xx = np.mgrid[0:P, 0:P].astype(np.float32)


def _grain(seed: int, shape, sigma: float) -> np.ndarray:
    return np.random.default_rng(seed).normal(0, sigma, shape).astype(np.float32)


TEX12 = np.clip(
    resample_sprites(TEXTURES.astype(np.float32), P) + _grain(7000, (T, P, P, 1), 0.018), 0, 1
)  # (T, 12, 12, 3)
TEX12[spec.UNKNOWN_TOKEN : spec.MASK_TOKEN + 1] = 0


def _kind(token: int) -> int:
    return token % _K if token < spec.BIOME_TOKENS else -1


def _ground_of(token: int) -> int:
    return token - token % _K


# ---------------------------------------------------------------- the ground layer

# Soft ground blends into its neighbours' colour across tile edges: each soft tile lends its
# mean colour (FIELD_RGB, weight FIELD_W) to a smooth field, and its pixels keep only their
# detail (BASE = texture - mean) on top of the field. Obstacles lend their biome's ground (they
# stand on it); tall things lend nothing and take their neighbours' ground.
_soft = {_THING["path"], _THING["flowers"], _COVER["ash"], _COVER["snow"]}
_tall_things = {_THING[n] for n in ("house", "trees", "ruins", "statue", "rocks", "tent", "well")}
_tall_things |= {_THING["fence"]}
BASE = TEX12.copy()
FIELD_RGB = np.zeros((T, 3), np.float32)
FIELD_W = np.zeros(T, np.float32)
RECEIVE = np.zeros(T, np.float32)
for _t in range(T):
    k = _kind(_t)
    src = _ground_of(_t) if k == 2 else _t
    if k in (0, 1, 2) or _t in _soft:
        FIELD_RGB[_t] = TEX12[src].mean((0, 1))
        FIELD_W[_t], RECEIVE[_t] = 1, 1
        BASE[_t] = TEX12[src] - FIELD_RGB[_t]
    elif _t in _tall_things:
        RECEIVE[_t] = 1
        BASE[_t] = _grain(7100 + _t, (P, P, 1), 0.02)
FALLBACK_RGB = np.array((0.36, 0.31, 0.24), np.float32)  # bare earth under a lone tall thing

# sky-mirroring water (lava glows instead)
WATER = np.array([(_kind(t) == 3 and t not in _LAVA) or t in _WATERY for t in range(T)], np.float32)
# self-lit pixels: lava, flames, the campfire's heart, embers in ash
EMIT = np.zeros((T, P, P), np.float32)
for _t in _LAVA:
    EMIT[_t] = 1
for _t in (_COVER["fire"], _COVER["ash"], _THING["campfire"]):
    r, g, b = TEX12[_t].transpose(2, 0, 1)
    EMIT[_t] = np.clip((r - 0.55) * 4, 0, 1) * (r > g + 0.15)
LIGHT = np.zeros(T, np.float32)
for _t, _v in LIGHT_GIVERS.items():
    LIGHT[_t] = _v


def _periodic_noise(seed: int, cells: int = 3) -> np.ndarray:
    """(12, 12) smooth value noise, about unit spread, that tiles seamlessly at the tile's
    period (the scene knows no world position, so nothing may repeat at any other period)."""
    lattice = np.random.default_rng(seed).normal(0, 1, (cells, cells)).astype(np.float32)
    u = (np.arange(P, dtype=np.float32) + 0.5) * cells / P - 0.5
    i0 = np.floor(u).astype(int)
    f = u - i0
    f = f * f * (3 - 2 * f)
    a, b = i0 % cells, (i0 + 1) % cells
    rows = lattice[a] * (1 - f)[:, None] + lattice[b] * f[:, None]  # (12, cells)
    out = rows[:, a] * (1 - f)[None] + rows[:, b] * f[None]
    return out / out.std()


# settled snow: a dusting over most of the ground, deeper in soft drifts (low contrast: a
# tile-periodic pattern with sharp edges reads as wallpaper)
SNOW = np.stack(
    [
        np.clip((0.74 if t < spec.BIOME_TOKENS else 0.6) + 0.14 * _periodic_noise(7300 + t), 0, 1)
        for t in range(T)
    ]
).astype(np.float32)  # (T, 12, 12)
SNOW_RGB = np.array((0.93, 0.95, 0.99), np.float32)


# ---------------------------------------------------------------- what stands up


def _shade(rgb, yy, xx, cy, cx, r) -> np.ndarray:
    """A rounded top lit from the upper left, darker toward its lower rim."""
    lit = 1.18 - 0.32 * ((yy - cy) + 0.6 * (xx - cx)) / (2 * r) - 0.18 * ((yy - cy) > r * 0.55)
    return rgb * lit[..., None]


def _canopy(token: int, rgb, h: int) -> tuple:
    spr = np.zeros((P + H, P, 4), np.float32)
    y0 = H - h  # where the top face starts in the sprite
    yy, xx = _yy + y0, _xx
    cy, cx, r = y0 + 5.5, 5.5, 5.6
    inside = (yy - cy) ** 2 + (xx - cx) ** 2 < r * r
    trunk_rgb = np.array((0.36, 0.25, 0.16), np.float32)
    xs = np.arange(P)
    spr[y0 + 8 :, :, :3] = trunk_rgb * (1 - 0.3 * (xs > 6))[:, None]  # its shaded side
    spr[y0 + 8 :, :, 3] = np.abs(xs - 5.5) < 1.6
    leaf = rgb * (1 + 0.9 * _grain(7400 + token, (P, P, 1), 0.09))
    leaf = _shade(leaf, yy, xx, cy, cx, r)
    spr[y0 : y0 + P, :, :3] = np.where(inside[..., None], leaf, spr[y0 : y0 + P, :, :3])
    spr[y0 : y0 + P, :, 3] = np.maximum(spr[y0 : y0 + P, :, 3], inside)
    return spr, (_disc(), 1.0)


def _boulder(token: int, rgb, h: int) -> tuple:
    spr = np.zeros((P + H, P, 4), np.float32)
    y0 = H - h
    ys, xs = np.mgrid[0 : P + H, 0:P].astype(np.float32)
    cy, cx, r = y0 + 5.5, 5.5, 5.4
    top = (ys - cy) ** 2 + (xs - cx) ** 2 < r * r
    body = top.copy()
    for dz in range(1, h + 1):  # the top disc pushed down: a rounded rock's front
        body |= (ys - dz - cy) ** 2 + (xs - cx) ** 2 < r * r
    grain = 1 + _grain(7500 + token, (P + H, P, 1), 0.06)
    rgb = np.maximum(rgb, 0.16)  # the darkest rocks (volcanic) still show their shape
    front = rgb * grain * (0.62 - 0.2 * (ys - cy > r + h - 2))[..., None]
    face = _shade(rgb * grain, ys, xs, cy, cx, r)
    face += 0.22 * ((ys - cy + 2.2) ** 2 + (xs - cx + 2) ** 2 < 3)[..., None]  # a highlight
    spr[..., :3] = np.where(top[..., None], face, front)
    spr[..., 3] = body
    return spr, (_disc(), h / H)


def _block(token: int, roof, wall_rgb, h: int, windows: bool) -> tuple:
    """A building: its roof (the tile texture) up over the tile behind, its wall in front."""
    spr = np.zeros((P + H, P, 5), np.float32)
    y0 = H - h
    spr[y0 : y0 + P, :, :3] = roof * (1.12 - 0.12 * (_yy / P))[..., None]
    spr[y0 + P - 1, :, :3] = roof[-1] * 0.7  # the eave
    wall = np.broadcast_to(wall_rgb, (h, P, 3)) * (1 + _grain(7600 + token, (h, P, 1), 0.03))
    if windows:
        wy, wx = np.mgrid[0:h, 0:P]
        win = (wy >= 1) & (wy <= h - 3) & ((wx % 4) >= 1) & ((wx % 4) <= 2)
        wall = np.where(win[..., None], np.array((1.0, 0.86, 0.5), np.float32) * 0.85, wall)
        spr[y0 + P :, :, 4] = win  # lit windows: they glow at night
    spr[y0 + P :, :, :3] = wall
    spr[y0:, :, 3] = 1
    return spr, (np.ones((C, C), np.float32), h / H)


def _roof(token: int, rgb, course: int) -> np.ndarray:
    """A roof without the flat tile's outline, so a house of many tiles reads as one roof."""
    roof = np.broadcast_to(rgb, (P, P, 3)) * (1 + _grain(7800 + token, (P, P, 1), 0.04))
    return roof * (1 - 0.18 * (_yy % course == 0))[..., None]


def _disc() -> np.ndarray:
    yy, xx = np.mgrid[0:C, 0:C] - (C - 1) / 2
    return ((yy**2 + xx**2) <= 2.6).astype(np.float32)


def _post(token: int, rgb, h: int, half: float) -> tuple:
    """A thin upright: a fence post or a statue, narrow so the ground shows beside it."""
    spr = np.zeros((P + H, P, 4), np.float32)
    y0 = H - h
    xs = np.arange(P)
    body = np.abs(xs - 5.5) < half
    spr[y0:, body, 3] = 1
    spr[y0:, body, :3] = rgb * 0.62
    spr[y0 : y0 + P, body, :3] = _shade(
        np.broadcast_to(rgb, (P, int(body.sum()), 3)), _yy[:, body], _xx[:, body], 5.5, 5.5, 6
    )
    occ = np.zeros((C, C), np.float32)
    occ[:, 1:3] = 1
    return spr, (occ, h / H)


def _standing(token: int) -> tuple:
    """(P + H, P, 4) RGBA of a tall token's body (bottom row on its tile's bottom edge), and
    its shadow caster: (C, C) footprint and height in tiles. None for flat tokens."""
    k = _kind(token)
    if k == 2:
        biome = spec.BIOMES[token // _K]
        rgb = np.array(_PALETTE[biome][2], np.float32) / 255
        if biome in _CANOPY:
            return _canopy(token, rgb, 4 if biome == "reef" else H)
        if biome in _BLOCK:
            wall = rgb * 0.62 if biome == "city" else rgb * 0.7
            roof = _roof(token, rgb * 1.1, 4) if biome == "city" else TEX12[token]
            return _block(token, roof, wall, H, windows=biome == "city")
        return _boulder(token, rgb, 4)
    thing = spec.THINGS[token - spec.BIOME_TOKENS] if k == -1 and token < spec.NUM_TOKENS else ""
    if thing == "trees":
        return _canopy(token, np.array((0.2, 0.5, 0.2), np.float32), H)
    if thing == "house":
        roof = _roof(token, np.array((0.66, 0.23, 0.18), np.float32), 3)
        return _block(token, roof, np.array((0.82, 0.7, 0.5), np.float32), H, True)
    if thing == "ruins":
        return _block(token, TEX12[token], np.array((0.45, 0.43, 0.4), np.float32), 5, False)
    if thing == "tent":
        return _block(token, TEX12[token], np.array((0.55, 0.5, 0.35), np.float32), 4, False)
    if thing == "rocks":
        return _boulder(token, np.array((0.5, 0.48, 0.45), np.float32), 4)
    if thing == "well":
        spr, cast = _boulder(token, np.array((0.58, 0.56, 0.52), np.float32), 3)
        spr[H - 3 + 4 : H - 3 + 8, 4:8, :3] = (0.1, 0.18, 0.34)  # the water down the well
        return spr, cast
    if thing == "statue":
        return _post(token, np.array((0.8, 0.8, 0.78), np.float32), H, 2.6)
    if thing == "fence":
        return _post(token, np.array((0.55, 0.38, 0.22), np.float32), 4, 1.2)
    return None


TALL = np.zeros((2, T, P + H, P, 5), np.float32)  # [plain, snowed on], RGBA + emission
OCCLUDE = np.zeros((T, C, C), np.float32)  # shadow caster heights, tiles
IS_TALL = np.zeros(T, bool)
for _t in range(T):
    made = _standing(_t)
    if made is None:
        continue
    spr, (foot, height) = made
    if spr.shape[-1] == 4:
        spr = np.concatenate([spr, np.zeros_like(spr[..., :1])], -1)
    IS_TALL[_t] = True
    OCCLUDE[_t] = foot * height
    TALL[0, _t] = np.clip(spr, 0, 1)
    snowy = spr.copy()
    top = np.zeros((P + H, P), np.float32)
    top[: P + H - 4] = 1  # snow settles on what faces up, not on the front
    cover = np.clip(np.tile(_periodic_noise(7700 + _t), (2, 1))[: P + H] + 0.9, 0, 1) * top
    snowy[..., :3] = spr[..., :3] * (1 - cover[..., None]) + SNOW_RGB * cover[..., None]
    snowy[..., 4] *= 1 - cover
    TALL[1, _t] = np.clip(snowy, 0, 1)
SPRITES12 = resample_sprites(SPRITES.astype(np.float32), P)  # (SPRITE_KINDS, 12, 12, 4)
