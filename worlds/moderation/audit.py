"""The audit log writer: every moderation decision, automatic or manual, is written here once."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser

from worlds.models import World
from worlds.moderation.models import AuditEntry

SCREENING_ACTOR = "screening"


@dataclass
class Target:
    """What a report, an action or an audit entry is about."""

    type: str
    id: str
    label: str
    world: World | None = None
    user: AbstractBaseUser | None = None  # the person responsible: the creator, the player
    session: object | None = None  # sessions.models.PlaySession


def audit_record(
    *,
    actor: AbstractBaseUser | None,
    action: str,
    target: Target,
    reason: str,
    before: dict,
    after: dict,
) -> AuditEntry:
    """One audit entry; `actor` None means automatic screening decided."""
    return AuditEntry.objects.create(
        actor=actor,
        actor_name=actor.get_username() if actor is not None else SCREENING_ACTOR,
        action=action,
        target_type=target.type,
        target_id=target.id,
        target_label=(target.label or "")[:200],
        reason=reason,
        before=before,
        after=after,
    )
