"""Covers rendered by the world model for worlds published without one."""

import io
import threading

import pytest
from django.core.files.base import ContentFile
from django.core.management import call_command
from PIL import Image

from tests.worlds.factories import image_bytes, upload
from worlds import cover_render, services
from worlds.cover_render import weights_digest

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
    assert cover_render.world_render_cover(world_id=world.pk) is True  # the reading alone
    world.refresh_from_db()
    assert world.cover.name == name
    assert not world.cover_generated
    assert world.model_reading["places"] == ["forest"]


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
    cover_render.world_render_cover(world_id=world.pk)
    world.refresh_from_db()
    assert world.cover.name == covers[-1] and not world.cover_generated
    storage = world.cover.storage
    assert storage.exists(covers[-1]) and not storage.exists(covers[0])


def test_rendering_for_a_deleted_world_is_skipped(db):
    assert cover_render.world_render_cover(world_id=987654) is False


def test_no_render_is_queued_when_auto_render_is_off(
    owner, settings, django_capture_on_commit_callbacks
):
    settings.COVER_RENDER_AUTO = False
    with django_capture_on_commit_callbacks() as callbacks:
        services.world_create(creator=owner, fields=SPEC)
    assert callbacks == []


def _rendered_cover(world, weights: str) -> str:
    """Give a world a cover as a render leaves it, stamped with `weights`; -> its file name."""
    world.cover.save(f"{world.slug}-frame.png", ContentFile(image_bytes("PNG")), save=False)
    world.cover_generated, world.model_weights = True, weights
    world.save(update_fields=["cover", "cover_generated", "model_weights"])
    return world.cover.name


def test_render_covers_renders_again_what_older_weights_made(owner, settings):
    # `make run` runs render_covers on every start: after new weights ship, the demo covers
    # the old weights rendered must not stay
    settings.COVER_RENDER_AUTO = False
    current = weights_digest()
    assert len(current) == 16
    worlds = [services.world_create(creator=owner, fields=SPEC | {"seed": i}) for i in range(4)]
    kept = _rendered_cover(worlds[0], current)
    stale = _rendered_cover(worlds[1], "0123456789abcdef")
    uploaded = services.world_update(
        world=worlds[2], by=owner, fields={}, cover=upload(image_bytes("JPEG"))
    ).cover.name
    out = io.StringIO()
    call_command("render_covers", stdout=out)
    # the stale cover, the uploaded one's reading, the world with no cover
    assert out.getvalue().strip() == "Rendered 3 worlds."
    for world in worlds:
        world.refresh_from_db()
    assert worlds[0].cover.name == kept
    assert worlds[1].cover.name != stale and worlds[1].model_weights == current
    assert worlds[2].cover.name == uploaded and not worlds[2].cover_generated
    assert worlds[3].cover_generated and worlds[3].model_weights == current
    for world in worlds[1:]:
        reading = {k: v for k, v in world.model_reading.items() if k != "things"}
        assert reading == {
            "places": ["forest"],
            "sky": "falling snow",
            "time": "night",
            "creature": None,
            "lacks": None,
        }
    with worlds[1].cover.open("rb") as f:
        assert Image.open(f).size == (768, 768)  # the model's frame, not the stand-in
    call_command("render_covers", stdout=(out := io.StringIO()))
    assert out.getvalue().strip() == "Rendered 0 worlds."  # a no-op once done
    call_command("render_covers", "--regenerate", stdout=(out := io.StringIO()))
    assert out.getvalue().strip() == "Rendered 4 worlds."


def test_a_new_prompt_is_rendered_again_and_the_page_says_what_the_model_makes_of_it(
    owner, owner_client, settings, django_capture_on_commit_callbacks
):
    settings.COVER_RENDER_AUTO = True
    settings.CELERY_TASK_ALWAYS_EAGER = False  # queued as for a Celery worker, run here
    with django_capture_on_commit_callbacks() as queued:
        world = services.world_create(creator=owner, fields=SPEC)
    assert len(queued) == 1
    cover_render.world_render_cover(world_id=world.pk)
    world.refresh_from_db()
    first = world.cover.name
    with django_capture_on_commit_callbacks() as queued:  # a new title renders nothing
        world = services.world_update(world=world, by=owner, fields={"title": "Renamed"})
    assert queued == []
    prompt = "a windmill on a grassy meadow with foxes at dusk"
    with django_capture_on_commit_callbacks() as queued:
        world = services.world_update(world=world, by=owner, fields={"prompt": prompt})
    assert len(queued) == 1
    world.refresh_from_db()
    assert (world.model_reading, world.model_weights) == ({}, "")  # stale until rendered
    assert "What the world model makes of it" not in owner_client.get(f"/w/{world.slug}/").text
    cover_render.world_render_cover(world_id=world.pk)
    world.refresh_from_db()
    assert world.cover.name != first  # the old prompt's frame is gone
    assert world.model_reading["places"] == ["meadow"]
    page = owner_client.get(f"/w/{world.slug}/").text
    assert "What the world model makes of it" in page
    for shown in ("<dd>meadow</dd>", "<dd>clear</dd>", "<dd>dusk</dd>", "<dd>fox</dd>"):
        assert shown in page
    assert "<dt>Things</dt><dd>windmill</dd>" in page  # drawn from its name, not left out
    assert "The model has no" not in page
    api = owner_client.get(f"/api/worlds/{world.slug}/").json()
    assert (api["model_reading"]["things"], api["model_reading"]["lacks"]) == (["windmill"], None)


def test_the_weights_digest_follows_the_file(tmp_path):
    path = tmp_path / "weights.safetensors"
    path.write_bytes(b"first weights")
    first = cover_render._digest(path, *cover_render._stamp(path))
    path.write_bytes(b"second weights, longer")
    second = cover_render._digest(path, *cover_render._stamp(path))
    assert len(first) == len(second) == 16 and first != second
    assert cover_render._digest(tmp_path / "none", *cover_render._stamp(tmp_path / "none")) == ""
