"""Readers and writers for each benchmark's own file format. Pure Python: no Django.

Each format module exposes:

    read(path: Path) -> Iterator[ItemRecord | AttachmentRecord]
        ``path`` is a file or a folder in the benchmark's layout. Items come before the
        attachments (answers, predictions, runs) that refer to them. Bad input raises
        FormatError naming the file, the record and the field.

    write(out: Path, items: Iterable[ItemRecord], attachments: Iterable[AttachmentRecord])
        -> list[Path]
        Writes the records back in the benchmark's layout under ``out`` (a folder, or a
        file name for single-file formats), overlaying the current parsed fields on each
        record's raw source JSON, streaming, and returns the paths written. Images are not
        copied here; the caller copies them to ``out/<ImageRef.path>``. A format whose
        benchmark finds images by file name (Agentic-MME) sets ``NAMES_IMAGES = True`` and
        takes ``image_names``, a dict it fills with ``{path written: ImageRef.path}`` for
        every item image; the caller then copies each item image to the path written.

``FORMATS`` maps a format name to its module.
"""

from .base import (
    AttachmentRecord,
    FormatError,
    ImageRef,
    ItemRecord,
    PlanRecord,
    ResponseRecord,
    TrajectoryRecord,
)

__all__ = [
    "AttachmentRecord",
    "FormatError",
    "ImageRef",
    "ItemRecord",
    "PlanRecord",
    "ResponseRecord",
    "TrajectoryRecord",
    "get_format",
]


def get_format(name: str):  # noqa: ANN201 - returns a module
    from . import agentic_mme, atp, llmi, mms

    formats = {"atp": atp, "llmi": llmi, "agentic-mme": agentic_mme, "mms": mms}
    try:
        return formats[name]
    except KeyError:
        raise FormatError(f"unknown format {name!r}; choose one of {', '.join(formats)}") from None
