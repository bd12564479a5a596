"""API shapes for worlds: explicit input and output serializers (no model writes here)."""

from django.contrib.auth import get_user_model
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from worlds.models import MAX_PLAYERS, Category, World

User = get_user_model()


class CreatorSerializer(serializers.ModelSerializer):
    public_name = serializers.CharField(read_only=True)
    url = serializers.SerializerMethodField()

    class Meta:
        model = User
        fields = ["username", "display_name", "public_name", "url"]
        read_only_fields = fields

    def get_url(self, user: User) -> str:
        return f"/u/{user.username}/"


class WorldOutputSerializer(serializers.ModelSerializer):
    creator = CreatorSerializer(read_only=True)
    cover_url = serializers.CharField(read_only=True)
    url = serializers.CharField(source="get_absolute_url", read_only=True)
    remix_of = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    current_version = serializers.UUIDField(source="current_version_id", read_only=True)
    liked = serializers.SerializerMethodField()

    class Meta:
        model = World
        fields = [
            "slug",
            "url",
            "title",
            "description",
            "category",
            "prompt",
            "seed",
            "story_opening",
            "character_name",
            "character_persona",
            "character_greeting",
            "character_examples",
            "max_players",
            "cover_url",
            "model_reading",
            "status",
            "creator",
            "remix_of",
            "current_version",
            "play_count",
            "like_count",
            "trending_score",
            "featured",
            "liked",
            "created_at",
            "updated_at",
            "published_at",
        ]
        read_only_fields = fields

    @extend_schema_field(serializers.BooleanField())
    def get_liked(self, world: World) -> bool:
        return world.pk in self.context.get("liked_ids", set())


class WorldInputSerializer(serializers.Serializer):
    """Create, or (partial) update. Field rules beyond shape are the service's."""

    title = serializers.CharField(max_length=100)
    category = serializers.ChoiceField(choices=Category.choices)
    description = serializers.CharField(max_length=2000, required=False, allow_blank=True)
    prompt = serializers.CharField(max_length=500)
    seed = serializers.IntegerField(min_value=0, max_value=2**31 - 1, required=False)
    story_opening = serializers.CharField(max_length=2000, required=False, allow_blank=True)
    character_name = serializers.CharField(max_length=60, required=False, allow_blank=True)
    character_persona = serializers.CharField(max_length=1000, required=False, allow_blank=True)
    character_greeting = serializers.CharField(max_length=300, required=False, allow_blank=True)
    character_examples = serializers.CharField(
        max_length=1500,
        required=False,
        allow_blank=True,
        help_text="Characters: example lines in their voice, one per line (up to 8).",
    )
    max_players = serializers.IntegerField(
        min_value=1,
        max_value=MAX_PLAYERS,
        required=False,
        help_text="Players one shared session seats at most (the server may cap it lower).",
    )
    cover = serializers.FileField(required=False, help_text="JPEG, PNG or WebP; ≤5 MB, ≤4096²")
    publish = serializers.BooleanField(
        required=False, default=False, help_text="Create: publish at once instead of a draft."
    )


class RemixInputSerializer(serializers.Serializer):
    """Overrides for the remix; anything left out is copied from the original."""

    title = serializers.CharField(max_length=100, required=False)
    description = serializers.CharField(max_length=2000, required=False, allow_blank=True)
    prompt = serializers.CharField(max_length=500, required=False)
    seed = serializers.IntegerField(min_value=0, max_value=2**31 - 1, required=False)


class PublishInputSerializer(serializers.Serializer):
    unlisted = serializers.BooleanField(required=False, default=False)


class CategorySerializer(serializers.Serializer):
    value = serializers.CharField()
    label = serializers.CharField()
    url = serializers.CharField()
    world_count = serializers.IntegerField()


class MeSerializer(serializers.ModelSerializer):
    public_name = serializers.CharField(read_only=True)

    class Meta:
        model = User
        fields = ["id", "username", "display_name", "public_name", "email", "bio", "date_joined"]
        read_only_fields = ["id", "username", "public_name", "email", "date_joined"]
