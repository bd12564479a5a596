"""Moderation fixtures: a creator with a published world, a reporter, an outsider and a
moderator (a member of the "Moderators" group the data migration creates)."""

import pytest
from django.contrib.auth.models import Group, Permission
from django.core.cache import cache
from rest_framework.test import APIClient

from tests.browser.conftest import daphne_env, live_url, page  # noqa: F401
from tests.worlds.factories import make_user, make_world


@pytest.fixture(autouse=True)
def _fresh_cache():
    # Rate-limit counters live in the cache (Redis db 10 in our runs); each test starts clean.
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def creator(db):
    return make_user("creator")


@pytest.fixture
def reporter(db):
    return make_user("reporter")


@pytest.fixture
def outsider(db):
    return make_user("outsider")


def moderators_group() -> Group:
    """The group the data migration creates; rebuilt here because transactional tests elsewhere
    in the suite flush the database (and with it migrated data)."""
    group, _ = Group.objects.get_or_create(name="Moderators")
    group.permissions.add(
        Permission.objects.get(codename="moderate", content_type__app_label="moderation")
    )
    return group


@pytest.fixture
def moderator(db):
    user = make_user("mod")
    user.groups.add(moderators_group())
    return user


@pytest.fixture
def world(creator):
    return make_world(creator, title="Snowy Pines", slug="snowy-pines", prompt="a snowy pine wood")


def _api(user=None) -> APIClient:
    api = APIClient()
    if user is not None:
        api.force_authenticate(user)
    return api


@pytest.fixture
def api_as():
    return _api


@pytest.fixture
def mod_client(client, moderator):
    client.force_login(moderator)
    return client
