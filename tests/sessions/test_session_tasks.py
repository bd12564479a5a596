"""Celery tasks of live play: the periodic reaper, a thin shell over the services."""

from datetime import timedelta

import pytest
from django.utils import timezone

from sessions import seats, tasks
from sessions.models import PlaySession, Seat, SessionStatus
from tests.sessions.play_fixtures import make_user

pytestmark = pytest.mark.django_db


def _session(world, player):
    session, _ = seats.session_create(
        world_slug=world.slug, user=player, session_key="", client_ip="10.6.6.6"
    )
    return session


def test_the_reaper_task_frees_slots_for_the_queue(world, worker_slots, short_limits):
    worker_slots.add(capacity=1)
    stale = _session(world, make_user())
    waiting = _session(world, make_user())
    seats.seat_attached(seat=waiting.seats.get(slot=0), channel="")
    PlaySession.objects.filter(pk=stale.pk).update(
        started_at=timezone.now() - timedelta(hours=1),
        last_input_at=timezone.now() - timedelta(hours=1),
    )
    Seat.objects.filter(session=stale).update(joined_at=timezone.now() - timedelta(hours=1))
    assert tasks.reap_sessions.delay().get() == 1
    waiting.refresh_from_db()
    assert waiting.status == SessionStatus.STARTING
