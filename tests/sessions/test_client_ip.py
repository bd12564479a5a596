"""The address the per-IP limits count: the socket's, or the one a trusted proxy reports."""

import pytest
from django.test import RequestFactory

from sessions.client_ip import client_ip, scope_client_ip


def _request(remote="10.0.0.9", forwarded=None):
    extra = {"REMOTE_ADDR": remote}
    if forwarded is not None:
        extra["HTTP_X_FORWARDED_FOR"] = forwarded
    return RequestFactory().get("/", **extra)


def test_without_a_trusted_proxy_the_forwarded_header_is_ignored(settings):
    settings.TRUSTED_PROXY_COUNT = 0
    assert client_ip(_request(forwarded="1.2.3.4")) == "10.0.0.9"


@pytest.mark.parametrize(
    ("trusted", "forwarded", "expected"),
    [
        (1, "203.0.113.7", "203.0.113.7"),
        # The client forged a first entry; the proxy appended the real address after it.
        (1, "1.1.1.1, 203.0.113.7", "203.0.113.7"),
        (2, "1.1.1.1, 203.0.113.7, 10.0.0.2", "203.0.113.7"),
        (1, " 2001:db8::1 ", "2001:db8::1"),
    ],
)
def test_behind_trusted_proxies_it_takes_the_last_hop_they_wrote(
    settings, trusted, forwarded, expected
):
    settings.TRUSTED_PROXY_COUNT = trusted
    assert client_ip(_request(forwarded=forwarded)) == expected


def test_too_few_hops_or_garbage_fall_back_or_give_nothing(settings):
    settings.TRUSTED_PROXY_COUNT = 2
    assert client_ip(_request(forwarded="203.0.113.7")) == "10.0.0.9"
    settings.TRUSTED_PROXY_COUNT = 1
    assert client_ip(_request(forwarded="not-an-ip")) is None
    assert client_ip(_request(remote="garbage")) is None


def test_a_websockets_scope_gives_the_same_address(settings):
    scope = {
        "client": ("10.0.0.9", 5123),
        "headers": [(b"x-forwarded-for", b"1.1.1.1, 203.0.113.7")],
    }
    settings.TRUSTED_PROXY_COUNT = 0
    assert scope_client_ip(scope) == "10.0.0.9"
    settings.TRUSTED_PROXY_COUNT = 1
    assert scope_client_ip(scope) == "203.0.113.7"
    assert scope_client_ip({"headers": []}) is None
