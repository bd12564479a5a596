"""Test factories: rows straight through the ORM (fast, no screening), for arranging a test.

Tests of behaviour call the services; these only build the world a test starts from.
"""

import io
import itertools
import random

from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone
from PIL import Image

from gallery.models import User
from worlds.models import SPEC_FIELDS, World, WorldStatus, WorldVersion

_counter = itertools.count(1)


def make_user(username: str | None = None, **extra) -> User:
    username = username or f"user{next(_counter)}"
    return User.objects.create_user(username=username, password="correct-horse-9", **extra)


def make_world(creator: User | None = None, **fields) -> World:
    n = next(_counter)
    status = fields.pop("status", WorldStatus.PUBLISHED)
    data = {
        "title": f"World {n}",
        "slug": f"world-{n}",
        "category": "games",
        "prompt": f"a quiet pine forest number {n}",
        "seed": n,
        "status": status,
        "published_at": timezone.now() if status != WorldStatus.DRAFT else None,
    } | fields
    world = World.objects.create(creator=creator or make_user(), **data)
    version = WorldVersion.objects.create(
        world=world, number=1, **{name: getattr(world, name) for name in SPEC_FIELDS}
    )
    world.current_version = version
    world.save(update_fields=["current_version"])
    return world


def image_bytes(fmt: str = "PNG", size=(64, 48), color=(200, 40, 90), **save_args) -> bytes:
    out = io.BytesIO()
    mode = "RGB"
    Image.new(mode, size, color).save(out, format=fmt, **save_args)
    return out.getvalue()


def upload(data: bytes, name: str = "cover.png", content_type: str = "image/png"):
    return SimpleUploadedFile(name, data, content_type=content_type)


def noise_png(size=(64, 64)) -> bytes:
    rng = random.Random(7)
    img = Image.frombytes(
        "RGB", size, bytes(rng.randrange(256) for _ in range(size[0] * size[1] * 3))
    )
    out = io.BytesIO()
    img.save(out, format="PNG")
    return out.getvalue()
