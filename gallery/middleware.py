"""Requests no view should see."""

from django.contrib.auth.middleware import AuthenticationMiddleware
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import render
from django.utils.functional import SimpleLazyObject

from gallery import viewer_cache
from worlds import ratelimit


class RejectNulMiddleware:
    """A NUL byte in the path or the query string is a 400: PostgreSQL text cannot hold one, so
    `?q=%00` or `/u/%00/` reached the database and failed there with a 500. One check here
    rather than one in every view that reads a parameter."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if "\x00" in request.path or any("\x00" in k or "\x00" in v for k, v in _params(request)):
            return HttpResponseBadRequest("NUL characters are not allowed in a URL.")
        return self.get_response(request)


def _params(request):
    for key, values in request.GET.lists():
        for value in values:
            yield key, value


class RateLimitedPageMiddleware:
    """A page whose service said "too many lately" shows why, as a 429 (the API answers the
    same through its exception handler)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if isinstance(exception, ratelimit.RateLimited):
            context = {"code": 429, "title": "Too many", "message": str(exception)}
            return render(request, "gallery/error.html", context, status=429)
        return None


class CachedAuthenticationMiddleware(AuthenticationMiddleware):
    """Django's AuthenticationMiddleware with `request.user` read through the shared cache
    (gallery/viewer_cache.py): a signed-in page asks no query for its account or permissions."""

    def process_request(self, request: HttpRequest) -> None:
        super().process_request(request)
        request.user = SimpleLazyObject(lambda: viewer_cache.get_user(request))
