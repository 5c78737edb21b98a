"""Where a job's uploaded files go and how they get there: one folder per job under MEDIA_ROOT/<area>/<job id>/, uploads written in chunks, zip archives unpacked safely (no path traversal, links, bombs or junk).

One request's files are placed by ``place_uploads``: everything is written into a staging
folder under the upload area with no database transaction open (on SQLite any transaction
holds the write lock, so unpacking inside one would make other people's writes fail), under
one ``UploadBudget`` per request (bytes actually written and number of entries, over every file
and every zip member), and every problem is a ValidationFailed naming the archive and member.
Only then does the caller create its Job in a short transaction and ``claim`` the folder, which
renames it to the job's folder. Any failure removes everything written for the request."""

from __future__ import annotations

import lzma
import os
import re  # noqa: E402
import shutil
import stat  # noqa: E402
import struct
import time
import uuid
import zipfile  # noqa: E402
import zlib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import (
    IO,  # noqa: E402
)

from django.conf import settings
from django.core.exceptions import SuspiciousFileOperation
from django.core.files.uploadedfile import UploadedFile  # noqa: E402
from django.utils.text import get_valid_filename

from benchmark.exceptions import (
    ValidationFailed,
)

_ZIP_JUNK = ("__MACOSX/", ".DS_Store", "Thumbs.db")


#: The most files, folders and zip entries one upload (one request) may hold.
_MAX_ZIP_MEMBERS = 200_000


_DRIVE = re.compile(r"^[A-Za-z]:")

#: Longest name of one file or folder, and of a whole relative path, in UTF-8 bytes (Linux:
#: NAME_MAX 255, PATH_MAX 4096, less room for MEDIA_ROOT/<area>/<job>/).
_MAX_NAME_BYTES = 255
_MAX_PATH_BYTES = 3000
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")

#: Compression methods Python's zipfile can read.
_READABLE_COMPRESSION = {
    zipfile.ZIP_STORED,
    zipfile.ZIP_DEFLATED,
    zipfile.ZIP_BZIP2,
    zipfile.ZIP_LZMA,
}
#: What reading a damaged, truncated or oddly compressed member raises.
_READ_ERRORS = (
    zipfile.BadZipFile,
    zlib.error,
    lzma.LZMAError,
    EOFError,
    struct.error,
    NotImplementedError,
    RuntimeError,
    ValueError,
    OSError,  # bz2 reports damage as OSError
)

_CHUNK = 1024 * 1024
_STAGING_PREFIX = ".staging-"
#: Staging folders older than this were left by a process that died while placing an upload.
_STAGING_STALE_SECONDS = 24 * 60 * 60


def upload_folder(area: str, job_id: int) -> Path:
    """Where a job keeps its uploaded files until it has read them: MEDIA_ROOT/<area>/<job>."""
    return Path(settings.MEDIA_ROOT) / area / str(job_id)


def upload_folder_remove(*, folder: str | None, area: str) -> None:
    """Remove a job's uploaded files; only ever a folder below MEDIA_ROOT/<area>."""
    base = (Path(settings.MEDIA_ROOT) / area).resolve()
    if folder and Path(folder).resolve().is_relative_to(base):
        shutil.rmtree(folder, ignore_errors=True)


def safe_filename(name: str, default: str) -> str:
    """``name`` made a plain file name (Django's get_valid_filename), else ``default``."""
    try:
        return get_valid_filename(name) or default
    except SuspiciousFileOperation:  # "." or ".." and the like
        return default


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 1e6 else f"{n / 1e3:.0f} kB"


@dataclass
class UploadBudget:
    """What one request may put on disk: ``max_bytes`` (MAX_UPLOAD_MB) counted on the bytes
    actually written, and ``max_members`` files, folders and zip entries, shared by every file
    and every member of every archive of the request."""

    max_bytes: int = field(default_factory=lambda: int(settings.BENCHWRIGHT_MAX_UPLOAD_BYTES))
    max_members: int = field(default_factory=lambda: _MAX_ZIP_MEMBERS)
    written: int = 0
    members: int = 0

    def count_member(self, where: str) -> None:
        self.members += 1
        if self.members > self.max_members:
            raise ValidationFailed(
                f"{where}: the upload holds more than {self.max_members} files and zip "
                f"entries; the limit is {self.max_members} for one upload"
            )

    def over_bytes(self, where: str) -> ValidationFailed:
        return ValidationFailed(
            f"{where}: the upload unpacks to more than {_mb(self.max_bytes)}; the limit is "
            f"{_mb(self.max_bytes)} for all files of one upload together"
        )

    def check_declared(self, size: int, where: str) -> None:
        """Fail early when what is still to be written is declared larger than what is left."""
        if self.written + size > self.max_bytes:
            raise self.over_bytes(where)

    def copy(self, chunks: Iterable[bytes], dst: IO[bytes], where: str) -> None:
        """Write ``chunks`` to ``dst``, stopping as soon as the request's bytes run out."""
        for chunk in chunks:
            self.written += len(chunk)
            if self.written > self.max_bytes:
                raise self.over_bytes(where)
            dst.write(chunk)


def upload_write(upload: UploadedFile, target: Path, budget: UploadBudget | None = None) -> None:
    with target.open("wb") as dst:
        if budget is None:
            for chunk in upload.chunks():
                dst.write(chunk)
        else:
            budget.copy(upload.chunks(), dst, f"file {upload.name!r}")


# --------------------------------------------------------------------------- names


def _name_problem(parts: list[str]) -> str | None:
    """Why a relative path cannot be a file name on this server, or None."""
    for part in parts:
        if _CONTROL.search(part):
            return "the name holds a control character"
        try:
            size = len(part.encode("utf-8"))
        except UnicodeEncodeError:
            return "the name is not valid text"
        if size > _MAX_NAME_BYTES:
            return f"a name in the path is longer than {_MAX_NAME_BYTES} bytes"
    if len("/".join(parts).encode("utf-8")) > _MAX_PATH_BYTES:
        return f"the path is longer than {_MAX_PATH_BYTES} bytes"
    return None


class _PathTree:
    """The names one upload places, to refuse clashes before anything is written: the same
    file twice, and a name that is a file in one place and a folder in another."""

    def __init__(self, container: str, what: str) -> None:
        self.container = container
        self.what = what
        self.kinds: dict[tuple[str, ...], tuple[bool, str]] = {}  # path -> (is_dir, name)

    def _clash(self, name: str, other: str) -> ValidationFailed:
        return ValidationFailed(
            f"{self.container}, {self.what} {name!r}: clashes with {other!r} (one name cannot be both a "
            "file and a folder)"
        )

    def add(self, parts: tuple[str, ...], *, is_dir: bool, name: str) -> None:
        for i in range(1, len(parts)):
            seen = self.kinds.setdefault(parts[:i], (True, name))
            if not seen[0]:
                raise self._clash(name, seen[1])
        if not parts:
            return
        known = self.kinds.get(parts)
        if known is None:
            self.kinds[parts] = (is_dir, name)
        elif not is_dir and not known[0]:
            raise ValidationFailed(
                f"{self.container}, {self.what} {name!r}: the upload holds this file twice"
                + ("" if known[1] == name else f" (also as {known[1]!r})")
            )
        elif is_dir != known[0]:
            raise self._clash(name, known[1])


# --------------------------------------------------------------------------- zip archives


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
    problem = _name_problem(parts)
    if problem:
        raise ValidationFailed(
            f"the zip holds a name this server cannot store: {name!r} ({problem})"
        )
    target = root.joinpath(*parts).resolve() if parts else root
    if not target.is_relative_to(root.resolve()):
        raise ValidationFailed(f"the zip holds a path that leaves its folder: {name!r}")
    return target


def _archive(name: str) -> str:
    """How messages name an archive (they are shown with a capital first letter, so they
    start with a word, not with the file's name)."""
    return f"archive {name!r}" if name else "the zip"


def _open_zip(upload: IO[bytes], archive: str) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(upload)
    except (zipfile.BadZipFile, *_READ_ERRORS, UnicodeDecodeError) as exc:
        raise ValidationFailed(f"{archive} is not a readable zip archive ({exc})") from None


def _member_chunks(zf: zipfile.ZipFile, info: zipfile.ZipInfo, where: str) -> Iterator[bytes]:
    """A member's bytes; damaged, truncated or unreadable data raises ValidationFailed."""
    try:
        with zf.open(info) as src:
            while chunk := src.read(_CHUNK):
                yield chunk
    except _READ_ERRORS as exc:
        raise ValidationFailed(
            f"{where}: cannot be read; the archive is damaged or incomplete ({exc})"
        ) from None


def zip_extract(
    upload: IO[bytes],
    root: Path,
    budget: UploadBudget | int | None = None,
    *,
    archive: str = "",
) -> Path:
    """Extract a zip safely into ``root``; return the dataset folder (the single top folder
    when the zip wraps everything in one, else ``root``). Every entry and every byte written
    counts against ``budget`` (an int: a budget of that many bytes for this archive alone).
    Names, clashes, encryption and compression are checked for all members before anything
    is written; damaged data stops at the member that holds it. Every problem raises
    ValidationFailed naming ``archive`` (the uploaded file's name) and the member; the caller
    removes ``root``."""
    archive = _archive(archive)
    if not isinstance(budget, UploadBudget):
        budget = UploadBudget() if budget is None else UploadBudget(max_bytes=budget)
    with _open_zip(upload, archive) as zf:
        members = zf.infolist()
        plan: list[tuple[zipfile.ZipInfo, Path, str]] = []
        tree = _PathTree(archive, "member")
        declared = 0
        for info in members:
            where = f"{archive}, member {info.filename!r}"
            budget.count_member(where)
            try:
                target = _safe_member_target(root, info)
            except ValidationFailed as exc:
                raise ValidationFailed(f"{archive}: {exc.message}") from None
            if target is None:
                continue
            if info.flag_bits & 0x1:
                raise ValidationFailed(
                    f"{where}: the member is encrypted; upload an archive without a password"
                )
            if info.compress_type not in _READABLE_COMPRESSION:
                raise ValidationFailed(
                    f"{where}: compressed with method {info.compress_type}, which cannot be "
                    "read; zip it again with the usual (deflate) compression"
                )
            declared += 0 if info.is_dir() else info.file_size
            budget.check_declared(declared, where)
            parts = target.relative_to(root.resolve()).parts if target != root else ()
            tree.add(parts, is_dir=info.is_dir(), name=info.filename)
            plan.append((info, target, where))
        for info, target, where in plan:
            if info.is_dir():
                try:
                    target.mkdir(parents=True, exist_ok=True)
                except OSError as exc:
                    raise _unstorable(where, exc) from None
                continue
            with _create(target, where) as dst:
                budget.copy(_member_chunks(zf, info, where), dst, where)
    entries = [p for p in root.iterdir()]
    if not entries:
        raise ValidationFailed(f"{archive} is empty")
    if len(entries) == 1 and entries[0].is_dir():
        return entries[0]
    return root


def _unstorable(where: str, exc: OSError) -> ValidationFailed:
    return ValidationFailed(f"{where}: cannot be stored on this server ({exc.strerror or exc})")


def _create(target: Path, where: str) -> IO[bytes]:
    """A new file at ``target`` (its folders made), never an existing one; a name the file
    system refuses is the user's error, naming ``where``."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        return target.open("xb")
    except OSError as exc:
        raise _unstorable(where, exc) from None


def _link_temporary(upload: UploadedFile, target: Path, budget: UploadBudget, where: str) -> bool:
    """Place an upload that Django spooled to a temporary file (a large one) by a hard link to
    that file instead of a copy: tens of megabytes not read and written again. False when it
    cannot be linked (no temporary file, another file system, no hard links there), so the
    caller copies. Like a copy, it never replaces an existing file; the request's end
    removes only the temporary name."""
    temporary = getattr(upload, "temporary_file_path", None)
    if temporary is None:
        return False
    source = temporary()
    size = os.path.getsize(source)  # what is on disk, whatever the request declared
    if budget.written + size > budget.max_bytes:
        raise budget.over_bytes(where)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        os.link(source, target)
    except FileExistsError as exc:
        raise _unstorable(where, exc) from None
    except OSError:
        return False
    # the temporary file is private to the server process (0600): as a copy would be
    os.chmod(target, settings.FILE_UPLOAD_PERMISSIONS or 0o644)
    budget.written += size
    return True


# --------------------------------------------------------------------------- one request


@dataclass
class PlacedUploads:
    """The files of one request while they are being placed: ``root`` is a staging folder
    under MEDIA_ROOT/<area>/ until ``claim`` renames it to the job's folder."""

    area: str
    root: Path
    budget: UploadBudget
    tree: _PathTree = field(default_factory=lambda: _PathTree("the upload", "file"))
    _staging: Path | None = None

    def add_file(self, upload: UploadedFile, relative: str | Iterable[str]) -> Path:
        """Write one uploaded file at ``relative`` (a name, a/b/c, or its parts) in the
        folder; the path is checked like a zip member's."""
        name = relative if isinstance(relative, str) else "/".join(relative)
        where = f"file {name!r}"
        self.budget.count_member(where)
        if "\\" in name or name.startswith("/") or _DRIVE.match(name):
            raise ValidationFailed(f"the upload holds an unsafe path {name!r}")
        parts = [p for p in name.split("/") if p not in ("", ".")]
        if not parts or ".." in parts:
            raise ValidationFailed(f"the upload holds an unsafe path {name!r}")
        problem = _name_problem(parts)
        if problem:
            raise ValidationFailed(f"{where}: the server cannot store this name ({problem})")
        self.tree.add(tuple(parts), is_dir=False, name=name)
        target = self.root.joinpath(*parts)
        self.budget.check_declared(upload.size or 0, where)
        if _link_temporary(upload, target, self.budget, where):
            return target
        with _create(target, where) as dst:
            upload.seek(0)
            self.budget.copy(upload.chunks(), dst, where)
        return target

    def add_zip(self, upload: IO[bytes], *, archive: str, into: str = "") -> Path:
        """Unpack a zip into the folder (or its subfolder ``into``, a plain name); return the
        unpacked dataset folder (see ``zip_extract``)."""
        upload.seek(0)
        if not zipfile.is_zipfile(upload):
            raise ValidationFailed(f"{_archive(archive)} is not a readable zip archive")
        upload.seek(0)
        target = self.root
        if into:
            self.tree.add((into,), is_dir=True, name=archive)
            target = self.root / into
            target.mkdir()
        return zip_extract(upload, target, self.budget, archive=archive)

    def claim(self, job_id: int) -> Path:
        """Rename the staging folder to the job's folder (a rename is instant); returns the
        job's folder."""
        return self.move_to(upload_folder(self.area, job_id))

    def move_to(self, final: Path) -> Path:
        """Rename the staging folder to ``final`` (the job's folder, as the job pipeline's
        placement callback receives it)."""
        if final.exists():  # left by an earlier database: the id is new, so nobody owns it
            shutil.rmtree(final)
        os.rename(self.root, final)
        self._staging, self.root = self.root, final
        return final

    def final(self, path: Path) -> Path:
        """Where ``path`` (written while staging) is after ``claim``."""
        if self._staging is None or not path.is_relative_to(self._staging):
            return path
        return self.root / path.relative_to(self._staging)


def _remove_stale_staging(area_dir: Path) -> None:
    cutoff = time.time() - _STAGING_STALE_SECONDS
    for old in area_dir.glob(f"{_STAGING_PREFIX}*"):
        try:
            if old.stat().st_mtime < cutoff:
                shutil.rmtree(old, ignore_errors=True)
        except OSError:
            continue


@contextmanager
def place_uploads(area: str, budget: UploadBudget | None = None) -> Iterator[PlacedUploads]:
    """A staging folder for one request's files under MEDIA_ROOT/<area>/, with one budget.
    Place the files (no transaction open), then create the job in a short transaction and
    ``claim`` the folder inside the ``with`` block. Any exception removes everything written
    for the request, also after the claim."""
    area_dir = Path(settings.MEDIA_ROOT) / area
    area_dir.mkdir(parents=True, exist_ok=True)
    _remove_stale_staging(area_dir)
    root = area_dir / f"{_STAGING_PREFIX}{uuid.uuid4().hex}"
    root.mkdir()
    placed = PlacedUploads(area=area, root=root, budget=budget or UploadBudget())
    try:
        yield placed
    except BaseException:
        shutil.rmtree(placed.root, ignore_errors=True)
        raise
    finally:
        if placed._staging is None:  # never claimed: nothing refers to it
            shutil.rmtree(root, ignore_errors=True)
