"""The play and watch pages: who may open them, and what the page hands to its script."""

import pytest
from django.test import Client

from sessions import seats
from tests.sessions.play_fixtures import make_user, make_world
from worlds.models import WorldStatus

pytestmark = pytest.mark.django_db


def test_the_play_page_hands_the_world_to_play_js(world):
    response = Client().get(f"/play/{world.slug}/")
    assert response.status_code == 200
    html = response.content.decode()
    assert f'data-world="{world.slug}"' in html
    assert 'data-api="/api/sessions/"' in html
    assert "js/play.js" in html
    assert "csrftoken" in response.cookies  # play.js posts with it


def test_the_play_page_of_another_users_draft_is_a_404(outsider):
    draft = make_world(status=WorldStatus.DRAFT)
    client = Client()
    client.force_login(outsider)
    assert client.get(f"/play/{draft.slug}/").status_code == 404


def test_the_creator_opens_the_play_page_of_their_draft():
    creator = make_user()
    draft = make_world(creator=creator, status=WorldStatus.DRAFT)
    client = Client()
    client.force_login(creator)
    assert client.get(f"/play/{draft.slug}/").status_code == 200


def test_anyone_opens_the_watch_page_of_a_public_session(world, player, worker_slots):
    worker_slots.add(capacity=1)
    session, _ = seats.session_create(
        world_slug=world.slug, user=player, session_key="", client_ip="10.5.5.5"
    )
    response = Client().get(f"/watch/{session.id}/")
    assert response.status_code == 200
    assert f'data-socket="/ws/watch/{session.id}/"' in response.content.decode()


def test_the_watch_page_of_a_private_session_is_a_404(world, player, worker_slots):
    worker_slots.add(capacity=1)
    session, _ = seats.session_create(
        world_slug=world.slug, user=player, session_key="", client_ip="10.5.5.5", is_public=False
    )
    assert Client().get(f"/watch/{session.id}/").status_code == 404


def test_a_story_world_shows_two_option_buttons_and_no_chat():
    html = Client().get(f"/play/{make_world(category='stories').slug}/").content.decode()
    assert html.count('class="btn story-option"') == 2
    assert 'id="story-lines"' in html and "js/narrative.js" in html
    assert 'id="chat-form"' not in html


def test_a_character_world_shows_a_chat_panel_named_for_its_character():
    world = make_world(category="characters", character_name="Old Tom")
    html = Client().get(f"/play/{world.slug}/").content.decode()
    assert 'id="chat-form"' in html and "Talk to Old Tom" in html
    assert "story-option" not in html


def test_a_game_world_has_neither_panel(world):
    html = Client().get(f"/play/{world.slug}/").content.decode()
    assert "story-option" not in html and 'id="chat-log"' not in html


def test_the_watch_page_shows_the_conversation_read_only(player, worker_slots):
    worker_slots.add(capacity=1)
    world = make_world(category="characters", character_name="Old Tom")
    session, _ = seats.session_create(
        world_slug=world.slug, user=player, session_key="", client_ip="10.5.5.6"
    )
    html = Client().get(f"/watch/{session.id}/").content.decode()
    assert 'id="chat-log"' in html and 'id="chat-form"' not in html
