"""Appeals: the creator of a removed world appeals once; the appeal goes back to the queue."""

import pytest
from django.core.exceptions import PermissionDenied, ValidationError

from worlds.models import WorldStatus
from worlds.moderation import selectors, services
from worlds.moderation.models import Appeal, AppealStatus, AuditEntry


@pytest.fixture
def removed(world, moderator):
    services.action_take(
        moderator=moderator, kind="remove", target_type="world", target_id=world.slug,
        reason="violent cover",
    )  # fmt: skip
    world.refresh_from_db()
    return world


def test_the_creator_appeals_and_it_goes_back_to_the_queue(removed, creator):
    services.appeal_create(world=removed, by=creator, text="It is a painting of a battle.")
    [item] = selectors.queue_items()
    assert item.world == removed
    assert item.appeal.text == "It is a painting of a battle."
    assert AuditEntry.objects.filter(action="appeal", actor=creator).count() == 1


def test_a_creator_can_appeal_only_once(removed, creator):
    services.appeal_create(world=removed, by=creator, text="please")
    with pytest.raises(ValidationError, match="already appealed"):
        services.appeal_create(world=removed, by=creator, text="please again")
    assert Appeal.objects.count() == 1


def test_only_the_creator_can_appeal(removed, outsider):
    with pytest.raises(PermissionDenied):
        services.appeal_create(world=removed, by=outsider, text="restore it")
    assert not Appeal.objects.exists()


def test_a_world_that_was_not_removed_cannot_be_appealed(world, creator):
    with pytest.raises(ValidationError):
        services.appeal_create(world=world, by=creator, text="?")


def test_restoring_accepts_the_appeal(removed, creator, moderator):
    appeal = services.appeal_create(world=removed, by=creator, text="mistake")
    services.action_take(
        moderator=moderator, kind="restore", target_type="world", target_id=removed.slug,
        reason="the appeal is right",
    )  # fmt: skip
    appeal.refresh_from_db()
    removed.refresh_from_db()
    assert appeal.status == AppealStatus.ACCEPTED
    assert removed.status == WorldStatus.PUBLISHED
    assert selectors.queue_items() == []


def test_rejecting_the_appeal_keeps_the_world_removed_and_closes_it(removed, creator, moderator):
    appeal = services.appeal_create(world=removed, by=creator, text="mistake")
    services.action_take(
        moderator=moderator, kind="reject_appeal", target_type="world", target_id=removed.slug,
        reason="the cover shows gore",
    )  # fmt: skip
    appeal.refresh_from_db()
    removed.refresh_from_db()
    assert appeal.status == AppealStatus.REJECTED
    assert removed.status == WorldStatus.REMOVED
    assert selectors.queue_items() == []
    with pytest.raises(ValidationError):
        services.appeal_create(world=removed, by=creator, text="and again")


def test_the_appeal_page_and_api(client, api_as, removed, creator):
    client.force_login(creator)
    page = client.get(f"/w/{removed.slug}/appeal/")
    assert page.status_code == 200
    assert "violent cover" in page.content.decode()
    response = api_as(creator).post(
        "/api/appeals/", {"world": removed.slug, "text": "please look again"}, format="json"
    )
    assert response.status_code == 201
    assert (
        api_as(creator)
        .post("/api/appeals/", {"world": removed.slug, "text": "again"}, format="json")
        .status_code
        == 400
    )
    html = client.get(removed.get_absolute_url()).content.decode()
    assert "appeal is waiting" in html


def test_someone_elses_appeal_page_is_not_found(client, removed, outsider):
    client.force_login(outsider)
    assert client.get(f"/w/{removed.slug}/appeal/").status_code == 404
