"""Covers rendered by the world model for worlds published without one."""

import threading

import pytest
from PIL import Image

from tests.worlds.factories import image_bytes, upload
from worlds import services

SPEC = {"title": "Frame Test", "category": "games", "prompt": "a snowy pine forest at night"}


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_world_model_renders_a_cover_for_a_world_without_one(owner, settings):
    # eager (the embedded default, `make run`): on a thread beside the request, not in it
    settings.COVER_RENDER_AUTO = True
    world = services.world_create(creator=owner, fields=SPEC | {"seed": 3})
    render = next(t for t in threading.enumerate() if t.name == f"cover-render-{world.pk}")
    render.join(timeout=120)
    world.refresh_from_db()
    assert world.cover_generated
    assert world.cover.name.endswith("-frame.png")
    with world.cover.open("rb") as f:
        image = Image.open(f)
        image.load()
    assert image.size[0] == image.size[1] >= 256
    assert len(image.getcolors(1 << 20)) > 1  # a picture, not a blank
    assert world.cover_url.startswith("/media/covers/")


def test_an_uploaded_cover_is_never_replaced_by_a_render(owner):
    world = services.world_create(creator=owner, fields=SPEC, cover=upload(image_bytes("PNG")))
    name = world.cover.name
    assert services.world_render_cover(world_id=world.pk) is False
    world.refresh_from_db()
    assert world.cover.name == name
    assert not world.cover_generated


def test_a_cover_uploaded_over_a_rendered_one_is_kept_and_the_old_file_goes(
    owner, django_capture_on_commit_callbacks
):
    world = services.world_create(creator=owner, fields=SPEC)
    world.cover_generated = True  # as a render leaves it (the render itself is the slow test)
    world.save(update_fields=["cover_generated"])
    covers = []
    for fmt in ("PNG", "JPEG"):
        with django_capture_on_commit_callbacks(execute=True):
            world = services.world_update(
                world=world, by=owner, fields={}, cover=upload(image_bytes(fmt))
            )
        covers.append(world.cover.name)
    assert not world.cover_generated
    assert services.world_render_cover(world_id=world.pk) is False
    world.refresh_from_db()
    assert world.cover.name == covers[-1]
    storage = world.cover.storage
    assert storage.exists(covers[-1]) and not storage.exists(covers[0])


def test_rendering_for_a_deleted_world_is_skipped(db):
    assert services.world_render_cover(world_id=987654) is False


def test_no_render_is_queued_when_auto_render_is_off(
    owner, settings, django_capture_on_commit_callbacks
):
    settings.COVER_RENDER_AUTO = False
    with django_capture_on_commit_callbacks() as callbacks:
        services.world_create(creator=owner, fields=SPEC)
    assert callbacks == []
