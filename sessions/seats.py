"""Seats: who plays a session. Create a session with its first seat, join (a shared session, by
invite or in public), leave, remove, and reap the seats of players gone idle or away. These
build on services.py (limits, placement, ending), which never imports this module.

A seat is one player's avatar and camera in the world. Joining reserves the seat twice, and
both atomically: in the database (the session row is locked while the seats are counted, so
two joins racing for the last seat cannot both win) and on the session's worker (placement
counts seats against its capacity). Every change, and every player's socket opening or
closing, tells the session's sockets who is seated and who is reconnecting (``Presence``),
and the worker which avatars to hold (``Attach`` by the player's socket, ``Unseat`` here).
A session ends when its last seat is left; a Live world's world is then kept for the next
visitor (the worker does it at the end).
"""

import hmac
import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Prefetch
from django.utils import timezone

from inference.serving import messages
from inference.world.spec import avatar_hex
from sessions import services
from sessions.models import ACTIVE_STATUSES, EndReason, PlaySession, Seat
from sessions.worker_client import get_placement, send_sync
from worlds.models import Category, World
from worlds.moderation import policy
from worlds.selectors import world_get_playable
from worlds.services import world_record_play

log = logging.getLogger(__name__)

MAX_NAME_CHARS = 40
REMOVED = "removed: "  # a removed seat's left_reason starts with it


class SessionFull(Exception):
    """Every seat is taken (or the worker running the session has no room for one more)."""


def seat_name(*, user: AbstractBaseUser | None, name: str | None, slot: int) -> str:
    """An account plays under its public name; an anonymous player under the name they give
    (screened like any public name), else "Guest N". Raises ValidationError({"name": ...})."""
    if user is not None:
        return (getattr(user, "public_name", "") or user.get_username())[:MAX_NAME_CHARS]
    name = " ".join((name or "").split())
    if not name:
        return f"Guest {slot + 1}"
    if len(name) > MAX_NAME_CHARS:
        raise ValidationError({"name": [f"Names are at most {MAX_NAME_CHARS} characters."]})
    refusal = policy.public_text_refusal(name, field="name")
    if refusal:
        raise ValidationError({"name": [refusal]})
    return name


def seat_of(*, session: PlaySession, user, session_key: str | None) -> Seat | None:
    """The caller's active seat in this session, if any."""
    seats = session.seats.filter(left_at=None)
    if user is not None and user.is_authenticated:
        return seats.filter(user=user).first()
    return seats.filter(user=None, anon_key=session_key).first() if session_key else None


def was_removed(*, session: PlaySession, user, session_key: str | None) -> bool:
    """A removed player stays out of that session (a new browser session gets round it;
    an account does not)."""
    removed = session.seats.filter(left_reason__startswith=REMOVED)
    if user is not None and user.is_authenticated:
        return removed.filter(user=user).exists()
    return bool(session_key) and removed.filter(user=None, anon_key=session_key).exists()


def invite_matches(session: PlaySession, token: str | None) -> bool:
    return bool(token) and hmac.compare_digest(str(token), session.invite_token)


def seat_join(
    *,
    session_id,
    user: AbstractBaseUser | None,
    session_key: str,
    client_ip: str | None,
    invite: str | None = None,
    name: str | None = None,
) -> tuple[PlaySession, Seat, bool]:
    """Seat the caller in a shared session; -> (session, seat, created). Joining twice returns
    the seat they have. Raises PlaySession.DoesNotExist (unknown, ended, or private without a
    valid invite: the same answer, so ids and tokens cannot be probed), SessionFull,
    SessionLimitReached, PermissionDenied (suspended, or removed from this session) and
    ValidationError (a name that fails screening)."""
    user = services.player_of(user, session_key)
    session = PlaySession.objects.filter(pk=session_id, status__in=ACTIVE_STATUSES).first()
    if session is None:
        raise PlaySession.DoesNotExist("No such session")
    held = seat_of(session=session, user=user, session_key=session_key)
    if held is not None:
        return session, held, False
    if not session.is_public and not invite_matches(session, invite):
        raise PlaySession.DoesNotExist("Private session")
    if was_removed(session=session, user=user, session_key=session_key):
        raise PermissionDenied("You were removed from this session.")
    if not session.is_shared:
        raise SessionFull("This session has one player; ask them to start a shared one.")
    return _seat(
        session=session, user=user, session_key=session_key, client_ip=client_ip, name=name
    )


def _seat(
    *, session: PlaySession, user, session_key: str, client_ip: str | None, name: str | None
) -> tuple[PlaySession, Seat, bool]:
    keys = services.player_keys(user=user, session_key=session_key, client_ip=client_ip)
    stale = []
    try:
        with transaction.atomic():
            services.lock_players(*keys)
            # The row lock serialises joins: the seat count below cannot change under us.
            session = PlaySession.objects.select_for_update().get(pk=session.pk)
            if not session.is_active:
                raise PlaySession.DoesNotExist("Ended")
            held = seat_of(session=session, user=user, session_key=session_key)
            if held is not None:
                return session, held, False
            taken = set(session.seats.filter(left_at=None).values_list("slot", flat=True))
            if len(taken) >= session.max_players:
                raise SessionFull("This world is full.")
            slot = min(set(range(session.max_players)) - taken)
            display = seat_name(user=user, name=name, slot=slot)
            mine = services.player_seats(user=user, session_key=session_key)
            stale = list(mine.exclude(disconnected_at=None).select_related("session"))
            services.check_limits(
                user=user, session_key=session_key, client_ip=client_ip, leaving=len(stale)
            )
            seat = Seat.objects.create(
                session=session,
                slot=slot,
                name=display,
                user=user,
                anon_key="" if user else session_key,
                client_ip=client_ip,
                disconnected_at=timezone.now(),  # no socket yet: reaped after the grace
            )
            # Last, so a refused seat on the worker rolls the row back.
            if session.worker_name and not get_placement().add_seat(str(session.id)):
                raise SessionFull("The server running this world has no room for another player.")
    except IntegrityError:  # a concurrent join took the same slot first
        raise SessionFull("This world is full.") from None
    for old in stale:
        seat_leave(seat=old, reason=EndReason.SWITCHED)
    presence_send(session)
    return session, seat, True


def live_world_join(
    *, world: World, user, session_key: str, client_ip: str | None, name: str | None
) -> tuple[PlaySession, bool]:
    """A Live-category world: seat the caller in its one public shared session, started by
    the first visitor (the worker restores the world its last session left)."""
    for _ in range(3):
        session = PlaySession.objects.filter(
            world=world, is_live_world=True, status__in=ACTIVE_STATUSES
        ).first()
        started = session is None
        if started:
            session = _live_world_start(world=world)
            if session is None:
                continue  # another visitor started it at the same moment: join theirs
        held = seat_of(session=session, user=user, session_key=session_key)
        if held is not None:
            return session, False
        try:
            session, _, created = _seat(
                session=session, user=user, session_key=session_key, client_ip=client_ip, name=name
            )
        except BaseException:
            if started:  # nobody sat down in the session just started: it goes again
                services.session_end(session=session, reason=EndReason.EMPTY)
            raise
        if started:
            session = services.place(session)  # reserved once its first seat exists
        return session, created
    raise SessionFull("This world is busy; try again.")


def _live_world_start(*, world: World) -> PlaySession | None:
    try:
        with transaction.atomic():
            session = PlaySession.objects.create(
                world=world,
                world_version_id=world.current_version_id,
                player=None,  # nobody owns an always-on world's session
                client_ip=None,
                is_public=True,
                is_shared=True,
                is_live_world=True,
                max_players=services.max_players_for(world),
                disconnected_at=timezone.now(),
            )
    except IntegrityError:  # the one running session per Live world already exists
        return None
    world_record_play(world=world)
    return session


def seat_leave(*, seat: Seat, reason: str) -> PlaySession:
    """The player leaves (ends, goes idle, stays away, is removed): their avatar goes; the
    session ends with its last seat. Leaving twice changes nothing."""
    with transaction.atomic():
        seat = Seat.objects.select_for_update().select_related("session").get(pk=seat.pk)
        if not seat.is_active:
            return seat.session
        seat.left_at = timezone.now()
        seat.left_reason = str(reason)[:200]
        seat.save(update_fields=["left_at", "left_reason"])
        left = not Seat.objects.filter(session_id=seat.session_id, left_at=None).exists()
    session = seat.session
    if left:
        return services.session_end(session=session, reason=reason)
    placement = get_placement()
    placement.remove_seat(str(session.id))
    if session.worker_name:
        send_sync(session.worker_name, messages.Unseat(session_id=str(session.id), slot=seat.slot))
    presence_send(session)
    services.queue_promote()  # a freed seat on a full worker may start a queued session
    return session


def can_remove(*, session: PlaySession, user, session_key: str | None = None) -> bool:
    """The session's creator (an account, or the browser that started it) and moderators may
    remove players."""
    if user is not None and user.is_authenticated and policy.is_moderator(user):
        return True
    return session.is_created_by(user=user, session_key=session_key)


def seat_remove_by(
    *, session: PlaySession, slot: int, by, reason: str, session_key: str | None = None
) -> Seat:
    """Remove the player in ``slot`` (the creator or a moderator); raises PermissionDenied,
    Seat.DoesNotExist, ValidationError (no reason, or yourself)."""
    if not can_remove(session=session, user=by, session_key=session_key):
        raise PermissionDenied("Only the session's creator and moderators can remove players.")
    reason = " ".join((reason or "").split())[:200]
    if not reason:
        raise ValidationError({"reason": ["Say why (the player sees it)."]})
    seat = session.seats.get(slot=slot, left_at=None)
    if seat.is_held_by(user=by, session_key=session_key):
        raise ValidationError({"slot": ["That is you: leave the session instead."]})
    if by is not None and by.is_authenticated and policy.is_moderator(by):
        policy.player_removal_record(moderator=by, session=session, name=seat.name, reason=reason)
    seat_remove(seat=seat, reason=reason)
    return seat


def seat_remove(*, seat: Seat, reason: str) -> None:
    """Close the player's socket with the reason they see, then free their seat."""
    services.group_send(seat.session_id, messages.Removed(slot=seat.slot, reason=reason))
    seat_leave(seat=seat, reason=f"{REMOVED}{reason}")


def seat_attached(*, seat: Seat, channel: str) -> tuple[messages.SeatInfo, ...]:
    """The player's socket is (back) on: their reconnect grace stops, and the others see them
    connected again. -> the presence sent."""
    Seat.objects.filter(pk=seat.pk).update(disconnected_at=None, channel=channel)
    PlaySession.objects.filter(pk=seat.session_id).update(disconnected_at=None)
    return presence_send(seat.session)


def seat_detached(*, seat: Seat, channel: str) -> bool:
    """The player's socket closed; -> False when a newer socket of theirs is already attached."""
    now = timezone.now()
    detached = Seat.objects.filter(pk=seat.pk, left_at=None, channel=channel).update(
        disconnected_at=now
    )
    if not detached:
        return False
    session = PlaySession.objects.get(pk=seat.session_id)
    if not session.seats.filter(left_at=None, disconnected_at=None).exists():
        PlaySession.objects.filter(pk=session.pk, disconnected_at=None).update(disconnected_at=now)
    if session.worker_name:
        send_sync(session.worker_name, messages.Detach(session_id=str(session.id), slot=seat.slot))
    presence_send(session)  # the others see this player reconnecting, not gone nor playing
    return True


def seat_leave_if_abandoned(*, seat_id, now=None) -> bool:
    """Free the seat if its player has been gone for the whole reconnect grace."""
    now = now or timezone.now()
    grace = timedelta(seconds=settings.SESSION_RECONNECT_GRACE_SECONDS)
    seat = Seat.objects.filter(
        pk=seat_id,
        left_at=None,
        disconnected_at__lte=now - grace,
        session__status__in=ACTIVE_STATUSES,
    ).first()
    if seat is None:
        return False
    seat_leave(seat=seat, reason=EndReason.ABANDONED)
    return True


def presence(session: PlaySession) -> tuple[messages.SeatInfo, ...]:
    """Who is seated, and whether their socket is on (a seat outlives its socket by the
    reconnect grace)."""
    return tuple(
        messages.SeatInfo(
            slot=seat.slot, name=seat.name, color=avatar_hex(seat.slot), state=seat.connection
        )
        for seat in session.seats.filter(left_at=None).order_by("slot")
    )


def presence_send(session: PlaySession) -> tuple[messages.SeatInfo, ...]:
    players = presence(session)
    services.group_send(session.id, messages.Presence(players=players))
    return players


# --- the seat-aware session services ------------------------------------------------------
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
    shared session (``live_world_join``). ``fork``: (recording, frame, slot): a new
    session of the recording's version whose world starts there (`sessions.forks`); the
    player's running session in this world is left for it.
    """
    user = services.player_of(user, session_key)
    world = world_get_playable(slug=world_slug, viewer=user)
    if world.current_version_id is None:
        raise ValidationError({"world": ["This world has no published version to play yet."]})
    if world.category == Category.LIVE:
        return live_world_join(
            world=world, user=user, session_key=session_key, client_ip=client_ip, name=name
        )
    display = seat_name(user=user, name=name, slot=0)
    with transaction.atomic():
        services.lock_players(
            *services.player_keys(user=user, session_key=session_key, client_ip=client_ip)
        )
        mine = services.player_seats(user=user, session_key=session_key)
        running = mine.filter(session__world=world).select_related("session").first()
        if running is not None and fork is None:
            return running.session, False
        # Opening another world leaves the last one: this player's seats whose socket is gone
        # are left now instead of holding the limit until their reconnect grace runs out.
        stale = list(mine.exclude(disconnected_at=None).select_related("session"))
        if running is not None and running not in stale:
            stale.append(running)  # a fork leaves the run it came from
        services.check_limits(
            user=user, session_key=session_key, client_ip=client_ip, leaving=len(stale)
        )
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
            max_players=services.max_players_for(world) if shared else 1,
            # No socket yet: a player who never connects is reaped after the reconnect grace.
            disconnected_at=timezone.now(),
        )
        Seat.objects.create(
            session=session,
            slot=0,
            name=display,
            user=user,
            anon_key="" if user else session_key,
            client_ip=client_ip,
            disconnected_at=timezone.now(),
        )
    for seat in stale:
        seat_leave(seat=seat, reason=EndReason.SWITCHED)
    # Placement is in Redis, outside the transaction: reserve only once the row exists.
    session = services.place(session)
    world_record_play(world=world)
    return session, True


def sessions_reap(*, now: datetime | None = None) -> list[PlaySession]:
    """Unseat every player who is idle, too long, or gone past the grace (a session ends with
    its last seat) and end sessions past their length; -> the sessions that ended."""
    now = now or timezone.now()
    grace = timedelta(seconds=settings.SESSION_RECONNECT_GRACE_SECONDS)
    ended = []
    # Every open seat in one query, not one per session: the reaper runs every few seconds.
    open_seats = Prefetch("seats", queryset=Seat.objects.filter(left_at=None), to_attr="open")
    for session in PlaySession.objects.filter(status__in=ACTIVE_STATUSES).prefetch_related(
        open_seats
    ):
        if services.session_too_long(session=session, now=now):
            ended.append(services.session_end(session=session, reason=EndReason.MAX_LENGTH))
            continue
        staying = 0
        for seat in session.open:
            reason = services.seat_expiry_reason(seat=seat, now=now, last_input=None)
            if reason is None and seat.disconnected_at and now - seat.disconnected_at >= grace:
                reason = EndReason.ABANDONED
            if reason is not None:
                seat_leave(seat=seat, reason=reason)
            else:
                staying += 1
        # Every seat left (or none was ever taken): the session goes with them, unless a
        # player took a seat since the seats were read.
        if not staying and not session.seats.filter(left_at=None).exists():
            ended.append(services.session_end(session=session, reason=EndReason.ABANDONED))
    services.queue_promote()
    return ended


def session_end_for_player(*, user, reason: str, message: str | None = None) -> int:
    """End every running session a player created, and unseat them from everyone else's
    (they were suspended)."""
    sessions = list(PlaySession.objects.filter(player=user, status__in=ACTIVE_STATUSES))
    for session in sessions:
        services.session_end(session=session, reason=reason, message=message)
    for seat in services.player_seats(user=user, session_key="").select_related("session"):
        seat_remove(seat=seat, reason=message or reason)
    return len(sessions)
