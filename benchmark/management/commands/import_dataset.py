"""python manage.py import_dataset --format {atp,llmi,agentic-mme,mms} --project NAME PATH
[--create [--toolset NAME] [--taxonomy NAME] [--description TEXT] [--admin USERNAME]]

python manage.py import_dataset --format label-studio --project NAME
[--map question=query,cat=category] [--task JUDGMENT_TASK [--labels Correct=yes,...]] EXPORT.json
    Label Studio is an interchange format: the items go into an existing project of any
    format. With --task, annotations whose choice is one of the task's labels become
    judgments by the account with the annotator's Label Studio email or username; annotators
    with no account are reported, not created. --labels maps Label Studio choices onto the
    task's values; with it, a choice that maps to none stops the import (nothing is kept),
    naming the Label Studio task and the label.

python manage.py import_dataset --format {jsonl,csv} --project NAME [--map col=field,...] FILE
    Items from a generic JSON Lines or CSV file with a column mapping, into any project."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from benchmark.datasets.interop import interop_hook
from benchmark.datasets.services import dataset_import
from benchmark.exceptions import DomainError
from benchmark.formats import FormatError, label_studio, tabular
from benchmark.management.commands.create_project import (
    add_project_arguments,
    create_from_options,
)
from benchmark.models import DataFormat, Project


class Command(BaseCommand):
    help = (
        "Import a benchmark file or folder into a project. All or nothing. With --create, a "
        "missing project is created first (in --format), and is not kept if the import fails."
    )
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", type=Path)
        parser.add_argument(
            "--format",
            required=True,
            choices=[*DataFormat.values, label_studio.NAME, *tabular.NAMES],
        )
        parser.add_argument("--project", required=True, help="project name")
        parser.add_argument(
            "--map",
            default="",
            help="label-studio: Label Studio data key=item field, comma-separated "
            "(default: every item field under its own name)",
        )
        parser.add_argument(
            "--task", default="", help="label-studio: the judgment task annotations become"
        )
        parser.add_argument(
            "--labels",
            default="",
            help="label-studio, with --task: Label Studio choice=task value, comma-separated "
            "(e.g. Correct=yes,Incorrect=no); every choice must then map",
        )
        parser.add_argument(
            "--create",
            action="store_true",
            help="create the project when there is none of that name (options below)",
        )
        add_project_arguments(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        if options["format"] in (label_studio.NAME, *tabular.NAMES):
            self._interchange(options)
            return
        if options["map"] or options["task"] or options["labels"]:
            raise CommandError(
                "--map, --task and --labels go with --format label-studio (--map: also jsonl, csv)"
            )
        with transaction.atomic():
            project, created = _project_or_create(options["project"], options["format"], options)
            try:
                result = dataset_import(project=project, path=options["path"])
            except (FormatError, DomainError) as exc:
                kept = " (and the project was not created)" if created else ""
                raise CommandError(f"nothing imported{kept}: {exc}") from None
        if created:
            self.stderr.write(f"created project {project.name!r} (id {project.pk})")
        self.stdout.write(json.dumps(result.as_dict(), indent=2))

    def _interchange(self, options: dict[str, Any]) -> None:
        try:
            project = Project.objects.get(name=options["project"])
        except Project.DoesNotExist:
            raise CommandError(
                f"no project named {options['project']!r}: {options['format']} data goes into "
                "an existing project (create_project first)"
            ) from None
        try:
            if options["task"] and options["format"] != label_studio.NAME:
                raise CommandError("--task goes with --format label-studio")
            if options["labels"] and not options["task"]:
                raise CommandError("--labels goes with --task (the judgment task it maps onto)")
            labels = label_studio.parse_labels(options["labels"])
            with transaction.atomic():
                reader: Any = (
                    label_studio.Reader(options["map"])
                    if options["format"] == label_studio.NAME
                    else tabular.Table(options["format"], options["map"])
                )
                result = dataset_import(project=project, path=options["path"], fmt=reader)
                report = result.as_dict()
                if options["task"]:
                    report["judgments"] = interop_hook("label_studio.judgments_import")(
                        project=project,
                        annotations=reader.annotations,
                        task_name=options["task"],
                        labels=labels,
                    )
        except (FormatError, DomainError) as exc:
            raise CommandError(f"nothing imported: {exc}") from None
        unknown = report.get("judgments", {}).get("unknown_users")
        if unknown:
            self.stderr.write(
                "annotations not imported, no account with this email or username: "
                + ", ".join(unknown)
            )
        self.stdout.write(json.dumps(report, indent=2))


def _project(name: str, fmt: str) -> Project:
    try:
        project = Project.objects.get(name=name)
    except Project.DoesNotExist:
        raise CommandError(f"no project named {name!r}") from None
    if project.data_format != fmt:
        raise CommandError(f"project {name!r} holds {project.data_format!r} data, not {fmt!r}")
    return project


def _project_or_create(name: str, fmt: str, options: dict[str, Any]) -> tuple[Project, bool]:
    """The project named ``name``, or with ``--create`` a new one; and whether it is new."""
    if Project.objects.filter(name=name).exists():
        return _project(name, fmt), False
    if not options.get("create"):
        raise CommandError(
            f"no project named {name!r}: add --create to create it, or run create_project first"
        )
    return create_from_options(name, fmt, options), True
