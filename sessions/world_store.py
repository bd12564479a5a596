"""The worker's media store: the default storage (S3 when configured, local media otherwise).
Live worlds are kept between sessions under ``live-worlds/``, and recordings written under
``recordings/`` (`inference.serving.recording`; `sessions.recordings` reads them).

The worker (Django-free) is handed ``StorageWorldStore()`` by the web process or the
``inference_worker`` command; it loads the kept world when a Live world's session starts and
saves it when the session ends. A kept world is deleted ``LIVE_WORLD_KEEP_DAYS`` after its
last session ended (``sessions.tasks.forget_stale_live_worlds``), and a new published version
of the world starts from a fresh one (the key names the version).
"""

import logging
from datetime import timedelta

from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.utils import timezone

log = logging.getLogger(__name__)

PREFIX = "live-worlds"
RECORDINGS = "recordings"
MAX_BYTES = 16 * 1024 * 1024  # a kept world is a few hundred KB; refuse to read a huge file


def key_for(session) -> str:
    return f"{PREFIX}/{session.world_id}/{session.world_version_id}.pxw"


class StorageWorldStore:
    def load(self, key: str) -> bytes | None:
        if not key.startswith(f"{PREFIX}/") or not default_storage.exists(key):
            return None
        if default_storage.size(key) > MAX_BYTES:
            log.warning("kept world %s is too large; starting fresh", key)
            return None
        with default_storage.open(key, "rb") as f:
            return f.read()

    def save(self, key: str, data: bytes) -> None:
        if not key.startswith((f"{PREFIX}/", f"{RECORDINGS}/")) or ".." in key:
            raise ValueError(f"not a kept-world or recording key: {key!r}")
        # Local storage renames on a clash instead of overwriting: make room first.
        if default_storage.exists(key):
            default_storage.delete(key)
        default_storage.save(key, ContentFile(data))

    def load_all(self, prefix: str) -> list[bytes]:
        """Every file directly under a recording's folder, in name order."""
        prefix = prefix.rstrip("/")
        if not prefix.startswith(f"{RECORDINGS}/") or ".." in prefix:
            raise ValueError(f"not a recording: {prefix!r}")
        out = []
        for name in list_files(prefix):
            if default_storage.size(f"{prefix}/{name}") > MAX_BYTES:
                raise ValueError(f"recording part {name} is too large")
            with default_storage.open(f"{prefix}/{name}", "rb") as f:
                out.append(f.read())
        return out


def list_files(folder: str, suffix: str = ".pxr") -> list[str]:
    """Names of the files directly in a storage folder ending in ``suffix``, sorted."""
    try:
        _, files = default_storage.listdir(folder)
    except FileNotFoundError:
        return []
    return sorted(f for f in files if f.endswith(suffix))


def forget_stale(*, now=None) -> int:
    """Delete kept worlds older than LIVE_WORLD_KEEP_DAYS; -> how many."""
    cutoff = (now or timezone.now()) - timedelta(days=settings.LIVE_WORLD_KEEP_DAYS)
    removed = 0
    try:
        worlds, _ = default_storage.listdir(PREFIX)
    except FileNotFoundError:
        return 0
    for world in worlds:
        _, files = default_storage.listdir(f"{PREFIX}/{world}")
        for name in files:
            key = f"{PREFIX}/{world}/{name}"
            if default_storage.get_modified_time(key) < cutoff:
                default_storage.delete(key)
                removed += 1
    return removed
