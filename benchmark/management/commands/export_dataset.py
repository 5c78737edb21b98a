"""python manage.py export_dataset --format FMT --project NAME [--status verified] OUT

python manage.py export_dataset --format label-studio --project NAME [--map question=query,...]
[--with-judgments TASK] OUT.json
    Items of a project of any format as Label Studio tasks, with OUT.config.xml (the labeling
    config) beside them; with --with-judgments, the task's judgments as annotations."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from benchmark.datasets.interop import interop_hook
from benchmark.datasets.services import dataset_export
from benchmark.exceptions import DomainError
from benchmark.formats import FormatError, label_studio, tabular
from benchmark.management.commands.import_dataset import _project
from benchmark.models import DataFormat, ItemStatus, Project


class Command(BaseCommand):
    help = "Export a project's items in its benchmark's own format."
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("out", type=Path, help="a folder, or a .jsonl file for atp")
        parser.add_argument(
            "--format",
            required=True,
            choices=[*DataFormat.values, label_studio.NAME, *tabular.NAMES],
        )
        parser.add_argument("--project", required=True, help="project name")
        parser.add_argument("--status", choices=ItemStatus.values)
        parser.add_argument("--no-images", action="store_true", help="skip copying images")
        parser.add_argument(
            "--map",
            default="",
            help="label-studio, jsonl, csv: data key (or column)=item field, ...",
        )
        parser.add_argument(
            "--with-judgments",
            default="",
            metavar="TASK",
            help="label-studio: write this judgment task's judgments as annotations",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        fmt: Any = None
        try:
            if options["format"] in (label_studio.NAME, *tabular.NAMES):
                found = Project.objects.filter(name=options["project"]).first()
                if found is None:
                    raise CommandError(f"no project named {options['project']!r}")
                project = found
            if options["format"] in tabular.NAMES:
                if options["with_judgments"]:
                    raise CommandError("--with-judgments goes with --format label-studio")
                fmt = tabular.Table(options["format"], options["map"])
            elif options["format"] == label_studio.NAME:
                judgments, choices = None, []
                if options["with_judgments"]:
                    judgments, choices = interop_hook("label_studio.judgments_export")(
                        project=project, task_name=options["with_judgments"]
                    )
                fmt = label_studio.Writer(options["map"], judgments, choices)
            else:
                if options["map"] or options["with_judgments"]:
                    raise CommandError(
                        "--map and --with-judgments go with --format label-studio (--map: "
                        "also jsonl, csv)"
                    )
                project = _project(options["project"], options["format"])
            written = dataset_export(
                project=project,
                out=options["out"],
                status=options["status"],
                copy_images=not options["no_images"],
                fmt=fmt,
            )
        except (FormatError, DomainError) as exc:
            raise CommandError(str(exc)) from None
        for path in written:
            self.stdout.write(str(path))
