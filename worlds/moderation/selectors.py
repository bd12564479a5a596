"""Reads for moderation: who moderates, who is suspended, the queue, the audit log, live play."""

from __future__ import annotations

import dataclasses
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.core.cache import cache
from django.db.models import Count, Max, Prefetch, Q, QuerySet
from django.utils import timezone

from sessions.models import ACTIVE_STATUSES, PlaySession, Recording, Seat
from worlds.models import World
from worlds.moderation.models import (
    ActionKind,
    Appeal,
    AppealStatus,
    AuditEntry,
    ModerationAction,
    Report,
    ReportStatus,
    Suspension,
    TargetType,
)
from worlds.moderation.policy import prompt_cache_key, suspension_active

# --- Targets by key ---------------------------------------------------------------------------
# Reports, actions and the API name a world by slug or pk, a user by username or pk, a session
# by its UUID. Any other key names nothing: None, never an error (a report holding one used
# to make the whole queue answer 500).


def _as_pk(key: str) -> int | None:
    """The integer primary key a target id names, or None for a slug or username.

    ASCII digits only: "²".isdigit() is true but int("²") raises, which answered 500.
    """
    return int(key) if key.isascii() and key.isdigit() else None


def world_by_key(key: str) -> World | None:
    worlds = World.objects.select_related("creator")
    world = worlds.filter(slug=key).first()
    if world is None and (pk := _as_pk(key)) is not None:
        world = worlds.filter(pk=pk).first()
    return world


def user_by_key(key: str) -> AbstractBaseUser | None:
    users = get_user_model().objects
    user = users.filter(username=key).first()
    if user is None and (pk := _as_pk(key)) is not None:
        user = users.filter(pk=pk).first()
    return user


def session_by_key(key: str) -> PlaySession | None:
    try:
        session_id = uuid.UUID(str(key))
    except ValueError:
        return None
    return PlaySession.objects.select_related("world", "player").filter(pk=session_id).first()


def recording_by_key(key: str) -> Recording | None:
    try:
        recording_id = uuid.UUID(str(key))
    except ValueError:
        return None
    return (
        Recording.objects.select_related("world", "session__player").filter(pk=recording_id).first()
    )


def target_keys(*, world: World | None = None, user: AbstractBaseUser | None = None) -> list[str]:
    """Every key a report may name this world or user by (pk and slug, pk and username)."""
    if world is not None:
        return [str(world.pk), world.slug]
    return [str(user.pk), user.get_username()] if user is not None else []


@dataclass
class QueueItem:
    """Everything a moderator needs to decide on one target."""

    target_type: str
    target_id: str
    report_count: int
    latest_at: datetime
    reports: list[Report]
    world: World | None = None
    target_user: AbstractBaseUser | None = None
    session: PlaySession | None = None
    text: str = ""
    field: str = ""
    actions: list[ModerationAction] = dataclasses.field(default_factory=list)
    appeal: Appeal | None = None

    @property
    def key(self) -> str:
        return f"{self.target_type}:{self.target_id}"

    @property
    def players(self) -> list[str]:
        """The shared session's players these reports name (by their seat's name)."""
        return sorted({r.player_name for r in self.reports if r.player_name})

    @property
    def reasons(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for report in self.reports:
            label = report.get_reason_display()
            counts[label] = counts.get(label, 0) + 1
        return counts


def queue_items(*, limit: int = 50) -> list[QueueItem]:
    """Open reports grouped by target (most-reported, then most recent first), then targets
    with an open appeal. A target that has both shows once, with its appeal."""
    groups = (
        Report.objects.filter(status=ReportStatus.OPEN)
        .values("target_type", "target_id")
        .annotate(n=Count("id"), latest=Max("created_at"))
        .order_by("-n", "-latest")[:limit]
    )
    items = [
        QueueItem(g["target_type"], g["target_id"], g["n"], g["latest"], reports=[]) for g in groups
    ]
    by_key = {item.key: item for item in items}
    appeals = Appeal.objects.filter(status=AppealStatus.OPEN).select_related("world", "action")
    for appeal in appeals.order_by("created_at")[:limit]:
        key = f"{TargetType.WORLD}:{appeal.world_id}"
        if key not in by_key:
            item = QueueItem(TargetType.WORLD, str(appeal.world_id), 0, appeal.created_at, [])
            items.append(item)
            by_key[key] = item
        by_key[key].appeal = appeal
    _fill_context(items)
    return items


def _fill_context(items: list[QueueItem]) -> None:
    if not items:
        return
    match = Q(pk__in=[])
    for item in items:
        match |= Q(target_type=item.target_type, target_id=item.target_id)
    reports = Report.objects.filter(match, status=ReportStatus.OPEN).select_related(
        "reporter", "world", "world__creator", "target_user"
    )
    actions = ModerationAction.objects.filter(match).select_related("moderator")
    by_key = {item.key: item for item in items}
    for report in reports.order_by("-created_at"):
        by_key[f"{report.target_type}:{report.target_id}"].reports.append(report)
    for action in actions.order_by("-created_at")[:500]:
        by_key[f"{action.target_type}:{action.target_id}"].actions.append(action)
    for item in items:
        _fill_target(item)


def _fill_target(item: QueueItem) -> None:
    first = item.reports[0] if item.reports else None
    if item.target_type == TargetType.WORLD:
        item.world = world_by_key(item.target_id)
    elif item.target_type == TargetType.USER:
        item.target_user = user_by_key(item.target_id)
    elif item.target_type == TargetType.SESSION:
        item.session = session_by_key(item.target_id)
        item.world = item.session.world if item.session else None
        named = next((r.target_user for r in item.reports if r.player_name and r.target_user), None)
        # A report naming a shared session's player is about them, not whoever started it.
        item.target_user = named or (item.session.player if item.session else None)
    if first is not None:
        item.world = item.world or first.world
        item.target_user = item.target_user or first.target_user
        item.text, item.field = first.text, first.field
    if item.world is not None and item.target_user is None:
        item.target_user = item.world.creator


def audit_list(
    *,
    actor: str | None = None,
    action: str | None = None,
    target_type: str | None = None,
    target_id: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
) -> QuerySet[AuditEntry]:
    qs = AuditEntry.objects.select_related("actor")
    if actor:
        qs = qs.filter(actor_name__iexact=actor)
    if action:
        qs = qs.filter(action=action)
    if target_type:
        qs = qs.filter(target_type=target_type)
    if target_id:
        qs = qs.filter(target_id=target_id)
    if since:
        qs = qs.filter(created_at__gte=since)
    if until:
        qs = qs.filter(created_at__lt=until)
    return qs.order_by("-created_at", "-id")


@dataclass
class Removal:
    """What the creator of a removed world is shown."""

    action: ModerationAction
    appeal: Appeal | None

    @property
    def can_appeal(self) -> bool:
        return self.appeal is None


def world_removal(*, world: World) -> Removal | None:
    if not world.is_removed:
        return None
    action = (
        ModerationAction.objects.filter(
            kind=ActionKind.REMOVE, target_type=TargetType.WORLD, target_id=str(world.pk)
        )
        .order_by("-created_at")
        .first()
    )
    if action is None:
        return None
    return Removal(action=action, appeal=Appeal.objects.filter(action=action).first())


def warnings_for(*, user) -> QuerySet[ModerationAction]:
    return ModerationAction.objects.filter(kind=ActionKind.WARN, target_user=user)


WARNING_SHOWN_FOR = timedelta(days=14)


def recent_warnings(*, user) -> list[ModerationAction]:
    """Warnings the user is still shown (the last two weeks), newest first."""
    since = timezone.now() - WARNING_SHOWN_FOR
    return list(warnings_for(user=user).filter(created_at__gte=since).order_by("-created_at")[:3])


# A signed-in person's notices are read on every page they open: kept until one of theirs is
# saved (`notices_changed`), and at most this long (a suspension's end passes by itself).
NOTICES_SECONDS = 60


def _notices_key(user_id: int, joined: datetime) -> str:
    # the join time keeps a test database's reused ids from meeting an old run's entries
    return f"moderation:notices:{user_id}:{joined.timestamp():.6f}"


def viewer_notices(*, user) -> dict:
    """The suspension and recent warnings a signed-in person's pages show."""
    key = _notices_key(user.pk, user.date_joined)
    notices = cache.get(key)
    if notices is None:
        notices = {
            "suspension": suspension_active(user=user),
            "warnings": recent_warnings(user=user),
        }
        cache.set(key, notices, NOTICES_SECONDS)
    return notices


def notices_changed(*, user_id: int | None) -> None:
    """A suspension or warning of this user was saved or deleted: their pages read it again."""
    user = get_user_model().objects.filter(pk=user_id).only("date_joined").first()
    if user is not None:
        cache.delete(_notices_key(user.pk, user.date_joined))


def suspension_changed(instance: Suspension, **_signal_kwargs) -> None:
    notices_changed(user_id=instance.user_id)


def action_changed(instance: ModerationAction, **_signal_kwargs) -> None:
    notices_changed(user_id=instance.target_user_id)


def live_sessions() -> list[PlaySession]:
    """Every running session, public and private, newest first, with world, creator and the
    players seated now (``active_seats``)."""
    seated = Prefetch(
        "seats",
        queryset=Seat.objects.filter(left_at=None).select_related("user").order_by("slot"),
        to_attr="active_seats",
    )
    return list(
        PlaySession.objects.filter(status__in=ACTIVE_STATUSES)
        .select_related("world", "world__creator", "player")
        .prefetch_related(seated)
        .order_by("-created_at")[:200]
    )


def recent_prompts(*, session_id, limit: int = 10) -> list[dict]:
    """The latest in-world prompts of a session, newest first (see policy.prompt_record)."""
    return list(cache.get(prompt_cache_key(session_id)) or [])[:limit]
