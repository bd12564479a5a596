"""What each camera sees (a scene: tokens, offsets, sky, sprites and things in view) and the
renderer's batched decode of scenes into frames."""

from __future__ import annotations

import numpy as np
import torch

from inference.world import spec
from inference.world.concepts import BEHAVIOURS
from inference.world.decoder import FrameDecoder, out_side
from inference.world.objects import MAX_LIGHTS, MAX_OBJECTS, SPRITE_SIDE
from inference.world.state import PlayerState, WorldState

DECODE_BATCH = 16  # frames per decoder forward: bounds the full-size buffers' memory
FIRE_TOKEN = spec.FIRST_COVER_TOKEN - 1 + spec.COVERS.index("fire")  # a burning tile, drawn


def scene(world: WorldState, viewer: PlayerState, sprite_rows: dict[str, int]) -> tuple:
    """What a camera on `viewer` sees, as the renderer takes it (`render`)."""
    half, s = spec.FRAME // 2, spec.SPRITE // 2
    left, top = viewer.x - half, viewer.y - half
    tx0, ty0 = left // spec.TILE - 1, top // spec.TILE - 1
    tokens = world.view(tx0, ty0)
    entities = [(spec.AVATAR_COLORS + c.kind, c.x, c.y) for c in world.creatures]
    entities += [(p.slot % spec.AVATAR_COLORS, p.x, p.y) for p in world.players if p is not viewer]
    entities.append((viewer.slot % spec.AVATAR_COLORS, viewer.x, viewer.y))  # own avatar on top
    sprites = np.full((spec.MAX_SPRITES, 3), -1, dtype=np.int64)
    visible = [
        (k, x - left - s, y - top - s)
        for k, x, y in entities
        if -spec.SPRITE < x - left - s < spec.FRAME and -spec.SPRITE < y - top - s < spec.FRAME
    ]
    for i, v in enumerate(visible[-spec.MAX_SPRITES :]):
        sprites[i] = v
    return (
        tokens,
        (left % spec.TILE, top % spec.TILE),
        world.weather,
        world.minute,
        spec.overlay_phase(world.weather, world.t),
        sprites,
        things_in_view(world, left, top, sprite_rows, tokens),
    )


def things_in_view(
    world: WorldState,
    left: int,
    top: int,
    sprite_rows: dict[str, int],
    tokens: np.ndarray | None = None,
) -> tuple | None:
    """(MAX_OBJECTS, 3) sprite-table row and top-left frame pixel of each open-vocabulary
    thing in view (-1: none), and (MAX_LIGHTS, 2) frame pixels of what gives light, the
    nearest the centre first: lit things, and the burning tiles of the camera's ``tokens``
    (its decode window, render tokens). None where there is neither (the frame path as
    before). Fliers are drawn last."""
    fires = fire_lights(tokens, left, top) if tokens is not None else []
    if not world.objects and not fires:
        return None
    s, h = SPRITE_SIDE, SPRITE_SIDE // 2
    things = np.full((MAX_OBJECTS, 3), -1, dtype=np.int64)
    lights = np.full((MAX_LIGHTS, 2), -1, dtype=np.int64)
    fly = BEHAVIOURS.index("flies")
    seen = [
        o
        for o in world.objects
        if -s < o.x - left - h < spec.FRAME and -s < o.y - top - h < spec.FRAME
    ]
    seen.sort(key=lambda o: o.motion == fly)  # only what is in view, stably
    for i, o in enumerate(seen):
        things[i] = (sprite_rows[o.concept], o.x - left - h, o.y - top - h)
    lit = [(o.x - left, o.y - top) for o in seen if o.light] + fires
    c = spec.FRAME // 2
    lit = sorted(lit, key=lambda p: (p[0] - c) ** 2 + (p[1] - c) ** 2)[:MAX_LIGHTS]
    if lit:
        lights[: len(lit)] = lit
    return things, lights


def fire_lights(tokens: np.ndarray, left: int, top: int) -> list[tuple[int, int]]:
    """Frame pixels of the centres of the burning tiles in a decode window (tokens from tile
    (left // TILE - 1, top // TILE - 1)) that lie in the frame."""
    rows, cols = np.nonzero(tokens == FIRE_TOKEN)
    if not len(rows):
        return []
    t = spec.TILE
    x = (cols - 1) * t + t // 2 - left % t
    y = (rows - 1) * t + t // 2 - top % t
    keep = (x >= 0) & (x < spec.FRAME) & (y >= 0) & (y < spec.FRAME)
    return list(zip(x[keep].tolist(), y[keep].tolist(), strict=True))


def render(
    drawer: FrameDecoder,
    scenes: list[tuple],
    sprite_table: torch.Tensor,
    device: torch.device | str = "cpu",
) -> np.ndarray:
    """-> (len(scenes), F', F', 3) uint8, drawn by the frame decoder (F' = 192 for the
    128-pixel view)."""
    side = out_side()
    frames = np.empty((len(scenes), side, side, 3), np.uint8)
    for start in range(0, len(scenes), DECODE_BATCH):
        part = scenes[start : start + DECODE_BATCH]
        tokens, sprites = (np.stack([s[i] for s in part]) for i in (0, 5))
        # the numbers in one array each (faster than np.stack of many small tuples)
        offset, weather, minute, phase = (
            np.array([s[i] for s in part], dtype=np.int64) for i in (1, 2, 3, 4)
        )
        dev = device
        into = torch.from_numpy(frames[start : start + len(part)])
        drawer.frames(
            *(
                torch.from_numpy(a).to(dev)
                for a in (tokens, offset, weather, minute, phase, sprites)
            ),
            out=into,
            things=_things_arg([s[6] for s in part], sprite_table, device),
        )
    return frames


def _things_arg(
    in_view: list[tuple | None], sprite_table: torch.Tensor, device: torch.device | str
) -> tuple | None:
    """The renderer's open-vocabulary layer, or None when no frame shows a thing or a light
    (the frame path as before)."""
    if all(v is None or (v[0][0, 0] < 0 and v[1][0, 0] < 0) for v in in_view):
        return None
    empty = (np.full((MAX_OBJECTS, 3), -1, np.int64), np.full((MAX_LIGHTS, 2), -1, np.int64))
    things, lights = (np.stack([(v or empty)[i] for v in in_view]) for i in (0, 1))
    dev = device
    return (
        torch.from_numpy(things).to(dev),
        sprite_table.to(dev),
        torch.from_numpy(lights).to(dev),
    )
