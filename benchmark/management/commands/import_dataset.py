"""python manage.py import_dataset --format {atp,llmi,agentic-mme,mms} --project NAME PATH"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from benchmark.datasets.services import dataset_import
from benchmark.exceptions import DomainError
from benchmark.formats import FormatError
from benchmark.models import DataFormat, Project


class Command(BaseCommand):
    help = "Import a benchmark file or folder into a project. All or nothing."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", type=Path)
        parser.add_argument("--format", required=True, choices=DataFormat.values)
        parser.add_argument("--project", required=True, help="project name")

    def handle(self, *args: Any, **options: Any) -> None:
        project = _project(options["project"], options["format"])
        try:
            result = dataset_import(project=project, path=options["path"])
        except (FormatError, DomainError) as exc:
            raise CommandError(f"nothing imported: {exc}") from None
        self.stdout.write(json.dumps(result.as_dict(), indent=2))


def _project(name: str, fmt: str) -> Project:
    try:
        project = Project.objects.get(name=name)
    except Project.DoesNotExist:
        raise CommandError(f"no project named {name!r}") from None
    if project.data_format != fmt:
        raise CommandError(f"project {name!r} holds {project.data_format!r} data, not {fmt!r}")
    return project
