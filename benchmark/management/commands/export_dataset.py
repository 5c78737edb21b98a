"""python manage.py export_dataset --format FMT --project NAME [--status verified] OUT"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from benchmark.datasets.services import dataset_export
from benchmark.exceptions import DomainError
from benchmark.formats import FormatError
from benchmark.management.commands.import_dataset import _project
from benchmark.models import DataFormat, ItemStatus


class Command(BaseCommand):
    help = "Export a project's items in its benchmark's own format."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("out", type=Path, help="a folder, or a .jsonl file for atp")
        parser.add_argument("--format", required=True, choices=DataFormat.values)
        parser.add_argument("--project", required=True, help="project name")
        parser.add_argument("--status", choices=ItemStatus.values)
        parser.add_argument("--no-images", action="store_true", help="skip copying images")

    def handle(self, *args: Any, **options: Any) -> None:
        project = _project(options["project"], options["format"])
        try:
            written = dataset_export(
                project=project,
                out=options["out"],
                status=options["status"],
                copy_images=not options["no_images"],
            )
        except (FormatError, DomainError) as exc:
            raise CommandError(str(exc)) from None
        for path in written:
            self.stdout.write(str(path))
