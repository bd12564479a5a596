"""Moderator actions: each one's effect on every listing, search, the API and play; reports
closed; one audit entry each."""

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from rest_framework.test import APIClient

from sessions import seats
from sessions import services as session_services
from sessions.models import PlaySession, SessionStatus
from tests.worlds.factories import make_user, make_world
from tests.worlds.moderation.factories import make_report, make_session
from worlds import selectors as world_selectors
from worlds.models import World, WorldStatus
from worlds.moderation import policy, services
from worlds.moderation.models import (
    AuditEntry,
    ModerationAction,
    Report,
    ReportStatus,
    Suspension,
)


def act(moderator, kind, target, target_type="world", reason="breaks the rules", **extra):
    target_id = target.slug if target_type == "world" else str(getattr(target, "pk", target))
    return services.action_take(
        moderator=moderator,
        kind=kind,
        target_type=target_type,
        target_id=target_id,
        reason=reason,
        **extra,
    )


def surfaces(world: World, client) -> dict[str, bool]:
    """Where a visitor (signed in, not the creator) finds this world."""
    viewer = make_user()
    client.force_login(viewer)
    api = APIClient()
    api.force_authenticate(viewer)
    slug, title = world.slug, world.title
    return {
        "listing": world_selectors.world_list(viewer=viewer).filter(pk=world.pk).exists(),
        "search": world_selectors.world_search(query="Snowy", viewer=viewer)
        .filter(pk=world.pk)
        .exists(),
        "category page": title in client.get("/c/games/").content.decode(),
        "search page": title in client.get("/search/?q=Snowy").content.decode(),
        "profile page": title in client.get("/u/creator/").content.decode(),
        "api list": slug in str(api.get("/api/worlds/").json()),
        "api search": slug in str(api.get("/api/worlds/?q=Snowy").json()),
        "api detail": api.get(f"/api/worlds/{slug}/").status_code == 200,
        "page": client.get(f"/w/{slug}/").status_code == 200,
        "play page": client.get(f"/play/{slug}/").status_code == 200,
        "play start": _can_start(world, viewer),
    }


def _can_start(world: World, viewer) -> bool:
    try:
        session, _ = seats.session_create(
            world_slug=world.slug, user=viewer, session_key="", client_ip=None
        )
    except (World.DoesNotExist, ValidationError, PermissionDenied):
        return False
    session_services.session_end(session=session, reason="player")
    return True


@pytest.fixture
def started(world, client, settings):
    settings.INFERENCE_IN_PROCESS = False  # placement only: no worker needed to count a start
    assert all(surfaces(world, client).values()), surfaces(world, client)
    return world


def test_removing_a_world_hides_it_from_every_listing_search_api_and_play(
    started, moderator, client
):
    act(moderator, "remove", started)
    started.refresh_from_db()
    assert started.status == WorldStatus.REMOVED
    seen = surfaces(started, client)
    assert not any(seen.values()), seen


def test_the_creator_sees_the_removal_with_its_reason_and_an_appeal_link(world, moderator, client):
    act(moderator, "remove", world, reason="graphic gore in the cover")
    client.force_login(world.creator)
    html = client.get(world.get_absolute_url()).content.decode()
    assert "removed by moderation" in html
    assert "graphic gore in the cover" in html
    assert f"/w/{world.slug}/appeal/" in html


def test_removing_a_world_ends_its_live_sessions(world, moderator, creator):
    session = make_session(world=world, player=creator)
    act(moderator, "remove", world)
    session.refresh_from_db()
    assert session.status == SessionStatus.ENDED
    assert session.end_reason == "moderator"


def test_unlisting_keeps_the_link_but_leaves_every_listing(started, moderator, client):
    act(moderator, "unlist", started)
    seen = surfaces(started, client)
    assert seen["page"] and seen["api detail"] and seen["play start"]
    assert not any(seen[k] for k in ("listing", "search", "category page", "api list"))


def test_restoring_a_removed_world_brings_it_back_everywhere(started, moderator, client):
    act(moderator, "remove", started)
    act(moderator, "restore", started, reason="removed by mistake")
    started.refresh_from_db()
    assert started.status == WorldStatus.PUBLISHED
    assert all(surfaces(started, client).values())


def test_a_removed_world_cannot_be_republished_by_its_creator(world, moderator, creator):
    from worlds.services import world_publish

    act(moderator, "remove", world)
    world.refresh_from_db()
    with pytest.raises(ValidationError):
        world_publish(world=world, by=creator)
    world.refresh_from_db()
    assert world.status == WorldStatus.REMOVED


def test_dismissing_closes_the_reports_and_leaves_the_world_alone(
    world, moderator, reporter, outsider
):
    make_report(reporter=reporter, world=world)
    make_report(reporter=outsider, world=world)
    action = act(moderator, "dismiss", world, reason="a normal forest")
    world.refresh_from_db()
    assert world.status == WorldStatus.PUBLISHED
    assert set(Report.objects.values_list("status", flat=True)) == {ReportStatus.DISMISSED}
    assert set(Report.objects.values_list("closed_by_action", flat=True)) == {action.pk}


def test_dismissing_a_screening_hold_publishes_the_world(creator, moderator):
    held = make_world(creator, status=WorldStatus.IN_REVIEW)
    act(moderator, "dismiss", held, reason="the hold was a false alarm")
    held.refresh_from_db()
    assert held.status == WorldStatus.PUBLISHED


def test_acting_on_a_world_resolves_its_open_reports(world, moderator, reporter):
    make_report(reporter=reporter, world=world)
    act(moderator, "remove", world)
    assert Report.objects.get().status == ReportStatus.RESOLVED


def test_warning_a_creator_is_recorded_against_them(world, moderator, creator):
    act(moderator, "warn", world, reason="keep titles clean")
    act(moderator, "warn", creator, target_type="user", reason="second time")
    warnings = ModerationAction.objects.filter(kind="warn", target_user=creator)
    assert warnings.count() == 2
    last = AuditEntry.objects.filter(action="warn").first()
    assert (last.before, last.after) == ({"warnings": 1}, {"warnings": 2})


def test_suspending_for_a_period_blocks_until_it_ends(creator, moderator):
    act(moderator, "suspend", creator, target_type="user", duration_days=7, reason="spam")
    suspension = Suspension.objects.get()
    assert suspension.ends_at is not None
    with pytest.raises(policy.UserSuspended) as exc:
        policy.ensure_not_suspended(creator)
    assert "spam" in str(exc.value) and "until" in str(exc.value)


def test_suspending_permanently_has_no_end(creator, moderator):
    act(moderator, "suspend", creator, target_type="user", duration_days=None, reason="hate")
    assert Suspension.objects.get().is_permanent
    with pytest.raises(policy.UserSuspended, match="permanently"):
        policy.ensure_not_suspended(creator)


def test_suspending_a_user_ends_their_live_sessions(world, moderator, creator):
    session = make_session(world=world, player=creator)
    act(moderator, "suspend", creator, target_type="user", duration_days=1)
    session.refresh_from_db()
    assert session.status == SessionStatus.ENDED


def test_lifting_a_suspension_lets_the_user_back(creator, moderator):
    act(moderator, "suspend", creator, target_type="user", duration_days=3)
    act(moderator, "unsuspend", creator, target_type="user", reason="appeal accepted")
    policy.ensure_not_suspended(creator)  # no longer raises


def test_ending_a_live_session_stops_it_with_the_moderator_reason(world, moderator, creator):
    session = make_session(world=world, player=creator, is_public=False)
    act(moderator, "end_session", session, target_type="session", reason="abusive prompts")
    session.refresh_from_db()
    assert session.status == SessionStatus.ENDED
    assert session.end_reason == "moderator"
    entry = AuditEntry.objects.get(action="end_session")
    assert entry.reason == "abusive prompts"


def test_ending_an_ended_session_is_refused(world, moderator, creator):
    session = make_session(world=world, player=creator, status=SessionStatus.ENDED)
    with pytest.raises(ValidationError):
        act(moderator, "end_session", session, target_type="session")


@pytest.mark.parametrize("reason", ["", "   "])
def test_every_action_needs_a_reason(world, moderator, reason):
    with pytest.raises(ValidationError, match="reason"):
        act(moderator, "remove", world, reason=reason)
    world.refresh_from_db()
    assert world.status == WorldStatus.PUBLISHED
    assert not AuditEntry.objects.exists()


def test_a_refused_action_changes_nothing(creator, moderator):
    draft = make_world(creator, status=WorldStatus.DRAFT)
    with pytest.raises(ValidationError):
        act(moderator, "unlist", draft)
    assert not ModerationAction.objects.exists()
    assert not AuditEntry.objects.exists()


def test_non_moderators_cannot_act(world, outsider):
    with pytest.raises(PermissionDenied):
        act(outsider, "remove", world)
    world.refresh_from_db()
    assert world.status == WorldStatus.PUBLISHED


def test_the_action_api_applies_a_decision(api_as, moderator, world, reporter):
    make_report(reporter=reporter, world=world)
    response = api_as(moderator).post(
        "/api/moderation/actions/",
        {"kind": "remove", "target_type": "world", "target_id": world.slug, "reason": "gore"},
        format="json",
    )
    assert response.status_code == 201, response.content
    assert response.json()["kind"] == "remove"
    world.refresh_from_db()
    assert world.status == WorldStatus.REMOVED
    assert api_as(moderator).get("/api/moderation/queue/").json() == []


def test_the_action_api_refuses_a_missing_reason(api_as, moderator, world):
    response = api_as(moderator).post(
        "/api/moderation/actions/",
        {"kind": "remove", "target_type": "world", "target_id": world.slug, "reason": ""},
        format="json",
    )
    assert response.status_code == 400
    assert "reason" in response.json()


def test_the_queue_page_acts_through_its_form(mod_client, world, reporter):
    make_report(reporter=reporter, world=world)
    page = mod_client.get("/moderation/")
    assert world.title in page.content.decode()
    response = mod_client.post(
        "/moderation/act/",
        {
            "kind": "unlist",
            "target_type": "world",
            "target_id": str(world.pk),
            "reason": "borderline",
            "next": "/moderation/",
        },
    )
    assert response.status_code == 302
    world.refresh_from_db()
    assert world.status == WorldStatus.UNLISTED


def test_no_session_survives_a_removal_race(world, moderator, creator):
    """A session started before the removal is ended by it; none can start after."""
    make_session(world=world, player=creator)
    act(moderator, "remove", world)
    assert not PlaySession.objects.filter(world=world, status=SessionStatus.LIVE).exists()


def test_a_prompt_reported_in_a_session_is_acted_on_through_the_player_not_the_world(
    world, moderator, reporter
):
    player = make_user("prompter")
    session = make_session(world=world, player=player)
    report = services.report_create(
        reporter=reporter, target_type="text", reason="hate", text="hateful prompt",
        field="event", session_key=str(session.pk),
    )  # fmt: skip
    with pytest.raises(ValidationError):
        act(moderator, "remove", report.target_id, target_type="text")
    world.refresh_from_db()
    assert world.status == WorldStatus.PUBLISHED
    act(moderator, "suspend", report.target_id, target_type="text", duration_days=1)
    assert Suspension.objects.get().user == player
    session.refresh_from_db()
    assert session.status == SessionStatus.ENDED
