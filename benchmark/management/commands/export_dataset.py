"""python manage.py export_dataset --format FMT --project NAME [--status verified] OUT

python manage.py export_dataset --format label-studio --project NAME [--map question=query,...]
[--with-judgments TASK] [--image-base-url URL] OUT.json
    Items of a project of any format as Label Studio tasks, with OUT.config.xml (the labeling
    config) beside them; with --with-judgments, the task's judgments as annotations. The
    labeling config shows what the judge page shows: the query and its images, the documents
    and their images, the plan's steps, the answers. Image paths become URLs under
    --image-base-url (default /data/local-files/?d= : Label Studio's local-files serving
    with the export folder as its document root)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from benchmark.datasets.services import dataset_export, label_studio_writer
from benchmark.exceptions import DomainError
from benchmark.formats import FormatError, label_studio, tabular
from benchmark.kinds import KINDS
from benchmark.management.commands.import_dataset import _project
from benchmark.models import ItemStatus, Project


class Command(BaseCommand):
    help = "Export a project's items in its benchmark's own format."
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("out", type=Path, help="a folder, or a .jsonl file for atp")
        parser.add_argument(
            "--format",
            required=True,
            choices=[*(kind.name for kind in KINDS), label_studio.NAME, *tabular.NAMES],
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
        parser.add_argument(
            "--image-base-url",
            default="",
            metavar="URL",
            help="label-studio: the URL image paths are appended to, e.g. "
            "https://files.example.org/bw/ or /data/local-files/?d=bw/ (default "
            "/data/local-files/?d=)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        fmt: Any = None
        try:
            if options["format"] in (label_studio.NAME, *tabular.NAMES):
                found = Project.objects.filter(name=options["project"]).first()
                if found is None:
                    raise CommandError(f"no project named {options['project']!r}")
                project = found
            if options["image_base_url"] and options["format"] != label_studio.NAME:
                raise CommandError("--image-base-url goes with --format label-studio")
            if options["format"] in tabular.NAMES:
                if options["with_judgments"]:
                    raise CommandError("--with-judgments goes with --format label-studio")
                fmt = tabular.Table(options["format"], options["map"])
            elif options["format"] == label_studio.NAME:
                fmt = label_studio_writer(
                    project=project,
                    mapping=options["map"],
                    with_judgments=options["with_judgments"],
                    image_base_url=options["image_base_url"],
                )
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
