"""The join page of an invite link in Chromium: what a visitor is told when the world is full
or their name is refused, and that a good name takes them to the play page.

The sessions are rows (no worker runs): joining seats a player without one.
"""

import pytest
from playwright.sync_api import expect

from sessions.models import PlaySession, Seat, SessionStatus
from tests.sessions.play_fixtures import make_world

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def shared_session(*, max_players: int = 8, players=("Alice",)) -> PlaySession:
    world = make_world()
    session = PlaySession.objects.create(
        world=world,
        world_version=world.current_version,
        is_shared=True,
        max_players=max_players,
        status=SessionStatus.LIVE,
    )
    for slot, name in enumerate(players):
        Seat.objects.create(session=session, slot=slot, name=name)
    return session


def test_a_full_world_says_so_in_the_page(live_url, page):
    session = shared_session(max_players=1)
    page.goto(f"{live_url}/join/{session.id}/")
    expect(page.locator("#join-full")).to_contain_text("Every seat is taken")
    page.click("#join-button")
    expect(page.locator("#join-error")).to_have_text(
        "This world is full: every seat is taken. Try again in a moment."
    )
    assert page.url == f"{live_url}/join/{session.id}/"


def test_a_refused_name_is_explained_under_the_field_and_a_good_one_joins(live_url, page):
    session = shared_session()
    page.goto(f"{live_url}/join/{session.id}/")
    expect(page.locator(".join-players")).to_contain_text("Alice")
    page.fill("#join-name", "HitlerWasRight")
    page.click("#join-button")
    expect(page.locator("#join-name-error")).to_be_visible()
    assert page.text_content("#join-name-error").strip()
    assert page.locator("#join-error").is_hidden()

    page.fill("#join-name", "Dana")
    page.click("#join-button")
    page.wait_for_url(f"**/play/{session.world.slug}/?session={session.id}")
    assert Seat.objects.filter(session=session, name="Dana", left_at=None).exists()
