"""Trending: recent plays and likes, decayed with time, recomputed by a periodic Celery task."""

import os
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.db import connection
from django.utils import timezone

from tests.worlds.factories import make_user, make_world
from worlds import services, trending
from worlds.models import Like, Play, World

ROOT = Path(__file__).resolve().parents[2]


def _play(world, *, ago: timedelta, times: int = 1):
    for _ in range(times):
        play = Play.objects.create(world=world)
        Play.objects.filter(pk=play.pk).update(created_at=timezone.now() - ago)


def test_recent_plays_outrank_old_ones(owner):
    fresh, stale = make_world(owner), make_world(owner)
    _play(fresh, ago=timedelta(hours=1), times=3)
    _play(stale, ago=timedelta(days=3), times=3)
    trending.trending_recompute()
    fresh.refresh_from_db()
    stale.refresh_from_db()
    assert fresh.trending_score > stale.trending_score > 0


def test_a_like_weighs_more_than_a_play(owner, outsider):
    played, liked = make_world(owner), make_world(owner)
    _play(played, ago=timedelta(0))
    services.world_like(world=liked, user=outsider)
    trending.trending_recompute()
    assert (
        World.objects.get(pk=liked.pk).trending_score
        > World.objects.get(pk=played.pk).trending_score
    )


def test_activity_older_than_the_window_no_longer_counts(owner):
    world = make_world(owner, trending_score=5.0)
    _play(world, ago=timedelta(days=30))
    trending.trending_recompute()
    world.refresh_from_db()
    assert world.trending_score == 0.0


def test_the_task_recomputes_in_eager_mode(owner):
    from worlds.tasks import recompute_trending

    world = make_world(owner)
    _play(world, ago=timedelta(0))
    recompute_trending.delay()
    world.refresh_from_db()
    assert world.trending_score > 0


def _worker_env(redis_url: str) -> dict:
    db = connection.settings_dict
    url = f"postgres://{db['USER']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"
    return os.environ | {
        "DATABASE_URL": url,
        "REDIS_URL": redis_url,
        "CELERY_TASK_ALWAYS_EAGER": "false",
        "PYTHONPATH": str(ROOT),
    }


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_real_celery_worker_on_redis_recomputes_trending(redis_url):
    """The periodic task, sent through the real Redis broker to a `celery worker` process."""
    from gallery.celery import app
    from worlds.tasks import recompute_trending

    world = make_world(make_user())
    _play(world, ago=timedelta(minutes=5), times=2)
    Like.objects.create(user=make_user(), world=world)
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "gallery", "worker", "--pool=solo",
         "--concurrency=1", "--loglevel=INFO", "--without-gossip", "--without-mingle",
         "--without-heartbeat"],
        cwd=ROOT, env=_worker_env(redis_url), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip
    eager = app.conf.task_always_eager
    app.conf.task_always_eager = False
    try:
        recompute_trending.apply_async()
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and worker.poll() is None:
            world.refresh_from_db()
            if world.trending_score > 0:
                break
            time.sleep(0.5)
    finally:
        app.conf.task_always_eager = eager
        worker.terminate()
        output = worker.communicate(timeout=30)[0].decode(errors="replace")
    assert world.trending_score > 0, output[-3000:]
    assert "worlds.tasks.recompute_trending" in output  # the worker ran it, not this process
