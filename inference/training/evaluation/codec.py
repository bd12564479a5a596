"""1. The codec: simulator frames encoded into the renderer's latents and drawn again."""

from __future__ import annotations

import numpy as np
import torch

from inference.training import simulator as sim
from inference.training.evaluation.measures import CENTRE, EVAL_SEEDS, means, psnr
from inference.world import spec
from inference.world.model import LIGHT_STEPS, Renderer


def codec_scenes(rng, n: int) -> sim.Scene:
    """Simulator frames as the engine serves them: every atmosphere in turn, its particles on
    their scroll path, the viewer's avatar (any colour) at the centre, a share of things."""
    scene, _ = sim.random_scenes(rng, n, sprite_prob=0.0, seeds=EVAL_SEEDS)
    scene.weather[:] = np.arange(n) % len(spec.WEATHERS)
    scene.phase[:] = [
        spec.overlay_phase(int(w), int(rng.integers(spec.OVERLAY))) for w in scene.weather
    ]
    scene.sprites[:, 0] = np.stack(
        [rng.integers(0, spec.AVATAR_COLORS, n), np.full(n, CENTRE), np.full(n, CENTRE)], 1
    )
    return scene


def light_maps(renderer: Renderer, weather: int, minute: int, phase) -> tuple:
    """The renderer's per-pixel gain and bias (F, F, 3) of a frame: light of the minute, then
    the atmosphere's FiLM and particles at this phase (pixel = patch * gain + bias)."""
    _, _, keep, add, light = renderer.tables()
    lit = Renderer.light_at(light, torch.tensor([minute]))[0]
    gain = keep[weather] * lit[:3]
    bias = keep[weather] * lit[3:] + add[weather]  # (32, 32, 3)
    iy = (torch.arange(spec.FRAME) + int(phase[1])) % spec.OVERLAY
    ix = (torch.arange(spec.FRAME) + int(phase[0])) % spec.OVERLAY
    return gain[iy][:, ix], bias[iy][:, ix]


def nearest_tokens(x, offset, book, gain, bias, keep) -> tuple[torch.Tensor, float]:
    """VQ: place the frame x (F, F, 3) in the decode window at grid offset (ox, oy); per tile,
    the codebook patch (K, 64, 3) that, lit by gain and bias, best matches its visible pixels
    where keep (F, F) is set. Returns (tokens (W, W), total squared error)."""
    w, t, f = spec.WINDOW, spec.TILE, spec.FRAME
    ox, oy = (int(v) for v in offset)

    def tiles(img: torch.Tensor) -> torch.Tensor:  # frame-aligned -> (W * W, 64, C) tiles
        canvas = img.new_zeros(w * t, w * t, img.shape[-1])
        canvas[t + oy : t + oy + f, t + ox : t + ox + f] = img
        return canvas.view(w, t, w, t, -1).permute(0, 2, 1, 3, 4).reshape(w * w, t * t, -1)

    m, r, g = tiles(keep.float()[..., None]), tiles(x - bias), tiles(gain)
    # ||m (r - g b)||^2 = sum m r^2 - 2 sum m r g b + sum m g^2 b^2, for every tile x code
    rr = (m * r**2).sum((1, 2))[:, None]
    rb = torch.einsum("npc,kpc->nk", m * r * g, book)
    bb = torch.einsum("npc,kpc->nk", m * g**2, book**2)
    val, idx = (rr - 2 * rb + bb).min(1)
    return idx.view(w, w), float(val.sum())


def search_offset(x, book, gain, bias, keep) -> tuple[tuple[int, int], torch.Tensor]:
    """The grid offset whose VQ explains the frame best, and its tokens."""
    best = None
    for oy in range(spec.TILE):
        for ox in range(spec.TILE):
            tokens, err = nearest_tokens(x, (ox, oy), book, gain, bias, keep)
            if best is None or err < best[0]:
                best = (err, (ox, oy), tokens)
    return best[1], best[2]


def render_latents(renderer: Renderer, lats: list[dict]) -> np.ndarray:
    """Latents -> uint8 frames (N, F, F, 3), the avatar of each at the centre."""
    sprites = torch.full((len(lats), spec.MAX_SPRITES, 3), -1, dtype=torch.long)
    sprites[:, 0, 0] = torch.tensor([lat["avatar"] for lat in lats])
    sprites[:, 0, 1:] = CENTRE
    out = renderer(
        torch.stack([lat["tokens"] for lat in lats]),
        torch.tensor([lat["offset"] for lat in lats]),
        torch.tensor([lat["weather"] for lat in lats]),
        torch.tensor([lat["minute"] for lat in lats]),
        torch.tensor([lat["phase"] for lat in lats]),
        sprites,
    )
    return (out.clamp(0, 1) * 255).round().to(torch.uint8).numpy()


def best_of(renderer: Renderer, frame: np.ndarray, lat: dict, key: str, values) -> dict:
    """The latent with `key` set to whichever value re-renders the frame best."""
    candidates = [{**lat, key: v} for v in values]
    out = render_latents(renderer, candidates)
    return candidates[int(np.argmax([psnr(o, frame) for o in out]))]


def avatar_cover(renderer: Renderer) -> torch.Tensor:
    """(F, F) bool: pixels the viewer's avatar may hide (opaque in any colour); VQ skips them,
    the avatar's own colour is searched last."""
    spr = renderer.tables()[1][: spec.AVATAR_COLORS, :, 3] > 0.5  # (colours, 64)
    cover = torch.zeros(spec.FRAME, spec.FRAME, dtype=torch.bool)
    box = slice(CENTRE, CENTRE + spec.SPRITE)
    cover[box, box] = spr.any(0).view(spec.SPRITE, spec.SPRITE)
    return cover


@torch.no_grad()
def encode(model, frame: np.ndarray, heads: tuple[int, int] | None = None) -> dict:
    """A served-style frame -> the renderer's latent: atmosphere and half hour proposed by the
    encoder's head (or given as `heads`) and by search, tokens by VQ against the renderer's own
    patches, and by search the grid offset, particle phase, minute and avatar colour."""
    renderer = model.renderer
    x = torch.from_numpy(frame).float().div(255)
    if heads is None:
        out = model.encoder.frame(x.permute(2, 0, 1)[None])
        heads = int(out["weather"].argmax()), int(out["minute"].argmax())
    weather, half = heads
    per_step = spec.DAY_MINUTES // LIGHT_STEPS
    book = renderer.tables()[0][: spec.NUM_TOKENS]
    keep = ~avatar_cover(renderer)
    # grid offset first, under the frame's mean light (the particles' phase is not known yet)
    gain, bias = light_maps(renderer, weather, half * per_step + per_step // 2, (0, 0))
    flat = [m.mean((0, 1)).expand_as(m) for m in (gain, bias)]
    offset, _ = search_offset(x, book, *flat, keep)
    base = {"offset": offset, "phase": (0, 0), "avatar": 0}
    # The heads propose an atmosphere and half hour; a search over all of them by the VQ error
    # they leave proposes another (the heads can be wrong, but dawn and dusk light look alike
    # to the search). Each proposal is refined and the one that explains the frame best wins.
    proposals = {(weather, half), searched_heads(renderer, x, base, book, keep)}
    fits = [
        descend(
            renderer, x, {**base, "weather": w, "minute": h * per_step + per_step // 2}, book, keep
        )
        for w, h in sorted(proposals)
    ]
    lat = descend(renderer, x, min(fits, key=lambda f: f[1])[0], book, keep)[0]
    lat["tokens"] = vq(renderer, x, lat, book, keep)[0]
    return best_of(renderer, frame, lat, "avatar", range(spec.AVATAR_COLORS))


def searched_heads(renderer: Renderer, x, lat: dict, book, keep) -> tuple[int, int]:
    """(atmosphere, half hour) that leave the least VQ error under the frame's mean light
    (particle phase unknown), searched one after the other."""
    per_step = spec.DAY_MINUTES // LIGHT_STEPS

    def err(weather: int, half: int) -> float:
        gain, bias = light_maps(renderer, weather, half * per_step + per_step // 2, (0, 0))
        flat = [m.mean((0, 1)).expand_as(m) for m in (gain, bias)]
        return nearest_tokens(x, lat["offset"], book, *flat, keep)[1]

    noon = spec.TIME_MINUTES[1] // per_step
    weather = min(range(len(spec.WEATHERS)), key=lambda w: err(w, noon))
    return weather, min(range(LIGHT_STEPS), key=lambda h: err(weather, h))


def descend(renderer: Renderer, x, lat: dict, book, keep) -> tuple[dict, float]:
    """One pass of coordinate descent from a proposal: particle phase, the minute (within a
    half hour either side) and the grid offset, each scored by the VQ error it leaves (tokens
    and light must be found together: tokens fitted under a wrong light pull the light search
    off, and heavy particles at night can mislead the first offset). -> (latent, error)."""
    per_step = spec.DAY_MINUTES // LIGHT_STEPS
    searches = (
        ("phase", sorted({spec.overlay_phase(lat["weather"], t) for t in range(spec.OVERLAY)})),
        ("minute", range(lat["minute"] - per_step, lat["minute"] + per_step + 1)),
        ("offset", [(ox, oy) for oy in range(spec.TILE) for ox in range(spec.TILE)]),
    )
    err = None
    for key, values in searches:
        scored = [(vq(renderer, x, {**lat, key: v}, book, keep)[1], v) for v in values]
        err, lat[key] = min(scored, key=lambda sv: sv[0])
    return lat, err


def vq(renderer: Renderer, x, lat: dict, book, keep) -> tuple[torch.Tensor, float]:
    """Tokens of the frame under the latent's exact light and particles, and their error."""
    gain, bias = light_maps(renderer, lat["weather"], lat["minute"], lat["phase"])
    return nearest_tokens(x, lat["offset"], book, gain, bias, keep)


def visible_tiles(offset) -> tuple[slice, slice]:
    """Rows and columns of the decode window whose tiles are wholly in the frame."""
    ox, oy = (int(v) for v in offset)
    t, f = spec.TILE, spec.FRAME

    def span(o: int) -> slice:
        return slice(-(-(t + o) // t), (f + o) // t + 1)

    return span(oy), span(ox)


@torch.no_grad()
def codec(model, rng, n: int) -> tuple[float, dict, dict]:
    """Encode simulator frames to the latent and re-render them with the model's renderer.
    -> (mean PSNR, PSNR by atmosphere, extra: how often each part of the latent was recovered
    and the PSNR had the heads been right, which tells the renderer from the encoder)."""
    scene = codec_scenes(rng, n)
    frames = sim.render(scene)
    per_step = spec.DAY_MINUTES // LIGHT_STEPS
    scores: dict[str, list] = {w: [] for w in spec.WEATHERS}
    found: dict[str, list] = {"weather": [], "light": [], "offset": [], "tokens": []}
    true_heads = []
    for i, frame in enumerate(frames):
        lat = encode(model, frame)
        scores[spec.WEATHERS[scene.weather[i]]].append(
            psnr(render_latents(model.renderer, [lat])[0], frame)
        )
        truth = int(scene.weather[i]), int(scene.minute[i]) // per_step
        found["weather"].append(lat["weather"] == truth[0])
        found["light"].append(same_light(model.renderer, lat["minute"], int(scene.minute[i])))
        found["offset"].append(tuple(lat["offset"]) == tuple(int(v) for v in scene.offset[i]))
        found["tokens"].append(token_share(lat, scene, i) if found["offset"][-1] else 0.0)
        oracle = lat if truth == (lat["weather"], lat["minute"] // per_step) else None
        oracle = oracle or encode(model, frame, truth)
        true_heads.append(psnr(render_latents(model.renderer, [oracle])[0], frame))
    extra = {
        "recovered_pct": {k: 100.0 * float(np.mean(v)) for k, v in found.items()},
        "psnr_with_true_heads_db": float(np.mean(true_heads)),
    }
    return float(np.mean([s for v in scores.values() for s in v])), means(scores), extra


def same_light(renderer: Renderer, found: int, true: int, tol: float = 0.02) -> bool:
    """Does the renderer light the found minute as the true one? (Through the flat light of
    day and of night every minute looks the same, so the minute itself cannot be recovered.)"""
    light = renderer.tables()[-1]
    lit = Renderer.light_at(light, torch.tensor([found, true]))
    return bool((lit[0] - lit[1]).abs().max() <= tol)


def token_share(lat: dict, scene: sim.Scene, i: int) -> float:
    """Share of the wholly visible tiles whose token the codec recovered."""
    rows, cols = visible_tiles(scene.offset[i])
    truth = torch.from_numpy(scene.tokens[i][rows, cols])
    return float((lat["tokens"][rows, cols] == truth).float().mean())
