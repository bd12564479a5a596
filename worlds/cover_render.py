"""Covers rendered by the world model: one frame of the world, upscaled with crisp pixels; and
what the model makes of the prompt, shown beside it.

The engine is loaded once per process (seconds and hundreds of MB) and is not thread-safe, so
one lock guards it. `world_render_cover` stores both on the world: Celery workers call it through
worlds.tasks.render_cover, the embedded default on a thread beside the request.
"""

import hashlib
import io
import threading
from functools import cache
from pathlib import Path

from django.core.files.base import ContentFile
from django.db import transaction
from PIL import Image

from worlds.models import World

SETTLE_FRAMES = 6  # let weather and creatures animate a little before the shot
SCALE = 4  # 192 px frames -> 768 px covers, nearest-neighbour so pixels stay crisp

_lock = threading.Lock()
_engine = None


def _get_engine():
    global _engine
    if _engine is None:
        from inference.world.engine import WorldEngine

        _engine = WorldEngine.load(device="cpu")
    return _engine


def weights_digest() -> str:
    """Which weights render covers: the first 16 hex digits of the SHA-256 of the shipped world
    model file (what `WorldEngine.load` reads), "" where there is none; with the frame
    decoder's weights, the open vocabulary's weights and names and the own reader's weights
    and names, when shipped, digested into it (a retrained decoder, a new concept or a new
    name re-renders)."""
    from inference.world.concepts import CONCEPTS_PATH
    from inference.world.decoder import WEIGHTS_FILE
    from inference.world.engine import DEFAULT_WEIGHTS, WEIGHTS_DIR
    from inference.world.reading import OWN_NAMES
    from inference.world.sprites import OWN_WEIGHTS, WEIGHTS

    world = _digest(DEFAULT_WEIGHTS, *_stamp(DEFAULT_WEIGHTS))
    paths = (WEIGHTS_DIR / WEIGHTS_FILE, WEIGHTS, CONCEPTS_PATH, OWN_WEIGHTS, OWN_NAMES)
    parts = [_digest(p, *_stamp(p)) for p in paths]
    if not world or not all(parts):
        return world
    return hashlib.sha256("".join([world, *parts]).encode()).hexdigest()[:16]


def _stamp(path: Path) -> tuple[int, int]:
    try:
        stat = path.stat()
    except FileNotFoundError:
        return (0, 0)
    return (stat.st_size, stat.st_mtime_ns)


@cache
def _digest(path: Path, size: int, mtime_ns: int) -> str:  # once per file version
    if not size:
        return ""
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()[:16]


def prompt_reading(prompt: str) -> dict:
    """What the world model makes of a prompt, as people say it (`PromptReading.names`)."""
    with _lock:
        return _get_engine().read_prompt(prompt).names()


def render_cover_png(*, prompt: str, seed: int) -> bytes:
    """A PNG of the world as the model generates it at spawn, seeded like a play session."""
    with _lock:
        engine = _get_engine()
        world_id = engine.create_world(prompt=prompt, seed=seed)
        try:
            player = engine.add_player(world_id)
            frames = engine.step(
                {player: frozenset()}, {player: min(SETTLE_FRAMES, engine.max_chunk)}
            )
        finally:
            engine.drop_world(world_id)
    frame = frames[player][-1]  # (H, W, 3) uint8
    image = Image.fromarray(frame, "RGB")
    image = image.resize((image.width * SCALE, image.height * SCALE), Image.Resampling.NEAREST)
    out = io.BytesIO()
    image.save(out, format="PNG", optimize=True)
    return out.getvalue()


def world_render_cover(*, world_id: int) -> bool:
    """Render what the world model makes of a world: what it reads in the prompt and, unless the
    creator uploaded one, a cover (a frame at spawn), stamped with the weights' digest.

    Returns whether it rendered. A world deleted meanwhile is skipped, not an error.
    """
    world = World.objects.filter(pk=world_id).first()
    if world is None:
        return False
    spec = (world.prompt, world.seed)
    digest = weights_digest()  # before the render: weights replaced meanwhile render again
    reading = prompt_reading(world.prompt)
    png = None
    if not world.cover or world.cover_generated:
        png = render_cover_png(prompt=world.prompt, seed=world.seed)
    with transaction.atomic():
        # Lock and re-check: the creator may have uploaded a cover or edited the prompt while
        # the frame rendered (an edit schedules a render of its own).
        world = World.objects.select_for_update().filter(pk=world_id).first()
        if world is None or (world.prompt, world.seed) != spec:
            return False
        old = world.cover.name if world.cover else None
        fields = ["model_reading", "model_weights", "updated_at"]
        if png is not None and (not world.cover or world.cover_generated):
            world.cover.save(f"{world.slug}-frame.png", ContentFile(png), save=False)
            world.cover_generated = True
            fields += ["cover", "cover_generated"]
        world.model_reading, world.model_weights = reading, digest
        world.save(update_fields=fields)
    if old and old != world.cover.name:
        world.cover.storage.delete(old)
    return True
