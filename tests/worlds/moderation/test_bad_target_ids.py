"""Hostile or sloppy ids on the moderation pages and API: a clear 4xx, and nothing changes.

"²" is the sharp case: str.isdigit() calls it a digit but int() refuses it, which answered 500.
"""

import pytest

from tests.worlds.moderation.factories import make_report
from worlds.models import WorldStatus
from worlds.moderation.models import Appeal, AuditEntry, ModerationAction, Report, Suspension

BAD_IDS = ["²", "١٢٣٤٥", "-1", "0", "99999999999999999999", "snowy-pine", "%20"]


def nothing_changed(world, open_reports: int) -> bool:
    world.refresh_from_db()
    return (
        world.status == WorldStatus.PUBLISHED
        and not ModerationAction.objects.exists()
        and not AuditEntry.objects.exists()
        and not Suspension.objects.exists()
        and Report.objects.filter(status="open").count() == open_reports
    )


@pytest.mark.parametrize("target_id", BAD_IDS)
def test_the_action_api_refuses_a_world_id_that_names_no_world(
    api_as, moderator, reporter, world, target_id
):
    make_report(reporter=reporter, world=world)
    body = {"kind": "remove", "target_type": "world", "target_id": target_id, "reason": "spam"}
    response = api_as(moderator).post("/api/moderation/actions/", body, format="json")
    assert response.status_code == 400
    assert response.json() == {"target_id": ["No world with this id."]}
    assert nothing_changed(world, open_reports=1)


@pytest.mark.parametrize("target_id", BAD_IDS)
def test_the_action_api_refuses_a_user_id_that_names_no_user(api_as, moderator, world, target_id):
    body = {"kind": "suspend", "target_type": "user", "target_id": target_id, "reason": "spam"}
    response = api_as(moderator).post("/api/moderation/actions/", body, format="json")
    assert response.status_code == 400
    assert response.json() == {"target_id": ["No user with this id."]}
    assert nothing_changed(world, open_reports=0)


def test_the_queue_page_refuses_a_bad_id_with_a_message(mod_client, reporter, world):
    make_report(reporter=reporter, world=world)
    body = {"kind": "remove", "target_type": "world", "target_id": "²", "reason": "spam"}
    response = mod_client.post("/moderation/act/", {**body, "next": "/moderation/"}, follow=True)
    assert response.status_code == 200
    assert "No world with this id." in response.content.decode()
    assert nothing_changed(world, open_reports=1)


@pytest.mark.parametrize("target_type", ["world", "user"])
def test_the_report_api_refuses_a_bad_id(api_as, reporter, world, target_type):
    body = {"target_type": target_type, "target_id": "²", "reason": "spam"}
    response = api_as(reporter).post("/api/reports/", body, format="json")
    assert response.status_code == 400
    assert response.json() == {"target_id": [f"No {target_type} with this id."]}
    assert not Report.objects.exists()


def test_the_report_api_refuses_a_bad_world_for_text(api_as, reporter, world):
    body = {"target_type": "text", "text": "rude", "world": "²", "reason": "hate"}
    response = api_as(reporter).post("/api/reports/", body, format="json")
    assert response.status_code == 400
    assert response.json() == {"target_id": ["No world with this id."]}
    assert not Report.objects.exists()


def test_the_report_page_refuses_a_bad_id(client, reporter, world):
    client.force_login(reporter)
    body = {"target_type": "world", "target_id": "²", "reason": "spam"}
    response = client.post("/report/", body)
    assert response.status_code == 400
    assert "No world with this id." in response.content.decode()
    assert not Report.objects.exists()


def test_the_appeal_api_refuses_a_bad_world_id(api_as, creator, world):
    body = {"world": "²", "text": "please restore it"}
    response = api_as(creator).post("/api/appeals/", body, format="json")
    assert response.status_code == 400
    assert response.json() == {"target_id": ["No world with this id."]}


def test_an_appeal_for_someone_elses_world_answers_as_an_unknown_id(api_as, outsider, world):
    # a 403 here, against a 400 for a slug nobody has, told that a removed world existed
    for key in (world.slug, str(world.pk), "no-such-world"):
        response = api_as(outsider).post(
            "/api/appeals/", {"world": key, "text": "x"}, format="json"
        )
        assert response.status_code == 400, key
        assert response.json() == {"target_id": ["No world with this id."]}
    assert not Appeal.objects.exists() and not ModerationAction.objects.exists()


@pytest.mark.parametrize("days", [36501, 10**9, 10**30])
def test_a_suspension_longer_than_a_century_is_refused(
    api_as, mod_client, moderator, creator, world, days
):
    body = {"kind": "suspend", "target_type": "user", "target_id": "creator", "reason": "spam"}
    response = api_as(moderator).post(
        "/api/moderation/actions/", {**body, "duration_days": days}, format="json"
    )
    assert response.status_code == 400
    message = "A suspension lasts 1 to 36500 days (0: permanent)."
    assert response.json() == {"duration_days": [message]}
    page = mod_client.post("/moderation/act/", {**body, "duration_days": days}, follow=True)
    assert message in page.content.decode()
    assert nothing_changed(world, open_reports=0)
