"""Writes for moderation: reports, actions and their effects, appeals.

Every decision, automatic or manual, writes one audit entry (`audit.audit_record`). What other
apps ask of moderation is in `policy`.
"""

from __future__ import annotations

import dataclasses
import hashlib
from datetime import timedelta

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, transaction
from django.db.models import QuerySet
from django.utils import timezone

from sessions import seats
from sessions import services as session_services
from sessions.models import EndReason, PlaySession, Recording
from worlds import ratelimit
from worlds.models import World, WorldStatus
from worlds.moderation.audit import Target, audit_record
from worlds.moderation.models import (
    ActionKind,
    Appeal,
    AppealStatus,
    ModerationAction,
    Report,
    ReportReason,
    ReportStatus,
    Suspension,
    TargetType,
)
from worlds.moderation.policy import (
    ensure_not_suspended,
    is_moderator,
    suspension_active,
    unlisted_by_moderation,
)
from worlds.moderation.selectors import (
    recording_by_key,
    session_by_key,
    target_keys,
    user_by_key,
    world_by_key,
    world_removal,
)

REPORT_RATE_WINDOW_S = 3600
MAX_SUSPENSION_DAYS = 36500  # a century; 0 (permanent) is the way to say longer


class ReportRateLimited(ratelimit.RateLimited):
    pass


def ensure_moderator(user) -> None:
    if not is_moderator(user):
        raise PermissionDenied("Only moderators can do this.")


# --- Targets --------------------------------------------------------------------------------


def _invalid(field: str, message: str) -> ValidationError:
    return ValidationError({field: [message]})


def target_resolve(*, target_type: str, target_id: str) -> Target:
    """A target from its type and id (world pk or slug, session UUID, user pk or username)."""
    target_id = str(target_id or "").strip()
    if target_type == TargetType.WORLD:
        world = _world_by_key(target_id)
        return Target(target_type, str(world.pk), world.title, world=world, user=world.creator)
    if target_type == TargetType.USER:
        user = _user_by_key(target_id)
        return Target(target_type, str(user.pk), user.username, user=user)
    if target_type == TargetType.SESSION:
        session = _session_by_key(target_id)
        label = f"session of {session.world.title}"
        return Target(target_type, str(session.pk), label, session.world, session.player, session)
    if target_type == TargetType.RECORDING:
        recording = recording_by_key(target_id)
        if recording is None:
            raise _invalid("target_id", "No recording with this id.")
        session = recording.session
        label = f"run of {recording.world.title}"
        return Target(
            target_type, str(recording.pk), label, recording.world, session.player, session
        )
    if target_type == TargetType.TEXT:
        # Text targets are named by their reports; an action on one reaches its context.
        report = Report.objects.filter(target_type=target_type, target_id=target_id).first()
        if report is None:
            raise _invalid("target_id", "No reported text has this id.")
        if report.session_id is not None:
            # Text typed in a live session is the player's: act on the player or the session,
            # never on the world the creator made.
            session = _session_by_key(str(report.session_id))
            return Target(
                target_type, target_id, report.text[:200], user=session.player, session=session
            )
        return Target(
            target_type,
            target_id,
            report.text[:200],
            world=report.world,
            user=report.target_user or (report.world.creator if report.world else None),
        )
    raise _invalid("target_type", "Choose world, session, recording, user or text.")


def _world_by_key(key: str, creator: AbstractBaseUser | None = None) -> World:
    """A world by slug or pk; with `creator`, one of theirs: anyone else's answers as an id
    nobody has, so their drafts and removed worlds cannot be told apart from unknown ids."""
    world = world_by_key(key)
    if world is None or (creator is not None and world.creator_id != creator.pk):
        raise _invalid("target_id", "No world with this id.")
    return world


def appealable_world(*, key: str, by: AbstractBaseUser) -> World:
    """The world `by` names to appeal, by slug or pk: only their own is found (a 403 for someone
    else's world, against a 400 for an unknown id, told a removed world existed)."""
    return _world_by_key(str(key or "").strip(), creator=by)


def _user_by_key(key: str) -> AbstractBaseUser:
    user = user_by_key(key)
    if user is None:
        raise _invalid("target_id", "No user with this id.")
    return user


def _session_by_key(key: str) -> PlaySession:
    session = session_by_key(key)
    if session is None:
        raise _invalid("target_id", "No session with this id.")
    return session


def text_target_id(*, text: str, field: str, world: World | None, session_id=None) -> str:
    context = f"session-{session_id}" if session_id else f"world-{world.pk}" if world else "free"
    digest = hashlib.sha256(text.strip().encode()).hexdigest()[:16]
    return f"{context}:{field}:{digest}"


# --- Reports --------------------------------------------------------------------------------


def _rate_limit(user: AbstractBaseUser) -> None:
    """At most MODERATION_REPORTS_PER_HOUR reports per user an hour."""
    limit = settings.MODERATION_REPORTS_PER_HOUR
    message = f"You have sent {limit} reports in the last hour. Please try again later."
    try:
        ratelimit.hit(
            f"reports:{user.pk}", limit=limit, window_s=REPORT_RATE_WINDOW_S, message=message
        )
    except ratelimit.RateLimited as exc:
        raise ReportRateLimited(str(exc)) from None


def report_create(
    *,
    reporter: AbstractBaseUser,
    target_type: str,
    reason: str,
    target_id: str = "",
    note: str = "",
    text: str = "",
    field: str = "",
    world_key: str = "",
    session_key: str = "",
    player_slot: int | None = None,
) -> Report:
    """A signed-in user's report. Text reports name the text (and where it was seen) instead of
    a target id; reports on a shared session (or text seen in one) may name a player by seat
    slot. Raises ValidationError (bad input, duplicate), UserSuspended, ReportRateLimited.
    """
    if reporter is None or not reporter.is_authenticated:
        raise PermissionDenied("Sign in to report.")
    ensure_not_suspended(reporter)
    if reason not in ReportReason.values:
        raise _invalid("reason", "Choose one of: " + ", ".join(ReportReason.values) + ".")
    note = (note or "").strip()
    if len(note) > 1000:
        raise _invalid("note", "Keep the note under 1000 characters.")
    target = _report_target(
        target_type=target_type,
        target_id=target_id,
        text=text,
        field=field,
        world_key=world_key,
        session_key=session_key,
    )
    player_name = ""
    if player_slot is not None:
        target, player_name = _report_player(target, player_slot)
    if target.user is not None and target.user.pk == reporter.pk and target_type == "user":
        raise _invalid("target_id", "You cannot report yourself.")
    if _open_reports(target).filter(reporter=reporter).exists():
        raise _invalid("target_id", "You already reported this; a moderator will look at it.")
    _rate_limit(reporter)
    try:
        with transaction.atomic():
            return Report.objects.create(
                reporter=reporter,
                target_type=target.type,
                target_id=target.id,
                world=target.world,
                target_user=target.user,
                session_id=getattr(target.session, "pk", None),
                player_slot=player_slot if player_name else None,
                player_name=player_name,
                field=field if target.type == TargetType.TEXT else "",
                text=(text or "").strip() if target.type == TargetType.TEXT else "",
                reason=reason,
                note=note,
            )
    except IntegrityError:  # a double submit that passed the check above at the same time
        raise _invalid(
            "target_id", "You already reported this; a moderator will look at it."
        ) from None


def _report_target(
    *, target_type: str, target_id: str, text: str, field: str, world_key: str, session_key: str
) -> Target:
    if target_type != TargetType.TEXT:
        target = target_resolve(target_type=target_type, target_id=target_id)
        if target.world is not None and not _visible_for_report(target.world):
            raise _invalid("target_id", "No world with this id.")
        if target.type == TargetType.RECORDING and not _public_recording(target.id):
            raise _invalid("target_id", "No recording with this id.")  # as for an unknown id
        return target
    text = (text or "").strip()
    if not text:
        raise _invalid("text", "Quote the text you are reporting.")
    if len(text) > 2000:
        raise _invalid("text", "Quote at most 2000 characters.")
    field = (field or "text").strip()[:40]
    world = _world_by_key(world_key) if world_key else None
    if world is not None and not _visible_for_report(world):
        raise _invalid("target_id", "No world with this id.")  # as for a slug nobody has
    session = _session_by_key(session_key) if session_key else None
    if session is not None:
        world = session.world
    target_id = text_target_id(
        text=text, field=field, world=world, session_id=getattr(session, "pk", None)
    )
    user = getattr(session, "player", None) if session else world.creator if world else None
    return Target(TargetType.TEXT, target_id, text[:200], world=world, user=user, session=session)


def _report_player(target: Target, slot: int) -> tuple[Target, str]:
    """The player in a shared session's seat becomes the person the report is about."""
    if target.session is None:
        raise _invalid("player", "Only a session's players can be named.")
    seat = target.session.seats.filter(slot=slot).order_by("-joined_at").first()
    if seat is None:
        raise _invalid("player", "Nobody played in that seat.")
    label = f"{seat.name} in {target.label}"[:200]
    return dataclasses.replace(target, user=seat.user, label=label), seat.name


def _visible_for_report(world: World) -> bool:
    return world.status != WorldStatus.DRAFT


# --- Actions --------------------------------------------------------------------------------

MODERATOR_ACTIONS = (
    ActionKind.DISMISS,
    ActionKind.UNLIST,
    ActionKind.REMOVE,
    ActionKind.RESTORE,
    ActionKind.WARN,
    ActionKind.SUSPEND,
    ActionKind.UNSUSPEND,
    ActionKind.END_SESSION,
    ActionKind.REMOVE_RECORDING,
    ActionKind.REJECT_APPEAL,
)


def action_take(
    *,
    moderator: AbstractBaseUser,
    kind: str,
    target_type: str,
    target_id: str,
    reason: str,
    duration_days: int | None = None,
) -> ModerationAction:
    """Apply one moderator decision to a target, close its open reports, write one audit entry.

    `duration_days` is for suspend: None or 0 means permanent.
    """
    ensure_moderator(moderator)
    reason = (reason or "").strip()
    if not reason:
        raise _invalid("reason", "Every action needs a reason.")
    if len(reason) > 1000:
        raise _invalid("reason", "Keep the reason under 1000 characters.")
    if kind not in MODERATOR_ACTIONS:
        raise _invalid("kind", "Unknown action.")
    if duration_days is not None and not 0 <= duration_days <= MAX_SUSPENSION_DAYS:
        # Past the cap, now + timedelta overflows (a 500): longer than that is permanent.
        raise _invalid(
            "duration_days",
            f"A suspension lasts 1 to {MAX_SUSPENSION_DAYS} days (0: permanent).",
        )
    target = target_resolve(target_type=target_type, target_id=target_id)
    apply = _EFFECTS[kind]
    with transaction.atomic():
        before, after = apply(target=target, moderator=moderator, reason=reason, days=duration_days)
        action = ModerationAction.objects.create(
            kind=kind,
            moderator=moderator,
            target_type=target.type,
            target_id=target.id,
            world=target.world,
            target_user=target.user,
            reason=reason,
        )
        _close_reports(target=target, action=action)
        audit_record(
            actor=moderator, action=kind, target=target, reason=reason, before=before, after=after
        )
    _after_commit(kind=kind, target=target, reason=reason)
    return action


def _open_reports(target: Target) -> QuerySet[Report]:
    """The target's open reports, whichever key each names it by: a world's report may hold
    its slug or its pk (a user's, the username or pk), and one left open under its other key
    stayed in the queue after every action."""
    keys = {target.id}
    if target.type == TargetType.WORLD:
        keys |= set(target_keys(world=target.world))
    elif target.type == TargetType.USER:
        keys |= set(target_keys(user=target.user))
    return Report.objects.filter(
        target_type=target.type, target_id__in=keys, status=ReportStatus.OPEN
    )


def _close_reports(*, target: Target, action: ModerationAction) -> None:
    status = ReportStatus.DISMISSED if action.kind == ActionKind.DISMISS else ReportStatus.RESOLVED
    _open_reports(target).update(status=status, closed_at=timezone.now(), closed_by_action=action)


def _require_world(target: Target) -> World:
    if target.world is None:
        raise _invalid("kind", "This action applies to a world.")
    return target.world


def _require_user(target: Target) -> AbstractBaseUser:
    if target.user is None:
        raise _invalid("kind", "This target has no user to act on (an anonymous player).")
    return target.user


def _set_world_status(target: Target, status: str) -> tuple[dict, dict]:
    # Row lock: the creator publishing and a moderator removing at the same moment must not
    # leave the world published after the removal was recorded.
    world = World.objects.select_for_update().get(pk=_require_world(target).pk)
    before = {"status": world.status}
    world.status = status
    if status in (WorldStatus.PUBLISHED, WorldStatus.UNLISTED) and world.published_at is None:
        world.published_at = timezone.now()
    world.save(update_fields=["status", "published_at", "updated_at"])
    target.world = world
    return before, {"status": status}


def _approved_status(world: World) -> str:
    """Where a held world goes once approved: unlisted if its creator asked for that."""
    held = world.status == WorldStatus.IN_REVIEW and world.held_unlisted
    return WorldStatus.UNLISTED if held else WorldStatus.PUBLISHED


def _effect_dismiss(*, target: Target, moderator, reason, days):
    before = {"open_reports": _open_reports(target).count()}
    after = {"open_reports": 0}
    world = target.world
    if target.type == TargetType.WORLD and world is not None:
        world = World.objects.select_for_update().get(pk=world.pk)
        if world.status == WorldStatus.IN_REVIEW:
            # Dismissing a screening hold: nothing wrong, so the world goes out as asked.
            before_status, after_status = _set_world_status(target, _approved_status(world))
            before |= before_status
            after |= after_status
    return before, after


def _effect_unlist(*, target: Target, moderator, reason, days):
    world = _require_world(target)
    if world.status in (WorldStatus.REMOVED, WorldStatus.DRAFT):
        raise _invalid("kind", f"A {world.get_status_display().lower()} world cannot be unlisted.")
    return _set_world_status(target, WorldStatus.UNLISTED)


def _effect_remove(*, target: Target, moderator, reason, days):
    world = _require_world(target)
    if world.status == WorldStatus.REMOVED:
        raise _invalid("kind", "This world is already removed.")
    return _set_world_status(target, WorldStatus.REMOVED)


def _effect_restore(*, target: Target, moderator, reason, days):
    world = _require_world(target)
    if world.status == WorldStatus.DRAFT and unlisted_by_moderation(world):
        # its creator took it down after a moderator unlisted it: lifting the unlisting lets
        # them publish it again, and leaves it a draft until they do
        return {"status": world.status, "unlisted": True}, {"status": world.status}
    if world.status not in (WorldStatus.REMOVED, WorldStatus.UNLISTED, WorldStatus.IN_REVIEW):
        raise _invalid("kind", "Only a removed, unlisted or held world can be restored.")
    before, after = _set_world_status(target, _approved_status(world))
    accepted = Appeal.objects.filter(world=world, status=AppealStatus.OPEN).update(
        status=AppealStatus.ACCEPTED, decided_at=timezone.now()
    )
    if accepted:
        after["appeal"] = AppealStatus.ACCEPTED
    return before, after


def _public_recording(recording_id: str) -> bool:
    return Recording.objects.filter(pk=recording_id, is_public=True, removed_at=None).exists()


def _effect_remove_recording(*, target: Target, moderator, reason, days):
    """A run off every page and private for good (its players cannot publish it again)."""
    if target.type != TargetType.RECORDING:
        raise _invalid("kind", "This action applies to a recording.")
    recording = Recording.objects.select_for_update().get(pk=target.id)
    if recording.removed_at is not None:
        raise _invalid("kind", "This recording is already removed.")
    before = {"public": recording.is_public, "removed": False}
    recording.is_public, recording.removed_at = False, timezone.now()
    recording.save(update_fields=["is_public", "removed_at"])
    return before, {"public": False, "removed": True}


def _effect_reject_appeal(*, target: Target, moderator, reason, days):
    world = _require_world(target)
    appeal = Appeal.objects.select_for_update().filter(world=world, status=AppealStatus.OPEN)
    appeal = appeal.first()
    if appeal is None:
        raise _invalid("kind", "This world has no open appeal.")
    appeal.status = AppealStatus.REJECTED
    appeal.decided_at = timezone.now()
    appeal.save(update_fields=["status", "decided_at"])
    return {"appeal": AppealStatus.OPEN}, {"appeal": AppealStatus.REJECTED}


def _effect_warn(*, target: Target, moderator, reason, days):
    user = _require_user(target)
    warnings = ModerationAction.objects.filter(kind=ActionKind.WARN, target_user=user).count()
    return {"warnings": warnings}, {"warnings": warnings + 1}


def _effect_suspend(*, target: Target, moderator, reason, days):
    user = _require_user(target)
    if user.pk == moderator.pk:
        raise _invalid("target_id", "You cannot suspend yourself.")
    current = suspension_active(user=user)
    ends_at = timezone.now() + timedelta(days=days) if days else None
    Suspension.objects.create(user=user, reason=reason, ends_at=ends_at, created_by=moderator)
    before = {"suspended_until": _until(current)}
    return before, {"suspended_until": "permanent" if ends_at is None else ends_at.isoformat()}


def _effect_unsuspend(*, target: Target, moderator, reason, days):
    user = _require_user(target)
    current = suspension_active(user=user)
    if current is None:
        raise _invalid("kind", "This user is not suspended.")
    Suspension.objects.active().filter(user=user).update(lifted_at=timezone.now())
    return {"suspended_until": _until(current)}, {"suspended_until": None}


def _effect_end_session(*, target: Target, moderator, reason, days):
    if target.session is None:
        raise _invalid("kind", "This action applies to a live session.")
    if not target.session.is_active:
        raise _invalid("kind", "This session has already ended.")
    return {"status": target.session.status}, {"status": "ended"}


def _until(suspension: Suspension | None):
    if suspension is None:
        return None
    return "permanent" if suspension.ends_at is None else suspension.ends_at.isoformat()


_EFFECTS = {
    ActionKind.DISMISS: _effect_dismiss,
    ActionKind.UNLIST: _effect_unlist,
    ActionKind.REMOVE: _effect_remove,
    ActionKind.REMOVE_RECORDING: _effect_remove_recording,
    ActionKind.RESTORE: _effect_restore,
    ActionKind.REJECT_APPEAL: _effect_reject_appeal,
    ActionKind.WARN: _effect_warn,
    ActionKind.SUSPEND: _effect_suspend,
    ActionKind.UNSUSPEND: _effect_unsuspend,
    ActionKind.END_SESSION: _effect_end_session,
}


def _after_commit(*, kind: str, target: Target, reason: str) -> None:
    """Effects outside the database (ending live sessions tells workers and players): run once
    the decision is committed, so a rolled-back action never ends anyone's session."""
    message = f"Ended by a moderator: {reason}"
    if kind == ActionKind.END_SESSION:
        session_services.session_end(
            session=target.session, reason=EndReason.MODERATOR, message=message
        )
    elif kind == ActionKind.REMOVE:
        session_services.session_end_for_world(
            world=target.world, reason=EndReason.MODERATOR, message=message
        )
    elif kind == ActionKind.SUSPEND:
        seats.session_end_for_player(user=target.user, reason=EndReason.MODERATOR, message=message)


# --- Appeals --------------------------------------------------------------------------------


def appeal_create(*, world: World, by: AbstractBaseUser, text: str) -> Appeal:
    """The creator's one appeal against the removal of their world; it goes back to the queue."""
    if by is None or not by.is_authenticated or world.creator_id != by.pk:
        raise PermissionDenied("Only the creator can appeal.")
    text = (text or "").strip()
    if not text:
        raise _invalid("text", "Say why the world should be restored.")
    if len(text) > 2000:
        raise _invalid("text", "Keep the appeal under 2000 characters.")
    removal = world_removal(world=world)
    if removal is None:
        raise _invalid("world", "Only a removed world can be appealed.")
    if removal.appeal is not None:
        raise _invalid("world", "You already appealed this removal.")
    target = Target(TargetType.WORLD, str(world.pk), world.title, world, by)
    try:
        with transaction.atomic():
            appeal = Appeal.objects.create(
                world=world, action=removal.action, appellant=by, text=text
            )
            audit_record(
                actor=by,
                action=ActionKind.APPEAL,
                target=target,
                reason=text,
                before={"appeal": None},
                after={"appeal": AppealStatus.OPEN},
            )
    except IntegrityError:  # two tabs appealing at once: the constraint keeps one
        raise _invalid("world", "You already appealed this removal.") from None
    return appeal
