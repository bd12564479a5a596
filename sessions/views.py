"""The play and watch pages: the page shell; play.js / watch.js do the live part."""

from django.core.files.storage import default_storage
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.csrf import ensure_csrf_cookie
from django.views.decorators.http import require_GET

from sessions import recordings
from sessions.models import PlaySession, Recording
from sessions.protocol import MAX_PROMPT_CHARS, MAX_SAY_CHARS
from sessions.selectors import session_for_moderator, session_get_watchable
from worlds.models import World
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
        session = session_for_moderator(user=request.user, session_id=session_id)
        if session is None:
            raise Http404("No public session here.") from None
    return render(request, "play/watch.html", {"session": session, "world": session.world})


@require_GET
@ensure_csrf_cookie  # replay.js posts exports, forks and "publish" with the CSRF cookie
def replay(request: HttpRequest, recording_id) -> HttpResponse:
    """A run played again: its exported videos (one per player's camera) with the events and
    story picks marked on the scrubber; play on from any frame."""
    user = request.user if request.user.is_authenticated else None
    key = request.session.session_key
    recording = (
        Recording.objects.select_related("world", "world_version", "session")
        .filter(pk=recording_id)
        .first()
    )
    if recording is None or not recordings.can_see(recording, user=user, session_key=key):
        raise Http404("No recording you can see here.")
    recording = recordings.recording_refresh(recording)
    context = {
        "recording": recording,
        "world": recording.world,
        "is_player": recordings.is_player(recording, user=user, session_key=key),
        "is_creator": user is not None and recording.world.creator_id == user.pk,
        "weights_match": recordings.weights_match(recording),
        "thumbnail_url": default_storage.url(recording.thumbnail) if recording.thumbnail else "",
    }
    return render(request, "play/replay.html", context)
