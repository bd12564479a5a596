"""The frame decoder: a convolutional network that draws each camera's frame from the world
state around it (issue 47). It replaces the tile atlas (`model.Renderer`) as the drawer of
served frames.

Input, per frame: the decode window's render tokens (W x W tiles), the sub-tile offset, the
atmosphere, the minute of the day, the particle phase, the creature and avatar sprites and the
open-vocabulary things with the lights they give. Output: the 128-pixel view drawn at 1.5x,
192 x 192 (`out_side`), with light and shadow by the sun, tall things standing up, lit nights
and weather on the ground, as its teacher (`training/simulator/teacher.py`) draws them.

How it draws:
- tile resolution: a learned embedding per token (the atlas survives only as this input),
  the lights splatted onto their tiles, three 3x3 convolutions (a receptive field of 7 tiles:
  shadows and pools of light reach 3 tiles), conditioned on the sun and the atmosphere (FiLM);
- a pixel shuffle up x3 to 3 pixels a tile and two 3x3 convolutions; there it sees the
  sprites' coverage, so they cast shadows; a per-pixel linear x4 to 12 pixels a tile;
- at full resolution, per pixel, it mixes its features with the sprite layer (creatures,
  avatars and things pasted at their pixels, from its own learned sprite table and the sprite
  generator's) and the particle layer, lit by the same conditioning, into a colour and a gain;
- the gain lights each token's learned 12 x 12 texture (a detail the narrow per-pixel features
  cannot carry: the texture path added about 3 dB), and the colour is added.

Everything after the embedding is translation-equivariant in the window, so a camera that
moves by 2 world pixels moves the picture by exactly 3, and a still camera gets the same frame
(no shimmer). The geometry (12 pixels a tile, the crop at ``12 + floor(1.5 * offset)``, a
sprite at ``floor(1.5 * x)``) is the teacher's.
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from safetensors.torch import load_file, save_file

from inference.world import spec
from inference.world.sprite_scale import resample_sprites

log = logging.getLogger(__name__)

PX = 12  # output pixels per tile: 8 world pixels drawn at 1.5x
WEIGHTS_FILE = "decoder.safetensors"
CONFIG_FILE = "decoder.json"


def out_side(frame: int = spec.FRAME) -> int:
    """The drawn side of a view ``frame`` world pixels wide."""
    return frame * 3 // 2


def scaled(px) -> np.ndarray:
    """World frame pixels -> output pixels (floor of 1.5x, the teacher's rounding)."""
    return (np.asarray(px) * 3) // 2


@dataclass
class DecoderConfig:
    embed: int = 24  # token embedding
    c0: int = 48  # channels at tile resolution
    c1: int = 24  # at 3 pixels a tile
    c3: int = 8  # at 12 pixels a tile (the per-pixel mix)
    cond: int = 32  # the sun-and-atmosphere vector


COND_IN = 12 + len(spec.WEATHERS)  # day harmonics, ripple phases, daylight ramps, atmosphere
CLEAR = spec.WEATHERS.index("clear")
SNOW = spec.WEATHERS.index("snow")
RIPPLE_MINUTES = 45  # water's ripples come round every 45 minutes (the teacher's)
HAS_PARTICLES = torch.tensor([w != "clear" for w in spec.WEATHERS], dtype=torch.float32)


def conditions(minute: torch.Tensor, weather: torch.Tensor) -> torch.Tensor:
    """(B,) minutes and atmospheres -> (B, COND_IN): the sun's place over the day (two
    harmonics), how far into dawn and dusk (ramps the network need not learn from sines),
    the phase of water's two ripples and the atmosphere."""
    m = minute.float() % spec.DAY_MINUTES
    a = m * (2 * math.pi / spec.DAY_MINUTES)
    r = m * (2 * math.pi / RIPPLE_MINUTES)
    dawn = ((m - 300) / 180).clamp(0, 1)  # 05:00 -> 08:00
    dusk = ((m - 1020) / 210).clamp(0, 1)  # 17:00 -> 20:30
    day = dawn - dusk
    harm = [torch.cos(a), torch.sin(a), torch.cos(2 * a), torch.sin(2 * a)]
    harm += [torch.cos(r), torch.sin(r), torch.cos(0.7 * r), torch.sin(0.7 * r)]
    ramps = [dawn, dusk, day, day * day]
    return torch.cat(
        [torch.stack(harm + ramps, 1), F.one_hot(weather.long(), len(spec.WEATHERS)).float()], 1
    )


def rowwise(lin: nn.Linear, x: torch.Tensor) -> torch.Tensor:
    """``lin(x)`` computed row by row (a product and a sum each): a frame's conditioning must
    not depend on what else is in its batch, and a matrix product of 1 row rounds otherwise
    than one of 2 (that moved a frame's bytes by one level when a second player joined)."""
    return (x.float()[:, :, None] * lin.weight.t().float()).sum(1) + lin.bias.float()


class _Film(nn.Module):
    """Scale and shift per channel from the conditioning vector (channels last)."""

    def __init__(self, cond: int, ch: int):
        super().__init__()
        self.lin = nn.Linear(cond, 2 * ch)
        nn.init.zeros_(self.lin.weight)
        nn.init.zeros_(self.lin.bias)

    def forward(self, x: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        g, b = rowwise(self.lin, c).to(x.dtype)[:, None, None, :].chunk(2, -1)
        return x * (1 + g) + b


def _shuffle(x: torch.Tensor, r: int) -> torch.Tensor:
    """Channels-last pixel shuffle: (B, H, W, r * r * C) -> (B, rH, rW, C), one copy."""
    b, h, w, k = x.shape
    c = k // (r * r)
    return x.view(b, h, w, r, r, c).permute(0, 1, 3, 2, 4, 5).reshape(b, h * r, w * r, c)


def _nchw(x: torch.Tensor) -> torch.Tensor:
    """A channels-last (B, H, W, C) tensor as the NCHW view convolutions take (no copy)."""
    return x.permute(0, 3, 1, 2)


def _nhwc(x: torch.Tensor) -> torch.Tensor:
    return x.permute(0, 2, 3, 1).contiguous()  # a view where x is channels-last already


class FrameDecoder(nn.Module):
    def __init__(self, cfg: DecoderConfig | None = None):
        super().__init__()
        cfg = cfg or DecoderConfig()
        self.cfg = cfg
        self.tok = nn.Embedding(spec.RENDER_TOKENS, cfg.embed)
        # a Sequential for the weights' names; drawn as relu(rowwise(cond[0], ...))
        self.cond = nn.Sequential(nn.Linear(COND_IN, cfg.cond), nn.ReLU())
        self.in0 = nn.Conv2d(cfg.embed + 1, cfg.c0, 3, padding=1)
        self.res = nn.ModuleList(nn.Conv2d(cfg.c0, cfg.c0, 3, padding=1) for _ in range(2))
        self.film0 = _Film(cfg.cond, cfg.c0)
        self.up1 = nn.Linear(cfg.c0, 9 * cfg.c1)  # tile -> 3 pixels a tile
        self.conv1 = nn.Conv2d(cfg.c1 + 1, cfg.c1, 3, padding=1)  # + the sprites' coverage
        self.conv1b = nn.Conv2d(cfg.c1, cfg.c1, 3, padding=1)
        self.film1 = _Film(cfg.cond, cfg.c1)
        self.up2 = nn.Linear(cfg.c1, 16 * cfg.c3)  # 3 -> 12 pixels a tile
        # the sprite and particle layers' share of the per-pixel mix, lit by the conditioning
        self.mix = nn.Linear(8, cfg.c3)
        self.film3 = _Film(cfg.cond, cfg.c3)
        # per pixel: a colour, and the gain on the texture (a gain of 1 at first)
        self.rgb = nn.Linear(cfg.c3, 6)
        nn.init.zeros_(self.rgb.weight[3:])
        nn.init.ones_(self.rgb.bias[3:])
        # the textures: each token's 12 x 12 pixels (RGB), a row per 4 x 4 cell of the tile,
        # and a second set under snow; and what each token adds to the tile behind it (a tall
        # one stands up into it, in the three-quarter view)
        self.tex = nn.Parameter(torch.zeros(2 * spec.RENDER_TOKENS * 9, 48))
        self.behind = nn.Parameter(torch.zeros(2 * spec.RENDER_TOKENS * 9, 48))
        # the sprites it pastes: avatars and creatures (8 x 8 RGBA, alpha a logit) and the
        # particles of each atmosphere (32 x 32 world pixels, tiled)
        self.sprites = nn.Parameter(torch.zeros(spec.SPRITE_KINDS, spec.SPRITE, spec.SPRITE, 4))
        self.overlay = nn.Parameter(torch.zeros(len(spec.WEATHERS), spec.OVERLAY, spec.OVERLAY, 4))
        with torch.no_grad():
            self.sprites[..., 3] = -4.0
            self.overlay[..., 3] = -6.0
        self._tables: tuple | None = None
        self._things: tuple | None = None  # (a things table, it at output scale): `things_table`
        self.bf16 = False  # bfloat16 autocast at inference, where it is faster (`pick_precision`)

    # ------------------------------------------------------------------ the layers it pastes

    def tables(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(sprite RGBA (K, 12, 12, 4), particle RGBA (W, 48, 48, 4)) at output scale, in [0, 1];
        cached once frozen (inference)."""
        if self._tables is not None:
            return self._tables
        spr = torch.cat(
            [self.sprites[..., :3].clamp(0, 1), torch.sigmoid(self.sprites[..., 3:])], -1
        )
        a = torch.sigmoid(self.overlay[..., 3:]) * HAS_PARTICLES[:, None, None, None]
        ov = torch.cat([self.overlay[..., :3].clamp(0, 1) * a, a], -1)  # premultiplied
        return (
            resample_sprites(spr, spec.SPRITE * 3 // 2),
            resample_sprites(ov, spec.OVERLAY * 3 // 2),
        )

    def things_table(self, table: torch.Tensor) -> torch.Tensor:
        """The open-vocabulary things' sprite table (K, S, S, 4) at output scale. Frozen, the
        last one is kept: the engine's table is a new tensor only when a concept is first
        drawn, so resampling it for every batch redid the same work."""
        kept = self._things
        if kept is not None and kept[0] is table:
            return kept[1]
        out = resample_sprites(table, table.shape[1] * 3 // 2)
        if self._tables is not None and not table.requires_grad:
            self._things = (table, out)
        return out

    @torch.no_grad()
    def freeze(self) -> None:
        self._tables = self._things = None
        self._tables = tuple(
            t.detach().nan_to_num(0.0).clamp(0, 1).contiguous() for t in self.tables()
        )

    def thaw(self) -> None:
        self._tables = self._things = None

    # ------------------------------------------------------------------ the network

    def forward(self, tokens, offset, weather, minute, phase, sprites, things=None) -> torch.Tensor:
        """-> (B, F', F', 3) float, about [0, 1]. ``things``: (slots (B, M, 3), table (K, S, S, 4)
        in [0, 1], lights (B, L, 2)) as `scenes.things_in_view` gives them, or None."""
        rgb, origin, f = self._region(tokens, offset, weather, minute, phase, sprites, things)
        b, n = rgb.shape[0], rgb.shape[1]
        img = rgb.permute(0, 1, 3, 2, 4, 5).reshape(b, 4 * n, 4 * n, 3)
        return _crop(img, origin % 4, f)

    def _region(self, tokens, offset, weather, minute, phase, sprites, things) -> tuple:
        """-> (the colours of the frames' regions in cells (B, n, n, 4, 4, 3), the frames'
        corners in the window (B, 2), the frames' side)."""
        b, w = tokens.shape[0], tokens.shape[-1]
        f = out_side((w - 3) * spec.TILE)
        n = f // 4 + 1  # cells of 4 x 4 pixels the frame's region spans
        origin = PX + scaled(offset.cpu().numpy())  # (B, 2): the frame's corner in the window
        spr_t, ov_t = self.tables()
        if things is not None:
            things = (things[0], self.things_table(things[1]), things[2])
        pasted, cover = paste_layer(sprites, spr_t, things, origin, w, n)
        particles = particle_layer(ov_t, weather, phase, origin, n)
        lights = things[2] if things is not None else None
        c = F.relu(rowwise(self.cond[0], conditions(minute, weather)))
        x = torch.cat([self.tok(tokens.long()), light_map(lights, offset, w, b, c.device)], -1)
        x = _nchw(x.contiguous()).contiguous(memory_format=torch.channels_last)
        x = F.relu(self.film0(_nhwc(self.in0(x)), c))
        for conv in self.res:
            x = x + F.relu(_nhwc(conv(_nchw(x))))
        x = _shuffle(self.up1(x), 3)  # (B, 3W, 3W, c1)
        x = torch.cat([x, cover.to(x.dtype)], -1)
        x = F.relu(_nhwc(self.conv1(_nchw(x))))
        x = F.relu(self.film1(_nhwc(self.conv1b(_nchw(x))), c))
        # Full size, only over the frame's region, and never shuffled into an image until the
        # colours: every op from here is per pixel, so each 4 x 4 cell keeps its pixels side
        # by side in its channels (B, n, n, 16, c) and only the 3 colours are laid out at the
        # end. In float32: these small per-pixel ops are slower in bfloat16 on the CPU, and
        # each conversion costs a pass
        x = _crop(x, origin // 4, n).view(b, n * n, -1).float()
        with torch.autocast(tokens.device.type, enabled=False):
            tex = texture(tokens, weather, origin // 4, n, self.tex, self.behind)
            rgb = self._full_size(x, pasted, particles, c.float(), tex)
        return rgb.view(b, n, n, 4, 4, 3), origin, f

    def _full_size(self, x, pasted, particles, c, tex) -> torch.Tensor:
        """Cell features (B, n * n, c1) -> colours (B, P = n * n * 16, 3): the per-pixel
        linear, the sprites' and particles' mix (lit by the last FiLM, folded into each frame's
        own weights, its shift into the linear's bias), then a colour and a gain on the texture
        per pixel. The sprites are added only where they lie, the particles only to the frames
        whose atmosphere has them: most pixels of most frames have neither, and a dense matmul
        over a mostly-zero layer was a fifth of the frame."""
        b, c3 = x.shape[0], self.cfg.c3
        g, sh = rowwise(self.film3.lin, c).chunk(2, -1)  # (B, c3) each
        wl = F.pad(self.mix.weight.t()[None] * (1 + g)[:, None, :], (0, 1))  # (B, 8, c3 + 1)
        # every bias rides in its matmul on a constant input (addmm's bias is a copy of the whole
        # output first, as dear as the product): the cells get a 1, the pixels a channel of 1s
        bias = self.up2.bias.view(16, c3) + (self.mix.bias * (1 + g) + sh)[:, None, :]
        w_up = torch.cat(
            [
                F.pad(self.up2.weight.t().reshape(1, -1, 16, c3), (0, 1)).expand(b, -1, -1, -1),
                F.pad(bias[:, None], (0, 1), value=1.0),
            ],
            1,
        ).flatten(2)  # (B, c1 + 1, 16 * (c3 + 1))
        h = torch.bmm(F.pad(x, (0, 1), value=1.0), w_up).view(b, -1, c3 + 1)  # (B, P, c3 + 1)
        rows, val = pasted
        if len(rows):
            at = wl[rows.div(h.shape[1], rounding_mode="floor"), :4]  # (N, 4, c3 + 1)
            h.view(-1, c3 + 1).index_add_(0, rows, torch.bmm(val[:, None, :], at)[:, 0])
        if particles is not None:
            fr, layer = particles
            h.index_copy_(0, fr, h.index_select(0, fr).baddbmm(layer, wl[fr, 4:]))
        z = h.relu_()
        w_rgb = torch.cat([self.rgb.weight.t(), self.rgb.bias[None]])  # (c3 + 1, 6)
        # the colour and the gain as two products, each contiguous for the last op; batched
        # per frame, so a frame's bytes never depend on what else is in its batch (one
        # (B * P)-row product rounds differently as B changes)
        colour, gain = (torch.bmm(z, w_rgb[None, :, k : k + 3].expand(b, -1, -1)) for k in (0, 3))
        return torch.addcmul(colour, gain, tex)

    @torch.no_grad()
    def frames(
        self, tokens, offset, weather, minute, phase, sprites, out=None, things=None
    ) -> torch.Tensor:
        """Inference: uint8 (B, F', F', 3), written into ``out`` when given."""
        with torch.autocast(tokens.device.type, dtype=torch.bfloat16, enabled=self.bf16):
            rgb, origin, f = self._region(tokens, offset, weather, minute, phase, sprites, things)
        b, n = rgb.shape[0], rgb.shape[1]
        # broken weights draw black, never arbitrary bytes (NaN survives a clamp)
        rgb = rgb.float().mul_(255.0).add_(0.5).nan_to_num_(0.0, 255.0, 0.0).clamp_(0, 255)
        # laid out as bytes, then cropped as bytes (a quarter of the float copies); the
        # truncating cast in numpy: torch's float -> uint8 copy is not vectorised on the CPU
        full = np.empty((b, n, 4, n, 4, 3), np.uint8)
        np.copyto(full, rgb.cpu().numpy().transpose(0, 1, 3, 2, 4, 5), casting="unsafe")
        return _crop(torch.from_numpy(full.reshape(b, 4 * n, 4 * n, 3)), origin % 4, f, out)

    # ------------------------------------------------------------------ weights

    def save(self, out_dir: str | Path, extra: dict | None = None) -> None:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        state = {k: v.detach().float().contiguous() for k, v in self.state_dict().items()}
        save_file(state, str(out / WEIGHTS_FILE))
        (out / CONFIG_FILE).write_text(
            json.dumps({"config": asdict(self.cfg), **(extra or {})}, indent=2) + "\n"
        )

    @classmethod
    def load(cls, weights_dir: str | Path, device: str | torch.device = "cpu") -> FrameDecoder:
        d = Path(weights_dir)
        meta = json.loads((d / CONFIG_FILE).read_text())
        model = cls(DecoderConfig(**meta["config"]))
        model.load_state_dict(load_file(str(d / WEIGHTS_FILE)))
        return model.to(device).ready()

    @classmethod
    def load_or_fresh(
        cls, weights_dir: str | Path, device: str | torch.device = "cpu"
    ) -> FrameDecoder:
        """The shipped decoder, or (no weights yet: a fresh checkout's training) fresh ones."""
        if (Path(weights_dir) / WEIGHTS_FILE).exists():
            return cls.load(weights_dir, device)
        log.warning(
            "no frame decoder weights in %s: drawing with fresh random weights", weights_dir
        )
        torch.manual_seed(0)
        return cls().to(device).ready()

    def ready(self) -> FrameDecoder:
        """Inference mode: tables cached, channels-last, the faster precision of this CPU."""
        self.eval()
        self.freeze()
        self.to(memory_format=torch.channels_last)
        self.pick_precision()
        return self

    def pick_precision(self) -> None:
        """bfloat16 where the hardware computes in it (a GPU; a CPU with AVX-512 BF16 or AMX:
        4.2 against 5.1 ms a frame of training scenes here), float32 where it is emulated.
        Read from the device, not timed: every process on a machine must pick the same, or a
        recording replayed in another process would differ from the frames it sent (timing
        under load could pick either)."""
        dev = next(self.parameters()).device
        self.bf16 = dev.type == "cuda" or bf16_in_hardware()


def bf16_in_hardware() -> bool:
    """Whether this CPU has bfloat16 arithmetic (AVX-512 BF16 or AMX tiles)."""
    checks = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
    return any(getattr(torch.cpu, name, lambda: False)() for name in checks)


def _crop(x: torch.Tensor, origin: np.ndarray, f: int, out=None) -> torch.Tensor:
    """Each frame's (f, f) crop of channels-last (B, H, W, C) at its own origin (B, 2) (x, y),
    copied into ``out`` when given."""
    if out is None:
        out = torch.empty(x.shape[0], f, f, x.shape[-1], dtype=x.dtype, device=x.device)
    if len(set(map(tuple, origin.tolist()))) == 1:  # one offset for all: one strided copy
        ox, oy = origin[0]
        return out.copy_(x[:, oy : oy + f, ox : ox + f])
    for i, (xx, y) in enumerate(origin.tolist()):
        out[i].copy_(x[i, y : y + f, xx : xx + f])
    return out


def texture(tokens, weather, cell0: np.ndarray, n: int, table, behind) -> torch.Tensor:
    """The textures over the frame's region, laid out as `paste_layer`'s (B, n * n * 16, 3):
    each 4 x 4 cell lies inside one tile (tiles are 12 pixels, cells start on multiples of 4),
    so a cell is one row of ``table``, picked by its tile's token (its snowy twin under snow)
    and its place in the tile, plus the row of ``behind`` of the tile in front of it (below)."""
    b, w = tokens.shape[0], tokens.shape[-1]
    # the indices in numpy: a frame's few small index ops cost less there than in torch
    tok = tokens.cpu().numpy()
    rc = cell0[:, :, None] + np.arange(n)[None, None]  # (B, 2 [x, y], n)
    ty, sy = np.divmod(rc[:, 1], 3)
    tx, sx = np.divmod(rc[:, 0], 3)
    snow = (weather.cpu().numpy() == SNOW) * spec.RENDER_TOKENS
    place = snow[:, None, None] * 9 + sy[:, :, None] * 3 + sx[:, None, :]  # (B, n, n)
    bi = np.arange(b)[:, None, None]
    here = tok[bi, ty[:, :, None], tx[:, None, :]]
    front = tok[bi, np.minimum(ty + 1, w - 1)[:, :, None], tx[:, None, :]]

    def rows(t, kind):  # index_select: several times faster than indexing on the CPU
        idx = torch.from_numpy((kind * 9 + place).reshape(-1)).to(t.device)
        return t.index_select(0, idx).view(b, n * n * 16, 3)

    return rows(table, here).add_(rows(behind, front))


def light_map(lights, offset, w: int, b: int, device) -> torch.Tensor:
    """(B, W, W, 1): how many lights lie on each tile of the window."""
    out = torch.zeros(b, w, w, 1, device=device)
    if lights is None:
        return out
    pos = lights.cpu().numpy()
    on = pos[..., 0] >= 0
    if not on.any():
        return out
    i, j = np.nonzero(on)
    off = offset.cpu().numpy()[i]
    tx = (pos[i, j, 0] + off[:, 0]) // spec.TILE + 1
    ty = (pos[i, j, 1] + off[:, 1]) // spec.TILE + 1
    keep = (tx >= 0) & (tx < w) & (ty >= 0) & (ty < w)
    flat = out.view(-1)
    idx = torch.from_numpy(((i * w + ty) * w + tx)[keep])
    flat.index_add_(0, idx.to(device), torch.ones(len(idx), device=device))
    return out


def paste_layer(sprites, spr_table, things, origin: np.ndarray, w: int, n: int) -> tuple:
    """The sprites' layer: the things, then the creatures and avatars over them, each pasted
    at ``origin + floor(1.5 * position)`` in the window (origin = 12 + floor(1.5 * offset)).
    Pixels a sprite covers at less than half alpha keep what lies under them; the rest take
    the sprite's premultiplied colour (a later sprite over an earlier one wins). Both tables
    are at output scale (``things``: (slots, table, lights), its table from `things_table`).
    -> ((the pixels of the frames' regions a sprite covers (N,), as flat indices of (B, P =
    n * n * 16): cells of 4 x 4 pixels from window pixel ``origin // 4 * 4``, and their
    premultiplied RGBA (N, 4)), the coverage of the whole window at 3 pixels a tile
    (B, 3W, 3W, 1))."""
    b, side, g = len(origin), w * PX, w * PX // 4
    sources = [(sprites.cpu().numpy(), spr_table)]
    if things is not None:
        slots, table, _ = things
        sources.insert(0, (slots.cpu().numpy(), table))
    flats, srcs, tabs, base = [], [], [], 0
    for slots, table in sources:
        k, s = table.shape[0], table.shape[1]
        fi, ei = np.nonzero(slots[:, :, 0] >= 0)
        if len(fi):
            x0 = origin[fi, 0] + scaled(slots[fi, ei, 1])
            y0 = origin[fi, 1] + scaled(slots[fi, ei, 2])
            yy, xx = np.mgrid[0:s, 0:s]
            px, py = x0[:, None, None] + xx, y0[:, None, None] + yy  # (N, s, s)
            src = (base + slots[fi, ei, 0] * s * s)[:, None, None] + yy * s + xx
            ok = (px >= 0) & (px < side) & (py >= 0) & (py < side)
            flats.append(((fi[:, None, None] * side + py) * side + px)[ok])
            srcs.append(src[ok])
        tabs.append(table.reshape(-1, 4))
        base += k * s * s
    dev = spr_table.device
    rows, vals = torch.zeros(0, dtype=torch.long, device=dev), torch.zeros(0, 4, device=dev)
    cover = torch.zeros(b * g * g, dtype=spr_table.dtype, device=dev)
    if flats:
        flat, src = np.concatenate(flats), np.concatenate(srcs)
        rgba = torch.cat([t.to(dev) for t in tabs])
        keep = (rgba[torch.from_numpy(src).to(dev), 3] > 0.5).detach().cpu().numpy()
        flat, src = flat[keep], src[keep]
        # the last write of each pixel wins: unique over the reversed order keeps it
        _, first = np.unique(flat[::-1], return_index=True)
        pick = len(flat) - 1 - first
        flat = flat[pick]
        val = rgba[torch.from_numpy(src[pick]).to(dev)]
        val = torch.cat([val[:, :3] * val[:, 3:], val[:, 3:]], 1)
        i, rest = np.divmod(flat, side * side)
        py, px = np.divmod(rest, side)
        cell = torch.from_numpy((i * g + py // 4) * g + px // 4).to(dev)
        cover = cover.index_add(0, cell, val[:, 3] / 16)
        ry, rx = py - origin[i, 1] // 4 * 4, px - origin[i, 0] // 4 * 4
        inside = (ry >= 0) & (ry < 4 * n) & (rx >= 0) & (rx < 4 * n)
        at = (((i * n + ry // 4) * n + rx // 4) * 4 + ry % 4) * 4 + rx % 4
        rows, vals = torch.from_numpy(at[inside]).to(dev), val[torch.from_numpy(inside).to(dev)]
    return (rows, vals), cover.view(b, g, g, 1)


def particle_layer(table: torch.Tensor, weather, phase, origin: np.ndarray, n: int) -> tuple | None:
    """The particles over the regions of the frames whose atmosphere has them (laid out as
    `paste_layer`'s), its 48-pixel tile scrolled by 1.5 x the phase, premultiplied: (those
    frames (K,), (K, n * n * 16, 4)), or None where every sky is clear."""
    o = table.shape[1]
    wt = weather.cpu().numpy()
    fr = np.nonzero(wt != CLEAR)[0]
    if not len(fr):
        return None
    wt, origin = wt[fr], origin[fr]
    # region pixel 0 lies origin % 4 before the frame
    ph = scaled(phase.cpu().numpy()[fr]) - origin % 4
    cell = np.arange(n)[:, None] * 4 + np.arange(4)[None, :]  # (n, 4): region pixel
    ry = (cell[None] + ph[:, 1, None, None]) % o  # (B, n, 4)
    rx = (cell[None] + ph[:, 0, None, None]) % o
    idx = (wt[:, None, None, None, None] * o + ry[:, :, None, :, None]) * o + rx[
        :, None, :, None, :
    ]
    idx = torch.from_numpy(idx.reshape(-1)).to(table.device)
    layer = table.reshape(-1, 4).index_select(0, idx).view(len(wt), -1, 4)
    return torch.from_numpy(fr).to(table.device), layer
