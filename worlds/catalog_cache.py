"""What the public catalog pages may cache, and when that goes stale.

Any saved or deleted world bumps one version number in the shared cache; cached fragments and
pages key on it, so a publish, edit or removal shows at once everywhere. Counters (plays, likes,
trending) change through `update()` without a bump and may lag by the cache's timeout
(HOME_CACHE_SECONDS, 10 s by default).
"""

import hashlib
import time
from collections.abc import Callable
from functools import wraps
from typing import TypeVar

from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse
from django.utils.safestring import mark_safe
from rest_framework.response import Response

VERSION_KEY = "catalog:version"


def catalog_version() -> int:
    return cache.get_or_set(VERSION_KEY, time.time_ns, timeout=None)


def catalog_changed(**_signal_kwargs) -> None:
    cache.set(VERSION_KEY, time.time_ns(), timeout=None)


T = TypeVar("T")


def cached_fragment(name: str, render: Callable[[], T]) -> T:
    """`render()` (HTML, or anything that pickles) once per catalog version and
    HOME_CACHE_SECONDS; 0 turns caching off."""
    timeout = settings.HOME_CACHE_SECONDS
    if timeout <= 0:
        return render()
    key = f"catalog:{name}:{catalog_version()}"
    html = cache.get(key)
    if html is None:
        html = render()
        cache.set(key, html, timeout)  # a SafeString: it pickles as one and comes back as one
    return html


def hearts_filled(html: str, liked: set[int]) -> str:
    """Cards rendered for everyone (every heart empty) with these worlds' hearts full: the
    marks are gallery/_card.html's, the only thing of one person's a shared rendering gets."""
    for pk in liked:
        html = html.replace(f'data-heart="{pk}">♡', f'data-heart="{pk}">♥')
    return mark_safe(html)  # noqa: S308 (the rendered cards, one fixed mark swapped)


def shared_visitor(request: HttpRequest) -> bool:
    """A visitor who sees exactly what every other anonymous one sees: a GET with no session,
    no pending messages and no API token (no database hit: the session is not opened)."""
    return (
        request.method == "GET"
        and settings.SESSION_COOKIE_NAME not in request.COOKIES
        and "messages" not in request.COOKIES
        and "HTTP_AUTHORIZATION" not in request.META
    )


def page_digest(request: HttpRequest) -> str:
    """A short digest of the page asked for: host, path and query."""
    return hashlib.sha256(request.build_absolute_uri().encode()).hexdigest()[:32]


def _page_key(request: HttpRequest) -> str:
    return f"catalog:page:{catalog_version()}:{page_digest(request)}"


def cached_for_visitors(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """A public catalog page rendered once per catalog version, path and query for the crowd
    of anonymous visitors (`shared_visitor`); signed-in people get it rendered for them. Only
    a plain 200 is kept: nothing that sets a cookie (a CSRF token) is shared."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        timeout = settings.HOME_CACHE_SECONDS
        if timeout <= 0 or not shared_visitor(request):
            return view(request, *args, **kwargs)
        key = _page_key(request)
        kept = cache.get(key)
        if kept is not None:
            content, content_type = kept
            return HttpResponse(content, content_type=content_type)
        response = view(request, *args, **kwargs)
        if response.status_code == 200 and not response.cookies and not response.streaming:
            cache.set(key, (response.content, response["Content-Type"]), timeout)
        return response

    return wrapper


def cached_api_list(request, answer: Callable[[], Response]) -> HttpResponse:
    """An API list for shared visitors: `answer()`'s data kept per catalog version, path and
    query (the serializers run once), and for JSON the rendered bytes too; other formats
    (the browsable API) are rendered per request from the kept data."""
    timeout = settings.HOME_CACHE_SECONDS
    # the user as the API's authentication found it (a token, or a test's forced one)
    if timeout <= 0 or not shared_visitor(request) or request.user.is_authenticated:
        return answer()
    key = _page_key(request)
    renderer = getattr(request, "accepted_renderer", None)
    as_json = renderer is not None and renderer.format == "json"
    if as_json and (content := cache.get(key + ":json")) is not None:
        return HttpResponse(content, content_type=renderer.media_type)
    data = cache.get(key + ":data")
    if data is None:
        response = answer()
        if response.status_code != 200:
            return response
        data = response.data
        cache.set(key + ":data", data, timeout)
    if as_json:
        content = renderer.render(data, request.accepted_media_type, {"request": request})
        cache.set(key + ":json", content, timeout)
        return HttpResponse(content, content_type=renderer.media_type)
    return Response(data)
