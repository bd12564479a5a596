"""The web side's handle on placement (`inference/placement.py`) and the embedded worker.

Redis when `REDIS_URL` is set (every web process and worker shares one registry and queue);
otherwise one process-wide in-memory placement that the in-process worker shares.
"""

import asyncio
import logging
import threading

from django.conf import settings

from inference.placement import InMemoryPlacement, RedisPlacement

log = logging.getLogger(__name__)

_lock = threading.Lock()
_placements: dict[str, object] = {}
_inprocess_worker = None
_inprocess_task: asyncio.Task | None = None


def get_placement():
    """One placement client per process (per Redis URL)."""
    key = settings.REDIS_URL or "memory"
    with _lock:
        if key not in _placements:
            _placements[key] = (
                RedisPlacement(settings.REDIS_URL) if settings.REDIS_URL else InMemoryPlacement()
            )
        return _placements[key]


async def ensure_inprocess_worker() -> None:
    """Embedded default: start one inference worker inside this (Daphne) event loop, once."""
    global _inprocess_worker, _inprocess_task
    if not settings.INFERENCE_IN_PROCESS:
        return
    if _inprocess_task is not None and not _inprocess_task.done():
        return
    from channels.layers import get_channel_layer

    from inference.worker import InferenceWorker

    _inprocess_worker = InferenceWorker(
        name="inprocess",
        device=settings.INFERENCE_DEVICE,
        capacity=settings.INFERENCE_CAPACITY,
        fps=settings.INFERENCE_FPS,
        channel_layer=get_channel_layer(),
        placement=get_placement(),
    )
    # Not awaited: loading the model takes seconds; queued sessions start once it registers.
    _inprocess_task = asyncio.get_running_loop().create_task(_inprocess_worker.run())
    log.info("starting the in-process inference worker")


async def stop_inprocess_worker() -> None:
    global _inprocess_worker, _inprocess_task
    if _inprocess_worker is not None:
        await _inprocess_worker.stop()
    if _inprocess_task is not None:
        await asyncio.wait([_inprocess_task], timeout=10)
    _inprocess_worker, _inprocess_task = None, None
