"""Writes for live play: create, place, start, end, queue promotion and the session limits.

Placement lives in Redis (or in memory for the embedded default) behind
`worker_client.get_placement()`; the catalog row here mirrors it. Every function is safe to
call twice: ending an ended session or promoting an empty queue changes nothing.

Everyone playing a session has a ``Seat`` (seats.py: join, leave, remove); the limits per
player count seats, and a session ends when its last seat is left.
"""

import logging
from datetime import datetime, timedelta

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.db.models import Prefetch
from django.utils import timezone

from inference.serving import messages
from sessions import recordings
from sessions.models import ACTIVE_STATUSES, EndReason, PlaySession, Seat, SessionStatus
from sessions.worker_client import get_placement, send_sync
from worlds.models import Category, World
from worlds.moderation import policy
from worlds.selectors import world_get_playable
from worlds.services import world_record_play

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


def player_seats(*, user, session_key: str):
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


def session_create(
    *,
    world_slug: str,
    user: AbstractBaseUser | None,
    session_key: str,
    client_ip: str | None,
    is_public: bool = True,
    shared: bool = False,
    name: str | None = None,
    fork: tuple | None = None,
) -> tuple[PlaySession, bool]:
    """Start (or return the running) session of this player in this world; -> (session, created).

    Raises World.DoesNotExist, ValidationError or SessionLimitReached. A player has at most one
    running session per world: opening the play page again resumes it. Their seats in other
    worlds whose socket is gone are left (``switched``): opening a world leaves the last one.
    A ``shared`` session seats up to the world's ``max_players`` (capped by
    ``SESSION_MAX_PLAYERS``); a Live-category world always seats the player in its one public
    shared session (``seats.live_world_join``). ``fork``: (recording, frame, slot): a new
    session of the recording's version whose world starts there (`sessions.recordings`); the
    player's running session in this world is left for it.
    """
    from sessions import seats  # seats builds on these services

    user = player_of(user, session_key)
    world = world_get_playable(slug=world_slug, viewer=user)
    if world.current_version_id is None:
        raise ValidationError({"world": ["This world has no published version to play yet."]})
    if world.category == Category.LIVE:
        return seats.live_world_join(
            world=world, user=user, session_key=session_key, client_ip=client_ip, name=name
        )
    seat_name = seats.seat_name(user=user, name=name, slot=0)
    with transaction.atomic():
        lock_players(*player_keys(user=user, session_key=session_key, client_ip=client_ip))
        mine = player_seats(user=user, session_key=session_key)
        running = mine.filter(session__world=world).select_related("session").first()
        if running is not None and fork is None:
            return running.session, False
        # Opening another world leaves the last one: this player's seats whose socket is gone
        # are left now instead of holding the limit until their reconnect grace runs out.
        stale = list(mine.exclude(disconnected_at=None).select_related("session"))
        if running is not None and running not in stale:
            stale.append(running)  # a fork leaves the run it came from
        check_limits(user=user, session_key=session_key, client_ip=client_ip, leaving=len(stale))
        recording, frame, slot = fork or (None, 0, 0)
        session = PlaySession.objects.create(
            world=world,
            world_version_id=recording.world_version_id if fork else world.current_version_id,
            forked_from=recording,
            forked_frame=frame,
            forked_slot=slot,
            player=user,
            anon_key="" if user else session_key,
            client_ip=client_ip,
            is_public=is_public,
            is_shared=shared,
            max_players=max_players_for(world) if shared else 1,
            # No socket yet: a player who never connects is reaped after the reconnect grace.
            disconnected_at=timezone.now(),
        )
        Seat.objects.create(
            session=session,
            slot=0,
            name=seat_name,
            user=user,
            anon_key="" if user else session_key,
            client_ip=client_ip,
            disconnected_at=timezone.now(),
        )
    for seat in stale:
        seats.seat_leave(seat=seat, reason=EndReason.SWITCHED)
    # Placement is in Redis, outside the transaction: reserve only once the row exists.
    session = place(session)
    world_record_play(world=world)
    return session, True


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
        _group_send(session.id, messages.Placed(worker=worker))
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
    _group_send(session.id, messages.Status(state="ended", reason=message or reason))


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
            recordings.recording_for_ended(session=session)
    return session, True


def _frames_of(session: PlaySession) -> int:
    counters = getattr(get_placement(), "session_frames", None)
    if counters is None:
        return 0
    try:
        return int(counters(str(session.id)) or 0)
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


def seat_expiry_reason(*, seat: Seat, now: datetime, last_input: datetime | None):
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


def sessions_reap(*, now: datetime | None = None) -> list[PlaySession]:
    """Unseat every player who is idle, too long, or gone past the grace (a session ends with
    its last seat) and end sessions past their length; -> the sessions that ended."""
    from sessions import seats

    now = now or timezone.now()
    grace = timedelta(seconds=settings.SESSION_RECONNECT_GRACE_SECONDS)
    ended = []
    # Every open seat in one query, not one per session: the reaper runs every few seconds.
    open_seats = Prefetch("seats", queryset=Seat.objects.filter(left_at=None), to_attr="open")
    for session in PlaySession.objects.filter(status__in=ACTIVE_STATUSES).prefetch_related(
        open_seats
    ):
        if session_too_long(session=session, now=now):
            ended.append(session_end(session=session, reason=EndReason.MAX_LENGTH))
            continue
        staying = 0
        for seat in session.open:
            reason = seat_expiry_reason(seat=seat, now=now, last_input=None)
            if reason is None and seat.disconnected_at and now - seat.disconnected_at >= grace:
                reason = EndReason.ABANDONED
            if reason is not None:
                seats.seat_leave(seat=seat, reason=reason)
            else:
                staying += 1
        # Every seat left (or none was ever taken): the session goes with them, unless a
        # player took a seat since the seats were read.
        if not staying and not session.seats.filter(left_at=None).exists():
            ended.append(session_end(session=session, reason=EndReason.ABANDONED))
    queue_promote()
    return ended


def session_end_for_world(*, world: World, reason: str, message: str | None = None) -> int:
    """End every running session of a world (it was removed or unpublished)."""
    sessions = list(PlaySession.objects.filter(world=world, status__in=ACTIVE_STATUSES))
    for session in sessions:
        session_end(session=session, reason=reason, message=message)
    return len(sessions)


def session_end_for_player(*, user, reason: str, message: str | None = None) -> int:
    """End every running session a player created, and unseat them from everyone else's
    (they were suspended)."""
    from sessions import seats

    sessions = list(PlaySession.objects.filter(player=user, status__in=ACTIVE_STATUSES))
    for session in sessions:
        session_end(session=session, reason=reason, message=message)
    for seat in player_seats(user=user, session_key="").select_related("session"):
        seats.seat_remove(seat=seat, reason=message or reason)
    return len(sessions)


def _group_send(session_id, message: messages.Message) -> None:
    """Tell every consumer of the session (the player's and the spectators')."""
    try:
        async_to_sync(get_channel_layer().group_send)(
            messages.session_group(session_id), message.to_message()
        )
    except Exception:  # noqa: BLE001
        log.exception("could not notify session %s", session_id)
