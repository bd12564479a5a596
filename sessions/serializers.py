from django.urls import reverse
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from inference.world.spec import avatar_hex
from sessions.models import PlaySession, Seat, SessionStatus


class SessionCreateInput(serializers.Serializer):
    world = serializers.SlugField(max_length=80, help_text="The world's slug.")
    public = serializers.BooleanField(
        default=True,
        help_text="Whether anyone may watch this session live (and, if shared, join it "
        "without an invite).",
    )
    shared = serializers.BooleanField(
        default=False, help_text="Seat other players too (up to the world's max_players)."
    )
    name = serializers.CharField(
        max_length=40, required=False, allow_blank=True, help_text="Anonymous players' name."
    )


class SessionJoinInput(serializers.Serializer):
    invite = serializers.CharField(max_length=100, required=False, allow_blank=True)
    name = serializers.CharField(
        max_length=40, required=False, allow_blank=True, help_text="Anonymous players' name."
    )


class PlayerRemoveInput(serializers.Serializer):
    reason = serializers.CharField(max_length=200, help_text="Why (the player sees it).")


class SeatOutput(serializers.ModelSerializer):
    color = serializers.SerializerMethodField()

    class Meta:
        model = Seat
        fields = ["slot", "name", "color"]
        read_only_fields = fields

    def get_color(self, seat: Seat) -> str:
        return avatar_hex(seat.slot)


class SessionOutput(serializers.ModelSerializer):
    world = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    world_title = serializers.CharField(source="world_version.title", read_only=True)
    public = serializers.BooleanField(source="is_public", read_only=True)
    queue_position = serializers.SerializerMethodField()
    play_socket = serializers.SerializerMethodField()
    watch_socket = serializers.SerializerMethodField()
    watch_url = serializers.SerializerMethodField()
    shared = serializers.BooleanField(source="is_shared", read_only=True)
    players = serializers.SerializerMethodField()
    you = serializers.SerializerMethodField()
    is_creator = serializers.SerializerMethodField()
    invite_url = serializers.SerializerMethodField()
    invite = serializers.SerializerMethodField()

    class Meta:
        model = PlaySession
        fields = [
            "id",
            "world",
            "world_title",
            "world_version",
            "status",
            "queue_position",
            "public",
            "created_at",
            "started_at",
            "ended_at",
            "end_reason",
            "frames_generated",
            "peak_viewers",
            "play_socket",
            "watch_socket",
            "watch_url",
            "shared",
            "max_players",
            "players",
            "you",
            "is_creator",
            "invite_url",
            "invite",
        ]
        read_only_fields = fields

    def get_queue_position(self, obj: PlaySession) -> int | None:
        if obj.status != SessionStatus.QUEUED:
            return None
        return self.context.get("queue_position")

    def get_play_socket(self, obj: PlaySession) -> str:
        return f"/ws/play/{obj.id}/"

    def get_watch_socket(self, obj: PlaySession) -> str | None:
        return f"/ws/watch/{obj.id}/" if obj.is_public else None

    def get_watch_url(self, obj: PlaySession) -> str | None:
        return reverse("play-watch", kwargs={"session_id": obj.id}) if obj.is_public else None

    @extend_schema_field(SeatOutput(many=True))
    def get_players(self, obj: PlaySession) -> list[dict]:
        seats = obj.seats.filter(left_at=None).order_by("slot")
        return SeatOutput(seats, many=True).data

    @extend_schema_field(SeatOutput(allow_null=True))
    def get_you(self, obj: PlaySession) -> dict | None:
        seat = self.context.get("seat")
        return SeatOutput(seat).data if seat is not None else None

    def get_is_creator(self, obj: PlaySession) -> bool:
        return bool(self.context.get("is_creator"))

    def get_invite_url(self, obj: PlaySession) -> str | None:
        """Seated players of a shared session may pass it on (a private one's carries the token)."""
        if not obj.is_shared or self.context.get("seat") is None:
            return None
        url = reverse("play-join", kwargs={"session_id": obj.id})
        return url if obj.is_public else f"{url}?invite={obj.invite_token}"

    def get_invite(self, obj: PlaySession) -> str | None:
        if obj.is_public or not obj.is_shared or self.context.get("seat") is None:
            return None
        return obj.invite_token


class SessionJoinOutput(SessionOutput):
    player = serializers.SerializerMethodField()

    class Meta(SessionOutput.Meta):
        fields = [*SessionOutput.Meta.fields, "player"]
        read_only_fields = fields

    @extend_schema_field(SeatOutput)
    def get_player(self, obj: PlaySession) -> dict | None:
        return SeatOutput(self.context["seat"]).data


class LiveWorldOutput(serializers.Serializer):
    slug = serializers.CharField()
    title = serializers.CharField()
    category = serializers.CharField()


class LiveSessionOutput(serializers.Serializer):
    """One running public session in the Live listing."""

    id = serializers.UUIDField()
    world = LiveWorldOutput()
    players = serializers.IntegerField()
    max_players = serializers.IntegerField()
    viewers = serializers.IntegerField()
    joinable = serializers.BooleanField()
    thumbnail_url = serializers.CharField()
    watch_url = serializers.CharField()
    join_url = serializers.CharField(allow_null=True)
    play_url = serializers.CharField(allow_null=True)
    started = serializers.DateTimeField(allow_null=True)
    started_at = serializers.DateTimeField(allow_null=True)
