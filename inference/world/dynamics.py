"""The learned dynamics: how the world state moves on by itself, one tick (0.25 s) at a time.

Two small networks trained on the simulator's processes (`training/simulator/dynamics.py`, the
teacher): a tile net that gives, for every tile of a chunk, the probabilities of its next cover
(COVERS: none, fire, ash, puddle, snow) and of lava cooling to rock, from the chunk and a margin
of MARGIN tiles around it, the atmosphere and the sun; and a creature policy that gives the
probabilities of a creature's next heading from the tiles it sees, its kind and the nearest
player.

Sampling is shared with the teacher (`draw`, `apply_tiles` and the seeded uniforms): each
tile's cover is drawn by inverse CDF from its class probabilities with the uniform of
(seed, tick, tile, stream), each heading with the uniform of (seed, tick, creature), so a
perfect model reproduces the teacher bit for bit and a replay of the same ticks gives the same
world. numpy in and out, no Django, no simulator.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from inference.world import spec
from inference.world.noise import hash_grid, unit

MARGIN = 3  # tiles of context each side of a chunk (the tile net's receptive field is 2*MARGIN+1)
PATCH = spec.CHUNK + 2 * MARGIN
SIGHT = 5  # a creature sees (2*SIGHT+1)^2 tiles around its tile
VIEW = 2 * SIGHT + 1
NO_PLAYER = 10**6  # the player offset given when no player is in the world
# Classes under this probability are never drawn, by the teacher or the model: the teacher's
# rare events are all likelier than it, and a model that has learnt "never" as 1e-5 does not
# light a fire on the sea once a minute somewhere in a big world.
P_FLOOR = 1e-3
COVER_STREAM, LAVA_STREAM = 0, 1
_TILE_SALT, _CREATURE_SALT = 4801, 4802
LAVA = spec.thing_token(spec.THINGS.index("lava_pool"))
ROCKS = spec.thing_token(spec.THINGS.index("rocks"))
FIRE, ASH, PUDDLE, SNOW = (spec.COVERS.index(c) for c in ("fire", "ash", "puddle", "snow"))
CONDITIONS = len(spec.WEATHERS) + 3  # weather one-hot, the sun (sin, cos of the day, daylight)
WEIGHTS = Path(__file__).resolve().parent.parent / "weights" / "dynamics.safetensors"


@dataclass
class TileBatch:
    """One tick of many chunks, of any worlds."""

    tokens: np.ndarray  # (N, PATCH, PATCH) int64, UNKNOWN_TOKEN outside the canvas
    cover: np.ndarray  # (N, PATCH, PATCH) uint8
    weather: np.ndarray  # (N,) int
    minute: np.ndarray  # (N,) int minute of the day
    seed: np.ndarray  # (N,) int world seed
    tick: np.ndarray  # (N,) int the tick being made
    origin: np.ndarray  # (N, 2) int tile (tx, ty) of the chunk's first interior tile


@dataclass
class CreatureBatch:
    """One tick of many creatures, of any worlds."""

    tokens: np.ndarray  # (M, VIEW, VIEW) int64 around the creature's tile
    cover: np.ndarray  # (M, VIEW, VIEW) uint8
    kind: np.ndarray  # (M,) int creature kind
    player: np.ndarray  # (M, 2) int nearest player's offset in pixels (dx, dy); NO_PLAYER: none
    seed: np.ndarray  # (M,) int
    tick: np.ndarray  # (M,) int
    ident: np.ndarray  # (M,) int


# ---------------------------------------------------------------- shared sampling


def tile_uniforms(seed, tick, tx, ty, stream: int) -> np.ndarray:
    """The uniform in [0, 1) that draws tile (tx, ty)'s change at a tick (arrays broadcast)."""
    return unit(hash_grid(seed, _TILE_SALT, stream, tick, tx, ty))


# A creature draws its heading with the same uniform for this many ticks (1 s): while what it
# sees stays much the same its heading does too, so it walks instead of jittering; what it sees
# changing (a fire, a player coming close) still turns it at once.
HEADING_TICKS = 4


def creature_uniforms(seed, tick, ident) -> np.ndarray:
    return unit(hash_grid(seed, _CREATURE_SALT, np.asarray(tick) // HEADING_TICKS, ident))


def draw(probs: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Inverse-CDF draw of a class per row: (..., K) probabilities, (...) uniforms -> (...)
    int64, in the fixed class order; classes under P_FLOOR are never drawn."""
    p = np.where(probs >= P_FLOOR, probs, 0.0).astype(np.float64)
    cdf = np.cumsum(p, axis=-1)
    cdf /= cdf[..., -1:]
    return np.minimum((u[..., None] >= cdf).sum(-1), probs.shape[-1] - 1).astype(np.int64)


def interior_coords(origin: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(N, 2) chunk origins -> tile x and y, each (N, CHUNK, CHUNK)."""
    g = np.arange(spec.CHUNK)
    return origin[:, 0, None, None] + g[None, None, :], origin[:, 1, None, None] + g[None, :, None]


def apply_tiles(
    batch: TileBatch, cover_probs: np.ndarray, cool_probs: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The interiors after the tick, drawn from (N, 8, 8, len(COVERS)) cover probabilities and
    (N, 8, 8) lava-cooling probabilities -> (tokens (N, 8, 8) int64, cover (N, 8, 8) uint8).
    Only lava tiles cool (to rocks): cooling is the one change of a token."""
    tx, ty = interior_coords(np.asarray(batch.origin))
    seed, tick = batch.seed[:, None, None], batch.tick[:, None, None]
    cover = draw(cover_probs, tile_uniforms(seed, tick, tx, ty, COVER_STREAM)).astype(np.uint8)
    inner = np.asarray(batch.tokens)[:, MARGIN:-MARGIN, MARGIN:-MARGIN]
    q = np.where(cool_probs >= P_FLOOR, cool_probs, 0.0)
    cool = (inner == LAVA) & (tile_uniforms(seed, tick, tx, ty, LAVA_STREAM) < q)
    return np.where(cool, ROCKS, inner).astype(np.int64), cover


def blocks_movement(tokens, cover) -> np.ndarray:
    """Which tiles stop a creature or a player: a fire does; ash does not, whatever burnt
    under it; otherwise the token decides (spec.is_solid_token)."""
    tokens, cover = np.asarray(tokens), np.asarray(cover)
    solid = _SOLID[np.clip(tokens, 0, len(_SOLID) - 1)]
    return (cover == FIRE) | ((cover != ASH) & solid)


_SOLID = np.array([spec.is_solid_token(t) for t in range(spec.NUM_TOKENS + 2)])


def daylight(minute) -> np.ndarray:
    """How much sun there is at a minute of the day: 1 from about 8:00 to 16:00, 0 at night,
    ramps at dawn and dusk."""
    angle = 2 * np.pi * (np.asarray(minute, dtype=np.float64) - 6 * 60) / spec.DAY_MINUTES
    return np.clip(0.5 + 1.5 * np.sin(angle), 0.0, 1.0)


def conditions(weather, minute) -> np.ndarray:
    """(N,) weather and minute -> (N, CONDITIONS) float32: what the tile net is told of the
    atmosphere and the sun."""
    weather, minute = np.asarray(weather), np.asarray(minute)
    angle = 2 * np.pi * minute / spec.DAY_MINUTES
    onehot = np.eye(len(spec.WEATHERS))[weather]
    sun = np.stack([np.sin(angle), np.cos(angle), daylight(minute)], -1)
    return np.concatenate([onehot, sun], -1).astype(np.float32)


def player_features(player) -> np.ndarray:
    """(M, 2) pixel offsets of the nearest player -> (M, 5) float32: present, unit direction,
    nearness (1 on top, e^-1 at 4 tiles) and distance in tiles / 16 (capped at 2)."""
    d = np.asarray(player, dtype=np.float64)
    dist = np.hypot(d[:, 0], d[:, 1])
    present = dist < NO_PLAYER / 2
    unit_dir = d / np.maximum(dist, 1.0)[:, None]
    near = np.exp(-dist / (4 * spec.TILE))
    far = np.minimum(dist / (16 * spec.TILE), 2.0)
    out = np.stack([np.ones_like(dist), unit_dir[:, 0], unit_dir[:, 1], near, far], -1)
    return np.where(present[:, None], out, 0.0).astype(np.float32)


# ---------------------------------------------------------------- the networks


@dataclass
class DynamicsConfig:
    embed: int = 8  # token embedding width (both nets)
    width: int = 32  # channels of the tile net's three 3x3 valid convolutions
    view_channels: int = 6  # per-tile features the creature policy flattens
    hidden: int = 64  # the creature policy's MLP width
    kind_embed: int = 8


class TileNet(nn.Module):
    """(N, PATCH, PATCH) tokens and covers, (N, CONDITIONS) -> (N, len(COVERS) + 1, 8, 8): cover
    logits and the lava-cooling logit of the interior. Three valid 3x3 convolutions: the
    receptive field is exactly 2 * MARGIN + 1, so an interior tile depends on the patch only."""

    def __init__(self, cfg: DynamicsConfig):
        super().__init__()
        w = cfg.width
        self.embed = nn.Embedding(spec.NUM_TOKENS + 2, cfg.embed)
        self.cond = nn.Linear(CONDITIONS, 3 * w)  # a bias per layer from the atmosphere and sun
        self.convs = nn.ModuleList(
            [nn.Conv2d(cfg.embed + len(spec.COVERS), w, 3), nn.Conv2d(w, w, 3), nn.Conv2d(w, w, 3)]
        )
        self.mix = nn.Conv2d(w, w, 1)
        self.head = nn.Conv2d(w, len(spec.COVERS) + 1, 1)

    def forward(
        self, tokens: torch.Tensor, cover: torch.Tensor, cond: torch.Tensor
    ) -> torch.Tensor:
        x = torch.cat(
            [
                self.embed(tokens).permute(0, 3, 1, 2),  # (N, E, P, P)
                F.one_hot(cover.long(), len(spec.COVERS)).permute(0, 3, 1, 2).float(),
            ],
            1,
        )
        biases = self.cond(cond).chunk(len(self.convs), -1)  # each (N, W)
        for conv, bias in zip(self.convs, biases, strict=True):
            x = F.gelu(conv(x) + bias[:, :, None, None])
        return self.head(F.gelu(self.mix(x)))  # (N, C + 1, 8, 8)


class CreatureNet(nn.Module):
    """(M, VIEW, VIEW) tokens and covers, kinds, player features -> (M, 9) heading logits."""

    def __init__(self, cfg: DynamicsConfig):
        super().__init__()
        self.embed = nn.Embedding(spec.NUM_TOKENS + 2, cfg.embed)
        self.tile = nn.Conv2d(cfg.embed + len(spec.COVERS), cfg.view_channels, 1)
        self.kind = nn.Embedding(len(spec.CREATURES), cfg.kind_embed)
        self.inp = nn.Linear(cfg.view_channels * VIEW * VIEW + cfg.kind_embed + 5, cfg.hidden)
        self.mid = nn.Linear(cfg.hidden, cfg.hidden)
        self.out = nn.Linear(cfg.hidden, len(spec.DIRECTIONS))

    def forward(self, tokens, cover, kind, player) -> torch.Tensor:
        x = torch.cat(
            [
                self.embed(tokens).permute(0, 3, 1, 2),
                F.one_hot(cover.long(), len(spec.COVERS)).permute(0, 3, 1, 2).float(),
            ],
            1,
        )
        view = F.gelu(self.tile(x)).flatten(1)  # (M, V * VIEW * VIEW)
        h = F.gelu(self.inp(torch.cat([view, self.kind(kind), player], 1)))
        return self.out(F.gelu(self.mid(h)))


class DynamicsModel(nn.Module):
    def __init__(self, cfg: DynamicsConfig | None = None):
        super().__init__()
        self.cfg = cfg or DynamicsConfig()
        self.tiles = TileNet(self.cfg)
        self.creatures = CreatureNet(self.cfg)

    def tile_logits(self, batch: TileBatch, device="cpu") -> torch.Tensor:
        return self.tiles(
            torch.as_tensor(np.asarray(batch.tokens), dtype=torch.long, device=device),
            torch.as_tensor(np.asarray(batch.cover), dtype=torch.long, device=device),
            torch.as_tensor(conditions(batch.weather, batch.minute), device=device),
        )

    def creature_logits(self, batch: CreatureBatch, device="cpu") -> torch.Tensor:
        return self.creatures(
            torch.as_tensor(np.asarray(batch.tokens), dtype=torch.long, device=device),
            torch.as_tensor(np.asarray(batch.cover), dtype=torch.long, device=device),
            torch.as_tensor(np.asarray(batch.kind), dtype=torch.long, device=device),
            torch.as_tensor(player_features(batch.player), device=device),
        )

    def save(self, path: str | Path, extra: dict | None = None) -> None:
        from safetensors.torch import save_file

        meta = {"config": json.dumps(asdict(self.cfg)), **(extra or {})}
        save_file({k: v.contiguous() for k, v in self.state_dict().items()}, str(path), meta)

    @classmethod
    def from_file(cls, path: str | Path) -> DynamicsModel:
        from safetensors import safe_open
        from safetensors.torch import load_file

        with safe_open(str(path), framework="pt") as f:
            meta = f.metadata() or {}
        model = cls(DynamicsConfig(**json.loads(meta.get("config", "{}"))))
        model.load_state_dict(load_file(str(path)))
        return model.eval()


# ---------------------------------------------------------------- inference


class Dynamics:
    """The transition model as the engine calls it: batched, numpy in and out, no gradients."""

    def __init__(self, model: DynamicsModel, device: str = "cpu"):
        self.model = model.to(device).eval()
        self.device = device

    @classmethod
    def load(cls, path: str | Path | None = None, device: str = "cpu") -> Dynamics:
        """The shipped weights (weights/dynamics.safetensors); a random init and a warning when
        the file is absent."""
        path = Path(path) if path is not None else WEIGHTS
        if path.exists():
            return cls(DynamicsModel.from_file(path), device)
        warnings.warn(f"{path} not found: the dynamics run on random weights", stacklevel=2)
        torch.manual_seed(0)
        return cls(DynamicsModel(), device)

    @torch.no_grad()
    def tile_probs(self, batch: TileBatch) -> tuple[np.ndarray, np.ndarray]:
        """-> (cover probabilities (N, 8, 8, len(COVERS)), lava-cooling probabilities (N, 8, 8))."""
        if len(batch.tokens) == 0:
            n = spec.CHUNK
            return np.zeros((0, n, n, len(spec.COVERS))), np.zeros((0, n, n))
        logits = self.model.tile_logits(batch, self.device).float()
        probs = torch.softmax(logits[:, :-1], 1).permute(0, 2, 3, 1)
        return probs.cpu().numpy(), torch.sigmoid(logits[:, -1]).cpu().numpy()

    def tiles(self, batch: TileBatch) -> tuple[np.ndarray, np.ndarray]:
        """-> (tokens (N, 8, 8) int64, cover (N, 8, 8) uint8) of the interiors after the tick."""
        return apply_tiles(batch, *self.tile_probs(batch))

    @torch.no_grad()
    def creature_probs(self, batch: CreatureBatch) -> np.ndarray:
        if len(batch.kind) == 0:
            return np.zeros((0, len(spec.DIRECTIONS)))
        logits = self.model.creature_logits(batch, self.device).float()
        return torch.softmax(logits, -1).cpu().numpy()

    def creatures(self, batch: CreatureBatch) -> np.ndarray:
        """-> (M,) int64 heading index into spec.DIRECTIONS."""
        u = creature_uniforms(batch.seed, batch.tick, batch.ident)
        return draw(self.creature_probs(batch), u)
