"""Recordings: every run kept, replayed, exported as a video and forked from any frame.

The worker writes a session's recording to the media store as it runs (its parts, under
``Recording.key``: `inference.serving.recording`); here the web side keeps its row, reads what
it adds up to, decides who may see and change it, renders its MP4s (a Celery task: the world
replayed frame for frame by the world model, then H.264 through PyAV) and starts forks.
"""

import io
import logging
import threading

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import transaction
from django.db.models import F, Q, Sum
from django.utils import timezone

from inference.serving import recording as rec_format
from sessions import world_store
from sessions.models import EndReason, PlaySession, Recording, VideoStatus
from worlds.catalog_cache import catalog_changed
from worlds.models import Category, World

log = logging.getLogger(__name__)

THUMBNAIL_QUALITY = 85
EXPORT_CRF = 20  # H.264 quality: near-lossless on 128-pixel pixel art, a few hundred KB a minute
EXPORT_SCALE = 4  # pixel art: each frame pixel becomes 4x4 (nearest), so players see it crisp
PREVIEW_S = 4.0  # a card's clip: this long, from the middle of the run, at half the export size


class RecordingConflict(Exception):
    """A request that cannot be done now (an export already running, a private moderated
    run made public, a fork of a Live world): 409."""


# --- who may do what ---------------------------------------------------------------------------
def is_player(recording: Recording, *, user, session_key: str | None) -> bool:
    """One of the players seated in the session it recorded."""
    return any(
        seat.is_held_by(user=user, session_key=session_key)
        for seat in recording.session.seats.all()
    )


def can_see(recording: Recording, *, user, session_key: str | None) -> bool:
    if recording.removed_at is not None:
        return False
    return recording.is_public or is_player(recording, user=user, session_key=session_key)


def visible(*, user, session_key: str | None):
    """Recordings this viewer may see: public ones and their own runs."""
    mine = Q(session__seats__anon_key=session_key) if session_key else Q(pk__in=[])
    if user is not None and user.is_authenticated:
        mine |= Q(session__seats__user=user)
    return (
        Recording.objects.filter(removed_at=None)
        .filter(Q(is_public=True) | mine)
        .distinct()
        .select_related("world", "session")
    )


def public_runs(world, limit: int = 12):
    """A world's public runs, longest first (what its page lists)."""
    return Recording.objects.filter(
        world=world, is_public=True, removed_at=None, complete=True, frames__gt=0
    ).order_by("-duration_s", "-created_at")[:limit]


def runs_of(user, *, private: bool = False, limit: int = 24):
    """A player's runs (their profile): the public ones, or all of them (``private``)."""
    runs = Recording.objects.filter(session__seats__user=user, removed_at=None, frames__gt=0)
    if not private:
        runs = runs.filter(is_public=True)
    return runs.distinct().select_related("world")[:limit]


# --- life of a recording -----------------------------------------------------------------------
def recording_for_ended(*, session: PlaySession) -> Recording | None:
    """The row of an ended session's recording (the worker writes its last part about now).
    None for a session that never ran a world."""
    if session.started_at is None:
        return None
    recording, _ = Recording.objects.get_or_create(
        session=session,
        defaults={"world_id": session.world_id, "world_version_id": session.world_version_id},
    )
    return recording


def recording_refresh(recording: Recording) -> Recording:
    """Read the parts the worker wrote (until the last one is there): frames, duration,
    marks, players and size. Unreadable parts leave it as it was."""
    if recording.complete:
        return recording
    try:
        parts = world_store.StorageWorldStore().load_all(recording.key)
        if not parts:
            return recording
        read = rec_format.read_recording(parts)
    except (ValueError, OSError) as exc:
        log.warning("recording %s unreadable: %s", recording.id, exc)
        return recording
    names = {s.slot: s.name for s in recording.session.seats.all()}
    recording.frames = read.frames
    recording.duration_s = round(read.duration_s, 2)
    recording.size = sum(len(p) for p in parts)
    recording.complete = read.complete or not recording.session.is_active and _stale(recording)
    recording.players = [
        {"slot": slot, "name": names.get(slot, f"Player {slot + 1}")} for slot in read.cameras
    ]
    recording.timeline = {
        "fps": read.fps,
        "weights": read.weights,
        "cameras": {str(slot): cam.frames for slot, cam in read.cameras.items()},
        "marks": read.marks[:500],
    }
    recording.save(
        update_fields=["frames", "duration_s", "size", "complete", "players", "timeline"]
    )
    return recording


def _stale(recording: Recording) -> bool:
    """A session whose worker died writes no last part: after a while, what is there is it."""
    ended = recording.session.ended_at
    return ended is not None and (timezone.now() - ended).total_seconds() > 120


def weights_match(recording: Recording) -> bool:
    """Whether the weights serving now drew it (else its replay would not be its pictures)."""
    from worlds.cover_render import weights_digest

    made_by = (recording.timeline or {}).get("weights", "")
    return not made_by or made_by == weights_digest()


def recording_set_public(recording: Recording, *, public: bool) -> Recording:
    if public and recording.session.end_reason == EndReason.MODERATOR:
        raise RecordingConflict("A run a moderator ended stays private.")
    if public and not recording.world.is_public:
        raise RecordingConflict("This world is not public, so its runs stay private.")
    recording.is_public = bool(public)
    recording.save(update_fields=["is_public"])
    world = recording.world
    if public and not world.preview_picked and recording.duration_s >= PREVIEW_S:
        current = Recording.objects.filter(pk=world.preview_run, is_public=True).first()
        if current is None or current.duration_s < recording.duration_s:
            _queue_preview(recording, picked=False)  # the longest public run is the card's
    elif not public and world.preview_run == recording.pk:
        World.objects.filter(pk=world.pk).update(preview_clip="", preview_run=None,
                                                 preview_picked=False)  # fmt: skip
    catalog_changed()  # the world's page lists its public runs
    return recording


def recording_make_cover(recording: Recording, *, user) -> None:
    """The world's creator picks this public run for its card's clip (rendered in a task)."""
    if user is None or recording.world.creator_id != user.pk:
        raise PermissionDenied("Only the world's creator picks its cover video.")
    if not recording.is_public:
        raise RecordingConflict("Publish the run first: a cover video is seen by everyone.")
    if not weights_match(recording):
        raise RecordingConflict("This run was made by other world model weights.")
    _queue_preview(recording, picked=True)


def _queue_preview(recording: Recording, *, picked: bool) -> None:
    from sessions import tasks

    tasks.render_preview.delay(str(recording.pk), picked)


def recording_delete(recording: Recording) -> None:
    """The row and every file of it: parts, videos, thumbnail (and its world's card clip)."""
    key = recording.key
    if recording.world.preview_run == recording.pk:
        World.objects.filter(pk=recording.world_id).update(
            preview_clip="", preview_run=None, preview_picked=False
        )
        catalog_changed()
    for name in world_store.list_files(key, suffix=""):
        default_storage.delete(f"{key}/{name}")
    recording.delete()


def storage_used(user) -> int:
    """Bytes of recordings and videos of this player's runs."""
    total = (
        Recording.objects.filter(session__seats__user=user)
        .distinct()
        .aggregate(n=Sum(F("size") + F("video_size")))["n"]
    )
    return int(total or 0)


# --- export --------------------------------------------------------------------------------------
def recording_export(recording: Recording, *, user) -> Recording:
    """Queue the MP4 export (every camera); RecordingConflict while one runs or where these
    weights did not draw it; PermissionDenied past the player's limits."""
    from sessions import tasks

    recording = recording_refresh(recording)
    if not recording.complete or recording.frames == 0:
        raise RecordingConflict("This run is still being written; try again in a moment.")
    if not weights_match(recording):
        raise RecordingConflict(
            "This run was made by other world model weights: its pictures cannot be drawn again."
        )
    if user is not None and user.is_authenticated:
        if storage_used(user) > settings.RECORDING_STORAGE_PER_USER:
            raise PermissionDenied("Your recordings use all the storage you have.")
    with transaction.atomic():
        locked = Recording.objects.select_for_update().get(pk=recording.pk)
        if locked.video_status in (VideoStatus.QUEUED, VideoStatus.RENDERING):
            raise RecordingConflict("An export of this run is already running.")
        if locked.video_status == VideoStatus.READY:
            return locked
        locked.video_status, locked.video_progress = VideoStatus.QUEUED, 0
        locked.save(update_fields=["video_status", "video_progress"])
    tasks.export_recording.delay(str(recording.pk))  # after the commit above: the task sees it
    return locked


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
    import simplejpeg

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
                    jpeg = simplejpeg.encode_jpeg(
                        frame, quality=THUMBNAIL_QUALITY, colorspace="RGB"
                    )
                    thumb = _save(recording, "thumbnail.jpg", jpeg)
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


# --- forks ---------------------------------------------------------------------------------------
def recording_fork(
    recording: Recording, *, frame, slot, user, session_key: str, client_ip: str | None
) -> PlaySession:
    """A new live session whose world starts as the run's was at camera ``slot``'s frame
    ``frame`` (that camera's avatar is the new player's), with the story so far."""
    from sessions import services

    recording = recording_refresh(recording)
    cameras = (recording.timeline or {}).get("cameras", {})
    slot = recording.players[0]["slot"] if slot is None and recording.players else slot
    errors = {}
    if not isinstance(slot, int) or str(slot) not in cameras:
        errors["slot"] = [f"No camera {slot!r} in this run: one of {sorted(cameras)}."]
    elif (
        not isinstance(frame, int)
        or isinstance(frame, bool)
        or not (0 <= frame < int(cameras[str(slot)]))
    ):
        errors["frame"] = [f"A frame from 0 to {int(cameras[str(slot)]) - 1}."]
    if errors:
        raise ValidationError(errors)
    if recording.world.category == Category.LIVE:
        raise RecordingConflict("A Live world keeps one world for everyone: it cannot be forked.")
    if not weights_match(recording):
        raise RecordingConflict(
            "This run was made by other world model weights: its world cannot be restored."
        )
    return services.session_create(
        world_slug=recording.world.slug,
        user=user,
        session_key=session_key,
        client_ip=client_ip,
        fork=(recording, frame, slot),
    )
