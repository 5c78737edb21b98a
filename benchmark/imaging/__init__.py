"""Image operations on Pillow images. Pure: no Django."""

from .inspect import ImageInfo, ImageRejected, inspect_image, make_thumbnail

__all__ = ["ImageInfo", "ImageRejected", "inspect_image", "make_thumbnail"]
