"""python manage.py recompute_doubt --project NAME [--task NAME] [--top N]

Recompute routing by doubt (``annotation.judgment_tasks.doubt``) for one judgment task, or for every task of
the project that serves items by doubt: the annotators' reliabilities, the Dawid-Skene
posteriors, the model judge's and the evaluations' signals, and every item's doubt. Prints one
JSON object per task (its summary), then with ``--top N`` that many items most in doubt, one
JSON object each (``item``, ``unit``, ``doubt``, ``judgments``, ``signals``)."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser


class Command(BaseCommand):
    help = "Recompute the doubt of a judgment task's items (routing by doubt)."
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", required=True, help="the project's name")
        parser.add_argument(
            "--task", default="", help="the task's name (default: every task routing by doubt)"
        )
        parser.add_argument("--top", type=int, default=0, help="print the N items most in doubt")

    def handle(self, *args: Any, **options: Any) -> None:
        from annotation.judgment_tasks.doubt.models import ItemDoubt
        from annotation.judgment_tasks.doubt.services import task_doubt_recompute
        from annotation.judgment_tasks.models import JudgmentTask

        project, name = options["project"].strip(), options["task"].strip()
        if options["top"] < 0:
            raise CommandError("--top: give a number of items, 0 or more")
        tasks = JudgmentTask.objects.filter(project__name=project).select_related("project")
        if not tasks.exists():
            raise CommandError(f"no project named {project!r} with judgment tasks")
        tasks = tasks.filter(name=name) if name else tasks.filter(serve_by_doubt=True)
        if not tasks.exists():
            raise CommandError(
                f"project {project!r} has no judgment task named {name!r}"
                if name
                else f"no task of project {project!r} serves items by doubt; name one with --task"
            )
        for task in tasks:
            summary = task_doubt_recompute(task=task)
            self.stdout.write(json.dumps({"summary": {"name": task.name, **summary}}))
            top = (
                ItemDoubt.objects.filter(task=task)
                .order_by("-score", "item__position", "item_id", "unit")
                .values_list("item__external_id", "unit", "score", "judgments", "signals")
            )
            for external_id, unit, score, judgments, signals in top[: options["top"]]:
                row = {"item": external_id, "unit": unit, "doubt": round(score, 4)}
                row |= {"judgments": judgments, "signals": signals}
                self.stdout.write(json.dumps(row, ensure_ascii=False))
