"""Celery tasks for live play: thin shells over the services."""

from celery import shared_task

from sessions import recording_videos, seats, world_store


@shared_task
def reap_sessions() -> int:
    """Periodic: idle, too long, or abandoned sessions (a grace timer dies with its web process)."""
    return len(seats.sessions_reap())


@shared_task
def export_recording(recording_id: str) -> None:
    """A recording's MP4s, rendered from its replay (progress on the row)."""
    recording_videos.export_video(recording_id)


@shared_task
def render_preview(recording_id: str, picked: bool) -> None:
    """A world's gallery-card clip from one of its public runs."""
    recording_videos.render_preview(recording_id, picked)


@shared_task
def forget_stale_live_worlds() -> int:
    """Daily: kept Live worlds whose last session ended LIVE_WORLD_KEEP_DAYS ago."""
    return world_store.forget_stale()
