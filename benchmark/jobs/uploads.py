"""Where a job's uploaded files go and how they get there: one folder per job under MEDIA_ROOT/<area>/<job id>/, uploads written in chunks, zip archives unpacked safely (no path traversal, links, bombs or junk)."""

from __future__ import annotations

import re  # noqa: E402
import shutil
import stat  # noqa: E402
import zipfile  # noqa: E402
from pathlib import Path
from typing import (
    IO,  # noqa: E402
)

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile  # noqa: E402

from benchmark.exceptions import (
    ValidationFailed,
)

_ZIP_JUNK = ("__MACOSX/", ".DS_Store", "Thumbs.db")


_MAX_ZIP_MEMBERS = 200_000


_DRIVE = re.compile(r"^[A-Za-z]:")


def upload_folder(area: str, job_id: int) -> Path:
    """Where a job keeps its uploaded files until it has read them: MEDIA_ROOT/<area>/<job>."""
    return Path(settings.MEDIA_ROOT) / area / str(job_id)


def upload_folder_remove(*, folder: str | None, area: str) -> None:
    """Remove a job's uploaded files; only ever a folder below MEDIA_ROOT/<area>."""
    base = (Path(settings.MEDIA_ROOT) / area).resolve()
    if folder and Path(folder).resolve().is_relative_to(base):
        shutil.rmtree(folder, ignore_errors=True)


def upload_write(upload: UploadedFile, target: Path) -> None:
    with target.open("wb") as dst:
        for chunk in upload.chunks():
            dst.write(chunk)


def _safe_member_target(root: Path, info: zipfile.ZipInfo) -> Path | None:
    """Where a zip member goes under ``root``; None for junk; raise for unsafe names."""
    name = info.filename
    if any(part in name for part in _ZIP_JUNK):
        return None
    mode = info.external_attr >> 16
    if stat.S_ISLNK(mode):
        raise ValidationFailed(f"the zip holds a symbolic link ({name!r}); links are refused")
    if name.startswith(("/", "\\")) or "\\" in name or _DRIVE.match(name):
        raise ValidationFailed(f"the zip holds an unsafe path {name!r}")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise ValidationFailed(f"the zip holds a path that leaves its folder: {name!r}")
    target = root.joinpath(*parts).resolve() if parts else root
    if not target.is_relative_to(root.resolve()):
        raise ValidationFailed(f"the zip holds a path that leaves its folder: {name!r}")
    return target


def zip_extract(upload: IO[bytes], root: Path, max_bytes: int) -> Path:
    """Extract a zip safely into ``root``; return the dataset folder (the single top folder
    when the zip wraps everything in one, else ``root``)."""
    try:
        with zipfile.ZipFile(upload) as zf:
            members = zf.infolist()
            if len(members) > _MAX_ZIP_MEMBERS:
                raise ValidationFailed(
                    f"the zip holds {len(members)} entries; the limit is {_MAX_ZIP_MEMBERS}"
                )
            total = sum(m.file_size for m in members)
            if total > max_bytes:
                raise ValidationFailed(
                    f"the zip unpacks to {total / 1e6:.1f} MB; the limit is "
                    f"{max_bytes / 1e6:.1f} MB"
                )
            for info in members:
                target = _safe_member_target(root, info)
                if target is None:
                    continue
                if info.is_dir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(info) as src, target.open("wb") as dst:
                    shutil.copyfileobj(src, dst, 1024 * 1024)
    except zipfile.BadZipFile as exc:
        raise ValidationFailed(f"the file is not a readable zip archive ({exc})") from None
    except RuntimeError as exc:  # encrypted members
        raise ValidationFailed(f"the zip cannot be read: {exc}") from None
    entries = [p for p in root.iterdir()]
    if not entries:
        raise ValidationFailed("the zip is empty")
    if len(entries) == 1 and entries[0].is_dir():
        return entries[0]
    return root
