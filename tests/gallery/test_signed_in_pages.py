"""Signed-in pages read the account, its permissions and its likes from the shared cache, and
the cards everyone shares: no query once kept (a world's page: its own row), and never one
person's link, hearts, drafts or name on another person's page."""

import pytest
from django.contrib.auth.models import Group, Permission
from django.core.cache import cache
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from gallery import services as account_services
from gallery import viewer_cache
from tests.worlds.factories import make_user, make_world
from worlds import services
from worlds.models import Like, WorldStatus

MODERATION_LINK = '<a href="/moderation/">Moderation</a>'


@pytest.fixture(autouse=True)
def _caches_on(settings):
    settings.HOME_CACHE_SECONDS = 60
    settings.VIEWER_CACHE_SECONDS = 60


def _moderators() -> Group:
    # rebuilt here: transactional tests elsewhere flush the migrated group
    group, _ = Group.objects.get_or_create(name="Moderators")
    group.permissions.add(
        Permission.objects.get(codename="moderate", content_type__app_label="moderation")
    )
    return group


def _signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _page(client: Client, url: str) -> tuple[str, list[str]]:
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url)
    assert response.status_code == 200
    return response.content.decode(), [q["sql"] for q in queries.captured_queries]


@pytest.mark.parametrize("url", ["/", "/c/games/"])
def test_a_signed_in_page_asks_no_query_once_its_account_is_kept(owner, outsider, url):
    make_world(owner, title="Copper Canyon", featured=True)
    Like.objects.create(user=outsider, world=make_world(owner, title="Liked Lake"))
    person = _signed_in(outsider)
    _page(person, url)  # reads the account, its permissions, likes and notices once
    html, queries = _page(person, url)
    assert queries == []
    assert "Copper Canyon" in html and f"/u/{outsider.username}/" in html


def test_the_first_signed_in_page_reads_the_account_and_its_permissions_once(owner, outsider):
    make_world(owner)
    person = _signed_in(outsider)
    _, queries = _page(person, "/c/games/")
    account = [q for q in queries if 'FROM "gallery_user"' in q]
    permissions = [q for q in queries if 'FROM "auth_permission"' in q]
    assert len(account) == 1 and len(permissions) == 2  # the user's own and its groups'


def test_a_moderator_sees_the_moderation_link_and_a_plain_user_does_not(owner, outsider):
    moderator = make_user("mod")
    moderator.groups.add(_moderators())
    make_world(owner)
    for url in ("/", "/c/games/", "/c/games/"):  # the second category page from the cache
        assert MODERATION_LINK in _page(_signed_in(moderator), url)[0]
        assert MODERATION_LINK not in _page(_signed_in(outsider), url)[0]
        assert MODERATION_LINK not in _page(Client(), url)[0]


def test_a_promotion_and_a_demotion_show_on_the_next_page(outsider):
    person = _signed_in(outsider)
    assert MODERATION_LINK not in _page(person, "/")[0]
    outsider.groups.add(_moderators())
    assert MODERATION_LINK in _page(person, "/")[0]
    assert person.get("/moderation/").status_code == 200
    outsider.groups.clear()
    assert MODERATION_LINK not in _page(person, "/")[0]
    assert person.get("/moderation/").status_code == 403


def test_a_groups_new_permission_reaches_its_members_kept_accounts(outsider):
    group = Group.objects.create(name="Helpers")
    outsider.groups.add(group)
    person = _signed_in(outsider)
    assert MODERATION_LINK not in _page(person, "/")[0]
    group.permissions.add(_moderators().permissions.get())
    assert MODERATION_LINK in _page(person, "/")[0]
    group.delete()
    assert MODERATION_LINK not in _page(person, "/")[0]


def test_a_like_shows_as_liked_at_once_and_an_unlike_clears_it(owner, outsider):
    world = make_world(owner, title="Liked Lake")
    person = _signed_in(outsider)
    assert "♥" not in _page(person, "/c/games/")[0]
    services.world_like(world=world, user=outsider)
    html = _page(person, "/c/games/")[0]
    assert html.count("♥") == 1 and html.index("♥") > html.index("Liked Lake")
    services.world_unlike(world=world, user=outsider)
    assert "♥" not in _page(person, "/c/games/")[0]


def test_the_home_rows_show_a_likers_own_hearts(owner, outsider):
    liked = make_world(owner, title="Liked Lake")
    make_world(owner, title="Other Oasis")
    Like.objects.create(user=outsider, world=liked)
    crowd = _page(Client(), "/")[0]
    html = _page(_signed_in(outsider), "/")[0]
    assert "♥" not in crowd and "♥" not in _page(_signed_in(owner), "/")[0]
    # the liked world's card shows a full heart in every row it is in (new, games), no other
    assert html.count("♥") == crowd.count(f'data-heart="{liked.pk}"') == 2
    assert html.count("♡") == crowd.count("♡") - 2


def test_another_persons_likes_never_show_on_your_page(owner, outsider):
    liked, other = make_world(owner, title="Liked Lake"), make_world(owner, title="Other Oasis")
    Like.objects.create(user=outsider, world=liked)
    someone = make_user("someone")
    Like.objects.create(user=someone, world=other)
    theirs = _page(_signed_in(outsider), "/c/games/")[0]
    mine = _page(_signed_in(someone), "/c/games/")[0]
    assert theirs.count("♥") == 1 and theirs.index("♥") > theirs.index("Liked Lake")
    assert mine.count("♥") == 1 and mine.index("♥") > mine.index("Other Oasis")
    assert "♥" not in _page(_signed_in(owner), "/c/games/")[0]
    assert "♥" not in _page(Client(), "/c/games/")[0]


def test_each_session_gets_its_own_account_from_the_cache(owner, outsider):
    make_world(owner)
    mine, theirs = _signed_in(owner), _signed_in(outsider)
    for _ in range(2):
        assert f"/u/{owner.username}/" in _page(mine, "/")[0]
        html = _page(theirs, "/")[0]
        assert f"/u/{outsider.username}/" in html and f"/u/{owner.username}/" not in html


def test_a_kept_account_serves_no_session_that_names_it_without_its_hash(owner, outsider):
    _page(_signed_in(owner), "/")  # the owner's account is kept
    forged = _signed_in(outsider)
    session = forged.session
    session["_auth_user_id"] = str(owner.pk)  # the outsider's hash, the owner's id
    session.save()
    html = _page(forged, "/")[0]
    assert f"/u/{owner.username}/" not in html and "/accounts/login/" in html


def test_a_deactivated_account_is_signed_out_on_its_next_page(outsider):
    person = _signed_in(outsider)
    assert f"/u/{outsider.username}/" in _page(person, "/")[0]
    outsider.is_active = False
    outsider.save()
    html = _page(person, "/")[0]
    assert f"/u/{outsider.username}/" not in html and "/accounts/login/" in html


def test_a_password_change_signs_out_the_other_sessions(outsider):
    person = _signed_in(outsider)
    assert f"/u/{outsider.username}/" in _page(person, "/")[0]
    outsider.set_password("another-horse-7")
    outsider.save()
    assert "/accounts/login/" in _page(person, "/")[0]
    assert "_auth_user_id" not in person.session  # flushed, as Django does


def test_a_renamed_account_shows_its_new_name_at_once(outsider):
    person = _signed_in(outsider)
    _page(person, "/")
    outsider.display_name = "Night Owl"
    outsider.save()
    assert "Night Owl" in _page(person, "/")[0]


def test_with_the_cache_off_every_page_reads_the_account(settings, owner, outsider):
    settings.VIEWER_CACHE_SECONDS = 0
    make_world(owner)
    person = _signed_in(outsider)
    _page(person, "/")
    _, queries = _page(person, "/")
    assert sum('FROM "gallery_user"' in q for q in queries) == 1


def test_the_password_hash_is_never_kept_and_a_kept_account_saves_safely(outsider):
    person = _signed_in(outsider)
    _page(person, "/")
    kept = cache.get(viewer_cache._entry_key(outsider.pk))
    assert kept is not None and "password" not in kept[-1].__dict__
    assert outsider.password not in repr(kept) and outsider.password not in str(kept[-1].__dict__)
    # the kept row saved as it is (a profile edit) keeps the password only the database holds
    account = person.get("/").wsgi_request.user
    assert "password" not in account.__dict__
    account.display_name = "Kept Kestrel"
    account.save()
    outsider.refresh_from_db()
    assert outsider.check_password("correct-horse-9") and outsider.display_name == "Kept Kestrel"
    html, _ = _page(person, "/")  # still signed in, under the new name
    assert "Kept Kestrel" in html


# --- search, a profile and a world's page: their cards (and a profile's head and runs, a
# world's runs and remixes) are rendered once for everyone, hearts filled in per person

EDIT_PROFILE = '<a class="btn btn-small" href="/accounts/profile/">Edit profile</a>'


def _catalog(owner, outsider) -> dict:
    """A liked world with a remix, a draft, and a moderator; the pages' URLs by name."""
    source = make_world(owner, title="Pine Source")
    remix = make_world(owner, title="Pine Remix", remix_of=source)
    make_world(owner, title="Pine Draft", status=WorldStatus.DRAFT)
    services.world_like(world=source, user=outsider)
    services.world_like(world=remix, user=outsider)
    moderator = make_user("mod")
    moderator.groups.add(_moderators())
    return {
        "moderator": moderator,
        "search": "/search/?q=pine",
        "profile": f"/u/{owner.username}/",
        "world": f"/w/{source.slug}/",
    }


# What a second visit still asks, once the account, permissions, likes and notices are kept:
# nothing, but on a world's page its own row (who may see it, its counts as they are now; the
# like button shows them right after a click). Its runs and remixes come from the cache.
QUERIES_WHEN_KEPT = {"search": 0, "profile": 0, "world": 1}


@pytest.mark.parametrize("who", ["outsider", "owner", "moderator"])
@pytest.mark.parametrize("name", ["search", "profile", "world"])
def test_a_second_signed_in_visit_asks_at_most_its_own_row(owner, outsider, who, name):
    pages = _catalog(owner, outsider)
    person = _signed_in(
        {"outsider": outsider, "owner": owner, "moderator": pages["moderator"]}[who]
    )
    _page(Client(), pages[name])  # the shared renderings are made
    _page(person, pages[name])  # the account, its permissions, likes and notices are kept
    html, queries = _page(person, pages[name])
    assert len(queries) == QUERIES_WHEN_KEPT[name], queries
    assert "Pine Source" in html and (MODERATION_LINK in html) == (who == "moderator")


def test_a_likers_hearts_show_on_search_profile_and_world_pages(owner, outsider):
    pages = _catalog(owner, outsider)
    for name in ("search", "profile"):  # two cards, both liked (the draft is the owner's only)
        crowd = _page(Client(), pages[name])[0]
        html = _page(_signed_in(outsider), pages[name])[0]
        assert html.count("♥") == crowd.count("♡") == 2 and "♡" not in html
    html = _page(_signed_in(outsider), pages["world"])[0]
    assert "♥ Liked" in html  # the world itself, and its remix's card
    assert html.count("♥") == 2 and html.index("♥", html.index("♥ Liked") + 1) > html.index(
        "Pine Remix"
    )


@pytest.mark.parametrize("name", ["search", "profile", "world"])
def test_another_persons_likes_never_show_on_these_pages(owner, outsider, name):
    pages = _catalog(owner, outsider)
    assert "♥" in _page(_signed_in(outsider), pages[name])[0]  # theirs, kept and shared
    for other in (owner, pages["moderator"], make_user("someone")):
        assert "♥" not in _page(_signed_in(other), pages[name])[0]
    assert "♥" not in _page(Client(), pages[name])[0]


def test_an_owner_sees_their_drafts_and_edit_link_on_their_profile_and_no_one_else(owner, outsider):
    pages = _catalog(owner, outsider)
    # both orders: the owner's rendering kept first, then a visitor's, then the owner's again
    for person in (owner, outsider, pages["moderator"], None, owner):
        html = _page(_signed_in(person) if person else Client(), pages["profile"])[0]
        mine = person == owner
        assert ("Pine Draft" in html) == mine and (EDIT_PROFILE in html) == mine
        assert ("btn-report" in html) != mine and "Pine Source" in html


def test_an_owner_sees_their_world_tools_and_draft_notice_and_no_one_else(owner, outsider):
    pages = _catalog(owner, outsider)
    edit = f'href="{pages["world"]}edit/"'
    for person in (owner, outsider, None, owner):
        html = _page(_signed_in(person) if person else Client(), pages["world"])[0]
        assert (edit in html) == (person == owner)
        assert ("Your world" in html) == (person == owner)
    draft_url = f"/w/{make_world(owner, title='Hidden Hut', status=WorldStatus.DRAFT).slug}/"
    assert "only you can see" in _page(_signed_in(owner), draft_url)[0]
    assert _signed_in(outsider).get(draft_url).status_code == 404
    assert Client().get(draft_url).status_code == 404


@pytest.mark.parametrize("name", ["search", "profile", "world"])
def test_a_like_and_an_unlike_show_on_the_next_page_load(owner, outsider, name):
    pages = _catalog(owner, outsider)
    someone = make_user("someone")
    person = _signed_in(someone)
    assert "♥" not in _page(person, pages[name])[0]
    source = Like.objects.filter(user=outsider).order_by("world_id").first().world
    services.world_like(world=source, user=someone)
    html = _page(person, pages[name])[0]
    assert html.count("♥") == 1 and html.index("♥") > html.index("Pine Source")
    services.world_unlike(world=source, user=someone)
    assert "♥" not in _page(person, pages[name])[0]


def test_a_profile_edit_shows_on_the_profile_at_once(owner, outsider):
    pages = _catalog(owner, outsider)
    mine = _signed_in(owner)
    assert "Pine Source" in _page(mine, pages["profile"])[0]  # kept
    account_services.user_update_profile(user=owner, display_name="Night Owl", bio="I draw.")
    for person in (mine, Client(), _signed_in(outsider)):
        html = _page(person, pages["profile"])[0]
        assert "<h1>Night Owl</h1>" in html and "I draw." in html
