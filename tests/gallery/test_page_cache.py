"""The crowd's pages: anonymous visitors share one rendering per catalog version; signed-in
people, and anything a world's save changes, never see a stale or someone else's page."""

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from tests.worlds.factories import make_world
from worlds.models import Like, World, WorldStatus

PAGES = ["/", "/c/games/", "/search/?q=copper", "/u/{user}/", "/w/{slug}/"]


def _world_queries(client: Client, url: str) -> tuple[str, int]:
    with CaptureQueriesContext(connection) as queries:
        html = client.get(url).content.decode()
    return html, sum("worlds_world" in q["sql"] for q in queries.captured_queries)


@pytest.mark.parametrize("page", PAGES)
def test_an_anonymous_page_is_rendered_once_and_shared(owner, settings, page):
    settings.HOME_CACHE_SECONDS = 60
    world = make_world(owner, title="Copper Canyon", featured=True)
    url = page.format(user=owner.username, slug=world.slug)
    first, _ = _world_queries(Client(), url)
    assert "Copper Canyon" in first
    # a counter bumped without a save (no new catalog version) is not worth a rendering
    World.objects.filter(pk=world.pk).update(title="Copper Gorge")
    again, world_queries = _world_queries(Client(), url)  # another visitor, no cookies
    assert again == first and world_queries == 0


# (every catalog page's cards, runs and remixes are one fragment for everyone, signed in or
# not, a liker's hearts filled in: tests/gallery/test_signed_in_pages.py)
@pytest.mark.parametrize("page", PAGES[2:])
def test_signed_in_people_get_their_own_rendering(owner, outsider, settings, page):
    settings.HOME_CACHE_SECONDS = 60
    world = make_world(owner, title="Copper Canyon", featured=True)
    url = page.format(user=owner.username, slug=world.slug)
    crowd = Client().get(url).content.decode()
    assert "Copper Canyon" in crowd and "/accounts/login/" in crowd
    person = Client()
    person.force_login(outsider)
    html = person.get(url).content.decode()
    assert "Copper Canyon" in html and html != crowd
    assert f"/u/{outsider.username}/" in html and "/accounts/login/" not in html


def test_a_signed_in_world_page_reads_its_world_as_it_is_now(owner, outsider, settings):
    settings.HOME_CACHE_SECONDS = 60
    world = make_world(owner, title="Copper Canyon")
    assert "Copper Canyon" in Client().get(f"/w/{world.slug}/").content.decode()
    World.objects.filter(pk=world.pk).update(title="Copper Gorge", like_count=7)
    person = Client()
    person.force_login(outsider)
    html = person.get(f"/w/{world.slug}/").content.decode()
    assert "Copper Gorge" in html and "Copper Canyon" not in html
    assert '<span class="like-count">7</span>' in html  # a like's count, not the kept one


def test_the_shared_cards_show_a_likers_own_hearts(owner, outsider, settings):
    settings.HOME_CACHE_SECONDS = 60
    liked, other = make_world(owner, title="Liked Lake"), make_world(owner, title="Other Oasis")
    Like.objects.create(user=outsider, world=liked)
    crowd = Client().get("/c/games/").content.decode()
    assert "♥" not in crowd
    person = Client()
    person.force_login(outsider)
    html = person.get("/c/games/").content.decode()
    assert html.count("♥") == 1 and html.count("♡") == 1  # theirs, on the world they liked
    assert html.index("♥") > html.index("Liked Lake") and other.title in html
    assert f"/u/{outsider.username}/" in html
    assert "♥" not in Client().get("/c/games/").content.decode()  # and the crowd's stays theirs


def test_a_saved_world_shows_to_the_crowd_at_once(owner, settings):
    settings.HOME_CACHE_SECONDS = 60
    world = make_world(owner, title="Copper Canyon")
    assert "Copper Canyon" in Client().get("/c/games/").content.decode()
    world.status = WorldStatus.REMOVED  # a moderator's removal
    world.save()
    make_world(owner, title="Fresh Fjord")
    html = Client().get("/c/games/").content.decode()
    assert "Copper Canyon" not in html and "Fresh Fjord" in html


def test_the_api_list_is_shared_only_by_anonymous_visitors(owner, outsider, settings):
    settings.HOME_CACHE_SECONDS = 60
    make_world(owner, title="Open Plains")
    make_world(owner, title="Secret Draft", status=WorldStatus.DRAFT)
    url = f"/api/worlds/?creator={owner.username}"
    anonymous = APIClient().get(url).json()
    assert [w["title"] for w in anonymous["results"]] == ["Open Plains"]
    mine = APIClient()
    mine.force_authenticate(owner)  # no cookie, no header: the API's own user decides
    titles = {w["title"] for w in mine.get(url).json()["results"]}
    assert titles == {"Open Plains", "Secret Draft"}
    # and the owner's list was not kept for the crowd; kept JSON reads as a fresh one
    kept = APIClient().get(url)
    assert kept["Content-Type"] == "application/json" and kept.json() == anonymous
    browsable = APIClient().get(url, HTTP_ACCEPT="text/html")  # the same data, as a page
    assert browsable["Content-Type"].startswith("text/html") and b"Open Plains" in browsable.content
    theirs = APIClient()
    theirs.force_authenticate(outsider)
    assert [w["title"] for w in theirs.get(url).json()["results"]] == ["Open Plains"]


def test_a_bad_query_is_answered_not_kept(owner, settings):
    settings.HOME_CACHE_SECONDS = 60
    make_world(owner)
    assert APIClient().get("/api/worlds/?ordering=nonsense").status_code == 400
    assert APIClient().get("/api/worlds/?ordering=nonsense").status_code == 400
    assert Client().get("/c/casino/").status_code == 404
