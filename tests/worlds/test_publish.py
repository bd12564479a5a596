"""worlds.services: creating, editing (versions), publishing, screening, remixing, deleting."""

import pytest
from django.core.exceptions import PermissionDenied, ValidationError

from tests.worlds.factories import image_bytes, make_world, upload
from worlds import services
from worlds.models import Play, World, WorldStatus, WorldVersion

SPEC = {"title": "Ember Woods", "category": "games", "prompt": "an autumn forest with red leaves"}


def test_it_creates_a_draft_with_a_first_version(owner):
    world = services.world_create(creator=owner, fields=SPEC | {"seed": 7})
    assert world.status == WorldStatus.DRAFT
    assert world.slug == "ember-woods"
    assert world.current_version.number == 1
    assert world.current_version.prompt == SPEC["prompt"]
    assert world.current_version.seed == 7


def test_it_picks_a_random_seed_when_none_is_given(owner):
    world = services.world_create(creator=owner, fields=SPEC)
    assert 0 <= world.seed < 2**31


def test_it_makes_slugs_unique(owner):
    first = services.world_create(creator=owner, fields=SPEC)
    second = services.world_create(creator=owner, fields=SPEC)
    assert first.slug != second.slug
    assert second.slug.startswith("ember-woods-")


def test_it_publishes_and_stamps_the_time(owner):
    world = services.world_create(creator=owner, fields=SPEC, publish=True)
    assert world.status == WorldStatus.PUBLISHED
    assert world.published_at is not None


def test_it_publishes_unlisted(owner):
    world = services.world_create(creator=owner, fields=SPEC)
    world = services.world_publish(world=world, by=owner, unlisted=True)
    assert world.status == WorldStatus.UNLISTED


def test_editing_a_published_world_makes_a_new_version_and_keeps_the_old(owner):
    world = services.world_create(creator=owner, fields=SPEC, publish=True)
    first = world.current_version
    world = services.world_update(world=world, by=owner, fields={"prompt": "a winter forest"})
    assert world.current_version.number == 2
    assert world.current_version.prompt == "a winter forest"
    first.refresh_from_db()
    assert first.prompt == SPEC["prompt"]  # a session pinned to v1 still plays v1
    assert world.status == WorldStatus.PUBLISHED


def test_editing_only_the_description_keeps_the_version(owner):
    world = services.world_create(creator=owner, fields=SPEC, publish=True)
    world = services.world_update(world=world, by=owner, fields={"description": "New blurb"})
    assert world.current_version.number == 1
    assert WorldVersion.objects.filter(world=world).count() == 1


def test_a_character_world_needs_the_character_card(owner):
    with pytest.raises(ValidationError) as err:
        services.world_create(creator=owner, fields=SPEC | {"category": "characters"})
    assert set(err.value.message_dict) == {
        "character_name",
        "character_persona",
        "character_greeting",
    }
    assert not World.objects.exists()


def test_it_rejects_an_unknown_category_and_saves_nothing(owner):
    with pytest.raises(ValidationError) as err:
        services.world_create(creator=owner, fields=SPEC | {"category": "casino"})
    assert "category" in err.value.message_dict
    assert not World.objects.exists()


def test_it_blocks_harmful_text_on_the_field_and_saves_nothing(owner):
    with pytest.raises(ValidationError) as err:
        services.world_create(creator=owner, fields=SPEC | {"prompt": "behead the villagers"})
    assert "refused" in err.value.message_dict["prompt"][0]
    assert not World.objects.exists()


def test_publishing_held_text_puts_the_world_in_review(owner):
    world = services.world_create(creator=owner, fields=SPEC | {"prompt": "a gory battlefield"})
    world = services.world_publish(world=world, by=owner)
    assert world.status == WorldStatus.IN_REVIEW
    assert world.published_at is None


def test_editing_a_published_world_into_held_text_sends_it_to_review(owner):
    world = services.world_create(creator=owner, fields=SPEC, publish=True)
    world = services.world_update(
        world=world, by=owner, fields={"description": "a gory battlefield"}
    )
    assert world.status == WorldStatus.IN_REVIEW


def test_it_refuses_edits_by_someone_else(owner, outsider):
    world = make_world(owner)
    with pytest.raises(PermissionDenied):
        services.world_update(world=world, by=outsider, fields={"title": "Mine now"})
    world.refresh_from_db()
    assert world.title != "Mine now"


def test_it_refuses_to_publish_a_removed_world(owner):
    world = make_world(owner, status=WorldStatus.REMOVED)
    with pytest.raises(ValidationError):
        services.world_publish(world=world, by=owner)
    world.refresh_from_db()
    assert world.status == WorldStatus.REMOVED


def test_unpublish_returns_the_world_to_drafts(owner, world):
    world = services.world_unpublish(world=world, by=owner)
    assert world.status == WorldStatus.DRAFT


def test_a_remix_is_a_draft_of_the_remixer_linked_to_the_original(world, outsider):
    remix = services.world_remix(world=world, by=outsider)
    assert remix.creator == outsider
    assert remix.remix_of == world
    assert remix.status == WorldStatus.DRAFT
    assert remix.prompt == world.prompt
    assert remix.title == "Snowy Pines (remix)"


def test_a_remix_takes_overrides(world, outsider):
    remix = services.world_remix(
        world=world, by=outsider, fields={"prompt": "snowy pines at night"}
    )
    assert remix.prompt == "snowy pines at night"


def test_a_removed_world_cannot_be_remixed(owner, outsider):
    world = make_world(owner, status=WorldStatus.REMOVED)
    with pytest.raises(ValidationError):
        services.world_remix(world=world, by=owner)


def test_record_play_counts_and_logs_for_trending(world):
    services.world_record_play(world=world)
    services.world_record_play(world=world)
    world.refresh_from_db()
    assert world.play_count == 2
    assert Play.objects.filter(world=world).count() == 2


def test_create_with_a_cover_stores_the_reencoded_image(owner):
    world = services.world_create(
        creator=owner, fields=SPEC, cover=upload(image_bytes("JPEG"), "x.png", "image/png")
    )
    assert world.cover.name.endswith(".jpg")
    with world.cover.open("rb") as f:
        assert f.read(3) == b"\xff\xd8\xff"


def test_a_bad_cover_is_a_cover_field_error_and_saves_nothing(owner):
    with pytest.raises(ValidationError) as err:
        services.world_create(creator=owner, fields=SPEC, cover=upload(b"not an image"))
    assert "cover" in err.value.message_dict
    assert not World.objects.exists()


def test_delete_removes_the_world_and_its_versions(owner, world):
    services.world_delete(world=world, by=owner)
    assert not World.objects.filter(pk=world.pk).exists()
    assert not WorldVersion.objects.filter(world_id=world.pk).exists()


def test_delete_by_someone_else_is_refused(world, outsider):
    with pytest.raises(PermissionDenied):
        services.world_delete(world=world, by=outsider)
    assert World.objects.filter(pk=world.pk).exists()


def test_a_slug_race_is_settled_with_a_salted_slug(owner, monkeypatch):
    taken = services.world_create(creator=owner, fields=SPEC)
    real = services._unique_slug
    # The other creator's row lands between our existence check and our insert.
    monkeypatch.setattr(
        services,
        "_unique_slug",
        lambda title, salted=False: real(title, salted=True) if salted else taken.slug,
    )
    world = services.world_create(creator=owner, fields=SPEC)
    assert world.slug != taken.slug
    assert world.slug.startswith("ember-woods-")


def test_a_suspended_creator_cannot_publish(owner, draft):
    from worlds.moderation.models import Suspension

    Suspension.objects.create(user=owner, reason="spam")
    with pytest.raises(PermissionDenied):
        services.world_publish(world=draft, by=owner)
    draft.refresh_from_db()
    assert draft.status == WorldStatus.DRAFT
