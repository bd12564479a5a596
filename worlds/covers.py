"""Cover images: validate an upload from its bytes, re-encode it clean, draw placeholders.

Uploads are never stored as sent. The type is sniffed from the bytes (the name and the
Content-Type are the client's word), the pixel size is checked from the header before any pixel
is decoded (a decompression bomb is a small file that decodes to gigabytes), and the image is
re-encoded from its pixels alone, so EXIF, GPS, ICC and text chunks never reach storage.
"""

import hashlib
import io
import warnings
from dataclasses import dataclass

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.files.base import ContentFile
from PIL import Image, ImageOps, UnidentifiedImageError

# Pillow's own bomb guard, as a second line behind the explicit size check below: above this it
# warns (turned into an error here), above twice this it raises.
Image.MAX_IMAGE_PIXELS = 4096 * 4096

_FORMATS = {"JPEG": "jpg", "PNG": "png", "WEBP": "webp"}


@dataclass(frozen=True)
class CleanCover:
    content: ContentFile
    extension: str
    width: int
    height: int


def _read_limited(upload, limit: int) -> bytes:
    # Read one byte past the limit: enough to know it is too big without reading all of it.
    if hasattr(upload, "seek"):
        upload.seek(0)
    data = upload.read(limit + 1)
    if len(data) > limit:
        raise ValidationError(
            f"The cover is larger than {limit // (1024 * 1024)} MB.", code="too_large"
        )
    if not data:
        raise ValidationError("The cover file is empty.", code="empty")
    return data


def _open_checked(data: bytes) -> Image.Image:
    max_side = settings.COVER_MAX_SIDE
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            image = Image.open(io.BytesIO(data), formats=list(_FORMATS))
    except (UnidentifiedImageError, Image.DecompressionBombError, Image.DecompressionBombWarning):
        raise ValidationError(
            "The cover must be a JPEG, PNG or WebP image.", code="invalid_image"
        ) from None
    width, height = image.size
    if width > max_side or height > max_side:
        raise ValidationError(
            f"The cover is {width}×{height} pixels; the most is {max_side}×{max_side}.",
            code="too_many_pixels",
        )
    if width < 1 or height < 1:
        raise ValidationError("The cover has no pixels.", code="invalid_image")
    return image


def cover_clean(upload) -> CleanCover:
    """Validate an uploaded cover and return it re-encoded, metadata stripped.

    Raises ValidationError with a user-facing message for anything that is not a JPEG, PNG or
    WebP within the byte and pixel limits, including truncated files and files whose bytes do
    not match their claimed type.
    """
    data = _read_limited(upload, settings.COVER_MAX_BYTES)
    image = _open_checked(data)
    fmt = image.format
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            image.load()
            # Honour the camera's rotation before the EXIF that carries it is dropped.
            image = ImageOps.exif_transpose(image)
    except (OSError, SyntaxError, ValueError, Image.DecompressionBombWarning):
        raise ValidationError(
            "The cover image is damaged or truncated.", code="invalid_image"
        ) from None
    return _reencode(image, fmt)


def _reencode(image: Image.Image, fmt: str) -> CleanCover:
    if fmt == "JPEG":
        mode = "RGB"
    else:
        mode = "RGBA" if image.mode in ("RGBA", "LA", "PA", "P") else "RGB"
    pixels = image.convert(mode)
    # A fresh image from raw pixels carries no info dict: nothing but pixels is written.
    clean = Image.frombytes(mode, pixels.size, pixels.tobytes())
    out = io.BytesIO()
    if fmt == "JPEG":
        clean.save(out, format="JPEG", quality=88, optimize=True)
    elif fmt == "PNG":
        clean.save(out, format="PNG", optimize=True)
    else:
        clean.save(out, format="WEBP", quality=85)
    ext = _FORMATS[fmt]
    return CleanCover(
        content=ContentFile(out.getvalue(), name=f"cover.{ext}"),
        extension=ext,
        width=clean.width,
        height=clean.height,
    )


# --- Placeholders -----------------------------------------------------------------------------

# One motif per category, drawn over a gradient whose hues come from the slug.
_MOTIFS = {
    "games": (
        '<g fill="none" stroke="{fg}" stroke-width="10" opacity=".55">'
        '<rect x="250" y="120" width="140" height="140" rx="14"/>'
        '<rect x="410" y="190" width="90" height="90" rx="10"/>'
        '<circle cx="200" cy="230" r="36"/></g>'
    ),
    "stories": (
        '<g fill="none" stroke="{fg}" stroke-width="9" opacity=".55">'
        '<path d="M190 110 h120 q30 0 30 30 v150 q0 -25 -30 -25 h-120z"/>'
        '<path d="M450 110 h-120 q-30 0 -30 30 v150 q0 -25 30 -25 h120z"/></g>'
    ),
    "characters": (
        '<g fill="none" stroke="{fg}" stroke-width="10" opacity=".55">'
        '<circle cx="320" cy="150" r="55"/>'
        '<path d="M220 300 q100 -120 200 0"/></g>'
    ),
    "live": (
        '<g fill="none" stroke="{fg}" stroke-width="10" opacity=".55">'
        '<circle cx="320" cy="190" r="22" fill="{fg}"/>'
        '<path d="M260 130 a85 85 0 0 0 0 120 M380 130 a85 85 0 0 1 0 120"/>'
        '<path d="M220 90 a140 140 0 0 0 0 200 M420 90 a140 140 0 0 1 0 200"/></g>'
    ),
}


def placeholder_svg(*, slug: str, category: str) -> str:
    """A deterministic cover for a world without one (same slug and category, same picture)."""
    digest = hashlib.sha256(f"{category}:{slug}".encode()).digest()
    hue_a = digest[0] * 360 // 256
    hue_b = (hue_a + 40 + digest[1] % 120) % 360
    angle = digest[2] % 180
    motif = _MOTIFS.get(category, _MOTIFS["games"]).format(fg=f"hsl({hue_b},70%,85%)")
    dots = "".join(
        f'<circle cx="{digest[i] * 640 // 256}" cy="{digest[i + 1] * 360 // 256}" '
        f'r="{2 + digest[i + 2] % 6}" fill="#fff" opacity=".25"/>'
        for i in range(3, 30, 3)
    )
    return (
        '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 640 360" width="640" height="360">'
        f'<defs><linearGradient id="g" gradientTransform="rotate({angle} .5 .5)">'
        f'<stop offset="0" stop-color="hsl({hue_a},55%,28%)"/>'
        f'<stop offset="1" stop-color="hsl({hue_b},60%,16%)"/></linearGradient></defs>'
        f'<rect width="640" height="360" fill="url(#g)"/>{dots}{motif}</svg>'
    )
