"""Celery tasks for live play: thin shells over the services."""

from celery import shared_task

from sessions import services


@shared_task
def reap_sessions() -> int:
    """Periodic: idle, too long, or abandoned sessions (a grace timer dies with its web process)."""
    return len(services.sessions_reap())
