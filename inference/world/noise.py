"""Seeded lattice noise, and where each biome of a mixed world lies.

Shared by the simulator (which builds its terrain from it) and the engine (which steers the
generator's draws by the same patch field), so a mixed world served looks like the mixed
worlds the model was trained on. numpy only.
"""

from __future__ import annotations

import functools

import numpy as np

_U = np.uint64
MIX_SCALE = 14.0  # tiles: how large the patches of each biome are in a mixed world
MIX_SALT = 9


def hash_grid(*arrays) -> np.ndarray:
    """Vectorised splitmix64 over broadcast integer arrays -> uint64 array."""
    with np.errstate(over="ignore"):
        h = np.full(np.broadcast(*arrays).shape, 0x9E3779B97F4A7C15, dtype=_U)
        for a in arrays:
            h ^= np.asarray(a).astype(np.int64).astype(_U)
            h += _U(0x9E3779B97F4A7C15)
            z = h
            z = (z ^ (z >> _U(30))) * _U(0xBF58476D1CE4E5B9)
            z = (z ^ (z >> _U(27))) * _U(0x94D049BB133111EB)
            h = z ^ (z >> _U(31))
    return h


def unit(h: np.ndarray) -> np.ndarray:
    """uint64 hashes -> floats in [0, 1)."""
    return (h >> _U(11)).astype(np.float64) / float(1 << 53)


def value_noise(seed, salt: int, x, y, scale) -> np.ndarray:
    """Smooth lattice value noise in [0, 1) with lattice spacing `scale` tiles."""
    fx, fy = x / scale, y / scale
    x0, y0 = np.floor(fx), np.floor(fy)
    ux, uy = fx - x0, fy - y0
    ux, uy = ux * ux * (3 - 2 * ux), uy * uy * (3 - 2 * uy)
    x0, y0 = x0.astype(np.int64), y0.astype(np.int64)

    def corner(dx, dy) -> np.ndarray:
        return unit(hash_grid(seed, salt, x0 + dx, y0 + dy))

    top = corner(0, 0) * (1 - ux) + corner(1, 0) * ux
    bottom = corner(0, 1) * (1 - ux) + corner(1, 1) * ux
    return top * (1 - uy) + bottom * uy


def second_biome_at(seed, tx, ty, mix) -> np.ndarray:
    """Tiles (tx, ty) of a mixed world that belong to its second biome, whose share of the
    world is about `mix` (0: none)."""
    return value_noise(seed, MIX_SALT, tx, ty, MIX_SCALE) < 0.15 + 0.7 * np.asarray(mix)


@functools.lru_cache(maxsize=4096)
def mix_origin(seed: int, mix: float, half: int = 8, tries: int = 64) -> tuple[int, int]:
    """A seeded shift of the patch field that puts a border between the two biomes of a mixed
    world in the spawn view (the tiles within `half` of the origin show between 30% and 70% of
    the second biome), so a player sees both biomes from the first frame. (0, 0) if none of the
    tries does."""
    g = np.arange(-half, half)
    for i in range(tries):
        h = hash_grid(seed, 31, i)
        dx, dy = int(h % 4096) - 2048, int((h >> 12) % 4096) - 2048
        share = second_biome_at(seed, g[None, :] + dx, g[:, None] + dy, mix).mean()
        if 0.3 <= share <= 0.7:
            return dx, dy
    return 0, 0
