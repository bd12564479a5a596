"""Reads for live play."""

import uuid
from datetime import UTC, datetime

from django.core.cache import cache
from django.db.models import Count, Q
from django.urls import reverse

from sessions.models import ACTIVE_STATUSES, PlaySession
from sessions.worker_client import get_placement
from worlds.moderation import policy


def session_get(*, session_id) -> PlaySession:
    """Raises PlaySession.DoesNotExist (also for a malformed id)."""
    # forked_from: the attach message names a fork's recording (read in the consumer's loop)
    return PlaySession.objects.select_related(
        "world", "world_version", "player", "forked_from"
    ).get(pk=session_id)


def session_get_for_player(*, session_id, user, session_key: str | None) -> PlaySession:
    """The session if this caller has (or had) a seat in it; another player's session is a
    404, not a 403."""
    session = session_get(session_id=session_id)
    if user is not None and user.is_authenticated:
        seated = session.seats.filter(user=user)
    else:
        seated = session.seats.filter(user=None, anon_key=session_key) if session_key else None
    if seated is None or not seated.exists():
        raise PlaySession.DoesNotExist("Not this player's session")
    return session


def session_for_moderator(*, user, session_id) -> PlaySession | None:
    """Any session (private ones too) when the viewer is a moderator; None otherwise (also for
    an unknown or malformed id)."""
    if not policy.is_moderator(user):
        return None
    try:
        return session_get(session_id=uuid.UUID(str(session_id)))
    except (ValueError, PlaySession.DoesNotExist):
        return None


def session_get_watchable(*, session_id) -> PlaySession:
    """A public session anyone may watch (running or ended); private ones do not exist to others."""
    session = session_get(session_id=session_id)
    if not session.is_public:
        raise PlaySession.DoesNotExist("Private session")
    return session


def viewers_key(session_id) -> str:
    """Cache key of a session's spectator count (the watch consumers keep it)."""
    return f"play:viewers:{session_id}"


def live_listing() -> list[dict]:
    """Public sessions running now, busiest first (players and viewers together), each with
    what the Live page shows. A session is listed once its thumbnail exists (the worker saves
    its first frame): a card must never show a picture that answers 404."""
    running = list(
        PlaySession.objects.filter(status__in=ACTIVE_STATUSES, is_public=True)
        .select_related("world", "world_version")
        .annotate(players=Count("seats", filter=Q(seats__left_at=None)))
        .filter(players__gt=0)
    )
    pictured = get_placement().thumbnails_saved([str(s.id) for s in running])
    sessions = [s for s in running if str(s.id) in pictured]
    viewers = cache.get_many([viewers_key(s.id) for s in sessions])
    rows = []
    for session in sessions:
        watchers = max(0, int(viewers.get(viewers_key(session.id)) or 0))
        joinable = session.is_shared and session.players < session.max_players
        rows.append(
            {
                "id": session.id,
                "world": {
                    "slug": session.world.slug,
                    "title": session.world_version.title,
                    "category": session.world_version.category,
                },
                "players": session.players,
                "max_players": session.max_players,
                "viewers": watchers,
                "joinable": joinable,
                "thumbnail_url": reverse(
                    "api-session-thumbnail", kwargs={"session_id": session.id}
                ),
                "watch_url": reverse("play-watch", kwargs={"session_id": session.id}),
                "join_url": reverse("play-join", kwargs={"session_id": session.id})
                if session.is_shared
                else None,
                "play_url": reverse("play-world", kwargs={"slug": session.world.slug})
                if session.is_live_world
                else None,
                "started": session.started_at,
                "started_at": session.started_at,  # the name SessionOutput uses
            }
        )
    rows.sort(
        key=lambda r: (-(r["players"] + r["viewers"]), -(r["started_at"] or _EPOCH).timestamp())
    )
    return rows


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
