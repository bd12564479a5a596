"""In Chromium: sign up, publish a world with a cover, find it by search, open it."""

import re

import pytest
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_a_new_user_publishes_a_world_with_a_cover_and_finds_it(
    page, live_url, transactional_db, cover_file
):
    page.goto(live_url + "/")
    page.get_by_role("link", name="Sign up").click()
    page.fill("#id_username", "mapmaker")
    page.fill("#id_display_name", "Map Maker")
    page.fill("#id_password1", "quartz-lantern-orbit-41")
    page.fill("#id_password2", "quartz-lantern-orbit-41")
    page.get_by_role("button", name="Sign up").click()
    expect(page.locator(".user-nav")).to_contain_text("Map Maker")

    page.get_by_role("link", name="Publish", exact=True).click()
    page.fill("#id_title", "Zephyr Archipelago <b>")
    page.select_option("#id_category", "games")
    page.fill("#id_description", "Hop between windy islands.")
    page.fill("#id_prompt", "a chain of windy green islands in a turquoise sea")
    page.set_input_files("#id_cover", str(cover_file))
    # The preview updates as the form is filled, showing the text as text.
    expect(page.locator("#preview-title")).to_have_text("Zephyr Archipelago <b>")
    page.locator("#submit-world").click()

    expect(page).to_have_url(re.compile(r"/w/zephyr-archipelago(-[0-9a-f]+)?/$"))
    expect(page.locator("h1.world-title")).to_have_text("Zephyr Archipelago <b>")
    detail_url = page.url

    page.fill(".nav-search input[name=q]", "zephyr")
    page.press(".nav-search input[name=q]", "Enter")
    expect(page).to_have_url(re.compile(r"/search/\?q=zephyr"))
    card = page.locator(".card", has_text="Zephyr Archipelago")
    expect(card).to_have_count(1)
    card.locator("a").click()

    expect(page).to_have_url(detail_url)
    cover = page.locator(".world-cover img")
    expect(cover).to_have_attribute("src", re.compile(r"/media/covers/.+\.png$"))
    assert page.evaluate("document.querySelector('.world-cover img').naturalWidth") == 320
    expect(page.locator("a.btn-play")).to_have_attribute("href", re.compile(r"^/play/"))
