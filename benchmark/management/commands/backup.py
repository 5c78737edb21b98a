"""python manage.py backup OUT

Writes a backup of the whole Benchwright into the new folder OUT while people keep working:
the database (SQLite's online backup, or pg_dump on PostgreSQL), every file of the media
storage (MEDIA_ROOT or the bucket) and a checksummed manifest (benchmark/backup/)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DatabaseError

from benchmark.backup.services import BackupFailed, backup_write


class Command(BaseCommand):
    help = (
        "Back up the database and the media files into the new folder OUT, with a manifest "
        "of every file's sha256; people may keep working meanwhile."
    )
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("out", type=Path, help="a folder that does not exist yet (or is empty)")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            result = backup_write(out=options["out"], say=self._say)
        except BackupFailed as exc:
            raise CommandError(f"no backup written: {exc.message}") from None
        except OSError as exc:
            raise CommandError(f"no backup written: {exc}") from None
        except DatabaseError as exc:
            raise CommandError(f"no backup written: the database answered: {exc}") from None
        rows = sum(result.counts.values())
        self.stdout.write(
            f"{rows} rows of {len(result.counts)} tables and {result.files} media files "
            f"({result.bytes / 1e6:.1f} MB in all)"
        )
        for name in result.skipped:
            self.stdout.write(f"note: {name} was removed while the backup ran; not included")
        self.stdout.write(f"manifest sha256 {result.checksum}")
        self.stdout.write(self.style.SUCCESS(f"Backup written to {result.path}"))

    def _say(self, line: str) -> None:
        self.stdout.write(f"==> {line}")
