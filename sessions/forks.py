"""Forks: play on from any frame of a run, in a new live session whose world starts there."""

from django.core.exceptions import ValidationError

from sessions import recordings, seats
from sessions.models import PlaySession, Recording
from worlds.models import Category


def recording_fork(
    recording: Recording, *, frame, slot, user, session_key: str, client_ip: str | None
) -> tuple[PlaySession, bool]:
    """A new live session whose world starts as the run's was at camera ``slot``'s frame
    ``frame`` (that camera's avatar is the new player's), with the story so far;
    -> (session, created), as `seats.session_create`."""
    recording = recordings.recording_refresh(recording)
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
        raise recordings.RecordingConflict(
            "A Live world keeps one world for everyone: it cannot be forked."
        )
    if not recordings.weights_match(recording):
        raise recordings.RecordingConflict(
            "This run was made by other world model weights: its world cannot be restored."
        )
    return seats.session_create(
        world_slug=recording.world.slug,
        user=user,
        session_key=session_key,
        client_ip=client_ip,
        fork=(recording, frame, slot),
    )
