"""The join page that invite links open: a shared session's world, who plays it, and a Join
button (join.js posts the join and goes on to the play page). Apart from views.py: the pages
of shared play, beside the play and watch shells."""

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.csrf import ensure_csrf_cookie
from django.views.decorators.http import require_GET

from inference.world.spec import avatar_hex
from sessions import seats
from sessions.models import PlaySession
from sessions.selectors import session_get


def _players(session: PlaySession) -> list[dict]:
    seated = session.seats.filter(left_at=None).order_by("slot")
    return [{"slot": s.slot, "name": s.name, "color": avatar_hex(s.slot)} for s in seated]


@require_GET
@ensure_csrf_cookie  # join.js posts the join with the CSRF token from this cookie
def join(request: HttpRequest, session_id) -> HttpResponse:
    invite = request.GET.get("invite", "")
    try:
        session = session_get(session_id=session_id)
    except PlaySession.DoesNotExist:
        raise Http404("No such session.") from None
    # A private session does not exist without its link (the token compares in constant time).
    if not session.is_shared or not (session.is_public or seats.invite_matches(session, invite)):
        raise Http404("No such session.")
    user = request.user if request.user.is_authenticated else None
    key = request.session.session_key
    players = _players(session) if session.is_active else []
    context = {
        "session": session,
        "world": session.world,
        "players": players,
        "seated": seats.seat_of(session=session, user=user, session_key=key) is not None,
        "full": len(players) >= session.max_players,
        "invite": invite,
    }
    return render(request, "play/join.html", context)
