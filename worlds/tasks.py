"""Celery tasks for the catalog: thin shells over worlds.services."""

from celery import shared_task

from worlds import services


@shared_task(name="worlds.tasks.recompute_trending", ignore_result=True)
def recompute_trending() -> int:
    """Periodic (celery beat, see CELERY_BEAT_SCHEDULE): rescore trending from recent activity."""
    return services.trending_recompute()


@shared_task(name="worlds.tasks.render_cover", ignore_result=True)
def render_cover(world_id: int) -> bool:
    """Render a cover frame with the world model for a world without an uploaded cover."""
    return services.world_render_cover(world_id=world_id)
