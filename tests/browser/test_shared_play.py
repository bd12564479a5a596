"""Shared play in Chromium: two people in one world and a spectator who found it on the Live page.

Alice (an account) opens a world and presses "Play together"; Bob (anonymous) opens the invite
link from her clipboard, gives his name on the join page and plays; a third browser finds the
session on /live/ and watches it. What each of them sees is asserted: the names in every presence
list, the Live card's "2/8 playing", frames on every canvas. The stack is real, as in
test_play_page.py: Daphne, the Redis layer and placement, the in-process inference worker.
"""

import re
from pathlib import Path

import pytest
from django.conf import settings
from playwright.sync_api import expect

from gallery.models import User
from tests.sessions.play_fixtures import clean_placement, make_world  # noqa: F401

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(420),
]

DESKTOP = {"viewport": {"width": 1280, "height": 900}}
PHONE = {"viewport": {"width": 390, "height": 844}, "has_touch": True, "is_mobile": True}
PASSWORD = "amber-kestrel-harbour-62"
TRAINED_WEIGHTS = (
    Path(__file__).resolve().parents[2] / "inference" / "weights" / "world_model.safetensors"
)


@pytest.fixture(scope="module")
def daphne_env() -> dict:
    return {
        "REDIS_URL": settings.REDIS_URL,
        "INFERENCE_IN_PROCESS": "true",
        "CELERY_TASK_ALWAYS_EAGER": "true",
    }


@pytest.fixture
def browsers(chromium):
    """new(**options) opens a fresh browser context (its own cookies: another person)."""
    opened = []

    def new(**options):
        context = chromium.new_context(**(DESKTOP | options))
        context.set_default_timeout(60_000)
        opened.append(context)
        return context.new_page()

    yield new
    for context in opened:
        context.close()


def log_in(page, base: str, username: str) -> None:
    page.goto(f"{base}/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("form.stack-form button[type=submit]")
    page.wait_for_url(f"{base}/")


def frames(page, root: str) -> int:
    return page.evaluate(f"Number(document.getElementById('{root}').dataset.frames || 0)")


def wait_for_frames(page, root: str, more_than: int = 3) -> None:
    page.wait_for_function(
        f"Number(document.getElementById('{root}').dataset.frames || 0) > {more_than}",
        timeout=120_000,
    )


def canvas_picture(page, canvas: str) -> dict:
    return page.eval_on_selector(
        canvas,
        "c => ({width: c.width, height: c.height, shown: c.getBoundingClientRect().width,"
        " png: c.toDataURL('image/png')})",
    )


def presence_names(page) -> list[str]:
    return page.locator("#presence-list .presence-name").all_text_contents()


def start_shared_world(page, base: str, slug: str) -> str:
    """Opens the play page until its first frames; returns the session id."""
    page.goto(f"{base}/play/{slug}/")
    page.wait_for_selector("#play[data-state='live']", timeout=120_000)
    wait_for_frames(page, "play")
    return page.get_attribute("#play", "data-session")


def invite_link(page) -> str:
    """Presses "Play together" and reads the link the way a player would paste it."""
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.click("#play-together")
    expect(page.locator("#invite-status")).to_have_text("Invite link copied")
    return page.evaluate("navigator.clipboard.readText()")


def join_as(page, link: str, name: str) -> None:
    page.goto(link)
    page.fill("#join-name", name)
    page.click("#join-button")
    page.wait_for_url("**/play/**?session=*")


def test_two_players_share_a_world_and_a_spectator_watches_it_from_the_live_page(
    live_url, browsers, request
):
    request.getfixturevalue("clean_placement")
    User.objects.create_user(username="alice", password=PASSWORD, display_name="Alice")
    world = make_world()

    alice = browsers()
    log_in(alice, live_url, "alice")
    session_id = start_shared_world(alice, live_url, world.slug)
    assert alice.text_content("#end-session") == "Leave"  # others play on after she goes
    # she is told her session is public: on Live now, with a Join button for anyone
    expect(alice.locator("#presence-public")).to_be_visible()
    expect(alice.locator("#presence-public")).to_contain_text("anyone can watch or join")
    link = invite_link(alice)
    assert link == f"{live_url}/join/{session_id}/"

    bob = browsers()
    bob.goto(link)
    expect(bob.locator("h1")).to_have_text(world.title)
    expect(bob.locator(".join-players")).to_contain_text("Alice")
    expect(bob.locator(".join-players h2")).to_have_text("1 of 8 playing")
    join_as(bob, link, "Bob")
    assert bob.url.endswith(f"/play/{world.slug}/?session={session_id}")
    bob.wait_for_selector("#play[data-state='live']", timeout=120_000)
    wait_for_frames(bob, "play")
    bob_canvas = canvas_picture(bob, "#play-canvas")
    assert bob_canvas["width"] > 0 and bob_canvas["height"] > 0 and bob_canvas["shown"] > 300

    # Both names in both presence lists, each marked "you" on their own page.
    for page, me in ((alice, "Alice"), (bob, "Bob")):
        expect(page.locator("#presence-list .presence-player")).to_have_count(2)
        assert sorted(presence_names(page)) == ["Alice", "Bob"]
        assert page.text_content("#presence-list .is-you .presence-name") == me
        assert page.text_content("#presence-count") == "2"

    watcher = browsers()
    watcher.goto(f"{live_url}/live/")
    card = watcher.locator(f".live-card[data-session='{session_id}']")
    expect(card.locator(".live-players")).to_have_text("2/8 playing")
    expect(card.locator(".card-title")).to_have_text(world.title)
    expect(card.locator(".live-join")).to_be_visible()
    # The thumbnail is the session's latest frame, fetched again while the page is open.
    watcher.wait_for_function(
        f"Number(document.querySelector(\".live-card[data-session='{session_id}']\")"
        ".dataset.thumbLoads || 0) >= 2",
        timeout=30_000,
    )
    assert card.locator("img.live-frame").evaluate("img => img.naturalWidth") > 0

    card.locator(".live-watch").click()
    watcher.wait_for_url(f"**/watch/{session_id}/")
    wait_for_frames(watcher, "watch")
    first = canvas_picture(watcher, "#watch-canvas")
    # Alice moves while the spectator watches: the watch page shows her camera. (Her window
    # comes to the front first: a window that loses focus lets go of its held keys.)
    alice.bring_to_front()
    alice.focus("#play-canvas")
    alice.keyboard.down("d")
    seen = frames(watcher, "watch")
    wait_for_frames(watcher, "watch", more_than=seen + 24)
    later = canvas_picture(watcher, "#watch-canvas")
    alice.keyboard.up("d")
    assert first["width"] > 0 and first["height"] > 0 and first["shown"] > 300
    if TRAINED_WEIGHTS.exists():
        assert later["png"] != first["png"]  # a moving avatar: the picture changes
    expect(watcher.locator("#presence-list .presence-player")).to_have_count(2)
    assert sorted(presence_names(watcher)) == ["Alice", "Bob"]
    assert watcher.locator("#presence-list .is-you").count() == 0

    # Bob's own canvas keeps drawing frames of his camera.
    then = frames(bob, "play")
    wait_for_frames(bob, "play", more_than=then + 5)
    assert bob.text_content("#hud-state") == "live"

    # Bob leaves: his page stays ended (it went back to "live" a second later, still hearing
    # the session), and Alice plays on alone.
    bob.click("#end-session")
    expect(bob.locator("#hud-state")).to_have_text("ended")
    expect(alice.locator("#presence-count")).to_have_text("1")
    bob.wait_for_timeout(2500)
    assert bob.text_content("#hud-state") == "ended"
    assert bob.text_content("#play-overlay") == "You left this world."
    assert alice.text_content("#hud-state") == "live"


def test_on_a_phone_the_play_page_with_its_presence_list_fits_the_screen_width(
    live_url, browsers, request
):
    request.getfixturevalue("clean_placement")
    world = make_world()
    phone = browsers(**PHONE)
    session_id = start_shared_world(phone, live_url, world.slug)
    friend = browsers()
    join_as(
        friend,
        f"{live_url}/join/{session_id}/",
        "Bartholomew of the Long Name and the Even Longer Surname",
    )
    expect(phone.locator("#presence-list .presence-player")).to_have_count(2)
    # A browser that refuses the clipboard gets the link in a text field to copy by hand.
    phone.evaluate(
        """Object.defineProperty(navigator, "clipboard", {value: {writeText: () =>
            Promise.reject(new DOMException("refused", "NotAllowedError"))}})"""
    )
    phone.click("#play-together")
    expect(phone.locator("#invite-link")).to_be_visible()
    assert phone.input_value("#invite-link") == f"{live_url}/join/{session_id}/"

    width = PHONE["viewport"]["width"]
    assert phone.evaluate("document.documentElement.scrollWidth") == width
    for selector in (
        "#presence",
        "#presence-list",
        "#play-together",
        "#invite-link",
        "#play-canvas",
    ):
        rect = phone.eval_on_selector(selector, "el => el.getBoundingClientRect().toJSON()")
        assert rect["left"] >= 0 and rect["right"] <= width, (selector, rect)
    overflowing = phone.evaluate(
        """w => [...document.querySelectorAll('#play *')]
            .filter(el => el.getClientRects().length && el.getBoundingClientRect().right > w + 0.5)
            .map(el => el.id || el.className)""",
        width,
    )
    assert overflowing == []
    assert phone.is_visible("#touch-pad")


def option(page, n: int):
    return page.locator(".story-option").nth(n)


def test_in_a_shared_story_everyone_sees_the_votes_a_countdown_and_the_audience_apart(
    live_url, browsers, request
):
    request.getfixturevalue("clean_placement")
    world = make_world(category="stories", story_opening="The boats are still out.")
    alice = browsers()
    session_id = start_shared_world(alice, live_url, world.slug)
    bob = browsers()
    join_as(bob, f"{live_url}/join/{session_id}/", "Bob")
    watcher = browsers()
    watcher.goto(f"{live_url}/watch/{session_id}/")
    for page in (alice, bob):
        page.wait_for_selector(".story-option:not([disabled])", timeout=120_000)

    # Alice votes for the first option: Bob sees her vote and the vote closing; hers is marked.
    option(alice, 0).click()
    expect(option(bob, 0).locator(".story-votes")).to_have_text("1 vote")
    expect(bob.locator("#story-countdown")).to_have_text(re.compile(r"^Vote closes in \d+ s$"))
    assert "picked" in option(alice, 0).get_attribute("class")
    assert option(alice, 0).get_attribute("aria-pressed") == "true"
    assert option(bob, 0).get_attribute("aria-pressed") == "false"

    # Bob votes too: everyone has voted, so the story goes on and a new pair is open to all.
    option(bob, 0).click()
    alice.wait_for_function("document.querySelectorAll('#story-lines li').length === 2")
    watcher.wait_for_selector(".story-option:not([disabled])", timeout=60_000)

    # The audience votes apart from the players.
    option(watcher, 1).click()
    expect(option(alice, 1).locator(".story-votes")).to_have_text("0 votes · audience 1")
    expect(option(watcher, 1)).to_have_attribute("aria-pressed", "true")


def test_the_creator_removes_a_player_who_sees_why_and_the_others_see_them_go(
    live_url, browsers, request
):
    request.getfixturevalue("clean_placement")
    User.objects.create_user(username="alice", password=PASSWORD, display_name="Alice")
    world = make_world()
    alice = browsers()
    log_in(alice, live_url, "alice")
    session_id = start_shared_world(alice, live_url, world.slug)
    bob = browsers()
    join_as(bob, f"{live_url}/join/{session_id}/", "Bob")
    bob.wait_for_selector("#play[data-state='live']", timeout=120_000)
    expect(alice.locator("#presence-list .presence-player")).to_have_count(2)
    assert bob.locator(".presence-remove").count() == 0  # only the creator removes players

    alice.get_by_role("button", name="Remove Bob").click()
    expect(alice.locator("#remove-dialog")).to_be_visible()
    alice.fill("#remove-reason", "spoiling the lake for everyone")
    alice.locator("#remove-form button[type=submit]").click()
    expect(alice.locator("#remove-dialog")).to_be_hidden()

    expect(bob.locator("#play-overlay")).to_have_text(
        re.compile(r"^You were removed .*: spoiling the lake for everyone$")
    )
    expect(bob.locator("#play")).to_have_attribute("data-state", "ended")
    expect(alice.locator("#presence-list .presence-player")).to_have_count(1)
    assert presence_names(alice) == ["Alice"]
