"""Home, category and search pages."""

import pytest

from tests.worlds.factories import make_world
from worlds.models import WorldStatus


def test_home_shows_featured_trending_new_and_category_rows(client, owner):
    make_world(owner, title="Featured Peak", featured=True)
    make_world(owner, title="Hot Dunes", trending_score=9.0)
    make_world(owner, title="Tale Row", category="stories")
    html = client.get("/").content.decode()
    for text in ("Featured Peak", "Trending", "Hot Dunes", "New", "Stories", "Tale Row"):
        assert text in html


def test_home_never_lists_drafts_or_removed_worlds(client, owner):
    make_world(owner, title="Draft Thing", status=WorldStatus.DRAFT)
    make_world(owner, title="Removed Thing", status=WorldStatus.REMOVED, featured=True)
    html = client.get("/").content.decode()
    assert "Draft Thing" not in html
    assert "Removed Thing" not in html


def test_the_nav_links_every_category_and_search(client, db):
    html = client.get("/").content.decode()
    for href in ('href="/c/games/"', 'href="/c/stories/"', 'href="/c/characters/"',
                 'href="/c/live/"', 'action="/search/"', 'href="/publish/"'):  # fmt: skip
        assert href in html


def test_category_pages_paginate(client, owner):
    for i in range(30):
        make_world(owner, title=f"Live {i:02}", category="live")
    first = client.get("/c/live/")
    assert len(first.context["page"].object_list) == 24
    second = client.get("/c/live/?page=2")
    assert len(second.context["page"].object_list) == 6
    assert 'rel="prev"' in second.content.decode()


def test_category_page_sorts(client, owner):
    make_world(owner, title="Few", category="games", play_count=1)
    make_world(owner, title="Many", category="games", play_count=80)
    page = client.get("/c/games/?sort=popular")
    assert [w.title for w in page.context["page"].object_list] == ["Many", "Few"]


def test_an_unknown_category_is_404(client, db):
    assert client.get("/c/casino/").status_code == 404


def test_a_garbage_page_number_falls_back_instead_of_crashing(client, owner):
    make_world(owner, category="games")
    assert client.get("/c/games/?page=abc").status_code == 200
    assert client.get("/c/games/?page=99999").status_code == 200


def test_search_page_finds_and_filters(client, owner):
    make_world(owner, title="Ice Palace", category="stories")
    make_world(owner, title="Ice Race", category="games")
    page = client.get("/search/?q=ice&category=games")
    assert [w.title for w in page.context["page"].object_list] == ["Ice Race"]
    assert "Ice Palace" not in page.content.decode()


def test_search_keeps_the_query_across_pages(client, owner):
    for i in range(26):
        make_world(owner, title=f"Moon base {i}")
    html = client.get("/search/?q=moon").content.decode()
    assert "?q=moon&amp;page=2" in html


@pytest.mark.parametrize("using_postgres", [True, False])
def test_search_works_on_both_backends_search_paths(client, owner, settings, using_postgres):
    if using_postgres and not settings.USING_POSTGRES:
        pytest.skip("PostgreSQL search needs PostgreSQL")
    settings.USING_POSTGRES = using_postgres
    make_world(owner, title="Canyon Echo", prompt="red rock canyon")
    make_world(owner, title="Rock Garden", prompt="moss and stones")
    page = client.get("/search/?q=canyon")
    assert [w.title for w in page.context["page"].object_list] == ["Canyon Echo"]


def test_unknown_api_paths_answer_json(client, db, settings):
    settings.DEBUG = False
    response = client.get("/api/no-such-thing/")
    assert response.status_code == 404
    assert response.json() == {"detail": "Not found."}


def test_unknown_pages_get_the_site_404_page(client, db, settings):
    settings.DEBUG = False
    response = client.get("/w/no-such-world/")
    assert response.status_code == 404
    assert "Nothing here" in response.content.decode()


def test_home_rows_come_from_the_cache_until_a_world_changes(client, owner, settings):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    settings.HOME_CACHE_SECONDS = 60
    world = make_world(owner, title="Cached Canyon")
    assert "Cached Canyon" in client.get("/").content.decode()
    with CaptureQueriesContext(connection) as queries:
        again = client.get("/").content.decode()
    assert "Cached Canyon" in again
    assert not [q for q in queries.captured_queries if "worlds_world" in q["sql"]]

    world.status = WorldStatus.REMOVED  # a moderator's removal shows at once, cache or not
    world.save()
    make_world(owner, title="Fresh Fjord")
    html = client.get("/").content.decode()
    assert "Cached Canyon" not in html and "Fresh Fjord" in html


@pytest.mark.parametrize(
    "url",
    ["/api/worlds/?q=%00", "/api/worlds/?creator=%00", "/search/?q=a%00b", "/u/%00/", "/u/x%00/"],
)
def test_a_nul_byte_in_a_url_is_a_bad_request_not_a_server_error(client, db, url):
    # PostgreSQL text cannot hold NUL: these reached the database and failed with a 500
    response = client.get(url)
    assert response.status_code == 400
    assert b"NUL" in response.content


def test_every_page_has_an_icon_and_favicon_ico_finds_it(client, db):
    page = client.get("/").content.decode()
    assert 'rel="icon"' in page and "img/favicon.svg" in page
    response = client.get("/favicon.ico")
    assert response.status_code == 301 and response["Location"].endswith("img/favicon.svg")
