"""python manage.py release_verify DIR

Recomputes the size and sha256 of every file listed in DIR/manifest.json and the counts.
Exits 0 with "ok" when all match; otherwise exits non-zero naming the first file that differs,
is missing or is not in the manifest (and lists the others)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from review.releases.services import release_verify


class Command(BaseCommand):
    help = "Check a release folder against its manifest.json."
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("dir", help="the release folder")

    def handle(self, *args: Any, **options: Any) -> None:
        result = release_verify(path=options["dir"])
        if not result.ok:
            for problem in result.problems[1:]:
                self.stderr.write(problem)
            raise CommandError(result.problems[0])
        self.stdout.write(f"ok: {result.files} files match the manifest")
