"""What the player sees of the play page in Chromium: how big the world is on screen at desktop
and phone sizes, and that story options and the chat stay on screen with it.

Sizes are the canvas's on-screen box (getBoundingClientRect) once the first frame is drawn,
so the canvas already has the frame's own size in pixels.
"""

import pytest
from django.conf import settings

from tests.sessions.play_fixtures import clean_placement, make_world  # noqa: F401

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(300),
]

DESKTOPS = [(1280, 800), (1920, 1080)]
PHONE = {"width": 390, "height": 844}


@pytest.fixture(scope="module")
def daphne_env() -> dict:
    return {
        "REDIS_URL": settings.REDIS_URL,
        "INFERENCE_IN_PROCESS": "true",
        "CELERY_TASK_ALWAYS_EAGER": "true",
    }


@pytest.fixture
def phone(chromium):
    context = chromium.new_context(viewport=PHONE, has_touch=True, is_mobile=True)
    context.set_default_timeout(60_000)
    tab = context.new_page()
    yield tab
    context.close()


def box(page, selector: str) -> dict:
    return page.eval_on_selector(
        selector, "el => el.getBoundingClientRect().toJSON()"
    )  # fmt: skip


def open_live(page, url: str) -> None:
    page.goto(url)
    page.wait_for_function(
        "Number(document.getElementById('play').dataset.frames) >= 1", timeout=120_000
    )


def assert_on_screen(page, selector: str) -> None:
    rect, viewport = box(page, selector), page.viewport_size
    assert rect["top"] >= 0 and rect["left"] >= 0, (selector, rect)
    assert rect["bottom"] <= viewport["height"], (selector, rect, viewport)
    assert rect["right"] <= viewport["width"], (selector, rect, viewport)


def test_on_a_desktop_the_world_is_the_largest_square_beside_the_hud(live_url, page, request):
    request.getfixturevalue("clean_placement")
    world = make_world()
    open_live(page, f"{live_url}/play/{world.slug}/")
    frame_width = page.eval_on_selector("#play-canvas", "c => c.width")
    for width, height in DESKTOPS:
        page.set_viewport_size({"width": width, "height": height})
        canvas, hud = box(page, "#play-canvas"), box(page, "#play-hud")
        print(f"{width}x{height}: canvas {canvas['width']:.0f}x{canvas['height']:.0f}")
        assert round(canvas["width"]) == round(canvas["height"])
        assert canvas["height"] >= 0.6 * height
        # a whole multiple of the frame: every pixel of the world the same size on screen
        assert round(canvas["width"]) % frame_width == 0
        assert canvas["right"] <= hud["left"]  # beside the HUD, not under or over it
        assert_on_screen(page, "#play-canvas")
        assert page.evaluate("scrollY") == 0
    assert frame_width == page.evaluate("document.getElementById('play-canvas').width")
    rendering = page.eval_on_selector("#play-canvas", "c => getComputedStyle(c).imageRendering")
    assert rendering == "pixelated"  # frames are scaled up crisply, not blurred


def test_on_a_phone_the_world_spans_the_screen_width_and_the_pad_is_on_screen(
    live_url, phone, request
):
    request.getfixturevalue("clean_placement")
    world = make_world()
    open_live(phone, f"{live_url}/play/{world.slug}/")
    canvas = box(phone, "#play-canvas")
    print(f"390x844: canvas {canvas['width']:.0f}x{canvas['height']:.0f}")
    assert round(canvas["width"]) == PHONE["width"] == round(canvas["height"])
    assert phone.evaluate("document.documentElement.scrollWidth") == PHONE["width"]
    assert phone.is_visible("#touch-pad")
    assert_on_screen(phone, "#play-canvas")
    assert_on_screen(phone, "#touch-pad")


def test_story_options_stay_on_screen_with_the_world_at_1280_by_800(live_url, page, request):
    request.getfixturevalue("clean_placement")
    world = make_world(category="stories", story_opening="The boats are still out.")
    page.set_viewport_size({"width": 1280, "height": 800})
    open_live(page, f"{live_url}/play/{world.slug}/")
    page.wait_for_selector(".story-option:not([disabled])", timeout=120_000)
    for n in (1, 2):
        assert_on_screen(page, f".story-option:nth-child({n})")
    assert box(page, "#play-canvas")["height"] >= 0.6 * 800
    assert page.evaluate("scrollY") == 0


def test_the_chat_stays_on_screen_with_the_world_at_1280_by_800(live_url, page, request):
    request.getfixturevalue("clean_placement")
    world = make_world(category="characters", character_name="Old Tom",
                       character_greeting="Hmph. Need a ride?")  # fmt: skip
    page.set_viewport_size({"width": 1280, "height": 800})
    open_live(page, f"{live_url}/play/{world.slug}/")
    page.wait_for_selector("#chat-log li", timeout=120_000)
    for selector in ("#chat-log", "#chat-text", "#chat-form button"):
        assert_on_screen(page, selector)
    assert box(page, "#play-canvas")["height"] >= 0.6 * 800
    assert page.evaluate("scrollY") == 0


def test_a_spectator_sees_the_same_large_world_on_the_watch_page(live_url, page, phone, request):
    request.getfixturevalue("clean_placement")
    world = make_world()
    open_live(page, f"{live_url}/play/{world.slug}/")
    watch_url = page.get_attribute("#watch-link", "href")
    assert watch_url, "the play page offers a watch link for a public session"
    for spectator in (page.context.new_page(), phone):
        spectator.goto(live_url + watch_url)
        spectator.wait_for_function(
            "Number(document.getElementById('watch').dataset.frames) >= 1", timeout=120_000
        )
        canvas, viewport = box(spectator, "#watch-canvas"), spectator.viewport_size
        print(f"watch {viewport['width']}x{viewport['height']}: canvas {canvas['width']:.0f}")
        assert round(canvas["width"]) == round(canvas["height"])
        if viewport["width"] < 800:
            assert round(canvas["width"]) == viewport["width"]
        else:
            assert canvas["height"] >= 0.6 * viewport["height"]
        assert_on_screen(spectator, "#watch-canvas")
        assert spectator.text_content("#hud-state") == "live"
