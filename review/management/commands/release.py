"""python manage.py release --project NAME --name NAME [--status verified|all] [--named] [--parquet] OUT_DIR

Writes a frozen release of the project's items with the status (default verified; "all" for
every item) into OUT_DIR (which must be empty or absent) and records it as the project's next
release vN: the data in the benchmark's own format with its images, provenance.jsonl,
manifest.json, README.md and stats/. Annotators are pseudonymised unless --named. --parquet also
writes parquet/train-*.parquet, which datasets.load_dataset("parquet", data_dir=...) loads."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from benchmark.exceptions import DomainError
from benchmark.models import Project
from review.releases.services import release_create


class Command(BaseCommand):
    help = "Write a frozen, checksummed release of a project's items."
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", required=True, help="the project's name")
        parser.add_argument("--name", required=True, help="the release's name")
        parser.add_argument("--status", default="verified", help='item status, or "all"')
        parser.add_argument("--named", action="store_true", help="name annotators")
        parser.add_argument(
            "--parquet",
            action="store_true",
            help="also write parquet/ for Hugging Face datasets (typed columns, images inside)",
        )
        parser.add_argument("out_dir", help="the folder to write (empty or absent)")

    def handle(self, *args: Any, **options: Any) -> None:
        project = Project.objects.filter(name=options["project"]).first()
        if project is None:
            raise CommandError(f"--project: no project named {options['project']!r}")
        status = None if options["status"] == "all" else options["status"]
        try:
            release = release_create(
                project=project,
                user=None,
                name=options["name"],
                status=status,
                named=options["named"],
                out_dir=options["out_dir"],
                parquet=options["parquet"],
            )
        except DomainError as exc:
            raise CommandError(exc.message) from exc
        self.stdout.write(
            f"{release.label} {release.name}: {release.item_count} items, "
            f"{len(release.manifest['files'])} files in {release.path}"
        )
