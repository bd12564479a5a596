"""The training run's configuration (stored with the weights) and its learning-rate schedule."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class TrainConfig:
    steps: int = 6000  # optimisation steps (every part trains each step)
    lr: float = 3e-3  # peak learning rate, cosine decay to 5%
    warmup: int = 100
    batch_render: int = 16  # simulator frames per step for the renderer
    render_frame: int = 64  # side of the renderer's training crops
    render_sprites: int = 3  # most sprites per training frame (each one costs a blend pass)
    batch_gen: int = 32  # 16x16 token windows per step for the generator
    batch_cls: int = 16  # 128x128 frames per step for the classifier and the codec encoder
    # The judge's frames: a share from mixed worlds, and a share whose tile kinds are remapped
    # (`remap_kinds`). Larger shares make the judge truer on simulator frames but misread dark
    # one-kind worlds (a cave as forest)
    cls_mixed: float = 0.3
    cls_remap: float = 0.0
    batch_text: int = 256  # phrasings per step for the text heads
    self_forcing: float = 0.5  # share of generator windows whose context is partly its own samples
    drop_side: float = 0.4  # chance each neighbour side of a window is not generated yet
    n_prompts: int = 12000  # distinct world phrasings embedded for training
    n_events: int = 8000  # distinct event phrasings embedded for training
    no_text: float = 0.2  # share of generator windows conditioned without a prompt embedding
    eval_every: int = 250
    seed: int = 0
    threads: int = 1  # the machine is shared: one thread avoids oversubscription stalls
    max_minutes: float = 40.0  # stop early (and save) when the wall clock runs out
    device: str = "cpu"
    out: str = str(ROOT / "inference" / "weights")
    checkpoint: str = str(ROOT / "var" / "checkpoints" / "world_model.pt")


def cosine(step: int, steps: int) -> float:
    """The learning-rate factor at `step` of `steps`: cosine decay from 1 to 5%."""
    return 0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * step / steps))
