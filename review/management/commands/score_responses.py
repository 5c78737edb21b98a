"""python manage.py score_responses --project NAME [--only-verified] ANSWERS [ANSWERS ...]

Scores model answers of an interleaved project (ATP-Bench or LLM-I) without running a model
and prints one JSON object: ``models`` (one object per model: format correctness, tool
adoption per tool, calls per answer, tool-set precision / recall / F1 against the verified
ground truth, LLM-I's R_rule, per-tool figures), ``overall`` (all models pooled),
``ground_truth`` (the verified ground truth's own call statistics) and what could not be
matched. Definitions: ``benchmark.metrics.tag_scores``. ANSWERS are JSON/JSONL files or
folders of them; a model is named by the records' ``model`` field, else by the file name.
Bad input or an unknown project exits non-zero with a message naming the file, line and
field.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from benchmark.exceptions import DomainError
from benchmark.models import Project
from review.answers import services as review_answers


def _files(paths: list[Path]) -> list[tuple[str, bytes]]:
    out: list[tuple[str, bytes]] = []
    for path in paths:
        if path.is_dir():
            found = sorted(
                p for p in path.iterdir() if p.is_file() and p.suffix.lower() in (".json", ".jsonl")
            )
            if not found:
                raise CommandError(f"{path}: no .json or .jsonl files in this folder")
            entries = [(p, p.name) for p in found]
        elif path.is_file():
            entries = [(path, _name(path))]
        else:
            raise CommandError(f"{path}: no such file or folder")
        for file, name in entries:
            try:
                out.append((name, file.read_bytes()))
            except OSError as exc:
                raise CommandError(f"{file}: cannot read ({exc.strerror or exc})") from None
    return out


def _name(path: Path) -> str:
    """The name the model is taken from: LLM-I's ``<model>/json_results/
    evaluation_results.json`` keeps its model folder."""
    if path.stem == "evaluation_results" and path.parent.name == "json_results":
        return "/".join(path.parts[-3:])
    return path.name


class Command(BaseCommand):
    help = "Score model answers of an interleaved project against its verified ground truth."
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", required=True, help="the project's name")
        parser.add_argument(
            "--only-verified",
            action="store_true",
            help="score answers to verified items only (P/R/F1 always use verified items)",
        )
        parser.add_argument("answers", nargs="+", type=Path, help="answer files or folders")

    def handle(self, *args: Any, **options: Any) -> None:
        project = Project.objects.filter(name=options["project"]).first()
        if project is None:
            names = ", ".join(Project.objects.order_by("name").values_list("name", flat=True)[:20])
            raise CommandError(
                f"no project named {options['project']!r} (projects: {names or 'none'})"
            )
        files = _files(options["answers"])
        try:
            records = review_answers.read_uploads(files, max_files=None)
            result = review_answers.answers_score(
                project=project, records=records, only_verified=options["only_verified"]
            )
        except DomainError as exc:
            raise CommandError(exc.message) from None
        self.stdout.write(json.dumps(result, indent=2, ensure_ascii=False))
