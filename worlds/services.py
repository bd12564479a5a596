"""Writes to the catalog: create, edit, publish, like, remix, covers, plays and trending.

Every entry point (pages, API, tasks, commands) calls these; none of them writes models itself.
"""

import logging
import random
import threading

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, connections, transaction
from django.db.models import F
from django.utils import timezone
from django.utils.text import slugify

from worlds import cover_render, ratelimit
from worlds.covers import cover_clean
from worlds.models import SPEC_FIELDS, Category, Like, Play, World, WorldStatus, WorldVersion
from worlds.moderation import policy
from worlds.tasks import render_cover

log = logging.getLogger(__name__)

EDITABLE_FIELDS = (*SPEC_FIELDS, "description", "max_players")


def world_validate_spec(fields: dict) -> None:
    """Cross-field rules the model's field validators cannot express."""
    errors: dict[str, list[str]] = {}
    if not (fields.get("title") or "").strip():
        errors["title"] = ["Give the world a title."]
    if not (fields.get("prompt") or "").strip():
        errors["prompt"] = ["Describe the world: the prompt is what the model generates from."]
    if fields.get("category") not in Category.values:
        errors["category"] = ["Choose one of: games, stories, characters, live."]
    if fields.get("category") == Category.CHARACTERS:
        for name, label in (
            ("character_name", "name"),
            ("character_persona", "persona"),
            ("character_greeting", "greeting"),
        ):
            if not (fields.get(name) or "").strip():
                errors[name] = [f"A character world needs the character's {label}."]
    if errors:
        raise ValidationError(errors)


def _clean_cover(upload):
    try:
        return cover_clean(upload)
    except ValidationError as exc:
        raise ValidationError({"cover": exc.messages}) from None


def _ensure_owner(world: World, user: AbstractBaseUser) -> None:
    if world.creator_id != user.pk:
        raise PermissionDenied("Only the creator can change this world.")


def _unique_slug(title: str, *, salted: bool = False) -> str:
    base = slugify(title)[:60].strip("-") or "world"
    slug = f"{base}-{random.randrange(16**6):06x}" if salted else base
    while World.objects.filter(slug=slug).exists():
        slug = f"{base}-{random.randrange(16**6):06x}"
    return slug


def _snapshot_version(world: World) -> WorldVersion:
    last = world.versions.order_by("-number").values_list("number", flat=True).first() or 0
    version = WorldVersion.objects.create(
        world=world, number=last + 1, **{name: getattr(world, name) for name in SPEC_FIELDS}
    )
    world.current_version = version
    world.save(update_fields=["current_version", "updated_at"])
    return version


def _clean_text(fields: dict) -> dict:
    cleaned = {}
    for name in EDITABLE_FIELDS:
        if name not in fields:
            continue
        value = fields[name]
        cleaned[name] = value.strip() if isinstance(value, str) else value
    if cleaned.get("max_players") in (None, ""):
        cleaned.pop("max_players", None)  # left blank: the default (or what it was)
    return cleaned


def world_create(
    *,
    creator: AbstractBaseUser,
    fields: dict,
    cover=None,
    remix_of: World | None = None,
    publish: bool = False,
) -> World:
    """Create a world (a draft unless `publish`) with its first version."""
    _hourly(creator, "create", settings.WORLDS_CREATED_PER_HOUR, "made {limit} worlds")
    data = _clean_text(fields)
    if data.get("seed") in (None, ""):
        data["seed"] = random.randrange(2**31)
    world_validate_spec(data)
    policy.world_text_verdict(data)
    clean_cover = _clean_cover(cover) if cover else None
    World(creator=creator, **data).full_clean(exclude=["cover", "current_version", "slug"])
    if publish:
        policy.ensure_not_suspended(creator)  # before the insert: a refused publish saves nothing
    for attempt in range(3):
        try:
            world = _insert_world(creator, remix_of, data, clean_cover, salted=attempt > 0)
            break
        except IntegrityError:
            # Two creators raced for the same title's slug; the loser takes a salted one.
            if attempt == 2:
                raise
    if publish:
        world = world_publish(world=world, by=creator)
    return world


def _hourly(user: AbstractBaseUser, what: str, limit: int, done: str) -> None:
    """At most `limit` of `what` per user an hour; `done` says what they did ("made {limit}
    worlds")."""
    message = f"You have {done.format(limit=limit)} in the last hour. Please try again later."
    ratelimit.hit(f"worlds:{what}:{user.pk}", limit=limit, window_s=3600, message=message)


def _insert_world(creator, remix_of, data: dict, clean_cover, *, salted: bool) -> World:
    slug = _unique_slug(data["title"], salted=salted)
    with transaction.atomic():
        world = World.objects.create(creator=creator, remix_of=remix_of, slug=slug, **data)
        if clean_cover:
            world.cover.save(f"{slug}.{clean_cover.extension}", clean_cover.content, True)
        _snapshot_version(world)
        _schedule_cover_render(world)  # a cover only where none was uploaded; the reading always
    return world


def world_update(*, world: World, by: AbstractBaseUser, fields: dict, cover=None) -> World:
    """Edit a world. A change to what a session plays makes a new version; sessions keep theirs."""
    _ensure_owner(world, by)
    if world.status == WorldStatus.REMOVED:
        # what the moderator removed stays as it was while they hear the appeal
        raise ValidationError({"status": ["This world was removed by moderation: appeal instead."]})
    if world.is_public:
        policy.ensure_not_suspended(by)  # changing public text is publishing
    data = _clean_text(fields)
    if "seed" in data and data["seed"] in (None, ""):
        data.pop("seed")
    merged = {name: getattr(world, name) for name in EDITABLE_FIELDS} | data
    world_validate_spec(merged)
    verdict = policy.world_text_verdict(merged)
    clean_cover = _clean_cover(cover) if cover else None
    old_cover = world.cover.name if clean_cover and world.cover else None
    with transaction.atomic():
        # Lock the row: two saves racing would both read version N and both write N+1.
        world = World.objects.select_for_update().get(pk=world.pk)
        spec_changed = any(merged[name] != getattr(world, name) for name in SPEC_FIELDS)
        # what the model makes of the world: the reading and a rendered cover
        rendered_changed = (merged["prompt"], merged["seed"]) != (world.prompt, world.seed)
        for name, value in merged.items():
            setattr(world, name, value)
        if rendered_changed:  # stale until rendered again (`render_covers` picks it up too)
            world.model_reading, world.model_weights = {}, ""
        world.full_clean(exclude=["cover", "current_version", "slug"])
        if clean_cover:
            world.cover.save(f"{world.slug}.{clean_cover.extension}", clean_cover.content, False)
            world.cover_generated = False  # the creator's own: never re-rendered over
            if old_cover and old_cover != world.cover.name:  # each upload left one behind
                storage = world.cover.storage
                transaction.on_commit(lambda: storage.delete(old_cover))
        if verdict == "hold" and world.is_public:
            world.held_unlisted = world.status == WorldStatus.UNLISTED
            world.status = WorldStatus.IN_REVIEW
        world.save()
        if spec_changed or world.current_version_id is None:
            _snapshot_version(world)
        if rendered_changed:
            _schedule_cover_render(world)
    _queue_if_held(world)
    return world


def world_set_cover(*, world: World, by: AbstractBaseUser, upload) -> World:
    _ensure_owner(world, by)
    clean_cover = _clean_cover(upload)
    old = world.cover.name if world.cover else None
    world.cover.save(f"{world.slug}.{clean_cover.extension}", clean_cover.content, False)
    world.cover_generated = False
    world.save(update_fields=["cover", "cover_generated", "updated_at"])
    if old and old != world.cover.name:
        world.cover.storage.delete(old)
    return world


def _schedule_cover_render(world: World) -> None:
    """Queue `cover_render.world_render_cover` once the world is committed (a worker must see
    the row)."""
    if not settings.COVER_RENDER_AUTO:
        return
    world_id = world.pk
    if settings.CELERY_TASK_ALWAYS_EAGER:
        # The embedded default has no Celery worker: render beside the request, not in it.
        thread = threading.Thread(
            target=_render_beside, args=(world_id,), name=f"cover-render-{world_id}", daemon=True
        )
        transaction.on_commit(thread.start)
    else:
        transaction.on_commit(lambda: render_cover.delay(world_id))


def _render_beside(world_id: int) -> None:
    try:
        cover_render.world_render_cover(world_id=world_id)
    except Exception:
        log.exception("cover render for world %s failed", world_id)
    finally:
        connections.close_all()  # this thread's own database connection


def world_publish(*, world: World, by: AbstractBaseUser, unlisted: bool = False) -> World:
    """Make a world public (or unlisted). Text moderation holds for review decide otherwise."""
    _ensure_owner(world, by)
    if world.status == WorldStatus.REMOVED:
        raise ValidationError(
            {"status": ["This world was removed by moderation and cannot be published."]}
        )
    policy.ensure_not_suspended(by)  # UserSuspended (a PermissionDenied) says why and until when
    if not unlisted and policy.unlisted_by_moderation(world):
        raise ValidationError(
            {"status": ["A moderator unlisted this world: only a moderator can list it again."]}
        )
    verdict = policy.world_text_verdict({name: getattr(world, name) for name in EDITABLE_FIELDS})
    with transaction.atomic():
        world = World.objects.select_for_update().get(pk=world.pk)
        if verdict == "hold":
            world.status = WorldStatus.IN_REVIEW
            world.held_unlisted = unlisted
        else:
            world.status = WorldStatus.UNLISTED if unlisted else WorldStatus.PUBLISHED
        if world.published_at is None and world.status != WorldStatus.IN_REVIEW:
            world.published_at = timezone.now()
        world.save(update_fields=["status", "held_unlisted", "published_at", "updated_at"])
    _queue_if_held(world)
    return world


def _queue_if_held(world: World) -> None:
    """A held world goes to the moderators' queue (with its audit entry)."""
    if world.status == WorldStatus.IN_REVIEW:
        policy.world_held_by_screening(world=world)


def world_unpublish(*, world: World, by: AbstractBaseUser) -> World:
    _ensure_owner(world, by)
    if world.status == WorldStatus.REMOVED:
        raise ValidationError({"status": ["This world was removed by moderation."]})
    world.status = WorldStatus.DRAFT
    world.save(update_fields=["status", "updated_at"])
    return world


def world_delete(*, world: World, by: AbstractBaseUser) -> None:
    _ensure_owner(world, by)
    cover = world.cover.name if world.cover else None
    storage = world.cover.storage
    world.delete()
    if cover:
        transaction.on_commit(lambda: storage.delete(cover))


def _ensure_likeable(world: World) -> None:
    if not world.is_public:
        raise ValidationError({"world": ["Only published worlds can be liked."]})


def world_like(*, world: World, user: AbstractBaseUser) -> World:
    """Like a world once; liking again changes nothing."""
    _ensure_likeable(world)
    _hourly(user, "like", settings.LIKES_PER_HOUR, "liked {limit} worlds")
    try:
        with transaction.atomic():
            Like.objects.create(user=user, world=world)
            World.objects.filter(pk=world.pk).update(like_count=F("like_count") + 1)
    except IntegrityError:  # the unique (user, world) constraint: already liked
        pass
    world.refresh_from_db(fields=["like_count"])
    return world


def world_unlike(*, world: World, user: AbstractBaseUser) -> World:
    with transaction.atomic():
        deleted, _ = Like.objects.filter(user=user, world=world).delete()
        if deleted:
            World.objects.filter(pk=world.pk, like_count__gt=0).update(
                like_count=F("like_count") - 1
            )
    world.refresh_from_db(fields=["like_count"])
    return world


def world_toggle_like(*, world: World, user: AbstractBaseUser) -> World:
    """The page's like button: like, or unlike if already liked."""
    if Like.objects.filter(world=world, user=user).exists():
        return world_unlike(world=world, user=user)
    return world_like(world=world, user=user)


def world_remix(
    *, world: World, by: AbstractBaseUser, fields: dict | None = None, cover=None
) -> World:
    """A new draft owned by `by`, starting from `world`'s content, linked back to it."""
    if world.status == WorldStatus.REMOVED:
        raise ValidationError({"world": ["A removed world cannot be remixed."]})
    base = {name: getattr(world, name) for name in EDITABLE_FIELDS}
    base["title"] = f"{world.title} (remix)"[:100]
    base = base | (fields or {})
    return world_create(creator=by, fields=base, cover=cover, remix_of=world)


def world_record_play(*, world: World) -> None:
    """Count one play start (a Play row for trending, and the running total)."""
    with transaction.atomic():
        Play.objects.create(world=world)
        World.objects.filter(pk=world.pk).update(play_count=F("play_count") + 1)
