"""python manage.py create_project --name NAME --format {atp,llmi,agentic-mme,mms}
[--toolset NAME] [--taxonomy NAME] [--description TEXT] [--admin USERNAME]"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from benchmark.builtin import taxonomies_ensure, toolsets_ensure
from benchmark.exceptions import DomainError
from benchmark.kinds import KINDS
from benchmark.models import Project, Taxonomy, Toolset
from benchmark.projects.services import project_create


class Command(BaseCommand):
    help = (
        "Create a project for a benchmark (its format sets the kind and tag syntax). The "
        "toolset and taxonomy default to the benchmark's built-in ones; naming another "
        "project's copies it."
    )
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        add_project_arguments(parser)
        parser.add_argument("--name", required=True, help="project name")
        parser.add_argument("--format", required=True, choices=[kind.name for kind in KINDS])

    def handle(self, *args: Any, **options: Any) -> None:
        project = create_from_options(options["name"], options["format"], options)
        self.stdout.write(
            f"created project {project.name!r} (id {project.pk}, {project.data_format}, "
            f"toolset {project.toolset.name!r})"
        )


def add_project_arguments(parser: CommandParser) -> None:
    """The options a new project takes, besides its name and format."""
    parser.add_argument("--toolset", help="toolset name (default: the built-in one)")
    parser.add_argument("--taxonomy", help="taxonomy name (default: the built-in one)")
    parser.add_argument("--description", default="")
    parser.add_argument("--guidelines", default="", help="markdown shown to annotators")
    parser.add_argument("--admin", help="username of the project's first admin")


def _named(model: type[Toolset] | type[Taxonomy], name: str | None, what: str) -> Any:
    if not name:
        return None
    # The built-in ones may be named before `seed_builtin` ran.
    (toolsets_ensure if model is Toolset else taxonomies_ensure)()
    row = model.objects.filter(name=name).first()
    if row is None:
        known = ", ".join(model.objects.values_list("name", flat=True)[:20]) or "none yet"
        raise CommandError(f"--{what}: no {what} named {name!r} (known: {known})")
    return row


def create_from_options(name: str, fmt: str, options: dict[str, Any]) -> Project:
    """A project from the command line's options; CommandError saying what is wrong."""
    admin = None
    if options.get("admin"):
        admin = get_user_model().objects.filter(username=options["admin"]).first()
        if admin is None:
            raise CommandError(f"--admin: nobody is called {options['admin']!r}")
    try:
        return project_create(
            user=None,
            name=name,
            data_format=fmt,
            toolset=_named(Toolset, options.get("toolset"), "toolset"),
            taxonomy=_named(Taxonomy, options.get("taxonomy"), "taxonomy"),
            description=options.get("description") or "",
            guidelines=options.get("guidelines") or "",
            admin=admin,
        )
    except DomainError as exc:
        raise CommandError(f"no project created: {exc.message}") from None
