"""Reference simulator: training and evaluation only, never imported by the serving path."""

from inference.training.simulator.appearance import (
    ATMOSPHERE_AFFINE,
    OVERLAYS,
    SOLID,
    SPRITES,
    TEXTURES,
    light_affine,
)
from inference.training.simulator.phrasing import event_for, event_text, world_prompt
from inference.training.simulator.teacher import SCALE, out_side, render_rich
from inference.training.simulator.world import (
    TRAIN_SEED_LIMIT,
    Scene,
    SimWorld,
    random_biomes,
    random_scenes,
    random_windows,
    render,
    sprite_cover,
    terrain_tokens,
    window_origin,
)

__all__ = [
    "ATMOSPHERE_AFFINE",
    "SCALE",
    "OVERLAYS",
    "SPRITES",
    "SOLID",
    "TEXTURES",
    "TRAIN_SEED_LIMIT",
    "Scene",
    "SimWorld",
    "event_for",
    "event_text",
    "light_affine",
    "out_side",
    "random_biomes",
    "random_scenes",
    "random_windows",
    "render",
    "render_rich",
    "sprite_cover",
    "terrain_tokens",
    "window_origin",
    "world_prompt",
]
