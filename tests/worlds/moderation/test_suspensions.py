"""A suspended user cannot publish, play or report, and sees why."""

import pytest
from rest_framework.test import APIClient

from tests.worlds.factories import make_world
from worlds.moderation import policy, services
from worlds.moderation.models import Report


@pytest.fixture
def suspended(creator, moderator):
    services.action_take(
        moderator=moderator, kind="suspend", target_type="user", target_id=creator.username,
        reason="repeated spam", duration_days=7,
    )  # fmt: skip
    return creator


def test_a_suspended_user_cannot_publish_and_is_told_why(suspended):
    draft = make_world(suspended, status="draft")
    api = APIClient()
    api.force_authenticate(suspended)
    response = api.post(f"/api/worlds/{draft.slug}/publish/")
    assert response.status_code == 403
    assert "repeated spam" in response.json()["detail"]
    draft.refresh_from_db()
    assert draft.status == "draft"


def test_a_suspended_user_cannot_start_a_session(suspended, world):
    api = APIClient()
    api.force_authenticate(suspended)
    response = api.post("/api/sessions/", {"world": world.slug}, format="json")
    assert response.status_code == 403
    assert "suspended" in response.json()["detail"]


def test_a_suspended_user_cannot_report(suspended, api_as, creator, outsider):
    other = make_world(outsider)
    response = api_as(suspended).post(
        "/api/reports/",
        {"target_type": "world", "target_id": other.slug, "reason": "spam"},
        format="json",
    )
    assert response.status_code == 403
    assert "repeated spam" in response.json()["detail"]
    assert not Report.objects.exists()


def test_a_suspended_user_sees_the_reason_on_every_page(client, suspended):
    client.force_login(suspended)
    html = client.get("/").content.decode()
    assert 'id="suspension-notice"' in html
    assert "repeated spam" in html
    body = APIClient()
    body.force_authenticate(suspended)
    status = body.get("/api/me/suspension/").json()
    assert status["suspended"] is True and "repeated spam" in status["message"]


def test_an_expired_suspension_no_longer_blocks(suspended):
    from datetime import timedelta

    from django.utils import timezone

    from worlds.moderation.models import Suspension

    Suspension.objects.update(ends_at=timezone.now() - timedelta(minutes=1))
    policy.ensure_not_suspended(suspended)


def test_other_users_are_not_affected(suspended, outsider, client):
    policy.ensure_not_suspended(outsider)
    client.force_login(outsider)
    assert b"suspension-notice" not in client.get("/").content


def test_a_warned_creator_sees_the_warning_and_its_reason(client, world, creator, moderator):
    services.action_take(
        moderator=moderator, kind="warn", target_type="world", target_id=world.slug,
        reason="keep the titles family friendly",
    )  # fmt: skip
    client.force_login(creator)
    html = client.get("/").content.decode()
    assert "A moderator warned you about “Snowy Pines”" in html
    assert "keep the titles family friendly" in html


def test_notices_kept_between_pages_change_with_the_next_decision(client, creator, moderator):
    # a person's notices are read once and kept: a warning, a suspension and its lifting must
    # each still show on their very next page
    client.force_login(creator)
    assert b"suspension-notice" not in client.get("/").content
    take = dict(moderator=moderator, target_type="user", target_id=creator.username)
    services.action_take(kind="warn", reason="mind the language", **take)
    page = client.get("/c/games/").content.decode()
    assert "mind the language" in page and 'id="suspension-notice"' not in page
    services.action_take(kind="suspend", reason="repeated spam", duration_days=7, **take)
    assert b'id="suspension-notice"' in client.get("/").content
    services.action_take(kind="unsuspend", reason="appeal upheld", **take)
    assert b'id="suspension-notice"' not in client.get("/").content
