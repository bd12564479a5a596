"""The /api/ surface: worlds, likes, remixes, categories, the current user; errors are JSON."""

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from tests.worlds.factories import image_bytes, make_world, upload
from worlds.models import World, WorldStatus

NEW = {"title": "Reef", "category": "games", "prompt": "a coral reef lagoon"}


@pytest.fixture
def api(db):
    return APIClient()


@pytest.fixture
def owner_api(api, owner):
    api.force_authenticate(owner)
    return api


@pytest.fixture
def outsider_api(api, outsider):
    api.force_authenticate(outsider)
    return api


def test_list_is_paginated_and_shows_only_published(api, owner):
    for _ in range(3):
        make_world(owner)
    make_world(owner, status="draft")
    body = api.get("/api/worlds/?page_size=2").json()
    assert body["count"] == 3
    assert len(body["results"]) == 2
    assert body["next"]


def test_list_filters_by_category_and_searches(api, owner):
    make_world(owner, title="Lava Run", category="games")
    make_world(owner, title="Lava Tale", category="stories")
    body = api.get("/api/worlds/?q=lava&category=stories").json()
    assert [w["title"] for w in body["results"]] == ["Lava Tale"]


def test_list_orders_by_plays(api, owner):
    make_world(owner, title="Quiet", play_count=1)
    make_world(owner, title="Busy", play_count=50)
    body = api.get("/api/worlds/?ordering=popular").json()
    assert [w["title"] for w in body["results"]] == ["Busy", "Quiet"]


def test_list_rejects_an_unknown_ordering_or_category(api):
    assert api.get("/api/worlds/?ordering=password").status_code == 400
    body = api.get("/api/worlds/?category=casino").json()
    assert "category" in body


def test_creators_own_listing_includes_drafts(owner_api, owner, draft):
    body = owner_api.get(f"/api/worlds/?creator={owner.username}").json()
    assert draft.slug in [w["slug"] for w in body["results"]]


def test_creators_own_search_includes_drafts_and_no_one_elses_does(owner_api, owner, draft):
    # the docs say a creator's own listing includes drafts; with q= it searched published only
    url = f"/api/worlds/?creator={owner.username}&q=secret"
    mine = [w["slug"] for w in owner_api.get(url).json()["results"]]
    theirs = [w["slug"] for w in APIClient().get(url).json()["results"]]
    assert mine == [draft.slug] and theirs == []


def test_retrieve_shows_the_pinned_version(api, world):
    body = api.get(f"/api/worlds/{world.slug}/").json()
    assert body["current_version"] == str(world.current_version_id)
    assert body["creator"]["username"] == "owner"
    assert body["cover_url"].endswith(".svg")


def test_create_needs_authentication(api):
    response = api.post("/api/worlds/", NEW, format="json")
    assert response.status_code in (401, 403)
    assert "detail" in response.json()
    assert not World.objects.exists()


def test_create_makes_a_draft_or_publishes(owner_api):
    draft = owner_api.post("/api/worlds/", NEW, format="json")
    assert draft.status_code == 201
    assert draft.json()["status"] == "draft"
    live = owner_api.post("/api/worlds/", NEW | {"publish": True}, format="json")
    assert live.json()["status"] == "published"


def test_create_with_a_multipart_cover(owner_api):
    data = NEW | {"cover": upload(image_bytes("WEBP"), "c.webp", "image/webp")}
    body = owner_api.post("/api/worlds/", data, format="multipart").json()
    assert body["cover_url"].endswith(".webp")


def test_invalid_payload_is_400_with_field_messages(owner_api):
    response = owner_api.post(
        "/api/worlds/", {"title": "", "category": "nope", "seed": -1}, format="json"
    )
    assert response.status_code == 400
    assert response.json().keys() >= {"title", "category", "prompt", "seed"}
    assert not World.objects.exists()


def test_service_rules_are_400_with_field_messages(owner_api):
    response = owner_api.post("/api/worlds/", NEW | {"category": "characters"}, format="json")
    assert response.status_code == 400
    assert "character_name" in response.json()


def test_blocked_text_is_400_on_the_field(owner_api):
    response = owner_api.post(
        "/api/worlds/", NEW | {"prompt": "behead the villagers"}, format="json"
    )
    assert response.status_code == 400
    assert "refused" in response.json()["prompt"][0]


def test_bad_cover_is_400_on_the_cover_field(owner_api):
    data = NEW | {"cover": upload(b"GIF89a not really", "c.png", "image/png")}
    response = owner_api.post("/api/worlds/", data, format="multipart")
    assert response.status_code == 400
    assert "cover" in response.json()
    assert not World.objects.exists()


def test_malformed_json_is_a_json_400(owner_api):
    response = owner_api.post("/api/worlds/", data="{not json", content_type="application/json")
    assert response.status_code == 400
    assert "detail" in response.json()


def test_owner_updates_and_a_new_version_is_made(owner_api, world):
    body = owner_api.patch(
        f"/api/worlds/{world.slug}/", {"prompt": "pines in fog"}, format="json"
    ).json()
    assert body["prompt"] == "pines in fog"
    assert body["current_version"] != str(world.current_version_id)


def test_updating_another_users_world_is_403(outsider_api, world):
    response = outsider_api.patch(f"/api/worlds/{world.slug}/", {"title": "x"}, format="json")
    assert response.status_code == 403
    world.refresh_from_db()
    assert world.title == "Snowy Pines"


def test_another_users_draft_is_404(outsider_api, draft):
    assert outsider_api.get(f"/api/worlds/{draft.slug}/").status_code == 404
    assert outsider_api.patch(f"/api/worlds/{draft.slug}/", {}, format="json").status_code == 404
    assert outsider_api.delete(f"/api/worlds/{draft.slug}/").status_code == 404


def test_delete_by_owner_and_not_by_others(owner_api, outsider, world):
    other = APIClient()
    other.force_authenticate(outsider)
    assert other.delete(f"/api/worlds/{world.slug}/").status_code == 403
    assert owner_api.delete(f"/api/worlds/{world.slug}/").status_code == 204
    assert not World.objects.exists()


def test_publish_and_unpublish(owner_api, draft):
    assert owner_api.post(f"/api/worlds/{draft.slug}/publish/").json()["status"] == "published"
    assert owner_api.post(f"/api/worlds/{draft.slug}/unpublish/").json()["status"] == "draft"
    body = owner_api.post(
        f"/api/worlds/{draft.slug}/publish/", {"unlisted": True}, format="json"
    ).json()
    assert body["status"] == "unlisted"


def test_like_and_unlike(outsider_api, world):
    body = outsider_api.post(f"/api/worlds/{world.slug}/like/").json()
    assert (body["liked"], body["like_count"]) == (True, 1)
    body = outsider_api.delete(f"/api/worlds/{world.slug}/like/").json()
    assert (body["liked"], body["like_count"]) == (False, 0)


def test_liking_a_draft_is_refused(owner_api, draft):
    response = owner_api.post(f"/api/worlds/{draft.slug}/like/")
    assert response.status_code == 400
    assert "world" in response.json()


def test_remix(outsider_api, world):
    response = outsider_api.post(
        f"/api/worlds/{world.slug}/remix/", {"title": "Pines of my own"}, format="json"
    )
    assert response.status_code == 201
    body = response.json()
    assert (body["remix_of"], body["status"], body["creator"]["username"]) == (
        world.slug,
        "draft",
        "outsider",
    )


def test_removed_worlds_never_reach_the_api_for_others(api, owner):
    world = make_world(owner, title="Gone", status=WorldStatus.REMOVED)
    assert api.get(f"/api/worlds/{world.slug}/").status_code == 404
    assert api.get("/api/worlds/?q=gone").json()["count"] == 0


def test_categories_with_counts(api, owner):
    make_world(owner, category="stories")
    body = api.get("/api/categories/").json()
    assert [c["value"] for c in body] == ["games", "stories", "characters", "live"]
    assert {c["value"]: c["world_count"] for c in body}["stories"] == 1


def test_me_needs_a_login_and_shows_the_account(api, owner):
    assert api.get("/api/me/").status_code in (401, 403)
    api.force_authenticate(owner)
    assert api.get("/api/me/").json()["username"] == "owner"


def test_me_updates_the_profile_but_not_the_username(owner_api, owner):
    body = owner_api.patch(
        "/api/me/", {"display_name": "Owen", "username": "root"}, format="json"
    ).json()
    assert (body["display_name"], body["username"]) == ("Owen", "owner")


def test_token_authentication_works(owner):
    token = Token.objects.create(user=owner)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    assert api.get("/api/me/").json()["username"] == "owner"


def test_session_authenticated_writes_need_csrf(owner):
    api = APIClient(enforce_csrf_checks=True)
    api.force_login(owner)
    response = api.post("/api/worlds/", NEW, format="json")
    assert response.status_code == 403
    assert "CSRF" in response.json()["detail"]
