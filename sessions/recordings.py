"""Recordings: every run kept, replayed, exported as a video and forked from any frame.

The worker writes a session's recording to the media store as it runs (its parts, under
``Recording.key``: `inference.serving.recording`); here the web side keeps its row, reads what
it adds up to, decides who may see and change it and queues its MP4s (recording_videos.py,
in a Celery task). Forks are in forks.py.
"""

import logging

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.core.files.storage import default_storage
from django.db import transaction
from django.db.models import F, Q, QuerySet, Sum
from django.utils import timezone

from inference.serving import recording as rec_format
from sessions import tasks, world_store
from sessions.models import EndReason, Recording, VideoStatus
from sessions.recording_videos import PREVIEW_S
from worlds.catalog_cache import catalog_changed
from worlds.models import World

log = logging.getLogger(__name__)


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


def visible(*, user, session_key: str | None) -> QuerySet[Recording]:
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


def public_runs(world: World, limit: int = 12) -> QuerySet[Recording]:
    """A world's public runs, longest first (what its page lists)."""
    return Recording.objects.filter(
        world=world, is_public=True, removed_at=None, complete=True, frames__gt=0
    ).order_by("-duration_s", "-created_at")[:limit]


def runs_of(user, *, private: bool = False, limit: int = 24) -> QuerySet[Recording]:
    """A player's runs (their profile): the public ones, or all of them (``private``)."""
    runs = Recording.objects.filter(session__seats__user=user, removed_at=None, frames__gt=0)
    if not private:
        runs = runs.filter(is_public=True)
    return runs.distinct().select_related("world")[:limit]


# --- life of a recording (its row is made as its session ends: services.py) --------------------
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
