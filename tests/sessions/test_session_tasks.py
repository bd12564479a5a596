"""Celery tasks of live play: thin shells that end abandoned and expired sessions."""

from datetime import timedelta

import pytest
from django.utils import timezone

from sessions import services, tasks
from sessions.models import EndReason, PlaySession, SessionStatus
from tests.sessions.play_fixtures import make_user

pytestmark = pytest.mark.django_db


def _session(world, player):
    session, _ = services.session_create(
        world_slug=world.slug, user=player, session_key="", client_ip="10.6.6.6"
    )
    return session


def test_the_grace_task_ends_a_session_whose_player_never_came_back(
    world, player, worker_slots, short_limits
):
    worker_slots.add(capacity=1)
    session = _session(world, player)
    PlaySession.objects.filter(pk=session.pk).update(
        disconnected_at=timezone.now() - timedelta(seconds=31)
    )
    assert tasks.end_abandoned_session.delay(str(session.id)).get() is True
    session.refresh_from_db()
    assert (session.status, session.end_reason) == (SessionStatus.ENDED, EndReason.ABANDONED)


def test_the_grace_task_leaves_a_reconnected_session_alone(world, player, worker_slots):
    worker_slots.add(capacity=1)
    session = _session(world, player)
    services.session_attached(session=session)
    assert tasks.end_abandoned_session.delay(str(session.id)).get() is False
    session.refresh_from_db()
    assert session.is_active


def test_the_reaper_task_frees_slots_for_the_queue(world, worker_slots, short_limits):
    worker_slots.add(capacity=1)
    stale = _session(world, make_user())
    waiting = _session(world, make_user())
    services.session_attached(session=waiting)
    PlaySession.objects.filter(pk=stale.pk).update(
        started_at=timezone.now() - timedelta(hours=1),
        last_input_at=timezone.now() - timedelta(hours=1),
    )
    assert tasks.reap_sessions.delay().get() == 1
    waiting.refresh_from_db()
    assert waiting.status == SessionStatus.STARTING
