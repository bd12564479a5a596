"""Sprites drawn at a finer pixel scale than the world's (the rich frame is 1.5 output pixels a
world pixel): one resampling the teacher and the decoder share, so they agree to the pixel.

torch only (numpy in, numpy out too), no Django.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F


def resample_sprites(table: np.ndarray | torch.Tensor, side_out: int) -> np.ndarray | torch.Tensor:
    """(K, S, S, C) sprites (C = 3, or 4 with alpha last, values in [0, 1]) -> (K, side_out,
    side_out, C), the same type as given.

    Pixel art keeps its blocks: a nearest upscale to a common multiple of both sides, then an
    area average down (8 -> 12: x3 nearest, 2x2 mean, so a pixel edge blurs over one output
    pixel at most). Colour is averaged weighted by alpha (no dark fringe from transparent
    pixels) and alpha is sharpened (a half-covered pixel stays half, quarters snap)."""
    as_numpy = isinstance(table, np.ndarray)
    t = torch.as_tensor(table, dtype=torch.float32)
    side = t.shape[1]
    g = math.gcd(side, side_out)
    up, down = side_out // g, side // g
    x = t.permute(0, 3, 1, 2)  # (K, C, S, S)
    if x.shape[1] == 4:  # premultiplied, so transparent pixels lend no colour
        x = torch.cat([x[:, :3] * x[:, 3:], x[:, 3:]], 1)
    x = F.interpolate(x, scale_factor=up, mode="nearest") if up > 1 else x
    x = F.avg_pool2d(x, down) if down > 1 else x
    if x.shape[1] == 4:
        a = x[:, 3:]
        rgb = x[:, :3] / a.clamp(min=1e-6)
        x = torch.cat([rgb.clamp(0, 1), (2 * a - 0.5).clamp(0, 1)], 1)
    out = x.permute(0, 2, 3, 1).contiguous()
    return out.numpy() if as_numpy else out
