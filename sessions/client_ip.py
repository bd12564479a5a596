"""The client's address as the rate limits see it.

Behind N trusted proxies each appends the address it received from to `X-Forwarded-For`, so the
Nth entry from the right is the last one a trusted hop wrote; everything left of it is whatever
the client chose to send and is never believed. With no trusted proxy, only the socket counts.
"""

import ipaddress

from django.conf import settings
from django.http import HttpRequest


def client_ip(request: HttpRequest) -> str | None:
    return _believed(request.META.get("REMOTE_ADDR"), request.META.get("HTTP_X_FORWARDED_FOR", ""))


def scope_client_ip(scope: dict) -> str | None:
    """The same for a WebSocket's ASGI scope (the socket's peer and its headers)."""
    peer = (scope.get("client") or (None,))[0]
    headers = dict(scope.get("headers") or ())
    forwarded = headers.get(b"x-forwarded-for", b"").decode("latin-1")
    return _believed(peer, forwarded)


def _believed(address: str | None, forwarded_for: str) -> str | None:
    trusted = settings.TRUSTED_PROXY_COUNT
    if trusted > 0:
        hops = [h.strip() for h in forwarded_for.split(",")]
        hops = [h for h in hops if h]
        if len(hops) >= trusted:
            address = hops[-trusted]
    return _valid(address)


def _valid(address: str | None) -> str | None:
    try:
        return str(ipaddress.ip_address((address or "").strip()))
    except ValueError:
        return None
