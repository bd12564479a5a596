"""The join page of an invite link: who may open it, and what it shows before the Join button."""

import pytest
from django.test import Client

from sessions.models import PlaySession, Seat, SessionStatus
from tests.sessions.play_fixtures import make_user, make_world

pytestmark = pytest.mark.django_db


def shared_session(*, public: bool = True, players=("Alice",), **fields) -> PlaySession:
    """A running shared session with seated players, straight through the ORM."""
    world = make_world(**fields.pop("world_fields", {}))
    session = PlaySession.objects.create(
        world=world,
        world_version=world.current_version,
        is_public=public,
        is_shared=True,
        max_players=fields.pop("max_players", 8),
        status=fields.pop("status", SessionStatus.LIVE),
        **fields,
    )
    for slot, name in enumerate(players):
        Seat.objects.create(session=session, slot=slot, name=name)
    return session


def test_the_join_page_shows_the_world_its_players_and_a_name_field():
    session = shared_session(players=("Alice", "Bob <b>"))
    response = Client().get(f"/join/{session.id}/")
    assert response.status_code == 200
    html = response.content.decode()
    assert session.world.title in html and session.world.cover_url in html
    assert "2 of 8 playing" in html
    assert "Alice" in html and "Bob &lt;b&gt;" in html  # names are text, never markup
    assert 'id="join-name"' in html and 'id="join-button"' in html
    assert f'data-api="/api/sessions/{session.id}/join/"' in html
    assert f'data-play="/play/{session.world.slug}/?session={session.id}"' in html
    assert "csrftoken" in response.cookies  # join.js posts with it


def test_a_signed_in_visitor_joins_under_their_own_name_without_a_name_field():
    session = shared_session()
    client = Client()
    client.force_login(make_user("carol"))
    html = client.get(f"/join/{session.id}/").content.decode()
    assert "You join as <b>carol</b>" in html
    assert 'id="join-name"' not in html


def test_a_private_session_is_a_404_without_its_invite_token():
    session = shared_session(public=False)
    assert Client().get(f"/join/{session.id}/").status_code == 404
    assert Client().get(f"/join/{session.id}/?invite=not-the-token").status_code == 404


def test_a_private_session_opens_with_its_invite_token_and_hands_it_to_join_js():
    session = shared_session(public=False)
    response = Client().get(f"/join/{session.id}/?invite={session.invite_token}")
    assert response.status_code == 200
    html = response.content.decode()
    assert f'data-invite="{session.invite_token}"' in html
    assert "Just watch" not in html  # a private session has no watch page


def test_an_unknown_session_and_a_one_player_session_are_404s():
    assert Client().get("/join/00000000-0000-0000-0000-000000000000/").status_code == 404
    solo = shared_session()
    PlaySession.objects.filter(pk=solo.pk).update(is_shared=False)
    assert Client().get(f"/join/{solo.id}/").status_code == 404


def test_a_full_session_says_every_seat_is_taken():
    session = shared_session(players=("Alice", "Bob"), max_players=2)
    html = Client().get(f"/join/{session.id}/").content.decode()
    assert "Every seat is taken" in html


def test_an_ended_session_offers_to_play_the_world_instead():
    session = shared_session(status=SessionStatus.ENDED)
    html = Client().get(f"/join/{session.id}/").content.decode()
    assert "This session has ended" in html
    assert 'id="join-button"' not in html
    assert f'href="/play/{session.world.slug}/"' in html


def test_the_watch_page_of_a_shared_session_offers_to_join_it():
    session = shared_session()
    html = Client().get(f"/watch/{session.id}/").content.decode()
    assert f'href="/join/{session.id}/"' in html and "Join them" in html
    assert 'id="presence-list"' in html and "js/presence.js" in html
