"""Full-text search on PostgreSQL: stemming, weighting and ranking."""

import pytest
from django.conf import settings

from tests.worlds.factories import make_world
from worlds import selectors
from worlds.models import World

pytestmark = pytest.mark.skipif(
    not settings.USING_POSTGRES, reason="PostgreSQL full-text search (the suite runs it in CI)"
)


def test_it_matches_word_forms_by_stemming(owner):
    make_world(owner, title="Running Foxes", prompt="meadow")
    assert [w.title for w in selectors.world_search(query="fox run")] == ["Running Foxes"]


def test_it_ranks_title_over_description_over_prompt(owner):
    make_world(owner, title="Meadow", description="", prompt="a castle on a hill")
    make_world(owner, title="Meadow two", description="a castle in ruins", prompt="grass")
    make_world(owner, title="Castle Keep", description="", prompt="stone walls")
    found = [w.title for w in selectors.world_search(query="castle")]
    assert found == ["Castle Keep", "Meadow two", "Meadow"]


def test_it_understands_websearch_syntax(owner):
    make_world(owner, title="Snowy forest", prompt="pines")
    make_world(owner, title="Snowy desert", prompt="dunes")
    found = [w.title for w in selectors.world_search(query="snowy -desert")]
    assert found == ["Snowy forest"]


def test_it_ignores_punctuation_that_would_break_a_raw_tsquery(owner):
    make_world(owner, title="Pirate Cove")
    assert [w.title for w in selectors.world_search(query="pirate & | ! ( :*")] == ["Pirate Cove"]


def test_search_uses_the_gin_index_on_the_search_document(owner):
    from django.db import connection

    worlds = [make_world(owner, title="Pirate Cove")]
    worlds += [make_world(owner, title=f"Meadow {i}", prompt="grass and ponds") for i in range(3)]
    World.objects.bulk_create(  # enough rows that a scan of every document costs more
        World(
            slug=f"filler-{i}",
            title=f"Quiet valley {i}",
            description="rolling hills",
            category=worlds[1 + i % 3].category,
            prompt="green hills",
            creator=owner,
            status=worlds[0].status,
            published_at=worlds[0].published_at,
        )
        for i in range(3000)
    )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE worlds_world")
    qs = selectors.world_search(query="pirate")
    assert [w.title for w in qs] == ["Pirate Cove"]
    assert "world_search_gin" in qs.explain()
