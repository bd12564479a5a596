"""Shared sessions over HTTP: create, join (public, by invite), the seat limit and its race,
names, leaving, removing a player, the Live listing and its thumbnails, Live worlds."""

import threading

import pytest
from django.db import connection
from rest_framework.test import APIClient

from sessions.models import PlaySession, Seat, SessionStatus
from sessions.worker_client import get_placement
from tests.sessions.play_fixtures import make_user, make_world
from tests.worlds.moderation.conftest import moderators_group
from worlds.models import Category
from worlds.moderation.models import AuditEntry, Suspension

pytestmark = pytest.mark.django_db


def _as(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def _shared(creator, world=None, *, public=True) -> dict:
    world = world or make_world()
    response = _as(creator).post(
        "/api/sessions/", {"world": world.slug, "shared": True, "public": public}, format="json"
    )
    assert response.status_code == 201, response.content
    return response.json()


def _join(client: APIClient, session_id, **body):
    return client.post(f"/api/sessions/{session_id}/join/", body, format="json")


def test_a_shared_session_seats_its_creator_and_carries_an_invite_link(player, worker_slots):
    worker_slots.add(capacity=8)
    body = _shared(player)
    assert body["shared"] is True and body["max_players"] == 8 and body["is_creator"] is True
    assert body["you"] == {"slot": 0, "name": "player", "color": "#dc2828"}
    assert body["players"] == [body["you"]]
    assert body["invite_url"] == f"/join/{body['id']}/" and body["invite"] is None


def test_another_player_joins_a_public_session_and_joining_again_keeps_the_seat(
    player, worker_slots
):
    worker_slots.add(capacity=8)
    session = _shared(player)
    guest = APIClient()
    first = _join(guest, session["id"], name="Ada")
    again = _join(guest, session["id"], name="Someone else")
    assert first.status_code == 201 and again.status_code == 200
    assert first.json()["player"] == {"slot": 1, "name": "Ada", "color": "#2850e6"}
    assert again.json()["player"] == first.json()["player"]
    assert [p["name"] for p in again.json()["players"]] == ["player", "Ada"]
    assert again.json()["is_creator"] is False
    # Placement counts the seats against the worker's capacity.
    from sessions.worker_client import get_placement

    assert get_placement().seats_of(session["id"]) == 2


def test_a_private_session_is_joined_only_with_its_invite(player, worker_slots):
    worker_slots.add(capacity=8)
    session = _shared(player, public=False)
    token = session["invite"]
    assert token and session["invite_url"].endswith(f"?invite={token}")
    assert _join(APIClient(), session["id"]).status_code == 404
    assert _join(APIClient(), session["id"], invite="wrong-token").status_code == 404
    assert _join(APIClient(), session["id"], invite=token, name="Bo").status_code == 201
    # Guests never see the token of a session they do not sit in.
    shown = APIClient().get(f"/api/sessions/{session['id']}/")
    assert shown.status_code == 404


def test_unknown_ended_and_single_player_sessions_cannot_be_joined(player, worker_slots):
    worker_slots.add(capacity=8)
    assert _join(APIClient(), "7c9e6679-7425-40de-944b-e07fc1f90ae7").status_code == 404
    solo = _as(player).post("/api/sessions/", {"world": make_world().slug}, format="json").json()
    assert _join(APIClient(), solo["id"]).status_code == 409
    ended = _shared(make_user())
    PlaySession.objects.filter(pk=ended["id"]).update(status=SessionStatus.ENDED)
    assert _join(APIClient(), ended["id"]).status_code == 404


def test_the_ninth_join_is_full(player, worker_slots, settings):
    settings.SESSION_MAX_ANON_PER_IP = 50
    worker_slots.add(capacity=16)
    session = _shared(player)
    answers = [_join(APIClient(), session["id"]).status_code for _ in range(8)]
    assert answers == [201] * 7 + [409]
    assert Seat.objects.filter(session_id=session["id"], left_at=None).count() == 8
    assert sorted(Seat.objects.filter(session_id=session["id"]).values_list("slot", flat=True)) == [
        *range(8)
    ]


def test_the_creator_may_lower_the_seats_and_the_server_caps_them(player, worker_slots, settings):
    settings.SESSION_MAX_ANON_PER_IP = 50
    worker_slots.add(capacity=16)
    small = make_world()
    small.max_players = 3
    small.save()
    session = _shared(player, small)
    assert session["max_players"] == 3
    assert [_join(APIClient(), session["id"]).status_code for _ in range(3)] == [201, 201, 409]
    settings.SESSION_MAX_PLAYERS = 2
    big = make_world()
    big.max_players = 16
    big.save()
    assert _shared(make_user(), big)["max_players"] == 2


def test_a_worker_without_room_refuses_the_join_and_keeps_no_seat(player, worker_slots):
    worker_slots.add(capacity=2)
    session = _shared(player)
    assert _join(APIClient(), session["id"]).status_code == 201
    refused = _join(APIClient(), session["id"])
    assert refused.status_code == 409 and "room" in refused.json()["detail"]
    assert Seat.objects.filter(session_id=session["id"], left_at=None).count() == 2


@pytest.mark.django_db(transaction=True)
def test_two_joins_racing_for_the_last_seat_one_gets_409(worker_slots, settings):
    settings.SESSION_MAX_ANON_PER_IP = 50
    worker_slots.add(capacity=16)
    small = make_world()
    small.max_players = 2
    small.save()
    session = _shared(make_user(), small)
    barrier = threading.Barrier(2)
    codes = []

    def join():
        try:
            client = APIClient()
            client.get("/")  # a browser session first, so the join starts at once
            barrier.wait()
            codes.append(_join(client, session["id"]).status_code)
        finally:
            connection.close()

    threads = [threading.Thread(target=join) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(codes) == [201, 409]
    assert Seat.objects.filter(session_id=session["id"], left_at=None).count() == 2


def test_a_name_that_fails_screening_is_refused_and_seats_nobody(player, worker_slots):
    worker_slots.add(capacity=8)
    session = _shared(player)
    response = _join(APIClient(), session["id"], name="send nudes")
    assert response.status_code == 400 and response.json()["name"]
    assert Seat.objects.filter(session_id=session["id"]).count() == 1


def test_a_suspended_user_cannot_join(player, worker_slots):
    worker_slots.add(capacity=8)
    session = _shared(player)
    banned = make_user()
    Suspension.objects.create(user=banned, reason="spam", created_by=make_user())
    assert _join(_as(banned), session["id"]).status_code == 403


def test_leaving_frees_the_seat_and_the_last_one_out_ends_the_session(player, worker_slots):
    worker_slots.add(capacity=8)
    session = _shared(player)
    guest = APIClient()
    _join(guest, session["id"])
    left = guest.delete(f"/api/sessions/{session['id']}/")
    assert left.status_code == 200 and left.json()["status"] != "ended"
    assert [p["slot"] for p in left.json()["players"]] == [0]
    ended = _as(player).delete(f"/api/sessions/{session['id']}/")
    assert ended.json()["status"] == "ended"


def test_the_creator_removes_a_player_and_others_cannot(player, worker_slots):
    worker_slots.add(capacity=8)
    session = _shared(player)
    guest, other = APIClient(), make_user()
    _join(guest, session["id"], name="Rowan")
    _join(_as(other), session["id"])
    url = f"/api/sessions/{session['id']}/players/1/remove/"
    assert _as(other).post(url, {"reason": "no"}, format="json").status_code == 403
    assert guest.post(url, {"reason": "no"}, format="json").status_code == 403
    assert _as(player).post(url, {"reason": ""}, format="json").status_code == 400
    removed = _as(player).post(url, {"reason": "spamming the chat"}, format="json")
    assert removed.status_code == 200
    assert [p["slot"] for p in removed.json()["players"]] == [0, 2]
    seat = Seat.objects.get(session_id=session["id"], slot=1)
    assert seat.left_reason == "removed: spamming the chat"
    # The removed guest is no longer seated (their socket would be refused) and stays out.
    again = _join(guest, session["id"])
    assert again.status_code == 403 and "removed" in again.json()["detail"]
    assert _join(APIClient(), session["id"]).json()["player"]["slot"] == 1  # someone else may


def test_a_moderator_removes_a_player_and_it_is_audited(player, worker_slots):
    moderator = make_user("mod")
    moderator.groups.add(moderators_group())
    worker_slots.add(capacity=8)
    session = _shared(player)
    _join(APIClient(), session["id"], name="Loud")
    url = f"/api/sessions/{session['id']}/players/1/remove/"
    assert _as(moderator).post(url, {"reason": "abuse"}, format="json").status_code == 200
    entry = AuditEntry.objects.get(action="remove_player")
    assert entry.target_id == session["id"] and entry.reason == "abuse"


def test_the_live_listing_shows_public_sessions_busiest_first(player, worker_slots):
    worker_slots.add(capacity=16)
    quiet = _shared(player)
    busy = _shared(make_user())
    for _ in range(2):
        _join(APIClient(), busy["id"])
    hidden = _shared(make_user(), public=False)
    for session in (quiet, busy, hidden):
        get_placement().save_thumbnail(session["id"], b"\xff\xd8jpeg")  # as their worker does
    body = APIClient().get("/api/live/").json()
    ids = [row["id"] for row in body["results"]]
    assert ids[:2] == [busy["id"], quiet["id"]] and hidden["id"] not in ids
    row = body["results"][0]
    assert (row["players"], row["max_players"], row["joinable"], row["viewers"]) == (3, 8, True, 0)
    assert row["watch_url"] == f"/watch/{busy['id']}/"
    assert row["thumbnail_url"] == f"/api/sessions/{busy['id']}/thumbnail.jpg"
    assert row["world"]["title"].startswith("Pine forest")


def test_a_session_is_listed_live_only_once_its_thumbnail_can_be_fetched(player, worker_slots):
    worker_slots.add(capacity=8)
    shown, waiting = _shared(player), _shared(make_user())
    get_placement().save_thumbnail(shown["id"], b"\xff\xd8jpeg")
    rows = APIClient().get("/api/live/").json()["results"]
    assert [row["id"] for row in rows] == [shown["id"]]
    picture = APIClient().get(rows[0]["thumbnail_url"])
    assert (picture.status_code, picture["Content-Type"]) == (200, "image/jpeg")
    assert APIClient().get(f"/api/sessions/{waiting['id']}/thumbnail.jpg").status_code == 404
    get_placement().delete_thumbnail(shown["id"])  # as the worker does at the end
    assert APIClient().get("/api/live/").json()["results"] == []


def test_a_thumbnail_is_the_latest_frame_and_private_sessions_have_none(player, worker_slots):
    worker_slots.add(capacity=8)
    public, private = _shared(player), _shared(make_user(), public=False)
    url = f"/api/sessions/{public['id']}/thumbnail.jpg"
    assert APIClient().get(url).status_code == 404  # no frame yet
    get_placement().save_thumbnail(public["id"], b"\xff\xd8jpeg")
    get_placement().save_thumbnail(private["id"], b"\xff\xd8jpeg")
    shown = APIClient().get(url)
    assert shown.status_code == 200 and shown["Content-Type"] == "image/jpeg"
    assert shown.content == b"\xff\xd8jpeg"
    hidden = APIClient().get(f"/api/sessions/{private['id']}/thumbnail.jpg")
    assert hidden.status_code == 404


def test_opening_a_live_world_seats_everyone_in_its_one_session(worker_slots):
    worker_slots.add(capacity=8)
    live = make_world(category=Category.LIVE)
    first = _as(make_user()).post("/api/sessions/", {"world": live.slug}, format="json").json()
    second = APIClient().post("/api/sessions/", {"world": live.slug, "name": "Zed"}, format="json")
    assert second.status_code == 201
    assert second.json()["id"] == first["id"]
    assert [p["name"] for p in second.json()["players"]][1] == "Zed"
    session = PlaySession.objects.get(pk=first["id"])
    assert session.is_live_world and session.is_shared and session.is_public
    assert session.player is None  # nobody owns it


def test_seats_count_toward_the_players_session_limit(worker_slots, settings):
    settings.SESSION_MAX_PER_USER = 1
    worker_slots.add(capacity=8)
    joiner = make_user()
    session = _shared(make_user())
    assert _join(_as(joiner), session["id"]).status_code == 201
    Seat.objects.filter(user=joiner).update(disconnected_at=None)  # playing it now
    other = _as(joiner).post("/api/sessions/", {"world": make_world().slug}, format="json")
    assert other.status_code == 429


def test_an_anonymous_creator_removes_a_player_by_their_browser_session(worker_slots):
    worker_slots.add(capacity=8)
    host = APIClient()
    created = host.post(
        "/api/sessions/",
        {"world": make_world().slug, "shared": True, "name": "Host"},
        format="json",
    )
    session_id = created.json()["id"]
    assert created.json()["is_creator"] is True
    _join(APIClient(), session_id, name="Rowan")
    url = f"/api/sessions/{session_id}/players/1/remove/"
    assert APIClient().post(url, {"reason": "no"}, format="json").status_code == 403
    assert (
        host.post(f"/api/sessions/{session_id}/players/0/remove/", {"reason": "me"}).status_code
        == 400
    )
    removed = host.post(url, {"reason": "rude"}, format="json")
    assert removed.status_code == 200 and [p["name"] for p in removed.json()["players"]] == ["Host"]
