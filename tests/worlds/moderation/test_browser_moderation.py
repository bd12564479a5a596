"""In Chromium: a moderator removes a reported world from the queue with a reason; the creator
sees the removal and the reason, appeals once, and the appeal is back in the moderator's queue."""

import os

import pytest
from playwright.sync_api import expect

from tests.worlds.factories import make_user, make_world
from tests.worlds.moderation.conftest import moderators_group
from tests.worlds.moderation.factories import make_report

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def chromium():
    """This module's own browser: Playwright's sync API holds an event loop on this thread while
    it runs, which would break the asyncio tests after it if it lived for the whole session."""
    from playwright.sync_api import sync_playwright

    from tests.browser.conftest import _launch

    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        yield from _launch(sync_playwright)
    finally:
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


PASSWORD = "correct-horse-9"  # the factories' password


def log_in(page, live_url, username: str) -> None:
    page.context.clear_cookies()
    page.goto(live_url + "/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page.locator(".user-nav")).to_contain_text(username)


def test_a_moderator_removes_a_world_and_the_creator_appeals(
    page,
    live_url,
    transactional_db,
):
    moderator = make_user("keeper")
    moderator.groups.add(moderators_group())
    creator = make_user("builder")
    world = make_world(creator, title="Ember Caves", slug="ember-caves")
    make_report(reporter=make_user("witness"), world=world, reason="violence", note="gore cover")

    log_in(page, live_url, "keeper")
    page.get_by_role("link", name="Moderation").click()
    item = page.locator(".mod-item", has_text="Ember Caves")
    expect(item).to_contain_text("gore cover")
    item.locator("select[name=kind]").select_option("remove")
    item.locator("input[name=reason]").fill("graphic gore on the cover")
    item.get_by_role("button", name="Apply").click()
    expect(page.locator(".messages")).to_contain_text("Done: remove world")
    expect(page.locator(".mod-item", has_text="Ember Caves")).to_have_count(0)

    page.goto(live_url + "/search/?q=ember")
    expect(page.locator(".card", has_text="Ember Caves")).to_have_count(0)

    log_in(page, live_url, "builder")
    page.goto(live_url + "/w/ember-caves/")
    notice = page.locator("#removed-notice")
    expect(notice).to_contain_text("graphic gore on the cover")
    notice.get_by_role("link", name="Appeal").click()
    page.fill("textarea[name=text]", "The cover is lava, not blood.")
    page.get_by_role("button", name="Send appeal").click()
    expect(page.locator("#removed-notice")).to_contain_text("appeal is waiting")

    log_in(page, live_url, "keeper")
    page.goto(live_url + "/moderation/")
    expect(page.locator(".mod-item", has_text="Ember Caves")).to_contain_text(
        "The cover is lava, not blood."
    )
