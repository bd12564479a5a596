"""Visibility: who sees which world where."""

import pytest

from tests.worlds.factories import make_world
from worlds import selectors
from worlds.models import World, WorldStatus


def test_listings_show_only_published_worlds(owner):
    shown = make_world(owner, status=WorldStatus.PUBLISHED)
    for status in ("draft", "unlisted", "in_review", "removed"):
        make_world(owner, status=status)
    assert list(selectors.world_list(viewer=owner)) == [shown]


def test_a_creators_own_profile_lists_every_state_including_removed(owner, outsider):
    worlds = {make_world(owner, status=s) for s in ("draft", "published", "removed")}
    assert set(selectors.world_list(viewer=owner, creator=owner)) == worlds
    assert [w.status for w in selectors.world_list(viewer=outsider, creator=owner)] == ["published"]


def test_another_users_draft_is_not_visible(draft, outsider):
    with pytest.raises(World.DoesNotExist):
        selectors.world_get_visible(slug=draft.slug, viewer=outsider)


def test_an_unlisted_world_is_visible_by_link(owner, outsider):
    world = make_world(owner, status=WorldStatus.UNLISTED)
    assert selectors.world_get_visible(slug=world.slug, viewer=outsider) == world


def test_a_removed_world_is_visible_only_to_its_creator(owner, outsider):
    world = make_world(owner, status=WorldStatus.REMOVED)
    assert selectors.world_get_visible(slug=world.slug, viewer=owner) == world
    with pytest.raises(World.DoesNotExist):
        selectors.world_get_visible(slug=world.slug, viewer=outsider)


def test_playable_allows_public_worlds_and_own_drafts(owner, outsider, draft, world):
    assert selectors.world_get_playable(slug=world.slug, viewer=outsider) == world
    assert selectors.world_get_playable(slug=draft.slug, viewer=owner) == draft
    with pytest.raises(World.DoesNotExist):
        selectors.world_get_playable(slug=draft.slug, viewer=outsider)


def test_removed_and_in_review_worlds_are_not_playable_even_by_the_creator(owner):
    for status in ("removed", "in_review"):
        world = make_world(owner, status=status)
        with pytest.raises(World.DoesNotExist):
            selectors.world_get_playable(slug=world.slug, viewer=owner)


def test_anonymous_viewers_see_no_drafts(draft):
    from django.contrib.auth.models import AnonymousUser

    with pytest.raises(World.DoesNotExist):
        selectors.world_get_playable(slug=draft.slug, viewer=AnonymousUser())


def test_search_finds_by_title_and_prompt_but_never_drafts(owner):
    make_world(owner, title="Frozen Lake", prompt="ice and snow")
    make_world(owner, title="Desert", prompt="a frozen oasis mirage")
    make_world(owner, title="Frozen Draft", status="draft")
    titles = {w.title for w in selectors.world_search(query="frozen", viewer=owner)}
    assert titles == {"Frozen Lake", "Desert"}


def test_search_filters_by_category(owner):
    make_world(owner, title="Snow Game", category="games")
    make_world(owner, title="Snow Story", category="stories")
    found = selectors.world_search(query="snow", category="stories")
    assert [w.title for w in found] == ["Snow Story"]


def test_search_ranks_title_matches_above_prompt_matches(owner):
    make_world(owner, title="Harbour", prompt="a lighthouse on a cliff", trending_score=50)
    make_world(owner, title="The Lighthouse", prompt="a rocky coast", trending_score=0)
    found = [w.title for w in selectors.world_search(query="lighthouse")]
    assert found == ["The Lighthouse", "Harbour"]


def test_search_sort_overrides_relevance(owner):
    make_world(owner, title="Harbour", prompt="a lighthouse", play_count=99)
    make_world(owner, title="The Lighthouse", prompt="a coast", play_count=1)
    found = [w.title for w in selectors.world_search(query="lighthouse", sort="popular")]
    assert found == ["Harbour", "The Lighthouse"]
