"""python manage.py import_dataset --format {atp,llmi,agentic-mme,mms} --project NAME PATH
[--create [--toolset NAME] [--taxonomy NAME] [--description TEXT] [--admin USERNAME]]

python manage.py import_dataset --format label-studio --project NAME
[--map question=query,cat=category]
[--task JUDGMENT_TASK [--labels Correct=yes,...] [--user-map 2=annotator1,...]] EXPORT.json
    Label Studio is an interchange format: the items go into an existing project of any
    format. With --task, annotations whose choice is one of the task's labels become
    judgments by the project's member with the annotator's Label Studio email or username,
    or the one --user-map names for the annotator's Label Studio user id (Label Studio's
    Export button writes only the id). Only members who may judge the task are credited;
    everyone else is reported, not created, in one wording, and ids the map does not name
    are reported. --labels maps Label Studio choices onto the task's values; with it, a
    choice that maps to none stops the import (nothing is kept), naming the Label Studio
    task and the label.

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
from benchmark.kinds import KINDS
from benchmark.management.commands.create_project import (
    add_project_arguments,
    create_from_options,
)
from benchmark.models import Project


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
            choices=[*(kind.name for kind in KINDS), label_studio.NAME, *tabular.NAMES],
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
            "--user-map",
            default="",
            metavar="ID=USER,...",
            help="label-studio, with --task: Label Studio user id=Benchwright username (or "
            "email), comma-separated, e.g. 2=annotator1,3=annotator2; each must be a member "
            "of the project who may judge the task",
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
        if options["map"] or options["task"] or options["labels"] or options["user_map"]:
            raise CommandError(
                "--map, --task, --labels and --user-map go with --format label-studio (--map: "
                "also jsonl, csv)"
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
            if options["user_map"] and not options["task"]:
                raise CommandError("--user-map goes with --task (whose judgments it credits)")
            labels = label_studio.parse_labels(options["labels"])
            user_map = label_studio.parse_user_map(options["user_map"])
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
                        user_map=user_map,
                    )
        except (FormatError, DomainError) as exc:
            raise CommandError(f"nothing imported: {exc}") from None
        self._say_not_imported(report.get("judgments") or {}, options)
        self.stdout.write(json.dumps(report, indent=2))

    def _say_not_imported(self, judged: dict[str, Any], options: dict[str, Any]) -> None:
        """What of the annotations was not imported, and what to do about it."""
        where = f"project {options['project']!r} who may judge task {options['task']!r}"
        if judged.get("users_not_importable"):
            self.stderr.write(
                f"annotations not imported: {', '.join(judged['users_not_importable'])} "
                f"{'is' if len(judged['users_not_importable']) == 1 else 'are'} not "
                f"{'a member' if len(judged['users_not_importable']) == 1 else 'members'} of "
                f"{where} (add them to the project, or map them with --user-map)"
            )
        if judged.get("user_ids_unmapped"):
            ids = judged["user_ids_unmapped"]
            self.stderr.write(
                f"annotations not imported: Label Studio user id{'s' if len(ids) != 1 else ''} "
                f"{', '.join(ids)} {'is' if len(ids) == 1 else 'are'} not in the user map "
                f"(add e.g. --user-map {ids[0]}=USERNAME)"
            )
        for refused in judged.get("judgments_refused") or []:
            self.stderr.write(
                f"judgment not imported: item {refused['item']} by {refused['user']}: "
                f"{refused['reason']}"
            )


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
