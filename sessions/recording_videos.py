"""A run's videos: its MP4 export (every camera) and its world's card clip, rendered in Celery
tasks by replaying the world frame for frame with the world model, then H.264 through PyAV."""

import io
import logging
import threading

from django.core.files.base import ContentFile
from django.core.files.storage import default_storage

from inference.serving import recording as rec_format
from sessions import world_store
from sessions.models import Recording, VideoStatus
from worlds.catalog_cache import catalog_changed
from worlds.models import World

log = logging.getLogger(__name__)

THUMBNAIL_QUALITY = 85
EXPORT_CRF = 20  # H.264 quality: near-lossless on the decoder's 192-pixel frames
EXPORT_SCALE = 4  # pixel art: each frame pixel becomes 4x4 (nearest), so players see it crisp
PREVIEW_S = 4.0  # a card's clip: this long, from the middle of the run, at half the export size

_engine = None
_engine_lock = threading.Lock()


def _replay_engine():
    """One world model per process for replays (loaded on first use); one replay at a time."""
    global _engine
    if _engine is None:
        from inference.world.engine import WorldEngine

        engine = WorldEngine.load()
        engine.generate = False
        _engine = engine
    return _engine


def export_video(recording_id) -> None:
    """The Celery task's work: replay each camera and encode it (H.264, MP4) with the world,
    version, seed and prompt in its metadata; progress in `video_progress`."""
    from inference.serving.frames import jpeg

    recording = Recording.objects.select_related("world_version", "world").get(pk=recording_id)
    version = recording.world_version
    Recording.objects.filter(pk=recording.pk).update(video_status=VideoStatus.RENDERING)
    try:
        read = rec_format.read_recording(world_store.StorageWorldStore().load_all(recording.key))
        total = sum(c.frames for c in read.cameras.values()) or 1
        meta = {
            "title": version.title,
            "comment": f"Parallax world {recording.world.slug} version {version.number}"
                       f" seed {version.seed}",
            "description": version.prompt[:1000],
            "artist": read.weights or "",
        }  # fmt: skip
        done, videos, size, thumb = 0, {}, 0, ""

        def counted(frames, slot: int, middle: int):
            nonlocal done, thumb
            for i, frame in enumerate(frames):
                if slot == read.lead and i == middle:
                    thumb = _save(recording, "thumbnail.jpg", jpeg(frame, THUMBNAIL_QUALITY))
                done += 1
                if done % 240 == 0:
                    Recording.objects.filter(pk=recording.pk).update(
                        video_progress=min(99, 100 * done // total)
                    )
                yield frame

        with _engine_lock:
            replay = rec_format.Replay(_replay_engine(), read)
            for slot, camera in sorted(read.cameras.items()):
                frames = counted(replay.frames(slot), slot, camera.frames // 2)
                data = _mp4(frames, read.fps, scale=EXPORT_SCALE, metadata=meta)
                size += len(data)
                videos[str(slot)] = _save(recording, f"camera-{slot}.mp4", data)
    except Exception:
        log.exception("export of recording %s failed", recording_id)
        Recording.objects.filter(pk=recording.pk).update(video_status=VideoStatus.FAILED)
        raise
    Recording.objects.filter(pk=recording.pk).update(
        video_status=VideoStatus.READY, video_progress=100, videos=videos, video_size=size,
        thumbnail=thumb or recording.thumbnail,
    )  # fmt: skip


def _mp4(frames, fps: float, *, scale: int, metadata: dict | None = None) -> bytes:
    """RGB frames -> MP4 bytes (H.264, yuv420p), each pixel ``scale`` x ``scale`` (nearest:
    pixel art stays crisp, and the chroma halving blurs no edge)."""
    import av
    import numpy as np

    out = io.BytesIO()
    with av.open(out, "w", format="mp4") as box:
        box.metadata.update(metadata or {})
        stream = box.add_stream("libx264", rate=round(fps) or 24)
        stream.pix_fmt = "yuv420p"
        stream.options = {"crf": str(EXPORT_CRF), "preset": "veryfast"}
        for i, frame in enumerate(frames):
            big = np.repeat(np.repeat(frame, scale, 0), scale, 1)
            if i == 0:
                stream.height, stream.width = big.shape[:2]
            for packet in stream.encode(av.VideoFrame.from_ndarray(big, "rgb24")):
                box.mux(packet)
        for packet in stream.encode():
            box.mux(packet)
    return out.getvalue()


def render_preview(recording_id, picked: bool) -> None:
    """The Celery task's work: a few seconds from the middle of the run's lead camera, small,
    looped on its world's gallery card."""
    recording = Recording.objects.select_related("world").get(pk=recording_id)
    read = rec_format.read_recording(world_store.StorageWorldStore().load_all(recording.key))
    n = int(PREVIEW_S * (read.fps or 24))
    first = max(0, read.frames // 2 - n // 2)
    with _engine_lock:
        frames = rec_format.Replay(_replay_engine(), read).frames()
        clip = [f for i, f in enumerate(frames) if first <= i < first + n]
    data = _mp4(clip, read.fps, scale=EXPORT_SCALE // 2)
    key = _save(recording, "preview.mp4", data)
    World.objects.filter(pk=recording.world_id).update(
        preview_clip=key, preview_run=recording.pk, preview_picked=picked
    )
    catalog_changed()


def _save(recording: Recording, name: str, data: bytes) -> str:
    key = f"{recording.key}/{name}"
    if default_storage.exists(key):
        default_storage.delete(key)
    return default_storage.save(key, ContentFile(data))
