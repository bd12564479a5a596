"""Recordings in Debian's Chromium: play a world, end the session, open its replay from the
play page, scrub to an event's mark, change the speed, and "Play from here": the fork plays on.

The stack is real: Daphne over the test database with the embedded worker (which records to
local media), Celery eager (the replay's MP4 is drawn by the world model when the page asks),
the Redis channel layer and placement.
"""

import pytest
from django.conf import settings

from sessions.models import PlaySession
from tests.sessions.play_fixtures import clean_placement, make_world  # noqa: F401

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(400),
]


@pytest.fixture(scope="module")
def daphne_env() -> dict:
    return {
        "REDIS_URL": settings.REDIS_URL,
        "INFERENCE_IN_PROCESS": "true",
        "CELERY_TASK_ALWAYS_EAGER": "true",
    }


def _frames(page) -> int:
    return page.evaluate("Number(document.getElementById('play').dataset.frames || 0)")


def test_a_run_is_replayed_scrubbed_and_forked(request, live_url, page):
    request.getfixturevalue("clean_placement")
    world = make_world(prompt="a sunny meadow with a pond")
    page.goto(f"{live_url}/play/{world.slug}/")
    page.wait_for_selector("#play[data-state='live']", timeout=120_000)
    page.focus("#play-canvas")
    page.keyboard.down("d")
    page.wait_for_function("Number(document.getElementById('play').dataset.frames) > 40")
    page.keyboard.up("d")
    page.fill("#prompt-text", "a lantern appears")
    page.keyboard.press("Enter")
    page.wait_for_selector("#play-events li.applied", timeout=60_000)
    page.focus("#play-canvas")
    page.keyboard.down("s")
    then = _frames(page)
    page.wait_for_function(f"Number(document.getElementById('play').dataset.frames) > {then + 60}")
    page.keyboard.up("s")
    first_session = page.get_attribute("#play", "data-session")
    page.click("#end-session")
    link = page.wait_for_selector("#replay-link:not([hidden])", timeout=30_000)
    link.click()

    # The replay page draws the run (an MP4 per camera) and plays it.
    page.wait_for_url("**/r/*/")
    assert page.text_content("h1") == f"A run of {world.title}"
    page.wait_for_selector("#replay-overlay[hidden]", state="attached", timeout=120_000)
    assert page.text_content("#replay-status") == "Ready"
    assert page.evaluate(
        "document.getElementById('replay-video').canPlayType('video/mp4; codecs=\"avc1.64001e\"')"
    )
    page.wait_for_function("document.getElementById('replay-video').readyState >= 1")
    duration = page.evaluate("document.getElementById('replay-video').duration")
    frames = int(page.get_attribute("#replay-scrubber", "max")) + 1
    assert abs(duration - frames / 24) < 0.2 and frames > 60
    # the event is marked on the scrubber and in the list; a click on it seeks there
    marks = page.locator("#replay-marks .replay-mark-event")
    assert marks.count() == 1 and "a lantern appears" in marks.first.get_attribute("title")
    assert "a lantern appears" in page.text_content("#replay-log")
    marks.first.click()
    at_mark = int(page.input_value("#replay-scrubber"))
    assert 30 <= at_mark < frames - 30
    # play at 2x from the start (the run is longer than a second), then pause
    page.evaluate(
        "(() => { const s = document.getElementById('replay-scrubber'); s.value = 0;"
        " s.dispatchEvent(new Event('input')); s.dispatchEvent(new Event('change')); })()"
    )
    page.select_option("#replay-speed", "2")
    assert page.evaluate("document.getElementById('replay-video').playbackRate") == 2
    page.click("#replay-toggle")
    page.wait_for_function("document.getElementById('replay-video').currentTime > 1")
    page.click("#replay-toggle")
    # the label follows the video's "pause" event, which comes after `paused` turns true
    page.wait_for_function("document.getElementById('replay-toggle').textContent === 'Play'")
    assert page.evaluate("document.getElementById('replay-video').paused")
    assert int(page.input_value("#replay-scrubber")) >= 24
    # scrub to the middle, then play on from there in a new live session
    middle = frames // 2
    page.evaluate(
        f"(() => {{ const s = document.getElementById('replay-scrubber'); s.value = {middle};"
        " s.dispatchEvent(new Event('input')); s.dispatchEvent(new Event('change')); })()"
    )
    assert page.text_content("#replay-time").startswith(f"0:{middle // 24:02d}")
    assert page.get_attribute("#replay-download", "href").endswith(".mp4")
    page.click("#replay-fork")
    page.wait_for_url(f"**/play/{world.slug}/")
    page.wait_for_selector("#play[data-state='live']", timeout=120_000)
    forked = page.get_attribute("#play", "data-session")
    assert forked != first_session
    fork = PlaySession.objects.get(pk=forked)
    assert fork.forked_from.session_id == PlaySession.objects.get(pk=first_session).pk
    assert fork.forked_frame == middle
    then = _frames(page)
    page.focus("#play-canvas")
    page.keyboard.down("w")
    page.wait_for_function(f"Number(document.getElementById('play').dataset.frames) > {then + 20}")
    page.keyboard.up("w")
