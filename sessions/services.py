"""Writes for live play: create, place, start, end, queue promotion and the session limits.

Placement lives in Redis (or in memory for the embedded default) behind
`worker_client.get_placement()`; the catalog row here mirrors it. Every function is safe to
call twice: ending an ended session or promoting an empty queue changes nothing.

Everyone playing a session has a ``Seat``: seats.py builds on these services (create a
session, join, leave, remove, reap) and none of them imports it. The limits per player count
seats, and a session ends when its last seat is left.
"""

import logging
from datetime import datetime, timedelta

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.db.models import QuerySet
from django.utils import timezone

from inference.serving import messages
from sessions.models import (
    ACTIVE_STATUSES,
    EndReason,
    PlaySession,
    Recording,
    Seat,
    SessionStatus,
)
from sessions.worker_client import get_placement, send_sync
from worlds.models import World
from worlds.moderation import policy

log = logging.getLogger(__name__)


class SessionLimitReached(Exception):
    """The player (or their browser, or their IP) already runs as many sessions as allowed."""


def lock_players(*keys: str) -> None:
    """Serialise session creation per player key: two tabs posting at once would both pass the
    count below and exceed the limit. PostgreSQL advisory locks last until the transaction ends;
    SQLite (embedded default) already serialises writers."""
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        for key in sorted(keys):
            cursor.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", [f"play:{key}"])


def check_limits(
    *, user: AbstractBaseUser | None, session_key: str, client_ip: str | None, leaving: int = 0
) -> None:
    """Raise SessionLimitReached when this player already sits in as many sessions as allowed
    (every seat counts: their own sessions and the shared ones they joined). ``leaving``: seats
    of theirs about to be left (they do not count)."""
    seats = Seat.objects.filter(left_at=None, session__status__in=ACTIVE_STATUSES)
    if user is not None:
        if seats.filter(user=user).count() - leaving >= settings.SESSION_MAX_PER_USER:
            raise SessionLimitReached("You already have the most sessions running at once.")
        return
    if seats.filter(anon_key=session_key).count() - leaving >= (
        settings.SESSION_MAX_ANON_PER_BROWSER
    ):
        raise SessionLimitReached("This browser already has a session running. Sign in for more.")
    if client_ip and seats.filter(user=None, client_ip=client_ip).count() - leaving >= (
        settings.SESSION_MAX_ANON_PER_IP
    ):
        raise SessionLimitReached("Too many anonymous sessions from your network. Sign in to play.")


def player_keys(*, user, session_key: str, client_ip: str | None) -> tuple[str, str]:
    return (f"user:{user.pk}" if user else f"anon:{session_key}", f"ip:{client_ip}")


def player_seats(*, user, session_key: str) -> QuerySet[Seat]:
    """This player's seats in running sessions."""
    seats = Seat.objects.filter(left_at=None, session__status__in=ACTIVE_STATUSES)
    return (
        seats.filter(user=user)
        if user is not None
        else seats.filter(user=None, anon_key=session_key)
    )


def player_of(user: AbstractBaseUser | None, session_key: str) -> AbstractBaseUser | None:
    """The signed-in player, or None for an anonymous one (who needs a browser session)."""
    if user is not None and not user.is_authenticated:
        user = None
    if user is None and not session_key:
        raise ValidationError({"detail": ["Anonymous play needs a browser session (cookies)."]})
    if user is not None:
        policy.ensure_not_suspended(user)  # UserSuspended (a PermissionDenied) says why, until when
    return user


def max_players_for(world: World) -> int:
    return max(1, min(world.max_players, settings.SESSION_MAX_PLAYERS))


def active_seat_count(session: PlaySession) -> int:
    return session.seats.filter(left_at=None).count()


def place(session: PlaySession) -> PlaySession:
    """Reserve a worker with room for every seated player, or queue the session."""
    placement = get_placement()
    worker = placement.reserve_slot(str(session.id), seats=max(1, active_seat_count(session)))
    if worker is None:
        placement.enqueue(str(session.id))
        return session
    return _mark_started(session=session, worker=worker)


def _mark_started(*, session: PlaySession, worker: str) -> PlaySession:
    now = timezone.now()
    PlaySession.objects.filter(pk=session.pk, status=SessionStatus.QUEUED).update(
        status=SessionStatus.STARTING, worker_name=worker, started_at=now, last_input_at=now
    )
    session.refresh_from_db()
    return session


def session_ensure_placed(*, session: PlaySession) -> tuple[str | None, bool]:
    """The worker holding this session now, re-placing it if it lost its slot;
    -> (worker, restore?). (None, False): it waits, in the queue or as a dead worker's orphan
    that a live worker will claim and resume by itself."""
    placement = get_placement()
    sid = str(session.id)
    worker = placement.worker_of(sid)
    if worker is not None:
        if worker != session.worker_name:
            PlaySession.objects.filter(pk=session.pk).update(worker_name=worker)
        return worker, False
    if sid in placement.orphans():
        # Failover owns it: reserving here too would place it on two workers.
        session_set_state(session_id=session.pk, state=SessionStatus.RESUMING)
        return None, False
    worker = placement.reserve_slot(sid, seats=max(1, active_seat_count(session)))
    if worker is None:
        PlaySession.objects.filter(pk=session.pk, status__in=ACTIVE_STATUSES).update(
            status=SessionStatus.QUEUED, worker_name=""
        )
        placement.enqueue(sid)
        return None, False
    restore = placement.load_snapshot(sid) is not None
    state = SessionStatus.RESUMING if restore else SessionStatus.STARTING
    PlaySession.objects.filter(pk=session.pk, status__in=ACTIVE_STATUSES).update(
        status=state, worker_name=worker, started_at=session.started_at or timezone.now()
    )
    return worker, restore


def session_queue_position(*, session: PlaySession) -> int | None:
    if session.status != SessionStatus.QUEUED:
        return None
    return get_placement().queue_position(str(session.id))


def queue_promote() -> list[PlaySession]:
    """Give freed slots to queued sessions, first come first served; -> the sessions started.

    Each started session's consumers hear `session.placed` and attach it to its worker.
    """
    placement = get_placement()
    started = []
    while _free_slots(placement) > 0:
        head = placement.dequeue_next()
        if head is None:
            break
        session = PlaySession.objects.filter(pk=head, status=SessionStatus.QUEUED).first()
        if session is None:
            continue  # ended while it waited
        worker = placement.reserve_slot(head, seats=max(1, active_seat_count(session)))
        if worker is None:
            # Another web process took the last slot between the count and the reservation:
            # the session goes back to the head of the queue, its place kept.
            placement.enqueue(head, front=True)
            break
        session = _mark_started(session=session, worker=worker)
        group_send(session.id, messages.Placed(worker=worker))
        started.append(session)
    return started


def _free_slots(placement) -> int:
    """Free seats on live workers (a queued session may need more than one: reserving says)."""
    free = sum(
        max(0, w["capacity"] - w["load"]) for w in placement.live_workers() if not w["draining"]
    )
    # A dead worker's orphans take free slots before the queue does (failover comes first).
    return free - len(placement.orphans())


def session_end(
    *, session: PlaySession, reason: str, failed: bool = False, message: str | None = None
) -> PlaySession:
    """End a session: free its slot, tell its worker and every connected client, start the next
    queued one. Ending an ended session returns it unchanged.

    `reason` is an EndReason code or, from a moderator, their own words; `message`, when given,
    is what the player sees instead (a moderator's decision, say).
    """
    session, ended = _record_end(session=session, reason=reason, failed=failed)
    if ended:
        _after_end(session=session, reason=reason, message=message)
        queue_promote()
    return session


def _after_end(*, session: PlaySession, reason: str, message: str | None = None) -> None:
    """Outside the database: free the slot, tell the worker and the clients."""
    placement = get_placement()
    placement.release_slot(str(session.id))
    placement.remove_from_queue(str(session.id))
    placement.delete_snapshot(str(session.id))
    if session.worker_name:
        send_sync(session.worker_name, messages.End(session_id=str(session.id), reason=reason))
    group_send(session.id, messages.Status(state="ended", reason=message or reason))


def session_ended_by_worker(*, session_id, reason: str | None) -> None:
    """The worker ended the session on its own, or confirms an end: record it once.

    The worker has already freed its slot and told the clients, so nothing goes back to it. A
    failure code (``messages.WORKER_FAILURES``) marks the session failed."""
    session = PlaySession.objects.filter(pk=session_id).first()
    if session is None:
        return
    if reason in messages.WORKER_FAILURES:
        _, ended = _record_end(session=session, reason=EndReason.FAILED, failed=True)
    else:
        known = reason in EndReason.values
        _, ended = _record_end(session=session, reason=reason if known else EndReason.WORKER)
    if ended:
        get_placement().remove_from_queue(str(session_id))
        queue_promote()


def _record_end(
    *, session: PlaySession, reason: str, failed: bool = False
) -> tuple[PlaySession, bool]:
    """Mark the row ended; -> (the locked row, whether this call ended it)."""
    with transaction.atomic():
        # Row lock: the player's DELETE, the reaper and a moderator may end it at the same time;
        # only the first one records the reason and notifies.
        session = PlaySession.objects.select_for_update().get(pk=session.pk)
        if not session.is_active:
            return session, False
        session.status = SessionStatus.FAILED if failed else SessionStatus.ENDED
        session.ended_at = timezone.now()
        session.end_reason = str(reason)[:200]
        session.frames_generated = max(session.frames_generated, _frames_of(session))
        session.save(update_fields=["status", "ended_at", "end_reason", "frames_generated"])
        session.seats.filter(left_at=None).update(
            left_at=session.ended_at, left_reason=session.end_reason
        )
        if settings.RECORD_SESSIONS:
            recording_for_ended(session=session)
    return session, True


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


def _frames_of(session: PlaySession) -> int:
    try:
        return int(get_placement().session_frames(str(session.id)) or 0)
    except Exception:  # noqa: BLE001 - a missing counter never blocks ending a session
        log.exception("could not read the frame counter of %s", session.id)
        return 0


def session_set_state(*, session_id, state: str, worker: str | None = None) -> None:
    """Mirror the worker's view (starting/live/resuming) into the catalog row."""
    if state not in (SessionStatus.STARTING, SessionStatus.LIVE, SessionStatus.RESUMING):
        return
    fields = {"status": state}
    if worker:
        fields["worker_name"] = worker
    PlaySession.objects.filter(pk=session_id, status__in=ACTIVE_STATUSES).exclude(
        status=SessionStatus.QUEUED
    ).update(**fields)


def session_touch_input(*, session_id, at: datetime, slot: int = 0) -> None:
    PlaySession.objects.filter(pk=session_id).update(last_input_at=at)
    Seat.objects.filter(session_id=session_id, slot=slot, left_at=None).update(last_input_at=at)


def session_record_viewers(*, session_id, viewers: int) -> None:
    PlaySession.objects.filter(pk=session_id, peak_viewers__lt=viewers).update(peak_viewers=viewers)


def session_too_long(*, session: PlaySession, now: datetime) -> bool:
    """Past the maximum length (a Live world's always-on session has none: its players do)."""
    if session.status == SessionStatus.QUEUED or session.started_at is None:
        return False
    limit = timedelta(seconds=settings.SESSION_MAX_SECONDS)
    return not session.is_live_world and now - session.started_at >= limit


def seat_expiry_reason(*, seat: Seat, now: datetime, last_input: datetime | None) -> str | None:
    """Why this player must leave their seat now (idle, too long), or None."""
    session = seat.session
    if session.status == SessionStatus.QUEUED or session.started_at is None:
        return None
    if session_too_long(session=session, now=now) or (
        session.is_live_world
        and now - seat.joined_at >= timedelta(seconds=settings.SESSION_MAX_SECONDS)
    ):
        return EndReason.MAX_LENGTH
    started = max(session.started_at, seat.joined_at)
    last = max(filter(None, [last_input, seat.last_input_at, started]))
    if now - last >= timedelta(seconds=settings.SESSION_IDLE_SECONDS):
        return EndReason.IDLE
    return None


def session_end_for_world(*, world: World, reason: str, message: str | None = None) -> int:
    """End every running session of a world (it was removed or unpublished)."""
    sessions = list(PlaySession.objects.filter(world=world, status__in=ACTIVE_STATUSES))
    for session in sessions:
        session_end(session=session, reason=reason, message=message)
    return len(sessions)


def group_send(session_id, message: messages.Message) -> None:
    """Tell every consumer of the session (the player's and the spectators')."""
    try:
        async_to_sync(get_channel_layer().group_send)(
            messages.session_group(session_id), message.to_message()
        )
    except Exception:  # noqa: BLE001
        log.exception("could not notify session %s", session_id)
