"""Trending: every world rescored from its recent plays and likes (a Celery beat task)."""

import math
from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from worlds.models import Like, Play, World

# Trending: a play counts 1 and a like 3, each halving in weight every TRENDING_HALF_LIFE.
TRENDING_WINDOW = timedelta(days=7)
TRENDING_HALF_LIFE = timedelta(hours=24)
TRENDING_LIKE_WEIGHT = 3.0


def _decay(age: timedelta) -> float:
    return math.pow(0.5, age / TRENDING_HALF_LIFE)


def trending_recompute(*, now: datetime | None = None) -> int:
    """Rescore every world from recent plays and likes; returns how many scores changed."""
    now = now or timezone.now()
    since = now - TRENDING_WINDOW
    scores: dict[int, float] = {}
    for world_id, at in Play.objects.filter(created_at__gte=since).values_list(
        "world_id", "created_at"
    ):
        scores[world_id] = scores.get(world_id, 0.0) + _decay(now - at)
    for world_id, at in Like.objects.filter(created_at__gte=since).values_list(
        "world_id", "created_at"
    ):
        scores[world_id] = scores.get(world_id, 0.0) + TRENDING_LIKE_WEIGHT * _decay(now - at)
    changed = []
    with transaction.atomic():
        stale = World.objects.exclude(pk__in=scores).exclude(trending_score=0.0)
        cleared = stale.update(trending_score=0.0)
        for world in World.objects.filter(pk__in=scores).only("id", "trending_score"):
            score = round(scores[world.pk], 6)
            if world.trending_score != score:
                world.trending_score = score
                changed.append(world)
        World.objects.bulk_update(changed, ["trending_score"], batch_size=500)
    return cleared + len(changed)
