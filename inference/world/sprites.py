"""The open-vocabulary networks: a phrase's MiniLM embedding -> a sprite, a behaviour, a concept.

- `SpriteGenerator`: embedding (B, 384) -> RGBA sprite (B, 16, 16, 4) in [0, 1], straight alpha.
  Trained on labelled icons (emoji in colour, game-icon silhouettes as shapes); every served
  sprite is drawn by it from the concept's name embedding, never read from an icon.
- `BehaviourHead`: embedding -> what the concept does (`concepts.BEHAVIOURS`) and whether it
  gives light.
- `ReaderHead`: a residual projection of a phrase's embedding into the space of concept names,
  trained so that descriptions ("a grey giant with a trunk") land by the name they describe.

One file, `weights/concepts.safetensors`, with its config in the metadata; no names inside it
(those are `weights/concepts.json`).

- `OwnReaderModel`: a second `ReaderHead` for the world model's own vocabulary (its places,
  skies, times of day, creatures and things), compared with the names of
  `world/data/own_names.json`; its own file, `weights/own_reader.safetensors`.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save_file
from torch import nn

from inference.world.concepts import BEHAVIOURS

WEIGHTS = Path(__file__).resolve().parents[1] / "weights" / "concepts.safetensors"
OWN_WEIGHTS = WEIGHTS.with_name("own_reader.safetensors")


@dataclass
class SpriteConfig:
    text_dim: int = 384  # MiniLM
    size: int = 16  # sprite side in pixels (two tiles)
    hidden: int = 1024  # generator width
    behaviour_hidden: int = 256
    reader_hidden: int = 768
    window: bool = False  # the own reader reads each span's window too (WindowReaderHead)


class SpriteGenerator(nn.Module):
    def __init__(self, cfg: SpriteConfig):
        super().__init__()
        self.size = cfg.size
        self.net = nn.Sequential(
            nn.Linear(cfg.text_dim, cfg.hidden),
            nn.GELU(),
            nn.Linear(cfg.hidden, cfg.hidden),
            nn.GELU(),
            nn.Linear(cfg.hidden, cfg.size * cfg.size * 4),
        )

    def forward(self, emb: torch.Tensor) -> torch.Tensor:
        s = self.size
        return torch.sigmoid(self.net(emb)).view(-1, s, s, 4)  # (B, S, S, RGBA)


class BehaviourHead(nn.Module):
    def __init__(self, cfg: SpriteConfig):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(cfg.text_dim, cfg.behaviour_hidden),
            nn.GELU(),
            nn.Dropout(0.2),
            nn.Linear(cfg.behaviour_hidden, len(BEHAVIOURS) + 1),
        )

    def forward(self, emb: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        out = self.net(emb)
        return out[:, : len(BEHAVIOURS)], out[:, -1]  # motion logits (B, 5), light logit (B,)


class ReaderHead(nn.Module):
    """(span, whole text) embeddings -> where the span points in the space of concept names,
    and a logit that it names nothing. The text is the span's context: "giant" in "a grey
    giant with a trunk" is the elephant, "flies" in "a dragon flies over" names nothing."""

    def __init__(self, cfg: SpriteConfig):
        super().__init__()
        d = cfg.text_dim
        self.net = nn.Sequential(
            nn.Linear(3 * d, cfg.reader_hidden),
            nn.GELU(),
            nn.Linear(cfg.reader_hidden, cfg.reader_hidden),
            nn.GELU(),
            nn.Linear(cfg.reader_hidden, d + 1),
        )
        # the names' side: a concept's name embedding moved to where its descriptions fall
        # (a network over the name, so a concept never trained on moves too)
        self.names = nn.Sequential(
            nn.Linear(d, cfg.reader_hidden), nn.GELU(), nn.Linear(cfg.reader_hidden, d)
        )
        for last in (self.net[-1], self.names[-1]):  # both start as plain MiniLM
            nn.init.zeros_(last.weight)
            nn.init.zeros_(last.bias)
        self.scale = nn.Parameter(torch.tensor(20.0))  # cosine -> logit

    def forward(self, span: torch.Tensor, text: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.net(torch.cat([span, text, span * text], -1))
        return F.normalize(span + h[:, :-1], dim=-1), h[:, -1]  # (B, 384) unit, (B,)

    def keys(self, names: torch.Tensor) -> torch.Tensor:
        """(N, 384) name embeddings -> (N, 384) unit keys the spans are compared with."""
        return F.normalize(names + self.names(names), dim=-1)

    def logits(self, span: torch.Tensor, text: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        """(B, N + 1): each span's logit of naming each concept (keys from `keys`), and of
        naming none (last column)."""
        vec, none = self(span, text)
        return torch.cat([vec @ keys.T * self.scale, none[:, None]], -1)


class ConceptModel(nn.Module):
    def __init__(self, cfg: SpriteConfig | None = None):
        super().__init__()
        self.cfg = cfg or SpriteConfig()
        self.sprites = SpriteGenerator(self.cfg)
        self.behaviour = BehaviourHead(self.cfg)
        self.reader = ReaderHead(self.cfg)
        # the reader's two thresholds, fitted by `training.sweep_reader` on the tuning split and
        # kept with the weights: a span names some concept from this chance of not naming none
        self.register_buffer("name_min", torch.tensor(0.5))
        # and a text's second or third thing needs this chance of being that very concept (the
        # words of one description each lean to a neighbour of it: "a grey giant", "a trunk")
        self.register_buffer("more_min", torch.tensor(0.5))

    @torch.no_grad()
    def draw(self, emb: torch.Tensor) -> torch.Tensor:
        """(B, 384) -> (B, S, S, 4) uint8 RGBA with hard alpha (clean edges in the frame)."""
        rgba = self.sprites(emb)
        alpha = (rgba[..., 3:] > 0.5).to(rgba.dtype)
        return (torch.cat([rgba[..., :3], alpha], -1) * 255).round().to(torch.uint8)

    def save(self, path: str | Path = WEIGHTS, extra: dict | None = None) -> None:
        meta = {"config": json.dumps(asdict(self.cfg)), **(extra or {})}
        # half precision on disk (10 MB, not 20): sprites and readings are the same to the eye
        # and to the evaluation, and loading back to float32 is exact and deterministic
        state = {k: v.detach().half().contiguous() for k, v in self.state_dict().items()}
        save_file(state, str(path), meta)

    @classmethod
    def from_file(cls, path: str | Path = WEIGHTS) -> ConceptModel:
        from safetensors import safe_open

        with safe_open(str(path), framework="pt") as f:
            meta = f.metadata() or {}
        model = cls(SpriteConfig(**json.loads(meta["config"])))
        state = {k: v.float() for k, v in load_file(str(path)).items()}
        state.setdefault("more_min", model.more_min)  # weights fitted before it was
        model.load_state_dict(state)
        return model.eval()


class WindowReaderHead(ReaderHead):
    """A `ReaderHead` that also reads each span with a word either side (its window): "bear"
    in "bear the cold" is a verb, in "with the bear" the animal, where the whole text's one
    embedding says little of one word's use."""

    def __init__(self, cfg: SpriteConfig):
        super().__init__(cfg)
        self.net[0] = nn.Linear(4 * cfg.text_dim, cfg.reader_hidden)

    def forward(
        self, span: torch.Tensor, text: torch.Tensor, window: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.net(torch.cat([span, text, span * text, window], -1))
        return F.normalize(span + h[:, :-1], dim=-1), h[:, -1]

    def logits(self, span, text, keys, window=None) -> torch.Tensor:
        vec, none = self(span, text, window)
        return torch.cat([vec @ keys.T * self.scale, none[:, None]], -1)


class OwnReaderModel(nn.Module):
    """The reader of the world model's own names: a span in its text -> each own name, or
    none; a class (a biome, a sky, ...) is the sum of its names' chances (`reading`). No names
    and no thresholds inside: "none" is a class of its own, trained to be calibrated."""

    def __init__(self, cfg: SpriteConfig | None = None):
        super().__init__()
        self.cfg = cfg or SpriteConfig(reader_hidden=384, window=True)
        self.reader = WindowReaderHead(self.cfg) if self.cfg.window else ReaderHead(self.cfg)
        self.register_buffer("own_min", torch.tensor(0.0))  # `Reader.own`; fitted after training

    def save(self, path: str | Path = OWN_WEIGHTS, extra: dict | None = None) -> None:
        meta = {"config": json.dumps(asdict(self.cfg)), **(extra or {})}
        state = {k: v.detach().half().contiguous() for k, v in self.state_dict().items()}
        save_file(state, str(path), meta)

    @classmethod
    def from_file(cls, path: str | Path = OWN_WEIGHTS) -> OwnReaderModel:
        from safetensors import safe_open

        with safe_open(str(path), framework="pt") as f:
            meta = f.metadata() or {}
        model = cls(SpriteConfig(**json.loads(meta["config"])))
        state = {k: v.float() for k, v in load_file(str(path)).items()}
        state.setdefault("own_min", model.own_min)  # weights made before it was
        model.load_state_dict(state)
        return model.eval()
