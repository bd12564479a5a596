import pytest
from django.core.exceptions import ValidationError

from worlds import services
from worlds.models import Like


def test_liking_twice_counts_once(world, outsider):
    services.world_like(world=world, user=outsider)
    world = services.world_like(world=world, user=outsider)
    assert world.like_count == 1
    assert Like.objects.filter(world=world).count() == 1


def test_unlike_undoes_a_like(world, outsider):
    services.world_like(world=world, user=outsider)
    world = services.world_unlike(world=world, user=outsider)
    assert world.like_count == 0
    assert not Like.objects.exists()


def test_unlike_without_a_like_changes_nothing(world, outsider):
    world = services.world_unlike(world=world, user=outsider)
    assert world.like_count == 0


def test_a_draft_cannot_be_liked(draft, owner):
    with pytest.raises(ValidationError):
        services.world_like(world=draft, user=owner)
    assert not Like.objects.exists()
