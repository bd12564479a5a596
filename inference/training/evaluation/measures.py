"""What every part of the evaluation shares: the unseen seeds, the split, the concept lists, the
scores (PSNR, hit rates) and the judge (the simulator-trained frame classifier)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import torch

from inference.training import simulator as sim
from inference.world import spec
from inference.world.model import load_classifier

EVAL_SEEDS = (sim.TRAIN_SEED_LIMIT, 2 * sim.TRAIN_SEED_LIMIT)  # never drawn in training
SPLIT = "eval"  # prompts and events take held-out phrasings half the time
EVENT_KINDS = {
    "weather": spec.WEATHERS,
    "time": spec.TIMES,
    "creature": spec.CREATURES,
    "thing": spec.THINGS,
}
PSNR_CAP = 100.0  # identical frames have infinite PSNR; they are reported as 100 dB
MOVES = [frozenset(k) for k in ("d", "a", "w", "s", "wd", "wa", "sd", "sa")]
STILL = frozenset()
CENTRE = spec.FRAME // 2 - spec.SPRITE // 2  # screen x and y of the viewer's own avatar
# A mixed prompt's second biome must hold this much of the judged frames' mean probability,
# so a pure world whose runner-up class happens to be the second biome does not count.
MIX_SHOWN = 0.1
CANVAS_SHOWN = 0.1  # the same floor for a biome's share of the generated canvas (diagnostic)
DRAWN_MAX_ERR = 24.0  # mean abs error (0-255) an added creature or thing may have vs the sim


def at_side(image: np.ndarray, side: int) -> np.ndarray:
    """A square frame or mask of the simulator's (128 pixels) at `side` pixels, or back,
    nearest pixel: the decoder draws the 128-pixel view at 192."""
    rows = np.arange(side) * image.shape[0] // side
    return image[np.ix_(rows, rows)]


def psnr(a: np.ndarray, b: np.ndarray, mask: np.ndarray | None = None) -> float:
    d = a.astype(np.float64) - b.astype(np.float64)
    mse = np.mean(d[mask] ** 2) if mask is not None else np.mean(d**2)
    return PSNR_CAP if mse == 0 else min(PSNR_CAP, 10 * math.log10(255.0**2 / mse))


def rates(hits: dict[str, list]) -> dict[str, dict]:
    """Per-value hit lists -> {value: {"pct", "n"}} (values never tried are left out)."""
    return {k: {"pct": 100.0 * float(np.mean(v)), "n": len(v)} for k, v in hits.items() if v}


def means(scores: dict[str, list]) -> dict[str, dict]:
    return {k: {"db": float(np.mean(v)), "n": len(v)} for k, v in scores.items() if v}


class Judge:
    """The simulator-trained frame classifier (biome, atmosphere, time of day)."""

    def __init__(self, path: Path):
        self.model = load_classifier(path)

    @torch.no_grad()
    def __call__(self, frames: np.ndarray, batch: int = 128) -> dict[str, np.ndarray]:
        """(N, F, F, 3) uint8 -> per head (N, classes) probabilities."""
        out: dict[str, list] = {}
        for start in range(0, len(frames), batch):
            part = np.asarray(frames[start : start + batch])
            x = torch.from_numpy(part).float().div(255).permute(0, 3, 1, 2)
            for k, v in self.model(x).items():
                out.setdefault(k, []).append(torch.softmax(v, 1).numpy())
        return {k: np.concatenate(v) for k, v in out.items()}
