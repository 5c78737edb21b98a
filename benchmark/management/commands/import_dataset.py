"""python manage.py import_dataset --format {atp,llmi,agentic-mme,mms} --project NAME PATH
[--create [--toolset NAME] [--taxonomy NAME] [--description TEXT] [--admin USERNAME]]"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from benchmark.datasets.services import dataset_import
from benchmark.exceptions import DomainError
from benchmark.formats import FormatError
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

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", type=Path)
        parser.add_argument("--format", required=True, choices=DataFormat.values)
        parser.add_argument("--project", required=True, help="project name")
        parser.add_argument(
            "--create",
            action="store_true",
            help="create the project when there is none of that name (options below)",
        )
        add_project_arguments(parser)

    def handle(self, *args: Any, **options: Any) -> None:
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
