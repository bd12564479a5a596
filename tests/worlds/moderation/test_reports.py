"""Reporting a world, a live session, a user or a piece of text; duplicates and the rate limit."""

import pytest
from django.test import Client

from sessions.models import Seat
from tests.worlds.factories import make_user
from tests.worlds.moderation.factories import make_report, make_session
from worlds.moderation import selectors, services
from worlds.moderation.models import Report, ReportStatus


def test_a_user_reports_a_world_and_it_reaches_the_queue(api_as, reporter, world):
    response = api_as(reporter).post(
        "/api/reports/",
        {"target_type": "world", "target_id": "snowy-pines", "reason": "violence", "note": "gore"},
        format="json",
    )
    assert response.status_code == 201, response.content
    report = Report.objects.get()
    assert (report.world, report.reporter, report.reason) == (world, reporter, "violence")
    [item] = selectors.queue_items()
    assert (item.target_type, item.world, item.report_count) == ("world", world, 1)
    assert item.target_user == world.creator


def test_it_refuses_a_second_open_report_on_the_same_target(api_as, reporter, world):
    make_report(reporter=reporter, world=world)
    response = api_as(reporter).post(
        "/api/reports/",
        {"target_type": "world", "target_id": world.slug, "reason": "hate"},
        format="json",
    )
    assert response.status_code == 400
    assert "already reported" in str(response.json())
    assert Report.objects.count() == 1


def test_it_accepts_a_new_report_once_the_first_was_closed(reporter, world, moderator):
    make_report(reporter=reporter, world=world)
    services.action_take(
        moderator=moderator, kind="dismiss", target_type="world", target_id=world.slug,
        reason="fine",
    )  # fmt: skip
    make_report(reporter=reporter, world=world, reason="hate")
    assert Report.objects.filter(status=ReportStatus.OPEN).count() == 1
    assert Report.objects.filter(status=ReportStatus.DISMISSED).count() == 1


def test_two_reporters_on_one_target_make_one_queue_item(reporter, outsider, world):
    make_report(reporter=reporter, world=world)
    make_report(reporter=outsider, world=world, reason="hate")
    [item] = selectors.queue_items()
    assert item.report_count == 2
    assert item.reasons == {"Spam": 1, "Hate or harassment": 1}


def test_the_queue_puts_the_most_reported_target_first(reporter, outsider, creator):
    from tests.worlds.factories import make_world

    quiet = make_world(creator, title="Quiet")
    loud = make_world(creator, title="Loud")
    make_report(reporter=reporter, world=quiet)
    make_report(reporter=reporter, world=loud)
    make_report(reporter=outsider, world=loud)
    assert [item.world for item in selectors.queue_items()] == [loud, quiet]


def test_reports_are_rate_limited_per_user(api_as, reporter, creator, settings):
    from tests.worlds.factories import make_world

    settings.MODERATION_REPORTS_PER_HOUR = 2
    worlds = [make_world(creator) for _ in range(3)]
    api = api_as(reporter)
    codes = [
        api.post(
            "/api/reports/",
            {"target_type": "world", "target_id": w.slug, "reason": "spam"},
            format="json",
        ).status_code
        for w in worlds
    ]
    assert codes == [201, 201, 429]
    assert Report.objects.count() == 2


def test_the_rate_limit_is_per_user(reporter, outsider, creator, settings):
    from tests.worlds.factories import make_world

    settings.MODERATION_REPORTS_PER_HOUR = 1
    world = make_world(creator)
    make_report(reporter=reporter, world=world)
    make_report(reporter=outsider, world=world)  # another user's budget is untouched
    with pytest.raises(services.ReportRateLimited):
        make_report(reporter=reporter, world=make_world(creator))


def test_anonymous_visitors_cannot_report(api_as, world):
    response = api_as().post(
        "/api/reports/", {"target_type": "world", "target_id": world.slug, "reason": "spam"}
    )
    assert response.status_code in (401, 403)
    assert not Report.objects.exists()


@pytest.mark.parametrize(
    "body",
    [
        {"target_type": "world", "target_id": "no-such-world", "reason": "spam"},
        {"target_type": "world", "target_id": "snowy-pines", "reason": "boredom"},
        {"target_type": "planet", "target_id": "snowy-pines", "reason": "spam"},
        {"target_type": "session", "target_id": "not-a-uuid", "reason": "spam"},
        {"target_type": "text", "reason": "spam"},
    ],
)
def test_bad_reports_are_refused_with_a_clear_error_and_change_nothing(
    api_as, reporter, world, body
):
    response = api_as(reporter).post("/api/reports/", body, format="json")
    assert response.status_code == 400
    assert response.json()
    assert not Report.objects.exists()


def test_a_draft_cannot_be_reported_by_others(api_as, reporter, creator):
    from tests.worlds.factories import make_world

    draft = make_world(creator, status="draft")
    response = api_as(reporter).post(
        "/api/reports/",
        {"target_type": "world", "target_id": draft.slug, "reason": "spam"},
        format="json",
    )
    assert response.status_code == 400


def test_a_user_reports_a_piece_of_text_in_a_live_session(api_as, reporter, creator, world):
    session = make_session(world=world, player=creator)
    body = {
        "target_type": "text",
        "text": "a horde of naked people",
        "field": "event",
        "session": str(session.pk),
        "reason": "sexual",
    }
    response = api_as(reporter).post("/api/reports/", body, format="json")
    assert response.status_code == 201, response.content
    report = Report.objects.get()
    assert report.target_id.startswith(f"session-{session.pk}:event:")
    assert (report.world, report.target_user, report.text) == (
        world,
        creator,
        "a horde of naked people",
    )
    # The same text in the same place is the same target.
    again = api_as(reporter).post("/api/reports/", body, format="json")
    assert again.status_code == 400


def test_a_user_reports_another_user_but_not_themselves(api_as, reporter, creator):
    api = api_as(reporter)
    body = {"target_type": "user", "target_id": "creator", "reason": "hate"}
    assert api.post("/api/reports/", body, format="json").status_code == 201
    body = {"target_type": "user", "target_id": "reporter", "reason": "hate"}
    assert api.post("/api/reports/", body, format="json").status_code == 400


def test_a_user_reports_a_live_session(api_as, reporter, creator, world):
    session = make_session(world=world, player=creator)
    response = api_as(reporter).post(
        "/api/reports/",
        {"target_type": "session", "target_id": str(session.pk), "reason": "violence"},
        format="json",
    )
    assert response.status_code == 201
    [item] = selectors.queue_items()
    assert (item.session, item.target_user) == (session, creator)


def test_a_report_on_a_shared_session_names_a_player(api_as, reporter, creator, world, moderator):
    session = make_session(world=world, player=creator)
    troll = make_user("troll-account")
    Seat.objects.create(session=session, slot=0, name="creator", user=creator)
    Seat.objects.create(session=session, slot=3, name="Noisy", user=troll)
    body = {"target_type": "session", "target_id": str(session.pk), "reason": "violence"}
    empty_seat = api_as(reporter).post("/api/reports/", {**body, "player": 5}, format="json")
    assert empty_seat.status_code == 400 and "seat" in empty_seat.content.decode()
    response = api_as(reporter).post("/api/reports/", {**body, "player": 3}, format="json")
    assert response.status_code == 201
    assert (response.json()["player_slot"], response.json()["player_name"]) == (3, "Noisy")
    [item] = selectors.queue_items()
    assert item.players == ["Noisy"] and item.target_user == troll
    page = Client()
    page.force_login(moderator)
    assert "Players reported: <strong>Noisy</strong>" in page.get("/moderation/").content.decode()


def test_the_report_page_sends_a_report(client, reporter, world):
    client.force_login(reporter)
    page = client.get(f"/report/?target_type=world&target_id={world.slug}")
    assert page.status_code == 200
    response = client.post(
        "/report/",
        {"target_type": "world", "target_id": world.slug, "reason": "spam", "next": "/"},
    )
    assert response.status_code == 302
    assert Report.objects.filter(reporter=reporter, world=world).exists()


def test_the_world_page_offers_a_report_link_to_signed_in_visitors(client, reporter, world):
    client.force_login(reporter)
    html = client.get(world.get_absolute_url()).content.decode()
    assert f"/report/?target_type=world&amp;target_id={world.slug}" in html


def test_the_queue_page_shows_each_target_in_context(mod_client, reporter, creator, world):
    from tests.worlds.moderation.factories import make_session

    session = make_session(world=world, player=creator)
    services.report_create(
        reporter=reporter, target_type="text", reason="hate", text="a slur-laden title",
        field="title", world_key=world.slug,
    )  # fmt: skip
    services.report_create(
        reporter=reporter, target_type="session", target_id=str(session.pk), reason="violence",
        note="the player keeps typing gore",
    )  # fmt: skip
    html = mod_client.get("/moderation/").content.decode()
    assert "title: “a slur-laden title”" in html
    assert str(session.pk) in html and "the player keeps typing gore" in html
    assert world.cover_url in html
    assert "creator" in html


def test_profiles_offer_a_report_link_that_reports_the_user(client, reporter, creator):
    client.force_login(reporter)
    html = client.get(f"/u/{creator.username}/").content.decode()
    link = f"/report/?target_type=user&amp;target_id={creator.username}"
    assert link in html
    client.post(
        "/report/", {"target_type": "user", "target_id": creator.username, "reason": "hate"}
    )
    assert Report.objects.get(reporter=reporter).target_user == creator
    client.force_login(creator)  # nobody is offered a report on themselves
    assert "target_type=user" not in client.get(f"/u/{creator.username}/").content.decode()


def test_the_watch_page_offers_a_report_link_for_the_session(client, reporter, creator, world):
    from tests.worlds.moderation.factories import make_session

    session = make_session(world=world, player=creator)
    client.force_login(reporter)
    html = client.get(f"/watch/{session.pk}/").content.decode()
    assert f"/report/?target_type=session&amp;target_id={session.pk}" in html
