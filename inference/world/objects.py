"""The open-vocabulary things a world holds (`ObjectState`): where they block, how they move by
their behaviour, and the water a swimmer looks for."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from inference.world import spec
from inference.world.concepts import BEHAVIOURS, MOVING
from inference.world.state import WorldState

SPRITE_SIDE = 16  # open-vocabulary sprites: two tiles
# tiles round its spot (three right of the player) a swimmer looks for water in, else it brings
# a pond: in view of the player who asked, whole (at 10 an octopus swam off the frame's corner)
SWIM_SEARCH = spec.FRAME // 2 // spec.TILE - 4
MAX_OBJECTS = 64  # open-vocabulary things a world holds; the oldest go first
MAX_LIGHTS = 8  # lights one frame draws
BLOCK_REACH = SPRITE_SIDE // 2 - 2  # pixels round its centre a blocking thing stands on
OBJECT_IDENT = 1 << 20  # open-vocabulary things wander on hashes of their own


def is_water_token(token: int) -> bool:
    """Water a swimmer may move through: a biome's water tiles and ponds."""
    if token >= spec.NUM_TOKENS:
        return False
    if token >= spec.BIOME_TOKENS:
        return spec.THINGS[token - spec.BIOME_TOKENS] == "pond"
    return spec.TILE_KINDS[token % len(spec.TILE_KINDS)] == "water"


def blocked_tiles(world: WorldState, memo: dict) -> frozenset:
    """Tiles the open-vocabulary things that block stand on (memoised with the canvas:
    adding one counts as an edit)."""
    blocked = memo.get("blocked")
    if blocked is None:
        r, stay = BLOCK_REACH, BEHAVIOURS.index("blocks")
        blocked = memo["blocked"] = frozenset(
            (tx, ty)
            for o in world.objects
            if o.motion == stay
            for tx in range((o.x - r) // spec.TILE, (o.x + r - 1) // spec.TILE + 1)
            for ty in range((o.y - r) // spec.TILE, (o.y + r - 1) // spec.TILE + 1)
        )
    return blocked


def move_objects(world: WorldState, is_solid: Callable[[int, int], bool]) -> None:
    """Open-vocabulary things move by their behaviour: walkers as the creatures do, fliers
    over everything, swimmers only through water."""
    for o in world.objects:
        motion = BEHAVIOURS[o.motion]
        if motion not in MOVING:
            continue
        dx, dy = spec.creature_dir(world.seed, OBJECT_IDENT + o.ident, world.t)
        if motion == "flies":
            o.x, o.y = o.x + dx * spec.CREATURE_SPEED, o.y + dy * spec.CREATURE_SPEED
        elif motion == "swims":
            o.x, o.y = spec.move(o.x, o.y, dx, dy, spec.CREATURE_SPEED, _dry(world))
        else:
            o.x, o.y = spec.move(o.x, o.y, dx, dy, spec.CREATURE_SPEED, is_solid)


def _dry(world: WorldState) -> Callable[[int, int], bool]:
    def dry(tx: int, ty: int) -> bool:
        return not is_water_token(world.token_at(tx, ty))

    return dry


def water_near(world: WorldState, cx: int, cy: int) -> tuple[int, int] | None:
    """The water tile nearest to tile (cx, cy) within SWIM_SEARCH, outside the spawn zone
    (None: none there)."""
    r = SWIM_SEARCH
    tx, ty = np.meshgrid(np.arange(cx - r, cx + r + 1), np.arange(cy - r, cy + r + 1))
    tokens = world.region(cx - r, cy - r, 2 * r + 1, 2 * r + 1)
    wet = np.vectorize(is_water_token)(tokens) & ~spec.in_spawn_zone(tx, ty)
    if not wet.any():
        return None
    d = (tx - cx) ** 2 + (ty - cy) ** 2
    i = np.argmin(np.where(wet, d, np.iinfo(np.int64).max))
    return int(tx.flat[i]), int(ty.flat[i])
