"""Turn uploaded bytes into the bytes we store. Pure: no Django.

* The file is identified by content (Pillow), not by its name, and refused with a clear message
  when it is not an image, too many bytes, too many pixels (a decompression bomb) or truncated.
* The image is decoded completely once, so a file that only *looks* like an image (a valid
  header over broken data) is refused now rather than when someone crops it later.
* EXIF orientation is applied: a photo whose EXIF says "rotate 90" is stored upright, so pixel
  coordinates in the browser, in a recipe and in the stored file all agree.
* Formats a browser cannot show (TIFF, BMP, ...) are stored as PNG; MPO (multi-picture JPEG
  from phones) as its first frame in JPEG. PNG, JPEG, GIF and WebP are kept byte for byte when
  no orientation has to be applied, so re-uploading a file finds the stored copy by its hash.

Re-encoding is deterministic (same input bytes, same output bytes), so duplicates still dedupe.
"""

from __future__ import annotations

import io
import re
import warnings
from dataclasses import dataclass

from PIL import Image, ImageOps, UnidentifiedImageError

from benchmark.imaging.inspect import ImageInfo, ImageRejected, inspect_image

__all__ = ["WEB_FORMATS", "PreparedUpload", "prepare_upload"]

WEB_FORMATS = frozenset({"PNG", "JPEG", "GIF", "WEBP"})
"""Formats browsers show; anything else is converted on upload."""

_ORIENTATION = 0x0112
_PILLOW_BOMB = re.compile(r"Image size \((\d+) pixels\) exceeds limit")
_JPEG_QUALITY = 95


@dataclass(frozen=True)
class PreparedUpload:
    data: bytes
    info: ImageInfo
    original_format: str
    note: str = ""
    """What was changed, for the user ("EXIF orientation applied", "converted from TIFF")."""


def prepare_upload(data: bytes, *, max_pixels: int, max_bytes: int | None = None) -> PreparedUpload:
    """Check ``data`` and return the bytes to store. Raises :class:`ImageRejected` with a
    message that says what is wrong (the caller adds the file name)."""
    try:
        with warnings.catch_warnings():
            # Our own pixel limit applies; Pillow's warning threshold must not interfere.
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            info = inspect_image(data, max_pixels=max_pixels, max_bytes=max_bytes)
    except ImageRejected as exc:
        # Pillow refuses the most extreme bombs itself, in its own words and with its own
        # limit; say it with ours.
        match = _PILLOW_BOMB.search(str(exc))
        if match is None:
            raise
        pixels = int(match.group(1))
        raise ImageRejected(
            f"image is {pixels / 1e6:.1f} megapixels (a decompression bomb); "
            f"the limit is {max_pixels / 1e6:.1f} megapixels"
        ) from None
    try:
        with warnings.catch_warnings():
            # inspect_image already applied our own pixel limit.
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data)) as opened:
                opened.load()  # a full decode: truncated or corrupt data fails here
                orientation = opened.getexif().get(_ORIENTATION, 1)
                animated = getattr(opened, "n_frames", 1) > 1
                rotate = orientation not in (None, 1) and not animated
                if info.format in WEB_FORMATS and not rotate:
                    return PreparedUpload(data, info, info.format)
                note = []
                img: Image.Image = opened
                if rotate:
                    img = ImageOps.exif_transpose(opened) or opened
                    note.append("EXIF orientation applied")
                if info.format in ("JPEG", "MPO"):
                    out_format = "JPEG"
                    if info.format == "MPO":
                        note.append("first picture of the MPO file kept, as JPEG")
                else:
                    out_format = "PNG"
                    if info.format not in WEB_FORMATS:
                        note.append(f"converted from {info.format or 'an unknown format'} to PNG")
                encoded = _encode(img, out_format)
    except ImageRejected:
        raise
    except Image.DecompressionBombError as exc:  # pragma: no cover - inspect_image checks first
        raise ImageRejected(f"image too large: {exc}") from None
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError, EOFError) as exc:
        raise ImageRejected(f"not a readable image ({type(exc).__name__}: {exc})") from None
    new_info = inspect_image(encoded, max_pixels=max_pixels)
    return PreparedUpload(encoded, new_info, info.format, "; ".join(note))


def _encode(img: Image.Image, out_format: str) -> bytes:
    out = io.BytesIO()
    icc = img.info.get("icc_profile")
    if out_format == "JPEG":
        if img.mode not in ("RGB", "L", "CMYK"):
            img = img.convert("RGB")
        kwargs: dict[str, object] = {"quality": _JPEG_QUALITY, "optimize": False}
        if icc:
            kwargs["icc_profile"] = icc
        img.save(out, format="JPEG", **kwargs)
    else:
        if img.mode not in ("1", "L", "LA", "P", "RGB", "RGBA", "I;16"):
            img = img.convert("RGBA" if "A" in img.getbands() else "RGB")
        kwargs = {"compress_level": 6, "optimize": False}
        if icc:
            kwargs["icc_profile"] = icc
        img.save(out, format="PNG", **kwargs)
    return out.getvalue()
