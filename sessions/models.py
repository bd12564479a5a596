"""Live play sessions: a pinned world version running on an inference worker, and its seats
(the players in it: one, or several in a shared world)."""

import secrets
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
    EMPTY = "empty", "Every player left"
    MODERATOR = "moderator", "Ended by a moderator"
    WORKER = "worker", "Ended by the inference worker"
    FAILED = "failed", "The world could not be generated"


def new_invite_token() -> str:
    return secrets.token_urlsafe(18)


class PlaySession(models.Model):
    """One world version running live. ``player``/``anon_key`` is its creator; everyone playing
    it (the creator too) has a ``Seat``. A shared session seats up to ``max_players``."""

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
    is_shared = models.BooleanField(default=False)
    max_players = models.PositiveSmallIntegerField(default=1)
    # Private shared sessions are joined with this token (the invite link carries it).
    invite_token = models.CharField(max_length=40, default=new_invite_token, editable=False)
    # The always-on session of a Live-category world (one running per world at a time).
    is_live_world = models.BooleanField(default=False)
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
    # A fork: the recording and the frame (of its camera `forked_slot`) its world started from.
    forked_from = models.ForeignKey(
        "Recording", null=True, blank=True, on_delete=models.SET_NULL, related_name="forks"
    )
    forked_frame = models.PositiveIntegerField(default=0)
    forked_slot = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["status", "created_at"])]
        constraints = [
            models.UniqueConstraint(
                fields=["world"],
                condition=models.Q(is_live_world=True, status__in=ACTIVE_STATUSES),
                name="one_running_session_per_live_world",
            )
        ]

    def __str__(self) -> str:
        return f"{self.world_id} session {self.id} ({self.status})"

    def get_absolute_url(self) -> str:
        return reverse("play-watch", kwargs={"session_id": self.id})

    @property
    def is_active(self) -> bool:
        return self.status in ACTIVE_STATUSES

    def is_created_by(self, *, user, session_key: str | None) -> bool:
        """The account that created it, or for anonymous sessions the same browser session."""
        return _same_player(self.player_id, self.anon_key, user=user, session_key=session_key)


def _same_player(user_id, anon_key: str, *, user, session_key: str | None) -> bool:
    if user_id is not None:
        return user is not None and user.is_authenticated and user.pk == user_id
    return bool(session_key) and session_key == anon_key


class Seat(models.Model):
    """One player in a session: their slot (avatar colour and camera), name and socket.

    A seat is active until ``left_at``; an idle, removed or long-gone player leaves their seat,
    and the session ends when its last seat is left."""

    session = models.ForeignKey(PlaySession, on_delete=models.CASCADE, related_name="seats")
    slot = models.PositiveSmallIntegerField()
    name = models.CharField(max_length=40)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    anon_key = models.CharField(max_length=40, blank=True, db_index=True)
    client_ip = models.GenericIPAddressField(null=True, blank=True)
    joined_at = models.DateTimeField(auto_now_add=True)
    left_at = models.DateTimeField(null=True, blank=True)
    # An EndReason code (idle, abandoned, player, ...) or "removed: <why>".
    left_reason = models.CharField(max_length=200, blank=True)
    last_input_at = models.DateTimeField(null=True, blank=True)
    # Set while this player's socket is closed (their reconnect grace runs from it).
    disconnected_at = models.DateTimeField(null=True, blank=True)
    # The channel of their current socket: a late close of an older socket (the server notices
    # a dead connection after the browser has already reconnected) must not detach them.
    channel = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ["slot"]
        constraints = [
            models.UniqueConstraint(
                fields=["session", "slot"],
                condition=models.Q(left_at=None),
                name="one_player_per_seat",
            )
        ]

    def __str__(self) -> str:
        return f"{self.name} (slot {self.slot}) in {self.session_id}"

    @property
    def is_active(self) -> bool:
        return self.left_at is None

    @property
    def connection(self) -> str:
        """connected; joining (no socket yet); reconnecting (its socket closed, and the seat is
        kept for the reconnect grace). The presence clients get says it (messages.SEAT_STATES)."""
        if self.disconnected_at is None:
            return "connected"
        return "reconnecting" if self.channel else "joining"

    def is_held_by(self, *, user, session_key: str | None) -> bool:
        return _same_player(self.user_id, self.anon_key, user=user, session_key=session_key)


class VideoStatus(models.TextChoices):
    NONE = "none", "Not exported"
    QUEUED = "queued", "Queued"
    RENDERING = "rendering", "Rendering"
    READY = "ready", "Ready"
    FAILED = "failed", "Failed"


class Recording(models.Model):
    """A session's run, kept: its recording's parts lie in the media store under ``key``
    (`inference.serving.recording`), written by the worker as the session ran. Made when the
    session ends; what it adds up to (frames, marks, size) is read from the parts once the
    last one is there (`sessions.recordings.recording_refresh`)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    session = models.OneToOneField(PlaySession, on_delete=models.CASCADE, related_name="recording")
    world = models.ForeignKey("worlds.World", on_delete=models.CASCADE, related_name="recordings")
    world_version = models.ForeignKey(
        "worlds.WorldVersion", on_delete=models.CASCADE, related_name="recordings"
    )
    players = models.JSONField(default=list, blank=True)  # [{"slot", "name"}]
    frames = models.PositiveIntegerField(default=0)  # the lead camera's
    duration_s = models.FloatField(default=0.0)
    size = models.PositiveBigIntegerField(default=0)  # bytes of its parts (videos not counted)
    complete = models.BooleanField(default=False)  # its last part is read
    # {"cameras": {slot: frames}, "marks": [{frame, kind, text, by}], "fps", "weights"}
    timeline = models.JSONField(default=dict, blank=True)
    is_public = models.BooleanField(default=False)
    video_status = models.CharField(
        max_length=16, choices=VideoStatus.choices, default=VideoStatus.NONE
    )
    video_progress = models.PositiveSmallIntegerField(default=0)  # percent
    videos = models.JSONField(default=dict, blank=True)  # slot -> storage key of its MP4
    video_size = models.PositiveBigIntegerField(default=0)
    thumbnail = models.CharField(max_length=300, blank=True)  # storage key of a JPEG
    removed_at = models.DateTimeField(null=True, blank=True)  # by a moderator (audited)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["world", "is_public", "created_at"])]

    def __str__(self) -> str:
        return f"recording of {self.session_id}"

    def get_absolute_url(self) -> str:
        return reverse("recording-page", kwargs={"recording_id": self.id})

    @property
    def key(self) -> str:
        """Its folder in the media store (parts, videos, thumbnail)."""
        return f"recordings/{self.session_id}"
