"""Reads from the catalog. Visibility rules live here and nowhere else.

Listed: published worlds. Reachable by link: published and unlisted. The creator also sees their
own drafts, worlds in review and removed worlds (marked as such); nobody else ever does.
"""

from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.cache import cache
from django.db import transaction
from django.db.models import Case, ExpressionWrapper, IntegerField, Q, QuerySet, Value, When

from inference.narrative import examples
from worlds.models import Category, Like, World, WorldStatus

if TYPE_CHECKING:
    from django.contrib.postgres.search import SearchVector

SORTS = {
    "trending": ("-trending_score", "-published_at"),
    "new": ("-published_at", "-created_at"),
    "popular": ("-play_count", "-published_at"),
    "liked": ("-like_count", "-published_at"),
}
DEFAULT_SORT = "trending"


def _base() -> QuerySet[World]:
    return World.objects.select_related("creator")


def world_list(
    *,
    viewer: AbstractBaseUser | None = None,
    category: str | None = None,
    creator: AbstractBaseUser | None = None,
    sort: str = DEFAULT_SORT,
) -> QuerySet[World]:
    """Published worlds (plus the viewer's own, when listing the viewer's profile)."""
    qs = _base()
    if creator is not None and viewer is not None and viewer.pk == creator.pk:
        qs = qs.filter(creator=creator)
    else:
        qs = qs.filter(status=WorldStatus.PUBLISHED)
        if creator is not None:
            qs = qs.filter(creator=creator)
    if category:
        qs = qs.filter(category=category)
    return qs.order_by(*SORTS.get(sort, SORTS[DEFAULT_SORT]), "-id")


def world_search(
    *,
    query: str,
    viewer: AbstractBaseUser | None = None,
    category: str | None = None,
    creator: AbstractBaseUser | None = None,
    sort: str = "",
) -> QuerySet[World]:
    """Published worlds matching `query` (a `creator`'s, their drafts too when they ask), best
    match first unless another sort is asked for.

    PostgreSQL: full-text search, title weighted over description over prompt, ranked with
    ts_rank. SQLite (embedded default): substring match, title hits before others.
    """
    qs = world_list(viewer=viewer, category=category, creator=creator)
    query = (query or "").strip()[:200]
    if not query:
        return qs.order_by(*SORTS.get(sort, SORTS[DEFAULT_SORT]), "-id")
    if settings.USING_POSTGRES:
        qs = _postgres_search(qs, query)
    else:
        qs = _fallback_search(qs, query)
    if sort in SORTS:
        return qs.order_by(*SORTS[sort], "-id")
    return qs.order_by("-rank", *SORTS[DEFAULT_SORT], "-id")


def search_vector() -> "SearchVector":
    """The weighted search document; migration 0003 indexes exactly this expression (GIN)."""
    from django.contrib.postgres.search import SearchVector

    return (
        SearchVector("title", weight="A", config="english")
        + SearchVector("character_name", weight="A", config="english")
        + SearchVector("description", weight="B", config="english")
        + SearchVector("prompt", weight="C", config="english")
        + SearchVector("story_opening", "character_persona", weight="D", config="english")
    )


def _postgres_search(qs: QuerySet[World], query: str) -> QuerySet[World]:
    from django.contrib.postgres.search import SearchQuery, SearchRank

    vector = search_vector()
    search = SearchQuery(query, search_type="websearch", config="english")
    # Match with @@ (honours "-word" and quotes), then rank: ts_rank alone scores partial hits.
    return qs.annotate(document=vector, rank=SearchRank(vector, search)).filter(document=search)


def _fallback_search(qs: QuerySet[World], query: str) -> QuerySet[World]:
    terms = query.split()[:8]
    match = Q()
    for term in terms:
        match &= (
            Q(title__icontains=term)
            | Q(description__icontains=term)
            | Q(prompt__icontains=term)
            | Q(character_name__icontains=term)
        )
    title_hits = sum(
        (Case(When(title__icontains=t, then=Value(2)), default=Value(0)) for t in terms),
        Value(0),
    )
    desc_hits = sum(
        (Case(When(description__icontains=t, then=Value(1)), default=Value(0)) for t in terms),
        Value(0),
    )
    return qs.filter(match).annotate(
        rank=ExpressionWrapper(title_hits + desc_hits, output_field=IntegerField())
    )


def world_get_visible(*, slug: str, viewer: AbstractBaseUser | None) -> World:
    """A world's page: public (published/unlisted) or the viewer's own in any state.

    Raises World.DoesNotExist for anything else, so another user's draft is a 404, not a 403.
    """
    world = _base().select_related("remix_of", "current_version").get(slug=slug)
    if world.is_public:
        return world
    if viewer is not None and viewer.is_authenticated and world.creator_id == viewer.pk:
        return world
    raise World.DoesNotExist(f"No visible world {slug!r}")


def world_get_playable(*, slug: str, viewer: AbstractBaseUser | None) -> World:
    """A world a viewer may start a session in: published/unlisted, or the creator's own draft.

    Removed and in-review worlds are not playable, even by their creator.
    """
    world = world_get_visible(slug=slug, viewer=viewer)
    if world.is_public or world.status == WorldStatus.DRAFT:
        return world
    raise World.DoesNotExist(f"World {slug!r} is not playable")


# Worlds a person liked, kept whole in the shared cache up to this many (a signed-in page then
# asks no query for its hearts); above it each page asks for its own.
LIKED_KEPT_MAX = 2000


def _liked_key(user_id: int) -> str:
    return f"liked:{user_id}"


def world_liked_ids(*, worlds, viewer: AbstractBaseUser | None) -> set[int]:
    """Which of these worlds (or world ids) the viewer liked."""
    if viewer is None or not viewer.is_authenticated:
        return set()
    ids = {w if isinstance(w, int) else w.pk for w in worlds}
    kept = _kept_likes(viewer)
    if kept is None:
        mine = Like.objects.filter(user=viewer, world_id__in=ids)
        return set(mine.values_list("world_id", flat=True))
    return set(kept & ids)


def _kept_likes(viewer: AbstractBaseUser) -> frozenset[int] | None:
    """Every world the viewer liked, from the shared cache; None: too many to keep (or no
    cache), ask per page."""
    if settings.VIEWER_CACHE_SECONDS <= 0:
        return None
    kept = cache.get(_liked_key(viewer.pk))
    if kept is None:
        liked = Like.objects.filter(user=viewer).values_list("world_id", flat=True)
        kept = frozenset(liked[: LIKED_KEPT_MAX + 1])
        kept = kept if len(kept) <= LIKED_KEPT_MAX else "many"
        cache.set(_liked_key(viewer.pk), kept, settings.VIEWER_CACHE_SECONDS)
    return None if kept == "many" else kept


def likes_changed(instance: Like, **_signal_kwargs) -> None:
    """A like was saved or deleted: its person's kept likes go, now and once the write commits
    (a page between the two may have kept the old ones)."""
    key = _liked_key(instance.user_id)
    cache.delete(key)
    transaction.on_commit(lambda: cache.delete(key))


@dataclass(frozen=True)
class HomeRows:
    featured: list[World]
    trending: list[World]
    new: list[World]
    by_category: list[tuple[str, str, list[World]]]  # (value, label, worlds)


def home_rows(*, viewer: AbstractBaseUser | None = None, per_row: int = 8) -> HomeRows:
    listed = world_list(viewer=viewer)
    featured = list(listed.filter(featured=True).order_by("-published_at")[:4])
    by_category = [
        (value, label, list(world_list(viewer=viewer, category=value, sort="trending")[:per_row]))
        for value, label in Category.choices
    ]
    return HomeRows(
        featured=featured,
        trending=list(listed.filter(trending_score__gt=0).order_by("-trending_score")[:per_row]),
        new=list(world_list(viewer=viewer, sort="new")[:per_row]),
        by_category=by_category,
    )


def world_remixes(*, world: World) -> QuerySet[World]:
    return world_list().filter(remix_of=world)


def world_sample_exchange(*, world: World) -> dict:
    """What the world page shows of a character's voice: the creator's lines as its chat model
    is shown them, the greeting and the first ones as answers to a visitor's cues, the rest as
    they are; nothing for a world without example lines."""
    lines = world.example_lines()
    if world.category != Category.CHARACTERS or not lines:
        return {"sample_exchange": [], "sample_more": []}
    greeting = world.character_greeting or examples.default_greeting(world.character_name)
    pairs, more = examples.exchange(greeting, lines)
    return {"sample_exchange": pairs, "sample_more": more}
