"""Arranging moderation tests: rows a test starts from (behaviour goes through the services)."""

from sessions.models import PlaySession, SessionStatus
from worlds.moderation import services
from worlds.moderation.models import Report


def make_report(*, reporter, world, reason: str = "spam", note: str = "") -> Report:
    return services.report_create(
        reporter=reporter, target_type="world", target_id=world.slug, reason=reason, note=note
    )


def make_session(*, world, player=None, status=SessionStatus.LIVE, is_public=True):
    return PlaySession.objects.create(
        world=world,
        world_version=world.current_version,
        player=player,
        anon_key="" if player else "anon-key",
        status=status,
        is_public=is_public,
    )
