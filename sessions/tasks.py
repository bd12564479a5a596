"""Celery tasks for live play: thin shells over the services."""

from celery import shared_task

from sessions import services


@shared_task
def end_abandoned_session(session_id: str) -> bool:
    """Runs once the reconnect grace has passed since the player's socket closed."""
    return services.session_end_if_abandoned(session_id=session_id)


@shared_task
def reap_sessions() -> int:
    """Periodic safety net: idle, too long, or abandoned sessions whose timers were lost."""
    return len(services.sessions_reap())
