"""Covers go through Django storage: a real S3 server (SeaweedFS) here, local files otherwise."""

import io

import httpx
from PIL import Image

from tests.worlds.factories import image_bytes, upload
from worlds import services

SPEC = {"title": "Reef Cover", "category": "games", "prompt": "a coral reef lagoon"}


def test_a_cover_round_trips_through_s3(s3_storage, owner):
    exif = Image.Exif()
    exif[0x010F] = "TrackerCam"
    data = image_bytes("JPEG", size=(320, 180), exif=exif.tobytes())
    world = services.world_create(
        creator=owner, fields=SPEC, cover=upload(data, "reef.jpg", "image/jpeg")
    )
    client, bucket = s3_storage["client"], s3_storage["bucket"]
    stored = client.get_object(Bucket=bucket, Key=world.cover.name)["Body"].read()
    assert stored[:3] == b"\xff\xd8\xff"
    assert b"TrackerCam" not in stored
    assert Image.open(io.BytesIO(stored)).size == (320, 180)
    # The page links a presigned URL that the S3 server honours.
    url = world.cover_url
    assert url.startswith(s3_storage["endpoint_url"])
    assert httpx.get(url).content == stored


def test_replacing_a_cover_deletes_the_old_object(s3_storage, owner):
    world = services.world_create(creator=owner, fields=SPEC, cover=upload(image_bytes("PNG")))
    old = world.cover.name
    services.world_set_cover(world=world, by=owner, upload=upload(image_bytes("WEBP")))
    assert world.cover.name.endswith(".webp")
    assert world.cover.storage.exists(world.cover.name)
    assert not world.cover.storage.exists(old)


def test_without_s3_covers_are_local_files(settings, owner):
    world = services.world_create(creator=owner, fields=SPEC, cover=upload(image_bytes("PNG")))
    path = settings.MEDIA_ROOT / world.cover.name
    assert path.exists()
    assert world.cover_url.startswith("/media/covers/")
