"""Celery tasks for the catalog: thin shells over trending.py and cover_render.py."""

from celery import shared_task

from worlds import cover_render, trending


@shared_task(name="worlds.tasks.recompute_trending", ignore_result=True)
def recompute_trending() -> int:
    """Periodic (celery beat, see CELERY_BEAT_SCHEDULE): rescore trending from recent activity."""
    return trending.trending_recompute()


@shared_task(name="worlds.tasks.render_cover", ignore_result=True)
def render_cover(world_id: int) -> bool:
    """Render a cover frame with the world model for a world without an uploaded cover."""
    return cover_render.world_render_cover(world_id=world_id)
