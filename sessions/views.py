"""The play and watch pages: the page shell; play.js / watch.js do the live part."""

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.csrf import ensure_csrf_cookie
from django.views.decorators.http import require_GET

from sessions.models import PlaySession
from sessions.protocol import MAX_PROMPT_CHARS, MAX_SAY_CHARS
from sessions.selectors import session_get_watchable
from worlds.models import World
from worlds.moderation import policy
from worlds.selectors import world_get_playable


@require_GET
@ensure_csrf_cookie  # play.js posts to /api/sessions/ with the CSRF token from this cookie
def play(request: HttpRequest, slug: str) -> HttpResponse:
    user = request.user if request.user.is_authenticated else None
    try:
        world = world_get_playable(slug=slug, viewer=user)
    except World.DoesNotExist:
        raise Http404("No playable world here.") from None
    context = {"world": world, "max_prompt_chars": MAX_PROMPT_CHARS, "max_say_chars": MAX_SAY_CHARS}
    return render(request, "play/play.html", context)


@require_GET
def watch(request: HttpRequest, session_id) -> HttpResponse:
    try:
        session = session_get_watchable(session_id=session_id)
    except PlaySession.DoesNotExist:
        # Moderators oversee private sessions too.
        session = policy.session_for_moderator(user=request.user, session_id=session_id)
        if session is None:
            raise Http404("No public session here.") from None
    return render(request, "play/watch.html", {"session": session, "world": session.world})
