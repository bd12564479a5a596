"""Live play sessions: one player's run of a pinned world version on an inference worker."""

import uuid

from django.conf import settings
from django.db import models
from django.urls import reverse


class SessionStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    STARTING = "starting", "Starting"
    LIVE = "live", "Live"
    RESUMING = "resuming", "Resuming"
    ENDED = "ended", "Ended"
    FAILED = "failed", "Failed"


ACTIVE_STATUSES = (
    SessionStatus.QUEUED,
    SessionStatus.STARTING,
    SessionStatus.LIVE,
    SessionStatus.RESUMING,
)


class EndReason(models.TextChoices):
    PLAYER = "player", "Ended by the player"
    IDLE = "idle", "No input for too long"
    MAX_LENGTH = "max_length", "Reached the maximum length"
    ABANDONED = "abandoned", "The player left"
    SWITCHED = "switched", "The player opened another world"
    MODERATOR = "moderator", "Ended by a moderator"
    WORKER = "worker", "Ended by the inference worker"
    FAILED = "failed", "The world could not be generated"


class PlaySession(models.Model):
    """A player (an account, or an anonymous browser session) playing one world version."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    world = models.ForeignKey("worlds.World", on_delete=models.CASCADE, related_name="sessions")
    # Pinned at creation: republishing the world never changes a running session.
    world_version = models.ForeignKey(
        "worlds.WorldVersion", on_delete=models.PROTECT, related_name="sessions"
    )
    player = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="play_sessions",
    )
    # Anonymous players are known by their Django session key (the WebSocket carries the cookie).
    anon_key = models.CharField(max_length=40, blank=True, db_index=True)
    client_ip = models.GenericIPAddressField(null=True, blank=True)
    status = models.CharField(
        max_length=16,
        choices=SessionStatus.choices,
        default=SessionStatus.QUEUED,
        db_index=True,
    )
    worker_name = models.CharField(max_length=100, blank=True)
    is_public = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    # An EndReason code, or a moderator's own words (shown to the player).
    end_reason = models.CharField(max_length=200, blank=True)
    frames_generated = models.PositiveBigIntegerField(default=0)
    peak_viewers = models.PositiveIntegerField(default=0)
    last_input_at = models.DateTimeField(null=True, blank=True)
    # Set while no player socket is attached; cleared on reconnect (the grace period runs from it).
    disconnected_at = models.DateTimeField(null=True, blank=True)
    # The channel of the player's current socket: a late close of an older socket (the server
    # notices a dead connection after the browser has already reconnected) must not detach it.
    player_channel = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["status", "created_at"])]

    def __str__(self) -> str:
        return f"{self.world_id} session {self.id} ({self.status})"

    def get_absolute_url(self) -> str:
        return reverse("play-watch", kwargs={"session_id": self.id})

    @property
    def is_active(self) -> bool:
        return self.status in ACTIVE_STATUSES

    def is_played_by(self, *, user, session_key: str | None) -> bool:
        """The account that created it, or for anonymous sessions the same browser session."""
        if self.player_id is not None:
            return user is not None and user.is_authenticated and user.pk == self.player_id
        return bool(session_key) and session_key == self.anon_key
