import pytest
from django.db import IntegrityError

from tests.worlds.factories import make_user, make_world
from worlds.models import Like, World, WorldStatus, WorldVersion


def test_a_world_links_to_its_page(world):
    assert world.get_absolute_url() == "/w/snowy-pines/"
    assert str(world) == "Snowy Pines"


@pytest.mark.parametrize(
    ("status", "public"),
    [("published", True), ("unlisted", True), ("draft", False), ("in_review", False),
     ("removed", False)],
)  # fmt: skip
def test_only_published_and_unlisted_worlds_are_public(owner, status, public):
    assert make_world(owner, status=status).is_public is public


def test_slugs_are_unique(owner, world):
    with pytest.raises(IntegrityError):
        World.objects.create(creator=owner, slug=world.slug, title="Twin", category="games")


def test_version_numbers_are_unique_per_world(world):
    with pytest.raises(IntegrityError):
        WorldVersion.objects.create(
            world=world, number=1, title="x", category="games", prompt="x", seed=1
        )


def test_a_user_likes_a_world_at_most_once(world):
    fan = make_user()
    Like.objects.create(user=fan, world=world)
    with pytest.raises(IntegrityError):
        Like.objects.create(user=fan, world=world)


def test_deleting_a_source_world_keeps_its_remixes(owner, world):
    remix = make_world(owner, remix_of=world)
    world.delete()
    remix.refresh_from_db()
    assert remix.remix_of is None


def test_public_name_falls_back_to_the_username(db):
    assert make_user("plain").public_name == "plain"
    assert make_user("fancy", display_name="Fancy Pants").public_name == "Fancy Pants"


def test_removed_is_a_status(owner):
    assert make_world(owner, status=WorldStatus.REMOVED).is_removed
