"""What the catalog, the accounts and play ask of moderation, and nothing else.

The one door into moderation for code outside it: is this user a moderator or suspended, may
this text be shown or applied, put a held world in the queue, remember a live prompt. It holds
the reads that play and the catalog need itself and imports neither the sessions app nor
moderation's selectors or services (which read and end sessions), so no circle runs through it.
"""

from __future__ import annotations

from collections.abc import Mapping

from django.conf import settings
from django.core.cache import cache
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone

from worlds.models import World
from worlds.moderation import screening
from worlds.moderation.audit import Target, audit_record
from worlds.moderation.models import (
    ActionKind,
    ModerationAction,
    Report,
    ReportReason,
    ReportStatus,
    Suspension,
    TargetType,
)

# A world's text that screening reads, in the order a form shows it (errors name the field).
WORLD_TEXT_FIELDS = (
    "title",
    "description",
    "prompt",
    "story_opening",
    "character_name",
    "character_persona",
    "character_greeting",
    "character_examples",
)
RECENT_PROMPTS = 20
MODERATE_PERMISSION = "moderation.moderate"


# --- Who may act ----------------------------------------------------------------------------


def is_moderator(user) -> bool:
    """Moderators remove players, oversee private sessions and work the queue."""
    return bool(user is not None and user.is_authenticated and user.has_perm(MODERATE_PERMISSION))


def unlisted_by_moderation(world: World) -> bool:
    """Whether a moderator's unlisting of the world still stands (no restore or removal came
    after it): its creator may not list it again."""
    last = (
        ModerationAction.objects.filter(
            world=world,
            kind__in=(ActionKind.UNLIST, ActionKind.RESTORE, ActionKind.REMOVE),
        )
        .order_by("-created_at", "-pk")
        .values_list("kind", flat=True)
        .first()
    )
    return last == ActionKind.UNLIST


def suspension_active(*, user) -> Suspension | None:
    """The suspension that blocks this user now (the longest one if several), or None."""
    if user is None or not getattr(user, "is_authenticated", False):
        return None
    active = list(Suspension.objects.active().filter(user=user))
    if not active:
        return None
    return max(active, key=lambda s: (s.ends_at is None, s.ends_at or s.starts_at))


def prompt_cache_key(session_id) -> str:
    return f"moderation:prompts:{session_id}"


class UserSuspended(PermissionDenied):
    """The account is suspended; the message says until when and why."""

    def __init__(self, suspension: Suspension):
        self.suspension = suspension
        super().__init__(suspension.describe())


def ensure_not_suspended(user) -> None:
    """The one hook publishing, playing and reporting call first. Anonymous users pass."""
    suspension = suspension_active(user=user)
    if suspension is not None:
        raise UserSuspended(suspension)


# --- The catalog and accounts ---------------------------------------------------------------


def world_text_verdict(fields: Mapping[str, str | None]) -> str:
    """Screen a world's text before it is stored: raise ValidationError on the first blocked
    field; return "hold" when a moderator must see it before it goes public, else "allow"."""
    verdict = "allow"
    for name in WORLD_TEXT_FIELDS:
        text = (fields.get(name) or "").strip()
        if not text:
            continue
        result = screening.screen_text(text, field=name)
        if result.blocked:
            raise ValidationError({name: [result.message]})
        if result.held:
            verdict = "hold"
    return verdict


def world_held_by_screening(*, world: World, result: screening.Screening | None = None) -> Report:
    """A world that screening put in review goes to the queue as an automatic report, with one
    audit entry. Call it after the world was saved as in review; calling again changes nothing.
    """
    if result is None or result.allowed:
        result = screening.screen_fields({name: getattr(world, name) for name in WORLD_TEXT_FIELDS})
    category = result.category or ReportReason.OTHER
    with transaction.atomic():
        report, created = Report.objects.get_or_create(
            reporter=None,
            target_type=TargetType.WORLD,
            target_id=str(world.pk),
            status=ReportStatus.OPEN,
            defaults={
                "world": world,
                "target_user": world.creator,
                "reason": category,
                "note": f"Automatic screening held the {result.field or 'text'}.",
                "field": result.field,
            },
        )
        if created:
            audit_record(
                actor=None,
                action=ActionKind.HOLD,
                target=Target(TargetType.WORLD, str(world.pk), world.title, world, world.creator),
                reason=result.message or "Held for review by automatic screening.",
                before={"status": "publish requested"},
                after={"status": world.status, "category": category},
            )
    return report


def public_text_refusal(text: str, *, field: str) -> str | None:
    """None when an account's public text (a name, a bio) may be shown; otherwise why not.
    A public name shows everywhere at once, so a hold refuses it as a block does."""
    if not (text or "").strip():
        return None
    result = screening.screen_text(text, field=field)
    return None if result.allowed else result.message


# --- Play -----------------------------------------------------------------------------------


def screen_play_text(text: str, *, field: str) -> str | None:
    """None when live text (a world event, a line to the character) may reach the world;
    otherwise the reason the player sees. No one can review it in time: a hold refuses it."""
    result = screening.screen_text(text, field=field)
    if result.verdict == "allow":
        return None
    return result.message or "This event can't be used."


def prompt_record(*, session_id, text: str, status: str) -> None:
    """Remember a session's latest in-world prompts (applied or rejected) for the live page.
    Kept in the shared cache for the session's lifetime: oversight, not an archive."""
    key = prompt_cache_key(session_id)
    recent = cache.get(key) or []
    recent.insert(0, {"text": text[:300], "status": status, "at": timezone.now().isoformat()})
    timeout = settings.SESSION_MAX_SECONDS + 3600
    cache.set(key, recent[:RECENT_PROMPTS], timeout=timeout)


def player_removal_record(*, moderator, session, name: str, reason: str) -> None:
    """A moderator removed a player from a shared session: it goes in the audit log."""
    audit_record(
        actor=moderator,
        action=ActionKind.REMOVE_PLAYER,
        target=Target(TargetType.SESSION, str(session.pk), f"{name} in {session.world_id}"),
        reason=reason,
        before={"player": name},
        after={"player": None},
    )
