"""python manage.py restore [--force] IN

Fills an empty database and media storage from a folder ``manage.py backup`` wrote. Every
file's sha256 is checked before anything is written; the database is loaded in one
transaction; a backup older than the code is migrated afterwards (benchmark/backup/)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DatabaseError

from benchmark.backup.services import BackupFailed, backup_restore


class Command(BaseCommand):
    help = (
        "Restore a backup folder into an empty database and media storage (checked first; "
        "--force replaces a database that holds data and writes over existing files)."
    )
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("source", type=Path, metavar="IN", help="the backup folder")
        parser.add_argument(
            "--force",
            action="store_true",
            help="replace a database that holds data (all of it is lost) and write the "
            "backup's files over those in the storage",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            result = backup_restore(source=options["source"], force=options["force"], say=self._say)
        except BackupFailed as exc:
            raise CommandError(f"not restored: {exc.message}") from None
        except OSError as exc:
            raise CommandError(f"not restored: {exc}") from None
        except DatabaseError as exc:
            raise CommandError(f"not restored: the database answered: {exc}") from None
        rows = sum(result.counts.values())
        self.stdout.write(
            f"{rows} rows of {len(result.counts)} tables and {result.files} media files restored"
            + (", then migrated to this code" if result.migrated else "")
        )
        self.stdout.write(self.style.SUCCESS(f"Restored from {options['source']}"))

    def _say(self, line: str) -> None:
        self.stdout.write(f"==> {line}")
