from django.urls import reverse
from rest_framework import serializers

from sessions.models import PlaySession, SessionStatus


class SessionCreateInput(serializers.Serializer):
    world = serializers.SlugField(max_length=80, help_text="The world's slug.")
    public = serializers.BooleanField(
        default=True, help_text="Whether anyone may watch this session live."
    )


class SessionOutput(serializers.ModelSerializer):
    world = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    world_title = serializers.CharField(source="world_version.title", read_only=True)
    public = serializers.BooleanField(source="is_public", read_only=True)
    queue_position = serializers.SerializerMethodField()
    play_socket = serializers.SerializerMethodField()
    watch_socket = serializers.SerializerMethodField()
    watch_url = serializers.SerializerMethodField()

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
