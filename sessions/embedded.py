"""The embedded default: one inference worker and the session reaper inside the web process.

``INFERENCE_IN_PROCESS`` (default: on when no ``REDIS_URL`` is set) is the one setting that
decides it, read here only. Then Daphne's event loop also runs an ``InferenceWorker`` on the
in-memory channel layer and placement, started lazily by the first player socket, and reaps
idle, too long and abandoned sessions itself, as the ``reap-play-sessions`` beat task does in
production.
"""

import asyncio
import logging

from channels.db import database_sync_to_async
from django.conf import settings

from inference.serving.config import WorkerConfig
from sessions import seats
from sessions.worker_client import get_placement, screen_generated_line
from sessions.world_store import StorageWorldStore
from worlds.cover_render import weights_digest

log = logging.getLogger(__name__)

REAP_EVERY_S = 30.0

_worker = None
_worker_task: asyncio.Task | None = None
_reaper: asyncio.Task | None = None


def enabled() -> bool:
    return settings.INFERENCE_IN_PROCESS


async def ensure_started() -> None:
    """Start the in-process worker and reaper in this event loop, once (no-op when off)."""
    global _worker, _worker_task, _reaper
    if not enabled():
        return
    if _worker_task is None or _worker_task.done():
        from channels.layers import get_channel_layer

        from inference.serving.worker import InferenceWorker

        _worker = InferenceWorker(
            _config_from_settings(),
            channel_layer=get_channel_layer(),
            placement=get_placement(),
            screen=screen_generated_line,
            world_store=StorageWorldStore(),
        )
        # Not awaited: loading the model takes seconds; queued sessions start once it registers.
        _worker_task = asyncio.get_running_loop().create_task(_worker.run())
        log.info("starting the in-process inference worker")
    if _reaper is None or _reaper.done():
        _reaper = asyncio.get_running_loop().create_task(_reap_forever())


def _config_from_settings() -> WorkerConfig:
    return WorkerConfig(
        name="inprocess",
        device=settings.INFERENCE_DEVICE,
        capacity=settings.INFERENCE_CAPACITY,
        fps=settings.INFERENCE_FPS,
        threads=settings.INFERENCE_THREADS,
        record=settings.RECORD_SESSIONS,
        weights_digest=weights_digest(),
        vote_window_s=settings.STORY_VOTE_SECONDS,
    )


async def stop() -> None:
    global _worker, _worker_task, _reaper
    if _reaper is not None:
        _reaper.cancel()
    if _worker is not None:
        await _worker.stop()
    if _worker_task is not None:
        await asyncio.wait([_worker_task], timeout=10)
    _worker, _worker_task, _reaper = None, None, None


async def _reap_forever() -> None:
    while True:
        await asyncio.sleep(REAP_EVERY_S)
        try:
            await database_sync_to_async(seats.sessions_reap)()
        except Exception:  # noqa: BLE001 - one bad round must not stop the next
            log.exception("reaping play sessions failed")
