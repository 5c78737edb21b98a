"""python manage.py release_verify DIR

Recomputes the size and sha256 of every file listed in DIR/manifest.json and the counts.
Exits 0 with "ok" when all match; otherwise exits non-zero naming the first file that differs,
is missing or is not in the manifest (and lists the others). On object storage DIR may also be
a release's prefix in the bucket (its path on the release page, e.g. releases/3/1): the files
are downloaded to a temporary folder and checked there."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from benchmark.storage import local_tree, storage_is_local
from review.releases.services import VerifyResult, release_verify


class Command(BaseCommand):
    help = "Check a release folder against its manifest.json."
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "dir", help="the release folder (on object storage also its prefix in the bucket)"
        )

    def _check(self, where: str) -> VerifyResult:
        if Path(where).is_dir() or Path(where).is_absolute() or storage_is_local():
            return release_verify(path=where)
        with local_tree(where) as root:  # a release on object storage
            return release_verify(path=root)

    def handle(self, *args: Any, **options: Any) -> None:
        result = self._check(options["dir"])
        if not result.ok:
            for problem in result.problems[1:]:
                self.stderr.write(problem)
            raise CommandError(result.problems[0])
        self.stdout.write(f"ok: {result.files} files match the manifest")
