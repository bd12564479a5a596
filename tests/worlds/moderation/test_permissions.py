"""Non-moderators get 403 on every moderation page and endpoint; moderators get in."""

import pytest
from django.contrib.auth.models import Permission
from rest_framework.test import APIClient

from tests.worlds.factories import make_user

PAGES = ["/moderation/", "/moderation/audit/", "/moderation/live/"]
API_GETS = [
    "/api/moderation/queue/",
    "/api/moderation/audit/",
    "/api/moderation/live/",
]


@pytest.mark.parametrize("path", PAGES)
@pytest.mark.parametrize("who", ["anonymous", "user"])
def test_non_moderators_get_403_on_every_moderation_page(client, outsider, path, who):
    if who == "user":
        client.force_login(outsider)
    assert client.get(path).status_code == 403


@pytest.mark.parametrize("who", ["anonymous", "user"])
def test_non_moderators_get_403_when_posting_an_action(client, outsider, world, who):
    if who == "user":
        client.force_login(outsider)
    body = {"kind": "remove", "target_type": "world", "target_id": world.slug, "reason": "x"}
    assert client.post("/moderation/act/", body).status_code == 403
    world.refresh_from_db()
    assert world.status == "published"


@pytest.mark.parametrize("path", API_GETS)
@pytest.mark.parametrize("who", ["anonymous", "user"])
def test_non_moderators_get_403_on_every_moderation_endpoint(outsider, path, who):
    api = APIClient()
    if who == "user":
        api.force_authenticate(outsider)
    assert api.get(path).status_code == 403


def test_non_moderators_get_403_on_the_action_endpoint(api_as, outsider, world):
    body = {"kind": "remove", "target_type": "world", "target_id": world.slug, "reason": "x"}
    assert api_as(outsider).post("/api/moderation/actions/", body, format="json").status_code == 403
    assert api_as().post("/api/moderation/actions/", body, format="json").status_code == 403


@pytest.mark.parametrize("path", PAGES)
def test_moderators_see_every_moderation_page(mod_client, path):
    assert mod_client.get(path).status_code == 200


@pytest.mark.parametrize("path", API_GETS)
def test_moderators_use_every_moderation_endpoint(api_as, moderator, path):
    assert api_as(moderator).get(path).status_code == 200


def test_the_permission_alone_makes_a_moderator_without_the_group(client, db):
    user = make_user("solo")
    user.user_permissions.add(Permission.objects.get(codename="moderate"))
    client.force_login(user)
    assert client.get("/moderation/").status_code == 200


def test_only_moderators_see_the_nav_link(client, outsider, moderator):
    client.force_login(outsider)
    assert 'href="/moderation/"' not in client.get("/").content.decode()
    client.force_login(moderator)
    assert 'href="/moderation/"' in client.get("/").content.decode()


def test_the_moderation_endpoints_are_in_the_openapi_schema(client):
    schema = client.get("/api/schema/?format=json").json()
    for path in [
        "/api/reports/",
        "/api/appeals/",
        "/api/me/suspension/",
        "/api/moderation/queue/",
        "/api/moderation/actions/",
        "/api/moderation/audit/",
        "/api/moderation/live/",
    ]:
        assert path in schema["paths"], path
