"""Check that bytes are a real image of a sane size, and make thumbnails."""

from __future__ import annotations

import hashlib
import io
import warnings
from dataclasses import dataclass

from PIL import Image, ImageOps, UnidentifiedImageError

THUMBNAIL_SIZE = (320, 320)


class ImageRejected(ValueError):
    """The bytes are not an image we accept; the message says why."""


@dataclass(frozen=True)
class ImageInfo:
    sha256: str
    format: str
    width: int
    height: int
    size_bytes: int

    @property
    def extension(self) -> str:
        return {"JPEG": "jpg", "PNG": "png", "GIF": "gif", "WEBP": "webp"}.get(
            self.format, self.format.lower() or "bin"
        )


def inspect_image(data: bytes, *, max_pixels: int, max_bytes: int | None = None) -> ImageInfo:
    """Identify the format by content, not name; refuse non-images, oversized files and
    decompression bombs with a message that says which limit was hit."""
    if max_bytes is not None and len(data) > max_bytes:
        raise ImageRejected(
            f"file is {len(data) / 1e6:.1f} MB; the limit is {max_bytes / 1e6:.1f} MB"
        )
    try:
        with Image.open(io.BytesIO(data)) as img:
            width, height = img.size
            fmt = img.format or ""
            if width * height > max_pixels:
                raise ImageRejected(
                    f"image is {width}x{height} = {width * height / 1e6:.1f} megapixels; "
                    f"the limit is {max_pixels / 1e6:.1f} megapixels"
                )
            img.verify()
    except ImageRejected:
        raise
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
        raise ImageRejected(f"not a readable image ({exc.__class__.__name__}: {exc})") from None
    except Image.DecompressionBombError as exc:  # pragma: no cover - caught above by size
        raise ImageRejected(f"image too large: {exc}") from None
    return ImageInfo(
        sha256=hashlib.sha256(data).hexdigest(),
        format=fmt,
        width=width,
        height=height,
        size_bytes=len(data),
    )


def make_thumbnail(data: bytes) -> bytes:
    """A small PNG/JPEG preview, with EXIF orientation applied."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", Image.DecompressionBombWarning)
        with Image.open(io.BytesIO(data)) as source:
            img = ImageOps.exif_transpose(source)
            img.thumbnail(THUMBNAIL_SIZE)
            out = io.BytesIO()
            if img.mode not in ("RGB", "RGBA", "L", "LA"):
                img = img.convert("RGBA")
            img.save(out, format="PNG", optimize=True)
            return out.getvalue()
