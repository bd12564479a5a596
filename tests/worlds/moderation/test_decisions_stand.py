"""What moderation decided stands against the creator's own buttons: an unlisting, a hold for an
unlisted world, a suspension, and the records of a world its creator deletes."""

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from rest_framework.test import APIClient

from tests.worlds.factories import make_world
from worlds import selectors as world_selectors
from worlds import services as world_services
from worlds.models import World, WorldStatus
from worlds.moderation import services
from worlds.moderation.models import ModerationAction, Report

SPEC = {"title": "Held Fields", "category": "games", "prompt": "a gory battlefield"}


def act(moderator, kind, target_id, target_type="world", **extra):
    return services.action_take(
        moderator=moderator, kind=kind, target_type=target_type, target_id=target_id,
        reason="breaks the rules", **extra,
    )  # fmt: skip


def test_a_world_a_moderator_unlisted_stays_unlisted_until_a_moderator_restores_it(
    world, creator, moderator
):
    act(moderator, "unlist", world.slug)
    api = APIClient()
    api.force_authenticate(creator)
    refused = api.post(f"/api/worlds/{world.slug}/publish/")
    # unpublishing first does not launder it either
    world_services.world_unpublish(world=World.objects.get(pk=world.pk), by=creator)
    again = api.post(f"/api/worlds/{world.slug}/publish/")
    assert refused.status_code == again.status_code == 400
    assert "moderator" in str(refused.json())
    assert not world_selectors.world_list(viewer=None).filter(pk=world.pk).exists()
    act(moderator, "restore", world.slug)  # a draft now: the unlisting is lifted, no more
    assert World.objects.get(pk=world.pk).status == WorldStatus.DRAFT
    assert api.post(f"/api/worlds/{world.slug}/publish/").status_code == 200
    assert World.objects.get(pk=world.pk).status == WorldStatus.PUBLISHED


@pytest.mark.parametrize("decision", ["dismiss", "restore"])
def test_an_unlisted_world_held_by_screening_is_approved_unlisted(creator, moderator, decision):
    world = world_services.world_create(creator=creator, fields=SPEC)
    world = world_services.world_publish(world=world, by=creator, unlisted=True)
    assert world.status == WorldStatus.IN_REVIEW
    act(moderator, decision, world.slug)
    world.refresh_from_db()
    assert world.status == WorldStatus.UNLISTED and world.published_at is not None
    assert not world_selectors.world_list(viewer=None).filter(pk=world.pk).exists()


def test_a_listed_world_held_by_screening_is_approved_listed(creator, moderator):
    world = world_services.world_create(creator=creator, fields=SPEC)
    world_services.world_publish(world=world, by=creator)
    act(moderator, "dismiss", world.slug)
    assert World.objects.get(pk=world.pk).status == WorldStatus.PUBLISHED


@pytest.fixture
def suspended(creator, moderator):
    act(moderator, "suspend", creator.username, target_type="user", duration_days=7)
    return creator


def test_a_suspended_creator_cannot_change_public_text(suspended, world):
    api = APIClient()
    api.force_authenticate(suspended)
    edit = api.patch(f"/api/worlds/{world.slug}/", {"title": "Buy my stuff"}, format="json")
    profile = api.patch("/api/me/", {"display_name": "Buy my stuff"}, format="json")
    assert (edit.status_code, profile.status_code) == (403, 403)
    assert World.objects.get(pk=world.pk).title == world.title
    suspended.refresh_from_db()
    assert suspended.display_name != "Buy my stuff"
    # a draft nobody sees stays theirs to edit
    draft = make_world(suspended, status="draft")
    assert (
        api.patch(f"/api/worlds/{draft.slug}/", {"title": "Later"}, format="json").status_code
        == 200
    )


def test_a_suspended_creator_asking_to_publish_a_new_world_saves_nothing(suspended):
    api = APIClient()
    api.force_authenticate(suspended)
    before = World.objects.count()
    fields = {"title": "Fresh", "category": "games", "prompt": "a meadow", "publish": True}
    response = api.post("/api/worlds/", fields, format="json")
    assert response.status_code == 403
    assert World.objects.count() == before


def test_deleting_a_world_keeps_its_reports_and_the_actions_on_it(world, creator, moderator):
    act(moderator, "warn", creator.username, target_type="user")
    Report.objects.create(reporter=moderator, target_type="world", target_id=str(world.pk),
                          world=world, target_user=creator, reason="spam")  # fmt: skip
    act(moderator, "remove", world.slug)
    actions = ModerationAction.objects.filter(target_user=creator).count()
    with pytest.raises((PermissionDenied, ValidationError)):
        world_services.world_delete(world=world, by=moderator)  # not theirs
    world_services.world_delete(world=World.objects.get(pk=world.pk), by=creator)
    assert not World.objects.filter(pk=world.pk).exists()
    assert Report.objects.filter(target_id=str(world.pk)).count() == 1
    assert ModerationAction.objects.filter(target_user=creator).count() == actions >= 2


def test_a_removed_world_cannot_be_edited_while_its_appeal_is_heard(world, creator, moderator):
    act(moderator, "remove", world.slug)
    with pytest.raises(ValidationError):
        world_services.world_update(
            world=World.objects.get(pk=world.pk), by=creator, fields={"title": "All fine now"}
        )
    assert World.objects.get(pk=world.pk).title == world.title


def test_a_text_report_naming_someone_elses_draft_reads_as_no_such_world(creator, api_as, outsider):
    draft = make_world(creator, status="draft")
    answers = []
    for key in (draft.slug, "no-such-world"):
        body = {"target_type": "text", "text": "rude words", "field": "title", "world": key}
        answers.append(api_as(outsider).post("/api/reports/", {**body, "reason": "spam"}).json())
    assert answers[0] == answers[1]
    assert not Report.objects.filter(world=draft).exists()
