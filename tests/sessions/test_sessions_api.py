"""`/api/sessions/`: create, show, end; anonymous players; ownership; the OpenAPI schema."""

import pytest
from rest_framework.test import APIClient

from sessions.models import EndReason, PlaySession, Seat, SessionStatus
from tests.sessions.play_fixtures import make_user, make_world
from worlds.models import WorldStatus

pytestmark = pytest.mark.django_db


@pytest.fixture
def client():
    return APIClient()


def _logged_in(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_a_player_starts_a_session(world, player, worker_slots):
    worker_slots.add(capacity=2)
    response = _logged_in(player).post("/api/sessions/", {"world": world.slug}, format="json")
    assert response.status_code == 201
    body = response.json()
    assert body["world"] == world.slug
    assert body["status"] == "starting"
    assert body["play_socket"] == f"/ws/play/{body['id']}/"
    assert body["watch_url"] == f"/watch/{body['id']}/"
    assert PlaySession.objects.get(pk=body["id"]).player == player


def test_an_anonymous_visitor_plays_a_published_world_with_a_cookie(world, client, worker_slots):
    worker_slots.add(capacity=2)
    response = client.post("/api/sessions/", {"world": world.slug}, format="json")
    assert response.status_code == 201
    session = PlaySession.objects.get(pk=response.json()["id"])
    assert session.player is None
    assert session.anon_key == client.cookies["sessionid"].value


def test_the_same_browser_gets_its_running_session_back(world, client, worker_slots):
    worker_slots.add(capacity=2)
    first = client.post("/api/sessions/", {"world": world.slug}, format="json")
    again = client.post("/api/sessions/", {"world": world.slug}, format="json")
    assert again.status_code == 200
    assert again.json()["id"] == first.json()["id"]


def test_a_second_anonymous_session_while_the_first_is_played_is_refused(client, worker_slots):
    worker_slots.add(capacity=4)
    first = client.post("/api/sessions/", {"world": make_world().slug}, format="json")
    # Its socket is on (the play page is open in a tab).
    Seat.objects.filter(session_id=first.json()["id"]).update(disconnected_at=None)
    response = client.post("/api/sessions/", {"world": make_world().slug}, format="json")
    assert response.status_code == 429
    assert "session" in response.json()["detail"]
    assert PlaySession.objects.count() == 1


def test_an_anonymous_player_who_left_a_world_can_open_another(client, worker_slots):
    worker_slots.add(capacity=4)
    first = client.post("/api/sessions/", {"world": make_world().slug}, format="json")
    second = client.post("/api/sessions/", {"world": make_world().slug}, format="json")
    assert second.status_code == 201
    left = PlaySession.objects.get(pk=first.json()["id"])
    assert (left.status, left.end_reason) == (SessionStatus.ENDED, EndReason.SWITCHED)


def test_the_client_sees_its_queue_position(world, worker_slots):
    worker_slots.add(capacity=1)
    _logged_in(make_user()).post("/api/sessions/", {"world": world.slug}, format="json")
    response = _logged_in(make_user()).post("/api/sessions/", {"world": world.slug}, format="json")
    assert response.json()["status"] == "queued"
    assert response.json()["queue_position"] == 1


def test_an_unknown_world_is_a_404(player, clean_placement):
    response = _logged_in(player).post("/api/sessions/", {"world": "nope"}, format="json")
    assert response.status_code == 404
    assert not PlaySession.objects.exists()


def test_a_removed_world_cannot_be_played(player, clean_placement):
    removed = make_world(status=WorldStatus.REMOVED)
    response = _logged_in(player).post("/api/sessions/", {"world": removed.slug}, format="json")
    assert response.status_code == 404


def test_a_bad_body_is_a_400(player, clean_placement):
    response = _logged_in(player).post("/api/sessions/", {"world": "a b/c"}, format="json")
    assert response.status_code == 400
    assert "world" in response.json()


def test_a_player_sees_and_ends_their_session(world, player, worker_slots):
    worker_slots.add(capacity=1)
    client = _logged_in(player)
    session_id = client.post("/api/sessions/", {"world": world.slug}, format="json").json()["id"]
    assert client.get(f"/api/sessions/{session_id}/").json()["status"] == "starting"
    response = client.delete(f"/api/sessions/{session_id}/")
    assert response.status_code == 200
    assert response.json()["status"] == "ended"
    session = PlaySession.objects.get(pk=session_id)
    assert (session.status, session.end_reason) == (SessionStatus.ENDED, EndReason.PLAYER)


def test_it_rejects_ending_another_players_session(world, player, outsider, worker_slots):
    worker_slots.add(capacity=1)
    session_id = (
        _logged_in(player).post("/api/sessions/", {"world": world.slug}, format="json").json()["id"]
    )
    response = _logged_in(outsider).delete(f"/api/sessions/{session_id}/")
    assert response.status_code == 404
    assert PlaySession.objects.get(pk=session_id).status == SessionStatus.STARTING


def test_anyone_sees_a_public_session_but_not_a_private_one(world, player, worker_slots):
    worker_slots.add(capacity=2)
    client = _logged_in(player)
    public = client.post("/api/sessions/", {"world": world.slug}, format="json").json()["id"]
    other_world = make_world()
    private = client.post(
        "/api/sessions/", {"world": other_world.slug, "public": False}, format="json"
    ).json()["id"]
    assert APIClient().get(f"/api/sessions/{public}/").status_code == 200
    assert APIClient().get(f"/api/sessions/{private}/").status_code == 404
    assert client.get(f"/api/sessions/{private}/").status_code == 200


def test_the_schema_documents_the_session_endpoints(client):
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").content.decode()
    assert "/api/sessions/" in schema
    assert "/api/sessions/{session_id}/" in schema


def test_behind_a_proxy_anonymous_players_are_limited_per_forwarded_address(settings, worker_slots):
    settings.TRUSTED_PROXY_COUNT = 1
    settings.SESSION_MAX_ANON_PER_IP = 1
    worker_slots.add(capacity=4)

    def start(forwarded):  # a new browser each time: only the address links them
        return APIClient().post(
            "/api/sessions/",
            {"world": make_world().slug},
            format="json",
            HTTP_X_FORWARDED_FOR=forwarded,
        )

    assert start("203.0.113.7").status_code == 201
    assert start("9.9.9.9, 203.0.113.7").status_code == 429  # a forged first hop changes nothing
    assert start("198.51.100.4").status_code == 201
    assert set(PlaySession.objects.values_list("client_ip", flat=True)) == {
        "203.0.113.7",
        "198.51.100.4",
    }
