"""Controls on the play page in Chromium: the on-screen pad on a touch phone and the keyboard on
a desktop send held keys that the worker applies (the frame header echoes their seq), and keys
typed into a text box stay in the text box.
"""

import json

import pytest
from django.conf import settings

from tests.sessions.play_fixtures import clean_placement, make_world  # noqa: F401

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(300),
]


@pytest.fixture(scope="module")
def daphne_env() -> dict:
    return {
        "REDIS_URL": settings.REDIS_URL,
        "INFERENCE_IN_PROCESS": "true",
        "CELERY_TASK_ALWAYS_EAGER": "true",
    }


@pytest.fixture
def phone(chromium):
    context = chromium.new_context(
        viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True
    )
    context.set_default_timeout(60_000)
    tab = context.new_page()
    yield tab
    context.close()


class SentMessages:
    """The JSON messages the page sends on its play socket, in order."""

    def __init__(self, page):
        self.messages: list[dict] = []
        page.on("websocket", lambda ws: ws.on("framesent", self._add))

    def _add(self, payload):
        if isinstance(payload, str):
            self.messages.append(json.loads(payload))

    def inputs(self, since: int = 0) -> list[dict]:
        return [m for m in self.messages[since:] if m["type"] == "input"]

    def wait_for(self, page, found, timeout_ms: int = 30_000):
        """The first sent message for which found(message) is true, once it has gone out."""
        for _ in range(timeout_ms // 50):
            match = next((m for m in self.messages if found(m)), None)
            if match is not None:
                return match
            page.wait_for_timeout(50)  # lets Playwright deliver the socket's events
        raise AssertionError("the page never sent such a message")


def open_live(page, url: str) -> None:
    page.goto(url)
    page.wait_for_function(
        "Number(document.getElementById('play').dataset.frames) >= 1", timeout=120_000
    )


def wait_until_applied(page, seq: int) -> None:
    """The worker has applied input `seq`: a drawn frame's header echoes it (or a later one)."""
    page.wait_for_function(
        f"Number(document.getElementById('play').dataset.appliedSeq) >= {seq}"
    )  # fmt: skip


def hold(cdp, page, selector: str):
    """Put a finger on the element's centre (a touch that stays down until lift())."""
    rect = page.eval_on_selector(selector, "el => el.getBoundingClientRect().toJSON()")
    point = {"x": rect["x"] + rect["width"] / 2, "y": rect["y"] + rect["height"] / 2}
    cdp.send("Input.dispatchTouchEvent", {"type": "touchStart", "touchPoints": [point]})
    return lambda: cdp.send("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})


def test_holding_the_pad_on_a_phone_moves_the_avatar_until_the_finger_lifts(
    live_url, phone, request
):
    request.getfixturevalue("clean_placement")
    sent = SentMessages(phone)
    open_live(phone, f"{live_url}/play/{make_world().slug}/")
    assert phone.is_visible("#touch-pad")
    assert not phone.is_visible(".play-help-keys")  # no keyboard help on a phone
    cdp = phone.context.new_cdp_session(phone)

    lift = hold(cdp, phone, ".pad-right")
    phone.wait_for_function("document.querySelector('.pad-right').classList.contains('is-held')")
    pressed = sent.wait_for(phone, lambda m: m["type"] == "input" and m["keys"] == ["d"])
    wait_until_applied(phone, pressed["seq"])
    lift()
    released = sent.wait_for(phone, lambda m: m["type"] == "input" and m["keys"] == [])
    assert released["seq"] > pressed["seq"]
    assert all(m["keys"] == ["d"] for m in sent.inputs() if m["seq"] < released["seq"])
    wait_until_applied(phone, released["seq"])

    lift = hold(cdp, phone, ".pad-up")
    up = sent.wait_for(phone, lambda m: m["type"] == "input" and m["keys"] == ["w"])
    lift()
    sent.wait_for(phone, lambda m: m["type"] == "input" and m["seq"] > up["seq"] and not m["keys"])
    assert up["seq"] > released["seq"]


def test_keys_move_the_avatar_with_the_page_focused_but_not_while_typing(live_url, page, request):
    request.getfixturevalue("clean_placement")
    sent = SentMessages(page)
    open_live(page, f"{live_url}/play/{make_world().slug}/")
    assert not page.is_visible("#touch-pad")  # no touch screen, no pad

    page.click("h1")  # the page has focus, the canvas does not
    page.keyboard.down("d")
    pressed = sent.wait_for(page, lambda m: m["type"] == "input" and m["keys"] == ["d"])
    page.keyboard.up("d")
    wait_until_applied(page, pressed["seq"])

    page.click("#prompt-text")
    typed_from = len(sent.messages)
    page.keyboard.type("wasd ")
    page.keyboard.press("Enter")  # sends the prompt: everything typed before it has gone out
    sent.wait_for(page, lambda m: m["type"] == "prompt")
    typed = sent.messages[typed_from:]
    assert [m["type"] for m in typed if m["type"] != "ping"] == ["prompt"]
    assert typed[-1]["text"] == "wasd"

    page.click("#prompt-text")
    page.keyboard.press("Escape")  # leaves the text box: keys move the avatar again
    page.keyboard.down("a")
    moved = sent.wait_for(page, lambda m: m["type"] == "input" and m["keys"] == ["a"])
    page.keyboard.up("a")
    wait_until_applied(page, moved["seq"])
    assert page.input_value("#prompt-text") == ""  # sent, and nothing typed after Escape
