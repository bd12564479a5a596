"""Reference simulator: training and evaluation only, never imported by the serving path."""

from inference.training.simulator.phrasing import event_for, event_text, world_prompt
from inference.training.simulator.world import (
    COND_AFFINE,
    OVERLAYS,
    SPRITES,
    TEXTURES,
    TRAIN_SEED_LIMIT,
    Scene,
    SimWorld,
    random_scenes,
    random_windows,
    render,
    terrain_tokens,
    window_origin,
)

__all__ = [
    "COND_AFFINE",
    "OVERLAYS",
    "SPRITES",
    "TEXTURES",
    "TRAIN_SEED_LIMIT",
    "Scene",
    "SimWorld",
    "event_for",
    "event_text",
    "random_scenes",
    "random_windows",
    "render",
    "terrain_tokens",
    "window_origin",
    "world_prompt",
]
