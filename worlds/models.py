"""The world catalog: worlds, their published versions, and likes."""

import uuid

from django.conf import settings
from django.core.files.storage import default_storage
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.urls import reverse

# The most players a world's creator may allow in one shared session (a server may cap lower).
MAX_PLAYERS = 16


class Category(models.TextChoices):
    GAMES = "games", "Games"
    STORIES = "stories", "Stories"
    CHARACTERS = "characters", "Characters"
    LIVE = "live", "Live"


class WorldStatus(models.TextChoices):
    DRAFT = "draft", "Draft"
    PUBLISHED = "published", "Published"
    UNLISTED = "unlisted", "Unlisted"
    IN_REVIEW = "in_review", "In review"
    REMOVED = "removed", "Removed"


class World(models.Model):
    """A world as its creator edits it. Players always play a frozen WorldVersion of it."""

    slug = models.SlugField(max_length=80, unique=True)
    title = models.CharField(max_length=100)
    description = models.TextField(max_length=2000, blank=True)
    category = models.CharField(max_length=16, choices=Category.choices, db_index=True)
    prompt = models.TextField(max_length=500, help_text="What the world is, in words.")
    seed = models.PositiveIntegerField(default=0)
    story_opening = models.TextField(max_length=2000, blank=True)
    character_name = models.CharField(max_length=60, blank=True)
    character_persona = models.TextField(max_length=1000, blank=True)
    character_greeting = models.CharField(max_length=300, blank=True)
    # Lines the character might say, one per line: the language model's examples of its voice.
    character_examples = models.TextField(max_length=1500, blank=True)
    # Players one shared session seats at most (the server caps it: SESSION_MAX_PLAYERS).
    max_players = models.PositiveSmallIntegerField(
        default=8, validators=[MinValueValidator(1), MaxValueValidator(MAX_PLAYERS)]
    )
    cover = models.ImageField(upload_to="covers/%Y/%m/", blank=True)
    # True when the cover is a frame the world model rendered (replaced when the spec changes),
    # False when the creator uploaded it (never touched by the renderer).
    cover_generated = models.BooleanField(default=False)
    # What the world model makes of the prompt, as people say it (`PromptReading.names`: places,
    # sky, time, creature, what it lacks), rendered with the cover; {} until then.
    model_reading = models.JSONField(default=dict, blank=True, editable=False)
    # Which weights rendered the reading and a generated cover (`cover_render.weights_digest`):
    # `render_covers` renders again what other weights made.
    model_weights = models.CharField(max_length=16, blank=True, editable=False)
    # A few seconds of one of its public runs, played on its gallery card on hover: the longest
    # public run's, or the one its creator picked (`preview_picked`); a storage key, "" if none.
    preview_clip = models.CharField(max_length=300, blank=True, editable=False)
    preview_run = models.UUIDField(null=True, blank=True, editable=False)  # a play.Recording id
    preview_picked = models.BooleanField(default=False, editable=False)
    status = models.CharField(
        max_length=16, choices=WorldStatus.choices, default=WorldStatus.DRAFT, db_index=True
    )
    creator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="worlds"
    )
    remix_of = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="remixes"
    )
    current_version = models.ForeignKey(
        "WorldVersion", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    play_count = models.PositiveIntegerField(default=0)
    like_count = models.PositiveIntegerField(default=0)
    trending_score = models.FloatField(default=0.0, db_index=True)
    featured = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    published_at = models.DateTimeField(null=True, blank=True)
    # Held for review while its creator asked for it unlisted: approval keeps it unlisted.
    held_unlisted = models.BooleanField(default=False)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["status", "category", "-published_at"])]

    def __str__(self) -> str:
        return self.title

    def get_absolute_url(self) -> str:
        return reverse("world-detail", kwargs={"slug": self.slug})

    @property
    def is_public(self) -> bool:
        return self.status in (WorldStatus.PUBLISHED, WorldStatus.UNLISTED)

    @property
    def is_removed(self) -> bool:
        return self.status == WorldStatus.REMOVED

    @property
    def preview_clip_url(self) -> str:
        return default_storage.url(self.preview_clip) if self.preview_clip else ""

    @property
    def cover_url(self) -> str:
        if self.cover:
            return self.cover.url
        return reverse("world-placeholder", kwargs={"category": self.category, "slug": self.slug})

    def example_lines(self) -> list[str]:
        return example_lines(self.character_examples)


MAX_EXAMPLE_LINES = 8


def example_lines(text: str) -> list[str]:
    """The creator's example lines: one per line, blanks dropped, at most MAX_EXAMPLE_LINES."""
    return [line.strip() for line in (text or "").splitlines() if line.strip()][:MAX_EXAMPLE_LINES]


# The fields a play session depends on: changing any of them makes a new WorldVersion.
SPEC_FIELDS = (
    "title",
    "category",
    "prompt",
    "seed",
    "story_opening",
    "character_name",
    "character_persona",
    "character_greeting",
    "character_examples",
)


class WorldVersion(models.Model):
    """An immutable snapshot of what a world was when published; sessions pin one."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    world = models.ForeignKey(World, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    title = models.CharField(max_length=100)
    category = models.CharField(max_length=16, choices=Category.choices)
    prompt = models.TextField(max_length=500)
    seed = models.PositiveIntegerField()
    story_opening = models.TextField(max_length=2000, blank=True)
    character_name = models.CharField(max_length=60, blank=True)
    character_persona = models.TextField(max_length=1000, blank=True)
    character_greeting = models.CharField(max_length=300, blank=True)
    # Lines the character might say, one per line: the language model's examples of its voice.
    character_examples = models.TextField(max_length=1500, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["world", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["world", "number"], name="unique_world_version")
        ]

    def __str__(self) -> str:
        return f"{self.world.slug} v{self.number}"

    def example_lines(self) -> list[str]:
        return example_lines(self.character_examples)


class Like(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    world = models.ForeignKey(World, on_delete=models.CASCADE, related_name="likes")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "world"], name="unique_like")]

    def __str__(self) -> str:
        return f"{self.user_id} likes {self.world_id}"


class Play(models.Model):
    """One play start, for trending (recent plays with time decay)."""

    world = models.ForeignKey(World, on_delete=models.CASCADE, related_name="plays")
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    def __str__(self) -> str:
        return f"play of world {self.world_id}"
