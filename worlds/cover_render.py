"""Covers rendered by the world model: one frame of the world, upscaled with crisp pixels.

The engine is loaded once per process (seconds and hundreds of MB) and is not thread-safe, so
one lock guards it. Celery workers call this through worlds.tasks.render_cover.
"""

import io
import threading

from PIL import Image

SETTLE_FRAMES = 6  # let weather and creatures animate a little before the shot
SCALE = 4  # 128 px frames -> 512 px covers, nearest-neighbour so pixels stay crisp

_lock = threading.Lock()
_engine = None


def _get_engine():
    global _engine
    if _engine is None:
        from inference.world.engine import WorldEngine

        _engine = WorldEngine.load(device="cpu")
    return _engine


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
