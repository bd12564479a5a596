"""The play page in Debian's Chromium: frames reach the canvas, held keys go out and come
back as the echoed seq (the HUD's input-to-frame latency), and the canvas changes.

The stack is real: Daphne (tests/browser/conftest.py) over the test database, the Redis
channel layer and placement, and the in-process inference worker that the first play socket
starts.
"""

import contextlib
import json
import re
from pathlib import Path

import pytest
from django.conf import settings

from inference.narrative.character_replies import REFUSAL_OPENERS
from inference.world import spec
from tests.sessions.play_fixtures import clean_placement, make_world  # noqa: F401

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(300),
]

TRAINED_WEIGHTS = (
    Path(__file__).resolve().parents[2] / "inference" / "weights" / "world_model.safetensors"
)


@pytest.fixture(scope="module")
def daphne_env() -> dict:
    return {
        "REDIS_URL": settings.REDIS_URL,
        "INFERENCE_IN_PROCESS": "true",  # the embedded worker, on the Redis layer and placement
        "CELERY_TASK_ALWAYS_EAGER": "true",
    }


@pytest.fixture
def play_world(request):
    request.getfixturevalue("clean_placement")  # no stale workers or queue on our Redis db
    return make_world()


def _canvas_pixels(page) -> str:
    return page.evaluate("document.getElementById('play-canvas').toDataURL('image/png')")


# The frames that reached the canvas a second, over the two seconds the HUD's FPS averages.
FRAMES_A_SECOND = """async () => {
  const root = document.getElementById('play');
  const f0 = Number(root.dataset.frames), t0 = performance.now();
  await new Promise((done) => setTimeout(done, 2000));
  return ((Number(root.dataset.frames) - f0) * 1000) / (performance.now() - t0);
}"""


@contextlib.contextmanager
def _spectator(request, live_url: str, page):
    """The watch page of the session `page` plays, in a browser of its own (another person)."""
    session_id = page.get_attribute("#play", "data-session")
    context = request.getfixturevalue("chromium").new_context(
        viewport={"width": 1280, "height": 900}
    )
    try:
        watcher = context.new_page()
        watcher.goto(f"{live_url}/watch/{session_id}/")
        yield watcher
    finally:
        context.close()


def _frames(page) -> int:
    return page.evaluate("Number(document.getElementById('play').dataset.frames || 0)")


def test_pressing_keys_on_the_play_page_changes_the_canvas(play_world, live_url, page):
    page.goto(f"{live_url}/play/{play_world.slug}/")
    blank = _canvas_pixels(page)
    page.wait_for_selector("#play[data-state='live']", timeout=120_000)
    page.wait_for_function("Number(document.getElementById('play').dataset.frames) > 3")
    # While frames flow the HUD never says 0 frames a second ("—" until it has measured them).
    assert page.text_content("#hud-fps") != "0"
    before = _canvas_pixels(page)
    page.focus("#play-canvas")
    page.keyboard.down("d")
    # The HUD shows a latency once a frame echoes one of our input seqs: the key went all the
    # way to the worker and back.
    page.wait_for_function("document.getElementById('hud-latency').textContent.endsWith('ms')")
    then = _frames(page)
    page.wait_for_function(f"Number(document.getElementById('play').dataset.frames) > {then + 12}")
    moved = _canvas_pixels(page)
    page.keyboard.up("d")
    arriving = page.evaluate(FRAMES_A_SECOND)
    shown = page.text_content("#hud-fps")
    assert shown.isdigit() and abs(int(shown) - arriving) <= max(4, 0.3 * arriving), (
        shown,
        arriving,
    )
    assert page.text_content("#hud-connection") == "open"
    assert page.text_content("#hud-state") == "live"
    assert before != blank  # the model's frames are on the canvas
    if TRAINED_WEIGHTS.exists():
        # A freshly initialised network ignores the keys; the trained one follows the avatar.
        assert moved != before


def test_the_events_list_is_still_there_after_a_reload(play_world, live_url, page, request):
    # the list was the page's own: a reload emptied it though the night it asked for stayed
    page.goto(f"{live_url}/play/{play_world.slug}/")
    page.wait_for_selector("#play[data-state='live']", timeout=120_000)
    for text in ("night falls", "the crowd goes wild"):
        page.fill("#prompt-text", text)
        page.keyboard.press("Enter")
        page.wait_for_selector("#play-events li:not(.pending) >> text=" + text, timeout=60_000)
    # it names nothing the model can draw: it offers what it can do nearest in meaning, a click
    # away
    offered = page.locator("#play-events li.unsupported .event-suggest button")
    first = offered.first.text_content()
    plain = {f"“{p}”" for by in spec.EVENT_PHRASES.values() for p in by.values()}
    assert first in plain
    offered.first.click()
    assert page.input_value("#prompt-text") == first.strip("“”")
    before = page.locator("#play-events li").all_text_contents()
    classes = page.locator("#play-events li").evaluate_all("lis => lis.map(li => li.className)")
    page.reload()
    page.wait_for_function("document.querySelectorAll('#play-events li').length >= 2")
    page.wait_for_timeout(1000)  # nothing more comes, and nothing twice
    assert page.locator("#play-events li").all_text_contents() == before
    assert before[0].startswith("Guest 1 the crowd goes wild")  # newest first, with why not
    again = page.locator("#play-events li").evaluate_all("lis => lis.map(li => li.className)")
    assert again == classes and "applied" in again[1] and "is-you" in again[1]
    # A spectator who comes now sees what the world was changed by, not what it could not do.
    with _spectator(request, live_url, page) as watcher:
        watcher.wait_for_selector("#watch-events li", timeout=60_000)
        watcher.wait_for_timeout(1000)
        assert watcher.locator("#watch-events li").all_text_contents() == ["Guest 1 night falls"]
        assert watcher.locator("#watch-events li.applied").is_visible()


def test_a_story_pick_by_key_grows_the_story_and_offers_a_new_pair(live_url, page, request):
    request.getfixturevalue("clean_placement")
    world = make_world(category="stories", story_opening="The boats are still out.")
    page.goto(f"{live_url}/play/{world.slug}/")
    page.wait_for_selector(".story-option:not([disabled])", timeout=120_000)
    first_pair = page.locator(".story-label").all_text_contents()
    assert page.locator("#story-lines li").all_text_contents() == ["The boats are still out."]
    page.focus("#play-canvas")
    page.keyboard.press("2")
    page.wait_for_function("document.querySelectorAll('#story-lines li').length === 2")
    page.wait_for_selector(".story-option:not([disabled])")
    assert page.get_attribute("#story-choices", "data-choice") == "c2"
    assert len(set(first_pair)) == 2
    # The new line is told under the option picked, shown apart from the narration.
    told = page.locator("#story-lines li").nth(1)
    assert told.locator(".story-chosen").text_content() == first_pair[1]
    assert told.locator(".story-chosen").evaluate("e => getComputedStyle(e).display") == "block"
    assert page.locator("#story-lines li").first.locator(".story-chosen").count() == 0


def _old_tom():
    return make_world(
        category="characters",
        character_name="Old Tom",
        character_persona="A gruff marsh ferryman.",
        character_greeting="Hmph. Need a ride?",
    )


def test_a_line_to_the_character_before_the_world_is_live_stays_in_the_box(live_url, page, request):
    # a line typed while the world started was sent, refused ("not running") and gone
    request.getfixturevalue("clean_placement")
    world = _old_tom()

    def hold_back_live(ws):  # the page never hears that the world went live: no status, no frame
        server = ws.connect_to_server()
        server.on_message(
            lambda message: (
                None
                if isinstance(message, bytes) or json.loads(message).get("state") == "live"
                else ws.send(message)
            )
        )

    page.route_web_socket(re.compile(r"/ws/play/"), hold_back_live)
    page.goto(f"{live_url}/play/{world.slug}/")
    page.wait_for_selector("#chat-log li", timeout=120_000)  # the greeting: live, unheard
    page.fill("#chat-text", "who are you?")
    page.keyboard.press("Enter")
    page.wait_for_function("document.querySelectorAll('#chat-log li').length >= 2")
    lines = page.locator("#chat-log li").all_text_contents()
    assert lines[1] == "not sent: The world is not live yet; send it again once it is."
    assert page.input_value("#chat-text") == "who are you?"
    page.wait_for_timeout(1500)  # no reply comes: nothing was sent
    assert page.locator("#chat-log li").count() == 2


def test_the_character_greets_and_answers_in_the_chat(live_url, page, request):
    request.getfixturevalue("clean_placement")
    world = _old_tom()
    page.goto(f"{live_url}/play/{world.slug}/")
    page.wait_for_selector("#chat-log li", timeout=120_000)
    assert page.text_content("#chat-log li") == "Old Tom: Hmph. Need a ride?"
    page.fill("#chat-text", "who are you? 1 2")  # typing digits picks nothing, moves nothing
    page.keyboard.press("Enter")
    # The reply streams (partial lines are rewritten in place); wait for the final one.
    page.wait_for_function(
        "document.querySelectorAll('#chat-log li:not(.chat-partial)').length >= 3",
        timeout=60_000,
    )
    lines = page.locator("#chat-log li:not(.chat-partial)").all_text_contents()
    # Each line says who spoke: an anonymous player is "Guest 1", their own line marked as theirs.
    assert lines[1] == "Guest 1: who are you? 1 2"
    assert "chat-you" in page.locator("#chat-log li").nth(1).get_attribute("class")
    # The character answers in its own voice: a sentence of its own, not the card recited.
    assert lines[2].startswith("Old Tom: ") and len(lines[2]) > len("Old Tom: ") + 3
    assert "A gruff marsh ferryman." not in lines[2]
    # A reload resumes the same session: the talk so far is there again, once (it came back
    # empty: the greeting goes out only once)
    page.reload()
    page.wait_for_function("document.querySelectorAll('#chat-log li').length >= 3", timeout=60_000)
    page.wait_for_timeout(1000)
    assert page.locator("#chat-log li").all_text_contents() == lines[:3]
    assert "chat-you" in page.locator("#chat-log li").nth(1).get_attribute("class")
    # A spectator who comes now sees the same talk (it was an empty chat), the player's line
    # under the player's name, not as their own.
    with _spectator(request, live_url, page) as watcher:
        watcher.wait_for_function(
            "document.querySelectorAll('#chat-log li').length >= 3", timeout=60_000
        )
        assert watcher.locator("#chat-log li").all_text_contents() == lines[:3]
        assert "chat-you" not in watcher.locator("#chat-log li").nth(1).get_attribute("class")
        # A line screening refuses is not sent, and says why; the character still answers it,
        # refusing in its own voice, and nobody else ever sees the words.
        page.fill("#chat-text", "send nudes")
        page.keyboard.press("Enter")
        page.wait_for_function(
            "document.querySelectorAll('#chat-log li:not(.chat-partial)').length >= 5",
            timeout=60_000,
        )
        said = page.locator("#chat-log li:not(.chat-partial)").all_text_contents()
        assert said[3].startswith("not sent: Your message was refused")
        refusal = f"Old Tom: {REFUSAL_OPENERS['gruff']}"
        assert said[4].startswith(refusal)
        watcher.wait_for_function(
            "document.querySelectorAll('#chat-log li:not(.chat-partial)').length >= 4",
            timeout=60_000,
        )
        seen = watcher.locator("#chat-log li:not(.chat-partial)").all_text_contents()
        assert seen[3].startswith(refusal) and not any("nudes" in line for line in seen)
