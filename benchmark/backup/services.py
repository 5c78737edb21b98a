"""Backup and restore of a whole Benchwright: the database and the media storage.

``backup_write(out=...)`` snapshots the database while people keep working (SQLite's online
backup, or pg_dump), then copies every file of the media storage (local MEDIA_ROOT or the
bucket, through Django's storage API) and writes a checksummed manifest. The database comes
first: files are stored under their content hash and only added, so every file the snapshot
names is there when the files are copied; a file removed meanwhile (a finished job's upload)
is listed under ``skipped``. The folder appears under its name only when complete.

``backup_restore(source=...)`` checks everything before it writes anything (the manifest's
checksum, every file's size and sha256, the engine, the migrations, the tools), refuses a
database or storage that already holds data unless ``force``, writes the files, loads the
database (one transaction), removes the files it wrote if that fails, then migrates when the
backup predates the code, and checks the rows per model against the manifest."""

from __future__ import annotations

import secrets
import shutil
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.core.files.storage import default_storage
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.db.migrations.loader import MigrationLoader

from benchmark.backup import databases
from benchmark.backup.databases import BackupFailed
from benchmark.backup.manifest import (
    DATABASE_FILES,
    FORMAT,
    MEDIA,
    VERSION,
    BackupInvalid,
    copy_hashed,
    file_hashed,
    files_verify,
    manifest_read,
    manifest_write,
)
from benchmark.storage import (
    TRANSFER_THREADS,
    storage_files,
    storage_is_local,
    storage_put_tree,
)

Say = Callable[[str], None]


def _quiet(line: str) -> None:
    return None


@dataclass
class BackupResult:
    path: Path
    checksum: str
    counts: dict[str, int]
    files: int
    bytes: int
    skipped: list[str] = field(default_factory=list)


@dataclass
class RestoreResult:
    counts: dict[str, int]
    files: int
    migrated: bool


def _app_version() -> str:
    try:
        return version("benchwright")
    except PackageNotFoundError:
        return ""


def _out_checked(out: Path) -> None:
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise BackupFailed(f"{out} already exists and is not an empty folder; name a new one")
    if storage_is_local():
        media = Path(settings.MEDIA_ROOT).resolve()
        if out.resolve().is_relative_to(media):
            raise BackupFailed(
                f"{out} is inside MEDIA_ROOT ({media}); write the backup somewhere else"
            )


def _media_copy(target: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """Copy every file of the media storage below ``target``; (manifest entries, names that
    disappeared before they could be copied)."""
    names = storage_files("")

    def copy(name: str) -> dict[str, Any] | None:
        try:
            with default_storage.open(name, "rb") as src:
                size, sha = copy_hashed(src, target.joinpath(*name.split("/")))
        except FileNotFoundError:
            return None
        return {"path": f"{MEDIA}/{name}", "size": size, "sha256": sha}

    if storage_is_local() or len(names) < 2:
        copied = [copy(name) for name in names]
    else:
        with ThreadPoolExecutor(max_workers=TRANSFER_THREADS) as pool:
            copied = list(pool.map(copy, names))
    entries = [entry for entry in copied if entry is not None]
    skipped = [name for name, entry in zip(names, copied, strict=True) if entry is None]
    return entries, skipped


def backup_write(*, out: Path, say: Say = _quiet) -> BackupResult:
    """Write a backup of the database and the media storage into the new folder ``out``
    (its parent folders are made when missing)."""
    out = Path(out)
    _out_checked(out)
    engine = databases.engine_current()
    engine.check_tools(None)
    out.parent.mkdir(parents=True, exist_ok=True)
    work = out.parent / f".{out.name}.partial-{secrets.token_hex(4)}"
    work.mkdir()
    try:
        database_file = DATABASE_FILES[engine.name]
        say(f"copying the {engine.name} database")
        snapshot = engine.snapshot(work / database_file)
        if not snapshot.migrations:
            raise BackupFailed(
                "the database has no tables: is DATABASE_URL the team's database, and was it "
                "migrated?"
            )
        size, sha = file_hashed(work / database_file)
        files: list[dict[str, Any]] = [{"path": database_file, "size": size, "sha256": sha}]
        say("copying the media files")
        media, skipped = _media_copy(work / MEDIA)
        files += media
        manifest = {
            "format": FORMAT,
            "version": VERSION,
            "created": datetime.now(UTC).isoformat(timespec="seconds"),
            "app_version": _app_version(),
            "database": {"engine": engine.name, "file": database_file, **snapshot.facts},
            "storage": "local" if storage_is_local() else "object storage",
            "migrations": snapshot.migrations,
            "counts": snapshot.counts,
            "files": files,
            "skipped": skipped,
        }
        checksum = manifest_write(work, manifest)
        if out.exists():
            out.rmdir()  # an empty folder the caller made
        work.rename(out)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return BackupResult(
        path=out,
        checksum=checksum,
        counts=snapshot.counts,
        files=len(media),
        bytes=sum(f["size"] for f in files),
        skipped=skipped,
    )


# --------------------------------------------------------------------------- restore


def _migrations_checked(manifest: dict[str, Any]) -> None:
    """Refuse a backup from newer code: one with migrations this code does not have."""
    known = set(MigrationLoader(None, ignore_no_migrations=True).disk_migrations)
    unknown = [
        f"{app}.{name}"
        for app, names in sorted(manifest["migrations"].items())
        for name in names
        if (app, name) not in known
    ]
    if unknown:
        raise BackupFailed(
            "the backup was made by a newer Benchwright (migrations this code does not have: "
            + ", ".join(unknown[:5])
            + (f" and {len(unknown) - 5} more" if len(unknown) > 5 else "")
            + "); restore it with that version's code, then upgrade"
        )


def _targets_checked(force: bool) -> set[str]:
    """The names already in the media storage; refuses a database or storage that holds data
    unless ``force``."""
    rows = databases.data_rows()
    existing = set(storage_files(""))
    if force:
        return existing
    if rows:
        shown = ", ".join(f"{label} {n}" for label, n in sorted(rows.items())[:5])
        raise BackupFailed(
            f"the database is not empty ({shown}{', ...' if len(rows) > 5 else ''}): restore "
            "into a new database, or pass --force to replace everything in it"
        )
    if existing:
        n = len(existing)
        raise BackupFailed(
            f"the media storage already holds {n} file{'s' if n != 1 else ''} (e.g. "
            f"{sorted(existing)[0]}): restore into an empty MEDIA_ROOT or bucket, or pass "
            "--force to write the backup's files over them"
        )
    return existing


def _cache_clear(say: Say) -> None:
    """Forget cached figures of the database that was there before (ids are reused), unless
    the cache is the broker's own Redis database (clearing it would drop queued jobs)."""
    location = str(settings.CACHES["default"].get("LOCATION", ""))
    broker = getattr(settings, "CELERY_BROKER_URL", "")
    if location and location == broker:
        say("note: the cache is the broker's own Redis database, so it was not cleared")
        return
    cache.clear()


def _storage_remove(names: set[str]) -> None:
    for name in names:
        try:
            default_storage.delete(name)
        except OSError:
            pass


def backup_restore(*, source: Path, force: bool = False, say: Say = _quiet) -> RestoreResult:
    """Fill the (empty) database and media storage from the backup folder ``source``."""
    source = Path(source)
    try:
        manifest = manifest_read(source)
        engine = databases.engine_current()
        made_on = manifest["database"]["engine"]
        if made_on != engine.name:
            raise BackupFailed(
                f"the backup is of a {made_on} database and DATABASE_URL names a "
                f"{engine.name} one: restore it into a {made_on} database"
            )
        _migrations_checked(manifest)
        engine.check_tools(manifest)
        say(f"checking {len(manifest['files'])} files against the manifest")
        files_verify(source, manifest)
    except BackupInvalid as exc:
        raise BackupFailed(exc.message) from None
    existing = _targets_checked(force)

    media = [f["path"] for f in manifest["files"] if f["path"].startswith(MEDIA + "/")]
    written = {name.removeprefix(MEDIA + "/") for name in media} - existing
    try:
        if media:
            say(f"writing {len(media)} media files")
            storage_put_tree(source / MEDIA, "")
        say(f"loading the {engine.name} database")
        engine.load(source / manifest["database"]["file"])
    except BaseException:
        _storage_remove(written)
        raise
    counts = databases.current_counts()
    differ = [
        f"{label}: {counts.get(label)} rows, the backup had {n}"
        for label, n in sorted(manifest["counts"].items())
        if label in counts and counts[label] != n
    ]
    if differ:
        raise BackupFailed("the restored database differs from the backup: " + "; ".join(differ))
    migrated = _migrate_if_older(say)
    _cache_clear(say)
    return RestoreResult(counts=counts, files=len(media), migrated=migrated)


def _migrate_if_older(say: Say) -> bool:
    executor = MigrationExecutor(connection)
    plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    if not plan:
        return False
    say(f"the backup predates this code: applying {len(plan)} migrations")
    call_command("migrate", interactive=False, verbosity=0)
    return True


__all__ = ["BackupFailed", "BackupResult", "RestoreResult", "backup_restore", "backup_write"]
