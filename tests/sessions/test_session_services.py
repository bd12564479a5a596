"""Session services: creation and placement, queueing, limits, ending, reaping."""

from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from sessions import seats, services
from sessions.models import EndReason, PlaySession, SessionStatus
from sessions.worker_client import get_placement
from tests.sessions.play_fixtures import make_user, make_world
from worlds.models import World, WorldStatus

pytestmark = pytest.mark.django_db


def _create(world, user=None, key="", ip="10.0.0.1", **kw):
    return seats.session_create(
        world_slug=world.slug, user=user, session_key=key, client_ip=ip, **kw
    )


def test_it_places_a_new_session_on_a_worker_and_pins_the_version(world, player, worker_slots):
    name = worker_slots.add(capacity=2)
    session, created = _create(world, player)
    assert created
    assert session.status == SessionStatus.STARTING
    assert session.worker_name == name
    assert session.world_version_id == world.current_version_id
    assert worker_slots.placement.worker_of(str(session.id)) == name
    world.refresh_from_db()
    assert world.play_count == 1


def test_it_queues_when_no_worker_has_a_free_slot(world, worker_slots):
    worker_slots.add(capacity=1)
    first, _ = _create(world, make_user())
    second, _ = _create(world, make_user())
    third, _ = _create(world, make_user())
    assert first.status == SessionStatus.STARTING
    assert (second.status, third.status) == (SessionStatus.QUEUED, SessionStatus.QUEUED)
    assert services.session_queue_position(session=second) == 1
    assert services.session_queue_position(session=third) == 2


def test_ending_a_session_starts_the_first_queued_one(world, worker_slots):
    name = worker_slots.add(capacity=1)
    first, _ = _create(world, make_user())
    second, _ = _create(world, make_user())
    third, _ = _create(world, make_user())
    services.session_end(session=first, reason=EndReason.PLAYER)
    second.refresh_from_db()
    third.refresh_from_db()
    assert second.status == SessionStatus.STARTING and second.worker_name == name
    assert third.status == SessionStatus.QUEUED
    assert services.session_queue_position(session=third) == 1


def test_a_promotion_that_loses_its_slot_to_a_race_keeps_the_queue_head(
    world, worker_slots, monkeypatch
):
    worker_slots.add(capacity=1)
    first, _ = _create(world, make_user())
    second, _ = _create(world, make_user())
    third, _ = _create(world, make_user())
    placement = services.get_placement()
    real_reserve = placement.reserve_slot
    monkeypatch.setattr(placement, "reserve_slot", lambda sid, seats=1: None)  # another process won
    services.session_end(session=first, reason=EndReason.PLAYER)
    second.refresh_from_db()
    assert second.status == SessionStatus.QUEUED
    assert services.session_queue_position(session=second) == 1
    assert services.session_queue_position(session=third) == 2
    monkeypatch.setattr(placement, "reserve_slot", real_reserve)
    assert [s.pk for s in services.queue_promote()] == [second.pk]


def test_it_returns_the_running_session_when_the_player_comes_back(world, player, worker_slots):
    worker_slots.add(capacity=4)
    first, created_first = _create(world, player)
    again, created_again = _create(world, player)
    assert created_first and not created_again
    assert again.id == first.id
    assert PlaySession.objects.count() == 1


def test_it_limits_anonymous_sessions_per_browser(worker_slots):
    worker_slots.add(capacity=8)
    playing, _ = _create(make_world(), key="browser-1")
    seats.seat_attached(seat=playing.seats.get(slot=0), channel="tab-1")
    with pytest.raises(services.SessionLimitReached):
        _create(make_world(), key="browser-1")
    other, created = _create(make_world(), key="browser-2")
    assert created


def test_opening_another_world_ends_the_one_whose_socket_is_gone(worker_slots):
    worker_slots.add(capacity=8)
    left, _ = _create(make_world(), key="browser-1")
    seats.seat_attached(seat=left.seats.get(slot=0), channel="tab-1")
    seats.seat_detached(seat=left.seats.get(slot=0), channel="tab-1")
    new, created = _create(make_world(), key="browser-1")
    left.refresh_from_db()
    assert created and new.is_active
    assert (left.status, left.end_reason) == (SessionStatus.ENDED, EndReason.SWITCHED)
    assert get_placement().worker_of(str(left.id)) is None  # its slot went back


def test_switching_never_ends_another_players_session(worker_slots, settings):
    settings.SESSION_MAX_ANON_PER_IP = 1
    worker_slots.add(capacity=8)
    theirs, _ = _create(make_world(), key="their-browser", ip="10.7.7.7")
    with pytest.raises(services.SessionLimitReached):
        _create(make_world(), key="my-browser", ip="10.7.7.7")
    theirs.refresh_from_db()
    assert theirs.is_active


def test_it_limits_anonymous_sessions_per_ip(worker_slots, settings):
    settings.SESSION_MAX_ANON_PER_IP = 2
    worker_slots.add(capacity=8)
    _create(make_world(), key="b1", ip="10.9.9.9")
    _create(make_world(), key="b2", ip="10.9.9.9")
    with pytest.raises(services.SessionLimitReached):
        _create(make_world(), key="b3", ip="10.9.9.9")
    assert PlaySession.objects.filter(client_ip="10.9.9.9").count() == 2
    _create(make_world(), key="b4", ip="10.9.9.10")


def test_it_limits_sessions_per_account(player, worker_slots, settings):
    settings.SESSION_MAX_PER_USER = 2
    worker_slots.add(capacity=8)
    for tab in ("tab-1", "tab-2"):
        session, _ = _create(make_world(), player)
        seats.seat_attached(seat=session.seats.get(slot=0), channel=tab)
    with pytest.raises(services.SessionLimitReached):
        _create(make_world(), player)


def test_ended_sessions_do_not_count_against_the_limit(world, worker_slots):
    worker_slots.add(capacity=8)
    session, _ = _create(world, key="browser-1")
    services.session_end(session=session, reason=EndReason.PLAYER)
    again, created = _create(world, key="browser-1")
    assert created and again.id != session.id


def test_anonymous_play_needs_a_browser_session(world, clean_placement):
    with pytest.raises(ValidationError):
        _create(world, key="")
    assert not PlaySession.objects.exists()


def test_it_refuses_another_users_draft(outsider, clean_placement):
    draft = make_world(status=WorldStatus.DRAFT)
    with pytest.raises(World.DoesNotExist):
        _create(draft, outsider)
    assert not PlaySession.objects.exists()


def test_the_creator_may_play_their_own_draft(worker_slots):
    creator = make_user()
    draft = make_world(creator=creator, status=WorldStatus.DRAFT)
    worker_slots.add(capacity=1)
    session, created = _create(draft, creator)
    assert created and session.player == creator


def test_ending_frees_the_slot_and_records_the_frames(world, player, worker_slots):
    worker_slots.add(capacity=1)
    session, _ = _create(world, player)
    worker_slots.placement.record_frames(str(session.id), 240)
    ended = services.session_end(session=session, reason=EndReason.PLAYER)
    assert ended.status == SessionStatus.ENDED
    assert ended.end_reason == EndReason.PLAYER
    assert ended.frames_generated == 240
    assert worker_slots.placement.worker_of(str(session.id)) is None


def test_ending_twice_keeps_the_first_reason(world, player, worker_slots):
    worker_slots.add(capacity=1)
    session, _ = _create(world, player)
    services.session_end(session=session, reason=EndReason.MODERATOR)
    again = services.session_end(session=session, reason=EndReason.PLAYER)
    assert again.end_reason == EndReason.MODERATOR


def test_a_queued_session_that_ends_leaves_the_queue(world, worker_slots):
    worker_slots.add(capacity=1)
    _create(world, make_user())
    queued, _ = _create(world, make_user())
    services.session_end(session=queued, reason=EndReason.PLAYER)
    assert worker_slots.placement.queue_position(str(queued.id)) is None


def test_the_reaper_ends_idle_sessions(world, player, worker_slots, short_limits):
    worker_slots.add(capacity=2)
    session, _ = _create(world, player)
    seats.seat_attached(seat=session.seats.get(slot=0), channel="")
    later = timezone.now() + timedelta(seconds=301)
    ended = seats.sessions_reap(now=later)
    assert [s.id for s in ended] == [session.id]
    session.refresh_from_db()
    assert session.end_reason == EndReason.IDLE


def test_the_reaper_keeps_sessions_with_recent_input(world, player, worker_slots, short_limits):
    worker_slots.add(capacity=2)
    session, _ = _create(world, player)
    seats.seat_attached(seat=session.seats.get(slot=0), channel="")
    later = timezone.now() + timedelta(seconds=280)
    services.session_touch_input(session_id=session.id, at=later - timedelta(seconds=10))
    assert seats.sessions_reap(now=later) == []
    session.refresh_from_db()
    assert session.status == SessionStatus.STARTING


def test_the_reaper_reads_every_session_s_seats_in_a_constant_number_of_queries(
    world, worker_slots, short_limits
):
    worker_slots.add(capacity=8)
    for _ in range(2):
        session, _ = _create(world, make_user())
        seats.seat_attached(seat=session.seats.get(slot=0), channel="")
    soon = timezone.now() + timedelta(seconds=10)  # nobody idle yet: nothing to do
    with CaptureQueriesContext(connection) as two:
        assert seats.sessions_reap(now=soon) == []
    for _ in range(4):
        session, _ = _create(world, make_user())
        seats.seat_attached(seat=session.seats.get(slot=0), channel="")
    with CaptureQueriesContext(connection) as six:
        assert seats.sessions_reap(now=soon) == []
    assert len(six) == len(two)


def test_the_reaper_ends_sessions_past_the_maximum_length(
    world, player, worker_slots, short_limits
):
    short_limits.SESSION_MAX_SECONDS = 600
    worker_slots.add(capacity=2)
    session, _ = _create(world, player)
    seats.seat_attached(seat=session.seats.get(slot=0), channel="")
    later = timezone.now() + timedelta(seconds=601)
    services.session_touch_input(session_id=session.id, at=later)
    seats.sessions_reap(now=later)
    session.refresh_from_db()
    assert session.end_reason == EndReason.MAX_LENGTH


def test_a_player_who_left_is_ended_only_after_the_grace(world, player, worker_slots, short_limits):
    worker_slots.add(capacity=2)
    session, _ = _create(world, player)
    seats.seat_attached(seat=session.seats.get(slot=0), channel="")
    seats.seat_detached(seat=session.seats.get(slot=0), channel="")
    soon = timezone.now() + timedelta(seconds=20)
    assert not seats.seat_leave_if_abandoned(seat_id=session.seats.get(slot=0).pk, now=soon)
    later = timezone.now() + timedelta(seconds=31)
    assert seats.seat_leave_if_abandoned(seat_id=session.seats.get(slot=0).pk, now=later)
    session.refresh_from_db()
    assert session.end_reason == EndReason.ABANDONED


def test_a_player_who_came_back_is_not_ended(world, player, worker_slots, short_limits):
    worker_slots.add(capacity=2)
    session, _ = _create(world, player)
    seats.seat_detached(seat=session.seats.get(slot=0), channel="")
    seats.seat_attached(seat=session.seats.get(slot=0), channel="")
    later = timezone.now() + timedelta(seconds=31)
    assert not seats.seat_leave_if_abandoned(seat_id=session.seats.get(slot=0).pk, now=later)


def test_a_session_whose_worker_died_waits_for_failover(world, player, worker_slots):
    name = worker_slots.add(capacity=1)
    session, _ = _create(world, player)
    worker_slots.kill(name)  # its session becomes an orphan for a live worker to claim
    worker, restore = services.session_ensure_placed(session=session)
    assert worker is None
    session.refresh_from_db()
    assert session.status == SessionStatus.RESUMING
