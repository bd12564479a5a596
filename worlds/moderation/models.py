"""Moderation records: reports, actions, the append-only audit log, suspensions and appeals."""

from typing import Never

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone


class TargetType(models.TextChoices):
    WORLD = "world", "World"
    SESSION = "session", "Live session"
    RECORDING = "recording", "Recording"
    USER = "user", "User"
    TEXT = "text", "Text"


class ReportReason(models.TextChoices):
    SEXUAL = "sexual", "Sexual content"
    VIOLENCE = "violence", "Violence or gore"
    HATE = "hate", "Hate or harassment"
    SELF_HARM = "self_harm", "Self-harm"
    SPAM = "spam", "Spam"
    WEAPONS = "weapons", "Weapons or explosives instructions"
    EXTREMISM = "extremism", "Violent extremism"
    OTHER = "other", "Other"


class ReportStatus(models.TextChoices):
    OPEN = "open", "Open"
    RESOLVED = "resolved", "Resolved"  # an action was taken on the target
    DISMISSED = "dismissed", "Dismissed"


class Report(models.Model):
    """One user's (or the screening service's) flag on a target. Closed by a moderator action."""

    # Null reporter: raised by automatic screening (a held world goes to the queue this way).
    reporter = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="moderation_reports",
    )
    target_type = models.CharField(max_length=16, choices=TargetType.choices)
    # World pk, session UUID, user pk, or for text "<context>:<field>:<digest>".
    target_id = models.CharField(max_length=200)
    # Context shown in the queue and used by listings; set whatever applies to the target.
    # SET_NULL: a creator deleting the world must not wipe its reports and actions (the
    # warnings count against them); target_id still names it.
    world = models.ForeignKey(
        "worlds.World", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    target_user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="reports_against",
    )
    session_id = models.UUIDField(null=True, blank=True)
    # A shared session's player the report names (their seat slot and name as it was).
    player_slot = models.PositiveSmallIntegerField(null=True, blank=True)
    player_name = models.CharField(max_length=40, blank=True)
    field = models.CharField(max_length=40, blank=True)  # for text: title, description, event...
    text = models.TextField(max_length=2000, blank=True)  # the reported text, as it was
    reason = models.CharField(max_length=16, choices=ReportReason.choices)
    note = models.TextField(max_length=1000, blank=True)
    status = models.CharField(
        max_length=16, choices=ReportStatus.choices, default=ReportStatus.OPEN, db_index=True
    )
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    closed_at = models.DateTimeField(null=True, blank=True)
    closed_by_action = models.ForeignKey(
        "ModerationAction", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["-created_at"]
        permissions = [("moderate", "Can moderate reports, worlds, users and live sessions")]
        indexes = [models.Index(fields=["status", "target_type", "target_id"])]
        constraints = [
            # One open report per reporter per target (the database settles a double submit).
            models.UniqueConstraint(
                fields=["reporter", "target_type", "target_id"],
                condition=Q(status="open"),
                name="one_open_report_per_reporter_target",
            )
        ]

    def __str__(self) -> str:
        return f"{self.get_reason_display()} report on {self.target_type} {self.target_id}"


class ActionKind(models.TextChoices):
    DISMISS = "dismiss", "Dismiss reports"
    UNLIST = "unlist", "Unlist world"
    REMOVE = "remove", "Remove world"
    RESTORE = "restore", "Restore world"
    WARN = "warn", "Warn creator"
    SUSPEND = "suspend", "Suspend user"
    UNSUSPEND = "unsuspend", "Lift suspension"
    END_SESSION = "end_session", "End live session"
    REMOVE_RECORDING = "remove_recording", "Remove recording"
    REMOVE_PLAYER = "remove_player", "Remove a player from a shared session"
    HOLD = "hold", "Hold for review"  # automatic screening
    REFUSE = "refuse", "Refuse text"  # automatic screening
    APPEAL = "appeal", "Appeal"
    REJECT_APPEAL = "reject_appeal", "Reject appeal"


class ModerationAction(models.Model):
    """A decision on a target. Its effect on the target is applied by services.action_take."""

    kind = models.CharField(max_length=16, choices=ActionKind.choices)
    moderator = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="moderation_actions",
    )  # null: automatic
    target_type = models.CharField(max_length=16, choices=TargetType.choices)
    target_id = models.CharField(max_length=200)
    # SET_NULL: a creator deleting the world must not wipe its reports and actions (the
    # warnings count against them); target_id still names it.
    world = models.ForeignKey(
        "worlds.World", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    target_user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="moderation_actions_against",
    )
    reason = models.TextField(max_length=1000)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.kind} {self.target_type} {self.target_id}"


class AuditQuerySet(models.QuerySet):
    def update(self, **kwargs) -> Never:
        raise PermissionError("The audit log is append-only.")

    def delete(self) -> Never:
        raise PermissionError("The audit log is append-only.")


class AuditEntry(models.Model):
    """Who did what to which target, why, and the target before and after. Append-only: the app
    can add entries but never change or delete one."""

    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    # Kept as text so the trail survives the actor's account; "screening" for automatic entries.
    actor_name = models.CharField(max_length=150)
    action = models.CharField(max_length=32, db_index=True)
    target_type = models.CharField(max_length=16, choices=TargetType.choices, db_index=True)
    target_id = models.CharField(max_length=200, db_index=True)
    target_label = models.CharField(max_length=200, blank=True)
    reason = models.TextField(max_length=1000, blank=True)
    before = models.JSONField(default=dict, blank=True)
    after = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    objects = AuditQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name_plural = "audit entries"

    def __str__(self) -> str:
        return f"{self.actor_name} {self.action} {self.target_type} {self.target_id}"

    def save(self, *args, **kwargs) -> None:
        if not self._state.adding:
            raise PermissionError("The audit log is append-only.")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs) -> Never:
        raise PermissionError("The audit log is append-only.")


class SuspensionQuerySet(models.QuerySet):
    def active(self, *, now=None) -> "SuspensionQuerySet":
        now = now or timezone.now()
        return self.filter(lifted_at=None).filter(Q(ends_at=None) | Q(ends_at__gt=now))


class Suspension(models.Model):
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="suspensions"
    )
    reason = models.TextField(max_length=1000)
    starts_at = models.DateTimeField(default=timezone.now)
    ends_at = models.DateTimeField(null=True, blank=True)  # null: permanent
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    lifted_at = models.DateTimeField(null=True, blank=True)

    objects = SuspensionQuerySet.as_manager()

    class Meta:
        ordering = ["-starts_at"]

    def __str__(self) -> str:
        return f"suspension of {self.user_id} until {self.ends_at or 'forever'}"

    @property
    def is_permanent(self) -> bool:
        return self.ends_at is None

    def describe(self) -> str:
        """What the suspended user is told."""
        until = "permanently" if self.is_permanent else f"until {self.ends_at:%Y-%m-%d %H:%M} UTC"
        return f"Your account is suspended {until}. Reason: {self.reason}"


class AppealStatus(models.TextChoices):
    OPEN = "open", "Open"
    ACCEPTED = "accepted", "Accepted"
    REJECTED = "rejected", "Rejected"


class Appeal(models.Model):
    """A creator's one appeal against the removal of their world."""

    world = models.ForeignKey("worlds.World", on_delete=models.CASCADE, related_name="appeals")
    action = models.ForeignKey(ModerationAction, on_delete=models.CASCADE, related_name="appeals")
    appellant = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+"
    )
    text = models.TextField(max_length=2000)
    status = models.CharField(
        max_length=16, choices=AppealStatus.choices, default=AppealStatus.OPEN, db_index=True
    )
    created_at = models.DateTimeField(auto_now_add=True)
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            # Once per removal: a second appeal on the same decision is refused.
            models.UniqueConstraint(fields=["action"], name="one_appeal_per_removal")
        ]

    def __str__(self) -> str:
        return f"appeal on {self.world_id} ({self.status})"
