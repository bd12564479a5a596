"""The play and watch pages: who may open them, and what the page hands to its script."""

import pytest
from django.test import Client

from sessions import services
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
    session, _ = services.session_create(
        world_slug=world.slug, user=player, session_key="", client_ip="10.5.5.5"
    )
    response = Client().get(f"/watch/{session.id}/")
    assert response.status_code == 200
    assert f'data-socket="/ws/watch/{session.id}/"' in response.content.decode()


def test_the_watch_page_of_a_private_session_is_a_404(world, player, worker_slots):
    worker_slots.add(capacity=1)
    session, _ = services.session_create(
        world_slug=world.slug, user=player, session_key="", client_ip="10.5.5.5", is_public=False
    )
    assert Client().get(f"/watch/{session.id}/").status_code == 404
