import io
import struct
import zlib

import pytest
from django.core.exceptions import ValidationError
from PIL import Image

from tests.worlds.factories import image_bytes, noise_png, upload
from worlds.covers import cover_clean, placeholder_svg


def _reopen(clean):
    return Image.open(io.BytesIO(clean.content.read()))


@pytest.mark.parametrize(("fmt", "ext"), [("JPEG", "jpg"), ("PNG", "png"), ("WEBP", "webp")])
def test_it_accepts_jpeg_png_and_webp(fmt, ext):
    clean = cover_clean(upload(image_bytes(fmt)))
    assert clean.extension == ext
    assert _reopen(clean).format == fmt
    assert (clean.width, clean.height) == (64, 48)


def test_it_strips_exif_metadata():
    exif = Image.Exif()
    exif[0x010F] = "SpyCam Inc"  # Make
    exif[0x8825] = {2: (51.0, 30.0, 0.0)}  # GPS
    data = image_bytes("JPEG", exif=exif.tobytes())
    assert b"SpyCam" in data
    clean = cover_clean(upload(data, "me.jpg", "image/jpeg"))
    out = clean.content.read()
    assert b"SpyCam" not in out
    assert not Image.open(io.BytesIO(out)).getexif()


def test_it_strips_png_text_chunks():
    from PIL.PngImagePlugin import PngInfo

    info = PngInfo()
    info.add_text("Author", "secret-author-name")
    data = image_bytes("PNG", pnginfo=info)
    assert b"secret-author-name" in data
    assert b"secret-author-name" not in cover_clean(upload(data)).content.read()


def test_it_sniffs_the_type_from_bytes_not_the_name():
    # A JPEG named .png with an image/png content type is stored as what it really is.
    clean = cover_clean(upload(image_bytes("JPEG"), "liar.png", "image/png"))
    assert clean.extension == "jpg"


def test_it_rejects_a_text_file_pretending_to_be_an_image():
    with pytest.raises(ValidationError, match="JPEG, PNG or WebP"):
        cover_clean(upload(b"<script>alert(1)</script>" * 10, "cover.jpg", "image/jpeg"))


def test_it_rejects_other_image_formats():
    with pytest.raises(ValidationError, match="JPEG, PNG or WebP"):
        cover_clean(upload(image_bytes("GIF"), "anim.png", "image/png"))


def test_it_rejects_files_over_five_megabytes(settings):
    data = noise_png((1200, 1200))  # incompressible: about 4.3 MB
    settings.COVER_MAX_BYTES = len(data) - 1
    with pytest.raises(ValidationError, match="larger than"):
        cover_clean(upload(data))


def test_it_rejects_images_larger_than_4096_on_a_side():
    data = image_bytes("PNG", size=(4097, 8), color=(0, 0, 0))
    with pytest.raises(ValidationError, match="4097×8"):
        cover_clean(upload(data))


def _png_header_only(width: int, height: int) -> bytes:
    """A tiny PNG whose header claims a huge canvas: a decompression bomb's shape."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return (
            struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
        )

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    idat = zlib.compress(b"\x00" * 64)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")


def test_it_rejects_a_decompression_bomb_before_decoding_it():
    bomb = _png_header_only(60000, 60000)
    assert len(bomb) < 200
    with pytest.raises(ValidationError):
        cover_clean(upload(bomb))


def test_it_rejects_a_truncated_image():
    data = image_bytes("JPEG", size=(256, 256))
    with pytest.raises(ValidationError, match="damaged or truncated"):
        cover_clean(upload(data[: len(data) // 2], "cut.jpg", "image/jpeg"))


def test_it_rejects_an_empty_file():
    with pytest.raises(ValidationError, match="empty"):
        cover_clean(upload(b""))


def test_placeholder_is_deterministic_per_slug_and_category():
    a = placeholder_svg(slug="pine-valley", category="games")
    assert a == placeholder_svg(slug="pine-valley", category="games")
    assert a != placeholder_svg(slug="pine-valley", category="stories")
    assert a != placeholder_svg(slug="dune-run", category="games")
    assert a.startswith("<svg")
