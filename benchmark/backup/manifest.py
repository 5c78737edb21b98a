"""A backup folder and its manifest, without Django: what ``manage.py backup`` writes and what
``manage.py restore`` checks before it writes anything.

    OUT/
      manifest.json      format, version, when, the database engine and its tools' versions,
                         every app's applied migrations, rows per model, and every file below
                         with its size and sha256
      manifest.sha256    the sha256 of manifest.json, as `sha256sum` writes it, so
                         `cd OUT && sha256sum -c manifest.sha256` checks it by hand
      database.sqlite3   (SQLite) a copy made with SQLite's online backup API, or
      database.pgdump    (PostgreSQL) pg_dump's custom format
      media/...          every file of the media storage (local MEDIA_ROOT or the bucket)
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path, PurePosixPath
from typing import IO, Any

FORMAT = "benchwright-backup"
VERSION = 1
MANIFEST = "manifest.json"
CHECKSUM = "manifest.sha256"
MEDIA = "media"
DATABASE_FILES = {"sqlite": "database.sqlite3", "postgresql": "database.pgdump"}

_CHUNK = 1024 * 1024
_HEX64 = re.compile(r"[0-9a-f]{64}")
#: Problems listed in one message at most (the rest are counted).
_SHOWN = 5


class BackupInvalid(Exception):
    """The backup folder cannot be restored as it is; the message says what and where."""

    def __init__(self, message: str) -> None:
        self.message = message
        super().__init__(message)


def copy_hashed(src: IO[bytes], target: Path) -> tuple[int, str]:
    """Copy ``src`` into the new file ``target``; (bytes written, their sha256)."""
    digest, size = hashlib.sha256(), 0
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("xb") as out:
        while chunk := src.read(_CHUNK):
            digest.update(chunk)
            out.write(chunk)
            size += len(chunk)
    return size, digest.hexdigest()


def file_hashed(path: Path) -> tuple[int, str]:
    """(size, sha256) of the file at ``path``."""
    digest, size = hashlib.sha256(), 0
    with path.open("rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
            size += len(chunk)
    return size, digest.hexdigest()


def manifest_write(folder: Path, manifest: dict[str, Any]) -> str:
    """Write ``manifest.json`` and its checksum file into ``folder``; returns the checksum."""
    body = json.dumps(manifest, indent=1, sort_keys=True, ensure_ascii=False).encode() + b"\n"
    (folder / MANIFEST).write_bytes(body)
    checksum = hashlib.sha256(body).hexdigest()
    (folder / CHECKSUM).write_text(f"{checksum}  {MANIFEST}\n", encoding="ascii")
    return checksum


def safe_name(name: object) -> bool:
    """True for a relative POSIX path without "", "." or ".." parts (it stays in the folder)."""
    if not isinstance(name, str) or not name or "\\" in name or "\x00" in name:
        return False
    path = PurePosixPath(name)
    return not path.is_absolute() and all(p not in ("", ".", "..") for p in name.split("/"))


def manifest_read(folder: Path) -> dict[str, Any]:
    """The manifest of the backup in ``folder``, once its checksum matches and its shape is
    right (every file named inside the folder, with a size and a sha256); else BackupInvalid."""
    if not folder.is_dir():
        raise BackupInvalid(f"{folder} is not a folder (a backup is the folder backup wrote)")
    manifest_path, checksum_path = folder / MANIFEST, folder / CHECKSUM
    for path in (manifest_path, checksum_path):
        if not path.is_file():
            raise BackupInvalid(f"{path} is missing: {folder} is not a complete backup")
    words = checksum_path.read_text(encoding="ascii", errors="replace").split()
    if len(words) != 2 or not _HEX64.fullmatch(words[0]) or words[1] != MANIFEST:
        raise BackupInvalid(f"{checksum_path} is not '<sha256>  {MANIFEST}'")
    body = manifest_path.read_bytes()
    if hashlib.sha256(body).hexdigest() != words[0]:
        raise BackupInvalid(
            f"{manifest_path} does not match the checksum in {checksum_path}: the manifest was "
            "changed or damaged after the backup was written"
        )
    try:
        manifest = json.loads(body)
    except ValueError as exc:
        raise BackupInvalid(f"{manifest_path} is not JSON: {exc}") from None
    _check_shape(manifest, manifest_path)
    return manifest  # type: ignore[no-any-return]


def _check_shape(manifest: Any, where: Path) -> None:
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise BackupInvalid(f"{where} is not a Benchwright backup manifest")
    if manifest.get("version") != VERSION:
        raise BackupInvalid(
            f"{where} has backup format version {manifest.get('version')!r}; this Benchwright "
            f"reads version {VERSION}"
        )
    database = manifest.get("database")
    if not isinstance(database, dict) or database.get("engine") not in DATABASE_FILES:
        raise BackupInvalid(f"{where}: 'database.engine' must be one of {sorted(DATABASE_FILES)}")
    for key in ("migrations", "counts"):
        if not isinstance(manifest.get(key), dict):
            raise BackupInvalid(f"{where}: '{key}' must be an object")
    _check_files(manifest.get("files"), DATABASE_FILES[database["engine"]], where)


def _check_files(files: Any, database_file: str, where: Path) -> None:
    if not isinstance(files, list):
        raise BackupInvalid(f"{where}: 'files' must be a list")
    names = set()
    for n, entry in enumerate(files):
        ok = (
            isinstance(entry, dict)
            and safe_name(entry.get("path"))
            and (entry["path"] == database_file or entry["path"].startswith(MEDIA + "/"))
            and isinstance(entry.get("size"), int)
            and entry["size"] >= 0
            and isinstance(entry.get("sha256"), str)
            and _HEX64.fullmatch(entry["sha256"])
        )
        if not ok:
            raise BackupInvalid(
                f"{where}: files[{n}] must be {{path: '{database_file}' or 'media/...' inside "
                "the folder, size, sha256}"
            )
        names.add(entry["path"])
    if database_file not in names:
        raise BackupInvalid(f"{where} lists no {database_file}")
    if len(names) != len(files):
        raise BackupInvalid(f"{where} lists a file twice")


def files_verify(folder: Path, manifest: dict[str, Any]) -> None:
    """Every file the manifest lists is in ``folder`` as a regular file with its size and
    sha256, and nothing else is below ``media/``; else BackupInvalid naming the files."""
    problems: list[str] = []
    listed = set()
    for entry in manifest["files"]:
        listed.add(entry["path"])
        path = folder.joinpath(*entry["path"].split("/"))
        if path.is_symlink() or not path.is_file():
            problems.append(f"{entry['path']}: missing")
            continue
        size, sha = file_hashed(path)
        if size != entry["size"]:
            problems.append(f"{entry['path']}: {size} bytes, the manifest says {entry['size']}")
        elif sha != entry["sha256"]:
            problems.append(f"{entry['path']}: its sha256 differs from the manifest's")
    media = folder / MEDIA
    if media.is_dir():
        for path in sorted(media.rglob("*")):
            rel = path.relative_to(folder).as_posix()
            if (path.is_file() or path.is_symlink()) and rel not in listed:
                problems.append(f"{rel}: not in the manifest")
    if problems:
        more = f" (and {len(problems) - _SHOWN} more)" if len(problems) > _SHOWN else ""
        raise BackupInvalid(
            f"the backup in {folder} is damaged, nothing was restored: "
            + "; ".join(problems[:_SHOWN])
            + more
        )
