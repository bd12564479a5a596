"""Reads for live play."""

from django.db.models import QuerySet

from sessions.models import ACTIVE_STATUSES, PlaySession


def session_get(*, session_id) -> PlaySession:
    """Raises PlaySession.DoesNotExist (also for a malformed id)."""
    return PlaySession.objects.select_related("world", "world_version", "player").get(pk=session_id)


def session_get_for_player(*, session_id, user, session_key: str | None) -> PlaySession:
    """The session if this caller is its player; another player's session is a 404, not a 403."""
    session = session_get(session_id=session_id)
    if not session.is_played_by(user=user, session_key=session_key):
        raise PlaySession.DoesNotExist("Not this player's session")
    return session


def session_get_watchable(*, session_id) -> PlaySession:
    """A public session anyone may watch (running or ended); private ones do not exist to others."""
    session = session_get(session_id=session_id)
    if not session.is_public:
        raise PlaySession.DoesNotExist("Private session")
    return session


def session_list_live(*, public_only: bool = True) -> QuerySet[PlaySession]:
    qs = PlaySession.objects.filter(status__in=ACTIVE_STATUSES).select_related("world", "player")
    return qs.filter(is_public=True) if public_only else qs
