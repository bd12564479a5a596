"""What a flood of sign-ups, sign-ins, new worlds and likes gets: a clear 429 or form error once
over the limit, and nothing more written."""

import pytest
from rest_framework.test import APIClient

from tests.worlds.factories import make_user, make_world
from worlds.models import Like, World


@pytest.fixture(autouse=True)
def _fresh_counters():
    from django.core.cache import cache

    cache.clear()
    yield
    cache.clear()


def test_guessing_a_password_is_stopped_and_even_the_right_one_waits(client, settings, db):
    settings.LOGINS_PER_15_MIN = 5
    make_user("victim")
    codes = [
        client.post("/accounts/login/", {"username": "victim", "password": f"guess{i}"}).status_code
        for i in range(5)
    ]
    right = client.post("/accounts/login/", {"username": "victim", "password": "correct-horse-9"})
    assert codes == [400] * 5
    assert right.status_code == 400 and b"Too many failed sign-in attempts" in right.content
    assert "_auth_user_id" not in client.session
    # another account from the same address is counted apart
    make_user("other")
    other = client.post("/accounts/login/", {"username": "other", "password": "correct-horse-9"})
    assert other.status_code == 302


def test_sign_ups_from_one_address_are_limited(client, settings, db):
    settings.SIGN_UPS_PER_HOUR = 2
    codes = []
    for i in range(3):
        client.logout()
        data = {"username": f"new{i}", "password1": "a-long-pass-99", "password2": "a-long-pass-99"}
        codes.append(client.post("/accounts/signup/", data, REMOTE_ADDR="198.51.100.4").status_code)
    assert codes == [302, 302, 429]
    assert (
        b"Please try later"
        in client.post(
            "/accounts/signup/",
            {"username": "new9", "password1": "a-long-pass-99", "password2": "a-long-pass-99"},
            REMOTE_ADDR="198.51.100.4",
        ).content
    )


def test_making_worlds_and_liking_them_is_limited_per_user(settings, db):
    settings.WORLDS_CREATED_PER_HOUR = 2
    settings.LIKES_PER_HOUR = 1
    user = make_user()
    api = APIClient()
    api.force_authenticate(user)
    fields = {"title": "Flood", "category": "games", "prompt": "a quiet meadow"}
    codes = [api.post("/api/worlds/", fields, format="json").status_code for _ in range(3)]
    assert codes == [201, 201, 429]
    assert (
        "worlds in the last hour"
        in api.post("/api/worlds/", fields, format="json").json()["detail"]
    )
    assert World.objects.filter(creator=user).count() == 2
    a, b = make_world(make_user()), make_world(make_user())
    assert api.post(f"/api/worlds/{a.slug}/like/").status_code == 200
    assert api.post(f"/api/worlds/{b.slug}/like/").status_code == 429
    assert Like.objects.filter(user=user).count() == 1
