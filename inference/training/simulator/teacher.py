"""The rich teacher: the scene drawn as the generative decoder should learn to draw it.

Where `world.render` is flat (8-px tiles, night a tint), this draws the same scene at 1.5
output pixels a world pixel with soft ground borders, a three-quarter view (tall things stand
up over the tile behind, nearer ones in front), sun shadows that turn over the day, water
mirroring the sky, nights lit by the world's own fires and lights, wet and snowed-on ground.
Everything is a deterministic function of the scene, vectorised over the batch (torch, one
thread) so it can make training data on two cores.

Geometry (the decoder reproduces it): the W x W window is drawn at 12 px a tile; the frame is
the crop from output pixel 12 + floor(1.5 * offset) on each axis, of side 1.5 * frame; a
sprite at frame pixel s is pasted at floor(1.5 * s) of the frame. Shadows and pools of light
are worked out on a grid of 3-px cells aligned with the tiles, so a camera moving 2 world px
moves everything by exactly 3 output px.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

from inference.training.simulator import teacher_art as art
from inference.training.simulator.appearance import ATMOSPHERE_AFFINE, OVERLAYS, light_affine
from inference.training.simulator.world import Scene
from inference.world import spec
from inference.world.sprite_scale import resample_sprites

SCALE = 1.5  # output pixels per world pixel: a 128-px view is drawn as a 192x192 frame
P, H, Q, C = art.P, art.H, art.Q, art.C
THING_SIDE = 24  # open-vocabulary sprites (16 world px) at the output scale
SHADOW_REACH = 3  # tiles a shadow reaches at most
SHADOW_DARK = 0.36  # how much a full shadow darkens the ground
GLOW_SIGMA = 5.0  # cells: spread of the pool of light round what gives light (~3 tiles wide)
WARM = (1.0, 0.68, 0.36)  # the pool's colour
_RAIN = (spec.WEATHERS.index("rain"), spec.WEATHERS.index("thunderstorm"))
_SNOW = spec.WEATHERS.index("snow")
_FIREFLIES = spec.WEATHERS.index("fireflies")
_OVERLAY_SIDE = spec.OVERLAY * 3 // 2  # the particle texture's period at the output scale

# sky colour over the day (minute, RGB): what water mirrors
_SKY_KEYS = (
    (0, (0.05, 0.08, 0.22)),
    (300, (0.05, 0.08, 0.22)),
    (360, (0.5, 0.38, 0.6)),
    (400, (0.98, 0.62, 0.62)),  # dawn: pink
    (470, (0.7, 0.76, 0.9)),
    (540, (0.42, 0.66, 0.96)),
    (1000, (0.42, 0.66, 0.96)),
    (1070, (0.98, 0.64, 0.36)),
    (1115, (1.0, 0.48, 0.32)),  # dusk: orange
    (1170, (0.55, 0.3, 0.45)),
    (1230, (0.08, 0.1, 0.28)),
    (1440, (0.05, 0.08, 0.22)),
)


def out_side(frame: int) -> int:
    """Output side of a frame of ``frame`` world pixels."""
    return frame * 3 // 2


def _t(a) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(a))


_BASE, _FIELD_RGB, _FIELD_W = _t(art.BASE), _t(art.FIELD_RGB), _t(art.FIELD_W)
_RECEIVE, _WATER, _EMIT = _t(art.RECEIVE), _t(art.WATER), _t(art.EMIT)
_LIGHT, _SNOWMASK, _OCCLUDE = _t(art.LIGHT), _t(art.SNOW), _t(art.OCCLUDE)
_TALL = _t(art.TALL).view(2 * art.T, P + H, P, 5)
_IS_TALL = art.IS_TALL
_SPRITES = _t(art.SPRITES12)
_OVERLAYS = resample_sprites(torch.from_numpy(OVERLAYS.astype(np.float32)), _OVERLAY_SIDE)
_yy, _xx = torch.meshgrid(torch.arange(P), torch.arange(P), indexing="ij")
# rain's sheen: faint diagonal streaks of sky on the wet ground, tile-periodic
_SHEEN = torch.cos(2 * math.pi * (_xx + 2 * _yy) / P).clamp(min=0) ** 8  # (12, 12)


def _fireflies_glow() -> torch.Tensor:
    """(48, 48) soft halos round the fireflies overlay's dots (tiled like the overlay)."""
    a = _OVERLAYS[_FIREFLIES, ..., 3]
    r = torch.arange(-6, 7, dtype=torch.float32)
    k = torch.exp(-(r**2) / 8)
    x = F.pad(a[None, None], (6, 6, 6, 6), mode="circular")
    x = F.conv2d(x, (k[:, None] * k[None, :])[None, None])
    return (x[0, 0] / x.max()).clamp(0, 1)


_GLOW_FF = _fireflies_glow()


# ---------------------------------------------------------------- sun and sky


def sun(minute: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(B,) minutes -> unit ground direction toward the sun (B, 2) (x east, y south: down the
    screen), tan of its elevation (B,), and its strength (B,) (0 below the horizon, fading in
    over its first degrees). Rises east at 06:00, high in the south at noon, sets west at 18:00."""
    m = np.asarray(minute, dtype=np.float64) % spec.DAY_MINUTES
    theta = (m - 360) / 720 * np.pi  # 0 at sunrise, pi at sunset
    up = np.sin(theta)
    d = np.stack([np.cos(theta), 0.65 * np.maximum(up, 0)], -1)
    d /= np.linalg.norm(d, axis=-1, keepdims=True)
    elev = np.radians(64) * up
    strength = np.clip(np.degrees(elev) / 6, 0, 1)
    return d, np.tan(np.maximum(elev, 1e-3)), strength


def sky_rgb(minute: np.ndarray) -> np.ndarray:
    """(B,) minutes -> (B, 3) the sky's colour, what water mirrors."""
    m = np.asarray(minute, dtype=np.float64) % spec.DAY_MINUTES
    keys = np.array([k for k, _ in _SKY_KEYS], dtype=np.float64)
    vals = np.array([v for _, v in _SKY_KEYS])
    return np.stack([np.interp(m, keys, vals[:, c]) for c in range(3)], -1)


# ---------------------------------------------------------------- the ground layer


def _tile_image(per_tile: torch.Tensor) -> torch.Tensor:
    """(B, W, W, 12, 12, ...) per-tile pixels -> (B, 12W, 12W, ...)."""
    b, w = per_tile.shape[:2]
    return per_tile.transpose(2, 3).reshape(b, w * P, w * P, *per_tile.shape[5:])


def _edge_blend(w: int) -> torch.Tensor:
    """(12W, W) weights of each tile's colour at each pixel along one axis: its own across the
    tile, a smoothstep into the next over 3 px either side of each edge."""
    x = (torch.arange(w * P, dtype=torch.float32) + 0.5) / P - 0.5  # in tile centres
    i0 = x.floor().clamp(0, w - 2)
    u = ((x - i0 - 0.5) * P / 6 + 0.5).clamp(0, 1)  # 0..1 over the 6 px round the edge
    u = u * u * (3 - 2 * u)
    m = torch.zeros(w * P, w)
    m[torch.arange(w * P), i0.long()] = 1 - u
    m[torch.arange(w * P), i0.long() + 1] += u
    return m


def _ground(tok: torch.Tensor) -> torch.Tensor:
    """(B, W, W) tokens -> (B, N, N, 3) the ground: textures, soft ground blended across its
    edges (a weighted field of the soft tiles' colours)."""
    w = tok.shape[1]
    img = _tile_image(_BASE[tok])
    wt = _FIELD_W[tok]  # (B, W, W)
    num = torch.cat([_FIELD_RGB[tok] * wt[..., None], wt[..., None]], -1)  # (B, W, W, 4)
    eps = 1e-3  # a lone tall thing with no soft neighbour stands on bare earth
    num = num + eps * torch.cat([_t(art.FALLBACK_RGB), torch.ones(1)])
    m = _edge_blend(w)
    field = torch.einsum("yi,bijc,xj->byxc", m, num, m)  # (B, N, N, 4)
    rgb = field[..., :3] / field[..., 3:]
    recv = _tile_image(_RECEIVE[tok][..., None, None].expand(-1, -1, -1, P, P))
    return img.add_(rgb * recv[..., None])


def _water(img, tok, minute, strength) -> None:
    """Water mirrors the sky of the hour, ripples drift with the minute, glints by day."""
    b, w = tok.shape[:2]
    wat = _tile_image(_WATER[tok][..., None, None].expand(-1, -1, -1, P, P))[..., None]
    phase = torch.from_numpy((minute % spec.DAY_MINUTES) * (2 * math.pi / 45)).float()
    ph = phase[:, None, None]
    ripple = 0.55 * torch.sin(2 * math.pi * (_xx + _yy)[None] / P - ph) + 0.45 * torch.sin(
        2 * math.pi * (2 * _yy - _xx)[None] / P + 0.7 * ph
    )  # (B, 12, 12)
    glint = ((ripple - 0.86) * 12).clamp(0, 1) * torch.from_numpy(strength).float()[:, None, None]
    sky = torch.from_numpy(sky_rgb(minute)).float()[:, None, None, None, None, :]
    wave = (0.07 * ripple + 0.4 * glint)[:, None, :, None, :, None]  # (B, 1, 12, 1, 12, 1)
    view = img.view(b, w, P, w, P, 3)
    mirrored = view * 0.45 + sky * 0.55 + wave
    view.lerp_(mirrored, wat.view(b, w, P, w, P, 1))


def _weather_ground(img, tok, weather, sky) -> None:
    """Rain wets the ground (darker, richer, a sheen of sky); snow settles on it in patches."""
    w = tok.shape[1]
    wet, snow = np.nonzero(np.isin(weather, _RAIN))[0], np.nonzero(weather == _SNOW)[0]
    if not len(wet) and not len(snow):
        return
    water = _tile_image(_WATER[tok][..., None, None].expand(-1, -1, -1, P, P))
    dry = 1 - torch.maximum(water, _tile_image(_EMIT[tok]))  # water and fire stay as they are
    for i in wet.tolist():
        g = img[i].mean(-1, keepdim=True)
        soaked = (g + (img[i] - g) * 1.25) * 0.7
        soaked.view(w, P, w, P, 3).add_(
            0.07 * _SHEEN[None, :, None, :, None] * torch.from_numpy(sky[i]).float()
        )
        img[i].lerp_(soaked, dry[i][..., None])
    for i in snow.tolist():
        mask = _tile_image(_SNOWMASK[tok[i : i + 1]])[0] * dry[i]
        img[i].lerp_(_t(art.SNOW_RGB).expand_as(img[i]), mask[..., None])


# ---------------------------------------------------------------- shadows and light pools


def _cells(tok: torch.Tensor) -> torch.Tensor:
    """(B, W, W, C, C) per-tile cells -> (B, CW, CW)."""
    b, w = tok.shape[:2]
    return tok.transpose(2, 3).reshape(b, w * C, w * C)


def _shadow(occ: torch.Tensor, minute: np.ndarray) -> torch.Tensor:
    """(B, G, G) caster heights in tiles -> (B, G, G) shadow in [0, 1]: a cell is shaded when
    something toward the sun stands taller than the sun's line over it."""
    d, tan_e, strength = sun(minute)
    b, g = occ.shape[:2]
    steps = SHADOW_REACH * C
    pad = F.pad(occ, (steps, steps, steps, steps))
    gp = g + 2 * steps
    ar = torch.arange(g)
    base = (ar[:, None] + steps) * gp + ar[None, :] + steps  # (G, G) flat index in pad
    flat = pad.reshape(b, gp * gp)
    shade = torch.zeros(b, g * g)
    for k in range(1, steps + 1):
        off = np.round(d * k).astype(np.int64)  # (B, 2) cells toward the sun
        idx = base.view(1, -1) + torch.from_numpy(off[:, 1] * gp + off[:, 0])[:, None]
        h = flat.gather(1, idx)
        rise = torch.from_numpy(np.hypot(*off.T) / C * tan_e).float()[:, None]
        shade = torch.maximum(shade, ((h - rise) * 4).clamp(0, 1) * (h > 0))
    shade = shade.view(b, 1, g, g)
    shade = F.avg_pool2d(F.pad(shade, (1, 1, 1, 1), mode="replicate"), 3, 1)  # soft edges
    return shade[:, 0] * torch.from_numpy(strength).float()[:, None, None]


def _gauss_blur(x: torch.Tensor, sigma: float) -> torch.Tensor:
    """(B, G, G) -> the same, blurred by an unnormalised Gaussian (one point peaks at 1)."""
    r = int(3 * sigma)
    k = torch.exp(-(torch.arange(-r, r + 1, dtype=torch.float32) ** 2) / (2 * sigma**2))
    x = x[:, None]
    x = F.conv2d(F.pad(x, (r, r, 0, 0)), k.view(1, 1, 1, -1))
    x = F.conv2d(F.pad(x, (0, 0, r, r)), k.view(1, 1, -1, 1))
    return x[:, 0]


def _upsample_cells(x: torch.Tensor) -> torch.Tensor:
    """(B, G, G) cells -> (B, 3G, 3G) pixels, bilinear (smooth edges)."""
    return F.interpolate(x[:, None], scale_factor=Q, mode="bilinear", align_corners=False)[:, 0]


# ---------------------------------------------------------------- sprites


def _sprite_items(scene: Scene, things, origin: np.ndarray) -> list[tuple]:
    """(foot row, layer, batch, window x, window y, RGBA (S, S, 4), caster height) of every
    sprite and open-vocabulary thing, sorted back to front."""
    items = []
    layers = [(scene.sprites, _SPRITES, P, 0.7)]
    if things is not None:  # things under creatures and avatars at the same depth, as served
        slots, table, _ = things
        big = resample_sprites(torch.as_tensor(table, dtype=torch.float32), THING_SIDE)
        layers.insert(0, (np.asarray(slots), big, THING_SIDE, 1.0))
    for layer, (slots, table, side, height) in enumerate(layers):
        for i, e in zip(*np.nonzero(slots[:, :, 0] >= 0), strict=True):
            kind, sx, sy = (int(v) for v in slots[i, e])
            wx = int(origin[i, 0]) + math.floor(SCALE * sx)
            wy = int(origin[i, 1]) + math.floor(SCALE * sy)
            items.append(((wy + side - 1) // P, layer, i, wx, wy, table[kind], height))
    items.sort(key=lambda it: (it[0], it[1]))
    return items


def _paste(img, emit, item) -> None:
    _, _, i, wx, wy, spr, _ = item
    n, s = img.shape[2], spr.shape[0]
    y0, x0 = wy + H, wx  # the canvas has H rows above the window for bodies standing up
    a0, b0 = max(y0, 0), max(x0, 0)
    a1, b1 = min(y0 + s, img.shape[1]), min(x0 + s, n)
    if a0 >= a1 or b0 >= b1:
        return
    sp = spr[a0 - y0 : a1 - y0, b0 - x0 : b1 - x0]
    a = sp[..., 3:]
    img[i, a0:a1, b0:b1].lerp_(sp[..., :3], a)
    emit[i, a0:a1, b0:b1].mul_(1 - a[..., 0])


def _cast(occ: torch.Tensor, items: list) -> None:
    """Sprites cast shadows too: their coverage at cell scale, as tall as the sprite."""
    g = occ.shape[1]
    for _, _, i, wx, wy, spr, height in items:
        cov = F.avg_pool2d(spr[None, None, :, :, 3], Q)[0, 0]  # (S/3, S/3)
        cx, cy = math.floor(wx / Q), math.floor(wy / Q)
        k = cov.shape[0]
        # only the lower half stands on the ground: the top is the figure's head, seen up
        rows = slice(k // 2, k)
        a0, b0 = max(cy + k // 2, 0), max(cx, 0)
        a1, b1 = min(cy + k, g), min(cx + k, g)
        if a0 >= a1 or b0 >= b1:
            continue
        part = (cov[rows][a0 - cy - k // 2 : a1 - cy - k // 2, b0 - cx : b1 - cx] > 0.3).float()
        occ[i, a0:a1, b0:b1] = torch.maximum(occ[i, a0:a1, b0:b1], part * height)


# ---------------------------------------------------------------- the frame


@torch.no_grad()
def render_rich(scene: Scene, things: tuple | None = None) -> np.ndarray:
    """Scene -> (B, F', F', 3) uint8, F' = out_side(scene.frame).

    ``things``: the open-vocabulary layer as the renderer takes it, (slots (B, M, 3) [table
    row or -1, top-left x, top-left y in frame pixels], table (K, 16, 16, 4) RGBA in [0, 1],
    lights (B, L, 2) frame pixels of what gives light, -1 none)."""
    tok = torch.from_numpy(np.asarray(scene.tokens, dtype=np.int64))
    b, w = tok.shape[:2]
    n, fo = w * P, out_side(scene.frame)
    minute = np.asarray(scene.minute) % spec.DAY_MINUTES
    weather = np.asarray(scene.weather)
    crop = P + np.floor(SCALE * np.asarray(scene.offset)).astype(np.int64)  # (B, 2) x, y
    _, _, strength = sun(minute)
    sky = sky_rgb(minute)

    # the ground, its water and weather, then the shadows on it
    ground = _ground(tok)
    _water(ground, tok, minute, strength)
    _weather_ground(ground, tok, weather, sky)
    items = _sprite_items(scene, things, crop)
    occ = _cells(_OCCLUDE[tok])
    _cast(occ, items)
    shade = _upsample_cells(_shadow(occ, minute))  # (B, N, N)
    ground.mul_(1 - SHADOW_DARK * shade[..., None])

    # a canvas with H rows above the window: tall bodies and sprites, back to front
    img = torch.zeros(b, n + H, n, 3)
    img[:, H:] = ground
    emit = torch.zeros(b, n + H, n)
    emit[:, H:] = _tile_image(_EMIT[tok])
    snowy = torch.from_numpy((weather == _SNOW).astype(np.int64) * art.T)[:, None]
    tall_rows = _IS_TALL[scene.tokens].any((0, 2))
    k = 0
    for r in range(w):
        if tall_rows[r]:
            strip = _TALL[tok[:, r] + snowy]  # (B, W, P + H, P, 5)
            strip = strip.transpose(1, 2).reshape(b, P + H, n, 5)
            a = strip[..., 3:4]
            img[:, r * P : r * P + P + H].lerp_(strip[..., :3], a)
            emit[:, r * P : r * P + P + H].lerp_(strip[..., 4], a[..., 0])
        while k < len(items) and items[k][0] <= r:
            _paste(img, emit, items[k])
            k += 1
    for item in items[k:]:
        _paste(img, emit, item)

    # pools of light round what burns and what shines, on the same cells as the shadows
    src = _cells(_LIGHT[tok][..., None, None] * _centre_cells())
    if things is not None:
        lights = np.asarray(things[2])
        for i, j in zip(*np.nonzero(lights[:, :, 0] >= 0), strict=True):
            x = (crop[i, 0] + math.floor(SCALE * lights[i, j, 0])) // Q
            y = (crop[i, 1] + math.floor(SCALE * lights[i, j, 1])) // Q
            if 0 <= x < w * C and 0 <= y < w * C:
                src[i, y, x] += 1
    pool = 1.5 * (1 - torch.exp(-_gauss_blur(src, GLOW_SIGMA)))
    pool = _upsample_cells(pool)

    # the frame: crop, light, emitters, atmosphere particles
    ys = torch.from_numpy(crop[:, 1:2] + np.arange(fo)[None])  # (B, F')
    xs = torch.from_numpy(crop[:, 0:1] + np.arange(fo)[None])
    bi = torch.arange(b)[:, None, None]
    frame = img[bi, ys[:, :, None] + H, xs[:, None, :]]  # (B, F', F', 3)
    e = emit[bi, ys[:, :, None] + H, xs[:, None, :]][..., None]
    p = pool[bi, ys[:, :, None], xs[:, None, :]][..., None]
    light = light_affine(minute)
    atmo = ATMOSPHERE_AFFINE[weather]
    gain = torch.from_numpy(light[:, 0] * atmo[:, 0]).float()[:, None, None]
    shift = torch.from_numpy(light[:, 1] * atmo[:, 0] + atmo[:, 1]).float()[:, None, None]
    dark = torch.from_numpy(1 - light[:, 0].mean(-1)).float().clamp(0, 1)[:, None, None, None]
    warm = torch.tensor(WARM)
    lit = frame * (gain + dark * 1.6 * p * warm) + shift
    out = lit.lerp_(frame, e)  # emitters keep their own light
    oy = (np.arange(fo)[None] + np.floor(SCALE * scene.phase[:, 1:2]).astype(np.int64)) % 48
    ox = (np.arange(fo)[None] + np.floor(SCALE * scene.phase[:, 0:1]).astype(np.int64)) % 48
    oy, ox = torch.from_numpy(oy)[:, :, None], torch.from_numpy(ox)[:, None, :]
    ff = torch.from_numpy(weather == _FIREFLIES).nonzero()[:, 0]
    if len(ff):
        halo = _GLOW_FF[oy[ff], ox[ff]][..., None] * torch.tensor((0.55, 0.6, 0.2))
        out[ff] += halo * (0.15 + 0.5 * dark[ff])
    ov = _OVERLAYS[torch.from_numpy(weather)[:, None, None], oy, ox]  # (B, F', F', 4)
    out = out.lerp_(ov[..., :3], ov[..., 3:])
    return out.mul_(255).round_().clamp_(0, 255).to(torch.uint8).numpy()


def _centre_cells() -> torch.Tensor:
    """(C, C) a tile's light at its four centre cells (a quarter each: one tile peaks at 1)."""
    c = torch.zeros(C, C)
    c[C // 2 - 1 : C // 2 + 1, C // 2 - 1 : C // 2 + 1] = 0.25
    return c
