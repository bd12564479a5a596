"""The Parallax world model: small torch modules in dependency order.

The world's persistent state is a *latent canvas* of discrete tile tokens in world
coordinates (16 biomes x 4 tile kinds, and 14 things events place). A MaskGIT-style generator
grows it chunk by chunk, conditioned on the prompt's biome mix, on the prompt's MiniLM
embedding itself and on already generated neighbours (trained on its own outputs too). A
renderer decodes the tokens around each player's camera into pixels at any frame size (128 x
128 served): learned tile patches, hard-edged sprites, a learned light table over the
continuous time of day, and per-atmosphere FiLM and particle overlays. A collision head reads
the canvas for movement, and text heads map all-MiniLM-L6-v2 embeddings of prompts and events
to world conditions.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from safetensors.torch import load_file, save_file

from inference.world import spec

LIGHT_STEPS = 48  # the light table holds one entry per half hour, linear in between
TABLE_BOUND = 1e4  # |frozen renderer table entry|: far past any trained value, no overflow
GLOW_PX = 14.0  # spread of the pool of light round what gives light, frame pixels
GLOW_RGB = (120.0, 90.0, 40.0)  # its colour at full dark (0..255 per channel)
# Text heads: output sizes; index 0 of the event heads (and of "creature") means "none".
PROMPT_HEADS = {
    "biome": len(spec.BIOMES),  # trained on half-and-half targets when two are named
    "mixed": 2,  # one biome, or two
    "weather": len(spec.WEATHERS),
    "time": len(spec.TIMES),
    "creature": len(spec.CREATURES) + 1,
}
EVENT_HEADS = {
    "weather": len(spec.WEATHERS) + 1,
    "time": len(spec.TIMES) + 1,
    "creature": len(spec.CREATURES) + 1,
    "thing": len(spec.THINGS) + 1,
}


@dataclass
class ModelConfig:
    text_dim: int = 384  # all-MiniLM-L6-v2 embedding size
    text_hidden: int = 256  # width of the text heads' MLP
    dec_dim: int = 32  # renderer channels per tile
    gen_dim: int = 64  # generator channels per tile
    gen_layers: int = 5  # generator residual conv blocks (receptive field 2 * layers + 1 tiles)
    gen_margin: int = 4  # tiles of neighbouring chunks the generator sees on each side
    gen_steps: int = 4  # MaskGIT iterations per chunk
    # How random the order is in which MaskGIT keeps its draws (the weight of the Gumbel noise
    # on each draw's confidence, fading over the steps). At 1, the most confident draws first,
    # a chunk came out mostly its biome's commonest tile: a beach with 1% water (the simulator's
    # beaches: 21%), a meadow 88% plain grass (42%). Sampling only: training never samples.
    gen_choice_temp: float = 4.0
    max_chunk: int = 16  # cap on frames per step call for one player


class TextHeads(nn.Module):
    """Sentence embedding (B, 384) -> logits per head."""

    def __init__(self, cfg: ModelConfig, heads: dict[str, int]):
        super().__init__()
        self.trunk = nn.Sequential(
            nn.Linear(cfg.text_dim, cfg.text_hidden),
            nn.GELU(),
            nn.Linear(cfg.text_hidden, cfg.text_hidden),
            nn.GELU(),
        )
        self.heads = nn.ModuleDict({k: nn.Linear(cfg.text_hidden, n) for k, n in heads.items()})

    def forward(self, emb: torch.Tensor) -> dict[str, torch.Tensor]:
        h = self.trunk(emb)
        return {k: head(h) for k, head in self.heads.items()}


class TerrainGenerator(nn.Module):
    """MaskGIT over one chunk of tile tokens, seeing `gen_margin` tiles of its neighbours.

    Input tokens use UNKNOWN for neighbours not generated yet and MASK for cells to predict.
    """

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        d = cfg.gen_dim
        self.tok = nn.Embedding(spec.NUM_TOKENS + 2, d)
        self.spawn = nn.Embedding(2, d)
        self.cond = nn.Linear(len(spec.BIOMES), 2 * d * cfg.gen_layers)  # FiLM per block
        # and from the prompt's MiniLM embedding itself (zero at first: the mix leads)
        self.text = nn.Linear(cfg.text_dim, 2 * d * cfg.gen_layers)
        nn.init.zeros_(self.text.weight)
        nn.init.zeros_(self.text.bias)
        self.blocks = nn.ModuleList(nn.Conv2d(d, d, 3, padding=1) for _ in range(cfg.gen_layers))
        self.mix = nn.ModuleList(nn.Conv2d(d, d, 1) for _ in range(cfg.gen_layers))
        self.out = nn.Conv2d(d, spec.NUM_TOKENS, 1)
        # Added to each token's logit when sampling (never in training): fitted after training
        # so each biome's tile kinds come out in the simulator's mix (`training/calibrate.py`).
        # MaskGIT's draws favour the ground kinds a chunk is surest of: beaches came out with
        # 4% water (the simulator's: 21%), every biome short of water and obstacles.
        self.register_buffer("kind_bias", torch.zeros(spec.NUM_TOKENS))

    def forward(self, tokens, spawn, biome_probs, text=None) -> torch.Tensor:
        # tokens, spawn: (B, S, S) long; biome_probs: (B, n_biomes); text: (B, 384) or None
        # -> logits (B, K, S, S)
        x = (self.tok(tokens) + self.spawn(spawn)).permute(0, 3, 1, 2)  # (B, d, S, S)
        film = self.cond(biome_probs)
        if text is not None:
            film = film + self.text(text)
        film = film.view(x.shape[0], -1, 2, x.shape[1], 1, 1)
        for i, (conv, mix) in enumerate(zip(self.blocks, self.mix, strict=True)):
            h = F.gelu(conv(x)) * (1 + film[:, i, 0]) + film[:, i, 1]
            x = x + mix(h)
        return self.out(F.gelu(x))

    @torch.no_grad()
    def sample(
        self, context, spawn, biome_probs, seeds: list[int], text=None, allowed=None
    ) -> torch.Tensor:
        """Fill the centre chunk of each window. context: (B, S, S) with the centre set to MASK;
        allowed: (B, NUM_TOKENS, CHUNK, CHUNK) bool, the tokens each cell may take (None: any).

        Per-chunk seeded Gumbel noise makes the result independent of what else is batched.
        Returns the centre tokens (B, CHUNK, CHUNK).
        """
        cfg, c, m = self.cfg, spec.CHUNK, self.cfg.gen_margin
        tokens = context.clone()
        b, k = tokens.shape[0], spec.NUM_TOKENS
        noise = torch.stack(
            [
                torch.rand(cfg.gen_steps, k + 1, c, c, generator=torch.Generator().manual_seed(s))
                for s in seeds
            ]
        ).clamp(1e-9, 1 - 1e-9)  # (B, steps, K + 1, c, c)
        gumbel = -torch.log(-torch.log(noise))
        for step in range(cfg.gen_steps):
            centre = tokens[:, m : m + c, m : m + c]
            masked = centre == spec.MASK_TOKEN  # (B, c, c)
            logits = self(tokens, spawn, biome_probs, text)[:, :, m : m + c, m : m + c]
            logits = torch.nan_to_num(logits.float(), nan=0.0).clamp(-50, 50)
            logits = logits + self.kind_bias[None, :, None, None]
            if allowed is not None:
                logits = logits.masked_fill(~allowed, -1e4)
            # quantise so batch-size dependent float noise cannot flip a draw
            logits = torch.round(logits * 1024) / 1024
            logp = F.log_softmax(logits, dim=1)
            draw = (logp + gumbel[:, step, :k]).argmax(1)  # (B, c, c)
            conf = logp.gather(1, draw[:, None])[:, 0]
            # MaskGIT: keep the most confident draws, cosine schedule, noisier early on
            temp = cfg.gen_choice_temp * (1.0 - (step + 1) / cfg.gen_steps)
            conf = conf + temp * gumbel[:, step, k]
            conf = torch.where(masked, conf, torch.full_like(conf, math.inf))
            n_masked_after = int(c * c * math.cos(math.pi / 2 * (step + 1) / cfg.gen_steps))
            order = conf.flatten(1).argsort(1)  # least confident first
            still = torch.zeros(b, c * c, dtype=torch.bool)
            if n_masked_after:
                still.scatter_(1, order[:, :n_masked_after], True)
            still = still.view(b, c, c)
            new = torch.where(masked & ~still, draw, centre)
            tokens[:, m : m + c, m : m + c] = new
        return tokens[:, m : m + c, m : m + c]


class CollisionHead(nn.Module):
    """Tile token -> logit that the tile blocks movement."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(spec.NUM_TOKENS, 16)
        self.out = nn.Linear(16, 1)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.out(F.gelu(self.emb(tokens)))[..., 0]


class Renderer(nn.Module):
    """Decoder of the latent canvas: scene (tokens around the camera, sub-tile offset,
    atmosphere, minute of the day, overlay phase, sprites) -> RGB frame (B, F, F, 3) in [0, 1],
    F = (window - 3) * TILE: 128 served, smaller crops in training (the same function).

    Everything it draws comes from learned tables: an MLP turns each token embedding into an
    8x8 patch, sprites and particle overlays are learned RGBA textures, the light of the day is
    a learned per-half-hour RGB scale and shift (interpolated: time is continuous) and each
    atmosphere adds its own FiLM. Sprite alpha is hard (0 or 1, straight-through when training),
    so sprites have clean edges. The tables depend only on the weights, so at inference they are
    computed once (`freeze`) and a frame costs a few gathers and one multiply-add per pixel.
    """

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        d, t = cfg.dec_dim, spec.TILE
        self.tok = nn.Embedding(spec.RENDER_TOKENS, d)  # canvas tokens, UNKNOWN, MASK, covers
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, t * t * 3))
        # each cover's own 8x8 detail, added to its row's patch: the shared MLP alone draws
        # blurry covers (fire's flame tongues above all); zeros in weights made without it
        self.cover_detail = nn.Parameter(torch.zeros(len(spec.COVERS) - 1, t * t, 3))
        self.sprites = nn.Parameter(torch.zeros(spec.SPRITE_KINDS, spec.SPRITE, spec.SPRITE, 4))
        self.atmosphere = nn.Embedding(len(spec.WEATHERS), 6)  # per-channel scale and shift
        self.light = nn.Parameter(torch.zeros(LIGHT_STEPS, 6))
        self.overlay = nn.Parameter(torch.zeros(len(spec.WEATHERS), spec.OVERLAY, spec.OVERLAY, 4))
        with torch.no_grad():
            identity = torch.tensor([1.0, 1, 1, 0, 0, 0])
            self.atmosphere.weight.copy_(identity.expand(len(spec.WEATHERS), 6))
            self.light.copy_(identity.expand(LIGHT_STEPS, 6))
            self.overlay[..., 3] = -6.0  # particles start transparent
            self.sprites[..., 3] = -2.0
        self._frozen: tuple | None = None
        self._maps: torch.Tensor | None = None  # the frozen atmosphere maps, flat
        # Training only: soft sprite alpha. A hard alpha that starts at 0 passes no gradient to
        # the sprite's colour, so sprites first learn soft, then hard (`polish_renderer`).
        self.soft_alpha = False

    def tables(self) -> tuple:
        if self._frozen is not None:
            return self._frozen
        t = spec.TILE
        tex = self.mlp(self.tok.weight).view(-1, t * t, 3)  # (RENDER_TOKENS, 64, 3)
        covers = len(spec.COVERS) - 1  # the last rows; the others' patches as the MLP draws them
        tex = torch.cat([tex[:-covers], tex[-covers:] + self.cover_detail])
        soft = torch.sigmoid(self.sprites[..., 3:])
        alpha = (soft > 0.5).float()  # hard edges; straight-through gradients when training
        if torch.is_grad_enabled():
            alpha = soft if self.soft_alpha else alpha + soft - soft.detach()
        spr = torch.cat([self.sprites[..., :3], alpha], -1)
        a = torch.sigmoid(self.overlay[..., 3:])  # (W, 32, 32, 1)
        atmo = self.atmosphere.weight  # (W, 6)
        # per atmosphere: the lit image is multiplied by keep * scale, then the rest is added
        keep = (1 - a) * atmo[:, None, None, :3]  # (W, 32, 32, 3)
        add = (1 - a) * atmo[:, None, None, 3:] + self.overlay[..., :3] * a
        return tex, spr.flatten(1, 2), keep, add, self.light

    @torch.no_grad()
    def freeze(self) -> None:
        """Cache the weight-only tables for inference (call again after loading weights).
        Non-finite entries become 0 and the rest are bounded, so no product of them overflows
        and a frame needs no NaN pass of its own: broken weights draw black, never garbage."""
        self._frozen = self._maps = None
        self._frozen = tuple(
            x.detach().nan_to_num(0.0, 0.0, 0.0).clamp(-TABLE_BOUND, TABLE_BOUND).contiguous()
            for x in self.tables()
        )

    def thaw(self) -> None:
        """Drop the cached tables: the weights are about to train again."""
        self._frozen = self._maps = None

    @staticmethod
    def light_at(light: torch.Tensor, minute: torch.Tensor) -> torch.Tensor:
        """(B,) minutes -> (B, 6) light scale and shift, linear between half hours."""
        pos = (minute.float() % spec.DAY_MINUTES) * (LIGHT_STEPS / spec.DAY_MINUTES)
        i0 = pos.floor().long() % LIGHT_STEPS
        w = (pos - pos.floor())[:, None]
        return light[i0] * (1 - w) + light[(i0 + 1) % LIGHT_STEPS] * w

    def forward(self, tokens, offset, weather, minute, phase, sprites) -> torch.Tensor:
        # tokens (B, W, W), offset (B, 2), weather (B,), minute (B,), phase (B, 2),
        # sprites (B, E, 3). Two exact implementations of the same function: gathers at
        # inference, one-hot selection matmuls when training (CPU scatter-based gather
        # backward is very slow).
        if torch.is_grad_enabled():
            return self._forward_select(tokens, offset, weather, minute, phase, sprites)
        return self._forward_gather(tokens, offset, weather, minute, phase, sprites)

    def _light_maps(self, keep, add, light, weather, minute) -> tuple:
        """(B, 32, 32, 3) gain and bias of each frame: its light, then its atmosphere."""
        lit = self.light_at(light, minute)  # (B, 6)
        k, c = keep.index_select(0, weather), add.index_select(0, weather)
        gain = k * lit[:, None, None, :3]
        bias = k * lit[:, None, None, 3:] + c
        return gain, bias

    @torch.no_grad()
    def frames(
        self, tokens, offset, weather, minute, phase, sprites, out=None, things=None
    ) -> torch.Tensor:
        """Inference: the same frames as uint8 (B, F, F, 3), rounded (from the frozen tables:
        no NaN), written into ``out`` when given (the caller's buffer: no copy of its own).
        ``things``: the open-vocabulary layer, (slots (B, M, 3) as sprites' but indexing
        ``table``, table (K, S, S, 4) in [0, 1] drawn by the sprite generator, lights (B, L, 2)
        frame pixels of what gives light, -1 where none)."""
        img = self._forward_gather(
            tokens, offset, weather, minute, phase, sprites, 255.0, 0.5, things
        )
        img = img.clamp_(0, 255)
        if out is None:
            out = torch.empty(img.shape, dtype=torch.uint8, device=img.device)
        if img.device.type != "cpu":
            return out.copy_(img)
        # the same truncating cast, 8x faster: torch's float -> uint8 copy is not vectorised
        # on the CPU (docs/decisions.md)
        np.copyto(out.numpy(), img.numpy(), casting="unsafe")
        return out

    def _forward_gather(
        self, tokens, offset, weather, minute, phase, sprites, scale=1.0, shift=0.0, things=None
    ) -> torch.Tensor:
        """A frame is memory-bound (a few table reads per pixel), so it is drawn in few passes
        over its pixels: one gather lays out the window tiles it shows as an image, sprites are
        written over it, then each frame's crop is lit and scaled by one multiply-add (the light
        maps carry ``scale`` and ``shift``, so bytes come out of the same pass)."""
        tex, spr, _, _, light = self.tables()
        b, w, t, o = tokens.shape[0], tokens.shape[2], spec.TILE, spec.OVERLAY
        f, n, dev = (w - 3) * t, (w - 3) + 1, tokens.device  # n: tiles a frame row crosses
        # window tiles 1..n across and down, 8 pixel rows each, make an image 8n pixels square
        # per frame; the frame is its pixels offset .. offset + F (rows of the (K * 8, 24) table)
        rows = (tokens[:, 1 : 1 + n, 1 : 1 + n].long() * t)[:, :, None, :]  # (B, n, 1, n)
        idx = rows + torch.arange(t, device=dev)[:, None]  # (B, n, 8, n)
        img = tex.view(-1, t * 3).index_select(0, idx.view(-1)).view(b, n * t, n * t, 3)
        layers = [(sprites, spr, spec.SPRITE)]
        if things is not None:  # under the creatures and avatars: they walk in front
            slots, table, _ = things
            layers.insert(0, (slots, table.flatten(1, 2), table.shape[1]))
        self._composite(img, layers, offset, f)
        # light and atmosphere: each frame's 32x32 maps, scrolled by its overlay phase, read in
        # one gather from the (atmosphere x 32 x 32, keep | add) table; tiled over the frame
        lit = self.light_at(light, minute) * scale  # (B, 6)
        ao = torch.arange(o, device=dev)
        ry = (ao[None, :] + phase[:, 1, None]) % o  # (B, 32)
        rx = (ao[None, :] + phase[:, 0, None]) % o
        cells = (weather[:, None, None] * o + ry[:, :, None]) * o + rx[:, None, :]
        maps = self._atmosphere_maps().index_select(0, cells.view(-1)).view(b, o * o, 6)
        keep = maps[..., :3]
        g = (keep * lit[:, None, :3]).view(b, 1, o, 1, o, 3)
        c = torch.addcmul(maps[..., 3:] * scale + shift, keep, lit[:, None, 3:])
        c = c.view(b, 1, o, 1, o, 3)
        at = enumerate(offset.tolist())
        crop = torch.stack([img[i, y : y + f, x : x + f] for i, (x, y) in at])
        crop = crop.view(b, f // o, o, f // o, o, 3)
        frame = torch.addcmul(c, crop, g, out=crop).view(b, f, f, 3)
        if things is not None:
            self._glow(frame, things[2], lit[:, :3] / scale, scale)
        return frame

    @staticmethod
    def _glow(frame, lights, daylight, scale: float) -> None:
        """What gives light lights the dark around it (in place): a warm pool of light that
        grows as the day's light fades, nothing at noon. Added into the frames where they lie
        (no copy of them): the caller clamps them to [0, scale] after."""
        dark = (1 - daylight.mean(1)).clamp(0, 1)  # (B,)
        has = ((lights[..., 0] >= 0).any(1) & (dark > 0.02)).nonzero(as_tuple=True)[0]
        if has.numel() == 0:
            return
        f, dev, dark = frame.shape[1], frame.device, dark[has]
        ar = torch.arange(f, device=dev, dtype=torch.float32)
        pos = lights[has].float()  # (H, L, 2)
        on = (pos[..., 0] >= 0).float()[..., None]
        # a Gaussian is separable: each light's falloff is an outer product of two (F,) rows
        gx = torch.exp(-((ar - pos[..., 0:1]) ** 2) / (2 * GLOW_PX**2))  # (H, L, F)
        gy = torch.exp(-((ar - pos[..., 1:2]) ** 2) / (2 * GLOW_PX**2)) * on
        warm = torch.tensor(GLOW_RGB, device=dev) * (scale / 255.0)
        tint = dark[:, None] * warm  # (H, 3)
        # the pool already in colour: rows of (x, channel), so the product lands as the frame
        # lies and is added in one contiguous pass (broadcasting a (F, F, 1) pool over three
        # channels was most of the glow's time)
        gxc = (gx[..., None] * tint[:, None, None, :]).flatten(2)  # (H, L, F * 3)
        glow = torch.bmm(gy.transpose(1, 2), gxc)  # (H, F, F * 3)
        cap = (1.5 * tint)[:, None, None, :].expand(-1, 1, f, 3).reshape(-1, 1, f * 3)
        torch.minimum(glow, cap, out=glow)  # overlapping pools: at most 1.5 times one's light
        if len(has) == len(frame):
            frame.view(len(frame), f, f * 3).add_(glow)
        else:
            frame.index_add_(0, has, glow.view(-1, f, f, 3))

    def _atmosphere_maps(self) -> torch.Tensor:
        """(atmospheres * 32 * 32, 6): each atmosphere's keep and add maps side by side."""
        if self._maps is not None:
            return self._maps
        _, _, keep, add, _ = self.tables()
        maps = torch.cat([keep, add], -1).reshape(-1, 6)
        if self._frozen is not None:  # weight-only, like the tables: kept until the next freeze
            self._maps = maps
        return maps

    def _forward_select(self, tokens, offset, weather, minute, phase, sprites) -> torch.Tensor:
        tex, spr, keep, add, light = self.tables()
        b, w, t, o, s = tokens.shape[0], tokens.shape[2], spec.TILE, spec.OVERLAY, spec.SPRITE
        f = (w - 3) * t
        dev = tokens.device
        big = tex.flatten(1).index_select(0, tokens.reshape(-1)).view(b, w, w, t, t, 3)
        big = big.permute(0, 1, 3, 2, 4, 5).reshape(b, w * t, w * t * 3)  # (B, 8W, 8W * 3)
        sel_y = _one_hot_shift(offset[:, 1] + t, f, w * t, dev)  # (B, F, 8W)
        sel_x = _one_hot_shift(offset[:, 0] + t, f, w * t, dev)
        img = (sel_y @ big).view(b, f, w * t, 3).permute(0, 1, 3, 2)  # (B, F, 3, 8W)
        img = (img @ sel_x.transpose(1, 2)[:, None]).permute(0, 1, 3, 2)  # (B, F, F, 3)
        for e in range(sprites.shape[1]):
            kind, sx, sy = sprites[:, e, 0], sprites[:, e, 1], sprites[:, e, 2]
            if not bool((kind >= 0).any()):
                continue
            layer = spr.index_select(0, kind.clamp(min=0)).view(b, s, s * 4)
            layer = (_one_hot_shift(-sy, f, s, dev) @ layer).view(b, f, s, 4).permute(0, 1, 3, 2)
            layer = layer @ _one_hot_shift(-sx, f, s, dev).transpose(1, 2)[:, None]
            layer = layer.permute(0, 1, 3, 2) * (kind >= 0).float()[:, None, None, None]
            a = layer[..., 3:]
            img = img * (1 - a) + layer[..., :3] * a
        gain, bias = self._light_maps(keep, add, light, weather, minute)
        roll_y = _one_hot_shift(phase[:, 1], o, o, dev, wrap=True)  # (B, 32, 32)
        roll_x = _one_hot_shift(phase[:, 0], o, o, dev, wrap=True)
        maps = torch.cat([gain, bias], -1)  # (B, 32, 32, 6)
        maps = (roll_y @ maps.view(b, o, o * 6)).view(b, o, o, 6).permute(0, 1, 3, 2)
        maps = (maps @ roll_x.transpose(1, 2)[:, None]).permute(0, 1, 3, 2)  # (B, 32, 32, 6)
        g = maps[..., :3].reshape(b, 1, o, 1, o, 3)
        c = maps[..., 3:].reshape(b, 1, o, 1, o, 3)
        img = img.reshape(b, f // o, o, f // o, o, 3) * g + c
        return img.reshape(b, f, f, 3)

    @staticmethod
    def _composite(img, layers, offset, f: int) -> None:
        """Draw sprites into img (B, H, W, 3) in place, at their frame positions plus the
        frame's offset (x, y) in img; only what falls inside the frame (F pixels square) is
        drawn. ``layers``: (slots (B, M, 3) of table row, x, y; -1 rows empty; table (K, S*S,
        4); S), bottom first. Inference alpha is hard (0 or 1), so a pixel takes the colour of
        the topmost sprite (the last layer, then the highest slot) that covers it.

        A frame's sprites are a few thousand pixels, so the time is the fixed cost of each
        array operation: all layers go in one write, and in NumPy, whose operations cost a
        fraction of torch's at this size (half the composite's time; docs/decisions.md)."""
        height, width = img.shape[1], img.shape[2]
        cpu = img.device.type == "cpu"
        image = img.numpy() if cpu else img.cpu().numpy()
        off = offset.cpu().numpy()
        wheres, colours = [], []
        for sprites, table, s in layers:
            sprites = sprites.cpu().numpy()
            fb, slot = np.nonzero(sprites[:, :, 0] >= 0)  # in (frame, slot) order
            if not len(fb):
                continue
            kind, sx, sy = sprites[fb, slot].T
            ar = np.arange(s)
            yy = (sy[:, None] + ar)[:, :, None]  # (N, S, 1) frame row
            xx = (sx[:, None] + ar)[:, None, :]  # (N, 1, S) frame column
            pix = table.cpu().numpy()[kind].reshape(-1, s, s, 4)
            ok = (yy >= 0) & (yy < f) & (xx >= 0) & (xx < f) & (pix[..., 3] > 0.5)
            corner = (fb * height + off[fb, 1]) * width + off[fb, 0]  # frame pixel (0, 0)
            wheres.append((corner[:, None, None] + yy * width + xx)[ok])
            colours.append(pix[..., :3][ok])
        if not wheres:
            return
        where, colour = np.concatenate(wheres), np.concatenate(colours)
        # where sprites overlap, the last drawn wins: each pixel's last write, found as its
        # first in the reversed order, is the only one made
        _, first = np.unique(where[::-1], return_index=True)
        last = len(where) - 1 - first
        image.reshape(-1, 3)[where[last]] = colour[last]
        if not cpu:
            img.copy_(torch.from_numpy(image))


def _one_hot_shift(start, n_out: int, n_in: int, device, wrap: bool = False) -> torch.Tensor:
    """(B, n_out, n_in) selection matrices: row i picks input start + i (mod n_in if wrap;
    rows outside the input are zero)."""
    src = start[:, None] + torch.arange(n_out, device=device)  # (B, n_out)
    if wrap:
        src = src % n_in
    return (src[:, :, None] == torch.arange(n_in, device=device)).float()


class TileEncoder(nn.Module):
    """The codec's encoder: an 8x8 RGB patch -> tile token logits, and a frame -> atmosphere and
    half hour of the day logits. (Grid alignment, particle phase and the minute within the half
    hour are found by search in `encode`.)"""

    def __init__(self):
        super().__init__()
        p = 3 * spec.TILE * spec.TILE
        self.patch = nn.Sequential(nn.Linear(p, 128), nn.GELU(), nn.Linear(128, spec.NUM_TOKENS))
        self.frame = FrameClassifier(
            heads={"weather": len(spec.WEATHERS), "minute": LIGHT_STEPS}, cells=()
        )

    def patch_logits(self, patches: torch.Tensor) -> torch.Tensor:
        return self.patch(patches.flatten(1))  # (N, 3, 8, 8) -> (N, K)


class FrameClassifier(nn.Module):
    """Small CNN: frame (B, 3, F, F) in [0, 1] (any F divisible by 16) -> logits per head.

    Heads in ``cells`` are also read per 16x16-pixel cell: the frame's pooled features (its
    light, its atmosphere) plus what the cell itself shows (about four tiles round it); the
    per-cell probabilities are averaged, so a frame's biome is what its tiles look like rather
    than its layout, and a frame showing two biomes splits its belief by how much of each it
    shows. Their "logits" are the log of that mean."""

    def __init__(self, heads: dict[str, int] | None = None, cells: tuple[str, ...] = ("biome",)):
        super().__init__()
        heads = heads or {
            "biome": len(spec.BIOMES),
            "weather": len(spec.WEATHERS),
            "time": len(spec.TIMES),
        }
        chans = [3, 16, 32, 64, 64]
        layers = []
        for a, b in zip(chans, chans[1:], strict=False):
            layers += [nn.Conv2d(a, b, 3, stride=2, padding=1), nn.GELU()]
        self.body = nn.Sequential(*layers)
        self.heads = nn.ModuleDict({k: nn.Linear(2 * chans[-1], n) for k, n in heads.items()})
        # per cell: its own features beside the frame's mean (the light it is seen under)
        self.cells = nn.ModuleDict(
            {
                k: nn.Sequential(
                    nn.Conv2d(2 * chans[-1], chans[-1], 1),
                    nn.GELU(),
                    nn.Conv2d(chans[-1], heads[k], 1),
                )
                for k in cells
            }
        )
        for cell in self.cells.values():  # at first the frame's own answer in every cell
            nn.init.zeros_(cell[-1].weight)
            nn.init.zeros_(cell[-1].bias)

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        out, cells = self.with_cells(x)
        for k, v in cells.items():
            out[k] = torch.log(torch.softmax(v, 1).mean((2, 3)) + 1e-8)
        return out

    def with_cells(self, x: torch.Tensor) -> tuple[dict, dict]:
        """-> (every head's frame logits (B, n), cell heads' logits (B, n, F / 16, F / 16)).
        A frame drawn larger than its view (the decoder's 192 pixels of a 128-pixel view) is
        read at the view's size: a cell is 16 world pixels, two tiles, at any drawing scale."""
        if x.shape[-1] == spec.FRAME * 3 // 2:
            x = F.interpolate(x, size=(spec.FRAME, spec.FRAME), mode="area")
        h = self.body(x * 2 - 1)  # (B, 64, F / 16, F / 16)
        mean = h.mean((2, 3))
        pooled = torch.cat([mean, h.amax((2, 3))], 1)
        out = {k: head(pooled) for k, head in self.heads.items()}
        seen = torch.cat([h, mean[:, :, None, None].expand_as(h)], 1)
        return out, {k: cell(seen) + out[k][:, :, None, None] for k, cell in self.cells.items()}


class WorldModel(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        self.prompt_heads = TextHeads(cfg, PROMPT_HEADS)
        self.event_heads = TextHeads(cfg, EVENT_HEADS)
        self.generator = TerrainGenerator(cfg)
        self.collision = CollisionHead()
        self.renderer = Renderer(cfg)
        self.encoder = TileEncoder()

    @torch.no_grad()
    def solid_table(self) -> torch.Tensor:
        """(NUM_TOKENS + 2,) bool: which tokens block movement (UNKNOWN and MASK do)."""
        solid = self.collision(torch.arange(spec.NUM_TOKENS)) > 0
        return torch.cat([solid, torch.ones(2, dtype=torch.bool)])

    def save(self, path: str | Path, extra: dict | None = None) -> None:
        meta = {"config": json.dumps(asdict(self.cfg)), **(extra or {})}
        state = {k: v.contiguous() for k, v in self.state_dict().items()}
        save_file(state, str(path), metadata=meta)

    @classmethod
    def from_file(cls, path: str | Path) -> WorldModel:
        from safetensors import safe_open

        with safe_open(str(path), framework="pt") as f:
            meta = f.metadata() or {}
        config = json.loads(meta["config"])
        config.pop("names", None)  # weights exported before the reader's names left them
        model = cls(ModelConfig(**config))
        state = load_file(str(path))
        for legacy in ("name_vecs", "name_kinds", "name_ids"):
            state.pop(legacy, None)  # the names live in world/data/own_names.json now
        state["renderer.tok.weight"] = with_cover_rows(state["renderer.tok.weight"])
        # weights made before the covers' detail patches draw the covers by the MLP alone
        state.setdefault("renderer.cover_detail", torch.zeros_like(model.renderer.cover_detail))
        model.load_state_dict(state)
        return model.eval()


# What each cover's renderer row starts from in weights made before the covers: the row of the
# token that looks most like it, so such weights draw covers plausibly until `--fit-covers`.
COVER_LOOKALIKES = {
    "fire": spec.thing_token(spec.THINGS.index("campfire")),
    "ash": spec.token_of(spec.BIOMES.index("volcanic"), 0),
    "puddle": spec.thing_token(spec.THINGS.index("pond")),
    "snow": spec.token_of(spec.BIOMES.index("snow"), 0),
}
assert tuple(COVER_LOOKALIKES) == spec.COVERS[1:]


def with_cover_rows(tok: torch.Tensor) -> torch.Tensor:
    """The renderer's token embedding (rows, d) grown to RENDER_TOKENS rows: weights saved
    before the covers (NUM_TOKENS + 2 rows) keep their rows as they were, bit for bit."""
    if len(tok) != spec.FIRST_COVER_TOKEN:  # current weights (any other size: loading says so)
        return tok
    return torch.cat([tok, tok[list(COVER_LOOKALIKES.values())]])


def save_classifier(model: FrameClassifier, path: str | Path) -> None:
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(path))


def load_classifier(path: str | Path, strict: bool = True) -> FrameClassifier:
    """strict=False: start from a classifier of another layout (its matching parts)."""
    model = FrameClassifier()
    model.load_state_dict(load_file(str(path)), strict=strict)
    return model.eval()
