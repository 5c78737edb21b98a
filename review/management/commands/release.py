"""python manage.py release --project NAME --name NAME [--status verified|all] [--named]
    [--subset balanced [--cap PERCENT] [--seed N]] [--parquet] OUT_DIR
python manage.py release --project NAME --compare OLD NEW

Writes a frozen release of the project's items with the status (default verified; "all" for
every item) into OUT_DIR (which must be empty or absent) and records it as the project's next
release vN: the data in the benchmark's own format with its images, provenance.jsonl,
manifest.json, README.md and stats/. Annotators are pseudonymised unless --named.
--subset balanced (m&m's projects) releases exactly the verified items of the tool-balanced
subset (no tool over --cap percent of tool uses, default 15, ties broken by --seed, default 0),
as the Tool-balanced subset page chooses them; the manifest records the filter.
--compare OLD NEW (each vN, N or a release name) prints the items added, removed and changed
between two releases, with the fields of each changed item that changed.
--parquet also writes parquet/train-*.parquet, which datasets.load_dataset("parquet",
data_dir=...) loads."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from benchmark.exceptions import DomainError
from benchmark.models import Project
from review.releases.models import Release
from review.releases.selectors import ReleaseComparison, release_diff
from review.releases.services import DEFAULT_BALANCE_CAP, release_create


class Command(BaseCommand):
    help = "Write a frozen, checksummed release of a project's items."
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", required=True, help="the project's name")
        parser.add_argument("--name", help="the release's name (to make one)")
        parser.add_argument(
            "--compare",
            nargs=2,
            metavar=("OLD", "NEW"),
            help="compare two releases (vN, N or name) instead of making one",
        )
        parser.add_argument("--status", default="verified", help='item status, or "all"')
        parser.add_argument("--named", action="store_true", help="name annotators")
        parser.add_argument(
            "--subset",
            choices=["balanced"],
            help="m&m's: only the tool-balanced subset of the verified items",
        )
        parser.add_argument(
            "--cap",
            type=float,
            default=DEFAULT_BALANCE_CAP * 100,
            help="with --subset balanced: the largest share of any tool, in percent (15)",
        )
        parser.add_argument("--seed", type=int, default=0, help="with --subset balanced (0)")
        parser.add_argument(
            "--parquet",
            action="store_true",
            help="also write parquet/ for Hugging Face datasets (typed columns, images inside)",
        )
        parser.add_argument("out_dir", nargs="?", help="the folder to write (empty or absent)")

    def handle(self, *args: Any, **options: Any) -> None:
        project = Project.objects.filter(name=options["project"]).first()
        if project is None:
            raise CommandError(f"--project: no project named {options['project']!r}")
        if options["compare"]:
            old, new = (_release(project, ref) for ref in options["compare"])
            self._print(release_diff(old=old, new=new))
            return
        if not options["name"] or not options["out_dir"]:
            raise CommandError("give --name and OUT_DIR to make a release (or --compare OLD NEW)")
        status = None if options["status"] == "all" else options["status"]
        try:
            release = release_create(
                project=project,
                user=None,
                name=options["name"],
                status=status,
                named=options["named"],
                out_dir=options["out_dir"],
                subset=options["subset"],
                cap=options["cap"] / 100,
                seed=options["seed"],
                parquet=options["parquet"],
            )
        except DomainError as exc:
            raise CommandError(exc.message) from exc
        self.stdout.write(
            f"{release.label} {release.name}: {release.item_count} items, "
            f"{len(release.manifest['files'])} files in {release.path}"
        )

    def _print(self, diff: ReleaseComparison) -> None:
        self.stdout.write(
            f"{diff.old.label} -> {diff.new.label}: {len(diff.added)} added, "
            f"{len(diff.removed)} removed, {len(diff.changed)} changed, {diff.same} unchanged"
        )
        for name in diff.added:
            self.stdout.write(f"+ {name}")
        for name in diff.removed:
            self.stdout.write(f"- {name}")
        for changed in diff.changed_items:
            fields = "" if changed.fields is None else f": {', '.join(changed.fields)}"
            self.stdout.write(f"~ {changed.name}{fields}")
        if diff.field_note:
            self.stdout.write(diff.field_note)


def _release(project: Project, ref: str) -> Release:
    number = ref[1:] if ref[:1] in "vV" and ref[1:].isdigit() else ref
    found = Release.objects.filter(project=project, name=ref).first()
    if found is None and number.isdigit():
        found = Release.objects.filter(project=project, number=int(number)).first()
    if found is None:
        raise CommandError(f"--compare: no release {ref} in project {project.name!r}")
    return found
