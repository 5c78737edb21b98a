"""python manage.py aggregate (--project NAME --task NAME | --judgments FILE.jsonl)
    --method majority|dawid-skene|glad|mace [--gold FILE.jsonl]

Aggregates people's judgments into one label per item (per unit, for a task with units) with
crowd-kit's methods, as ``benchmark.metrics.aggregation`` defines them, and prints one JSON object
per item, one per line: ``item`` (and ``unit``), ``label``, ``posterior`` (the label's posterior
probability; majority vote has none) and, for a task, ``consensus`` (the consensus rule's settled
outcome, where there is one). Then ``{"summary": {...}}``: the method, the numbers of items and
judgments, what ``reliability`` measures, and per annotator the judgments, the reliability, the
Dawid-Skene confusion matrix (``{truth: {said: probability}}``) and, with ``--gold``, the gold
accuracy with its 95 % Wilson interval.

``--judgments`` reads a file with the columns of the judgments JSONL export (``item``, ``unit``
where the task has units, ``annotator``, ``value``; others ignored), so a dataset engineer can
aggregate outside the app; ``--project``/``--task`` read the task's judgments from the database
(nothing is written). ``--gold`` is JSONL with ``item`` (and ``unit``) and ``value``, the answer
that counts. A bad file stops the command with a message naming the file and line.
"""

from __future__ import annotations

import json
from collections.abc import Hashable
from pathlib import Path
from typing import Any

import orjson
from django.core.management.base import BaseCommand, CommandError, CommandParser

from benchmark.metrics import aggregation


def _lines(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise CommandError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CommandError(f"{path}: cannot be read as UTF-8 text ({exc})") from None


def _plain(label: Any) -> Any:
    """A label as the judgments had it (objects and lists come back from their JSON text)."""
    if isinstance(label, str) and label[:1] in "[{":
        try:
            return json.loads(label)
        except ValueError:
            return label
    return label


def _split(key: Hashable) -> dict[str, Any]:
    if isinstance(key, tuple):
        return {"item": key[0], "unit": key[1]}
    return {"item": key}


class Command(BaseCommand):
    help = "Aggregate judgments into one label per item (majority, Dawid-Skene, GLAD, MACE)."
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", default="", help="the project's name")
        parser.add_argument("--task", default="", help="the judgment task's name")
        parser.add_argument("--judgments", type=Path, help="a judgments JSONL file")
        parser.add_argument("--method", required=True, choices=aggregation.METHODS)
        parser.add_argument("--gold", type=Path, help="gold answers (JSONL: item, value)")

    def task_rows(
        self, project: str, task_name: str
    ) -> tuple[list[tuple[Hashable, Hashable, Any]], dict[Hashable, Any]]:
        from annotation.judgment_tasks.models import JudgmentTask
        from benchmark.models import Item
        from review.agreement.services import task_rows

        tasks = JudgmentTask.objects.filter(project__name=project, name=task_name)
        task = tasks.select_related("project").first()
        if task is None:
            if not JudgmentTask.objects.filter(project__name=project).exists():
                raise CommandError(f"no project named {project!r} with judgment tasks")
            raise CommandError(f"project {project!r} has no judgment task named {task_name!r}")
        rows, final, _ = task_rows(task)
        external = dict(Item.objects.filter(project=task.project).values_list("pk", "external_id"))

        def rekey(key: Any) -> Hashable:
            return (external[key[0]], key[1]) if isinstance(key, tuple) else external[key]

        rekeyed: list[aggregation.Row] = [(rekey(k), who, label) for k, who, label in rows]
        # Outcomes as the rows have them (objects and lists as their JSON text).
        consensus = {
            rekey(k): orjson.dumps(v).decode() if isinstance(v, dict | list) else v
            for k, v in final.items()
        }
        return rekeyed, consensus

    def handle(self, *args: Any, **options: Any) -> None:
        project, task_name = options["project"].strip(), options["task"].strip()
        path: Path | None = options["judgments"]
        if path is not None and (project or task_name):
            raise CommandError("give --judgments FILE or --project and --task, not both")
        consensus: dict[Hashable, Any] = {}
        if path is not None:
            try:
                rows = aggregation.read_judgments(_lines(path), name=str(path))
            except ValueError as exc:
                raise CommandError(str(exc)) from None
        elif project and task_name:
            rows, consensus = self.task_rows(project, task_name)
        else:
            raise CommandError("give --judgments FILE, or --project NAME and --task NAME")
        gold = None
        if options["gold"] is not None:
            try:
                gold = aggregation.read_gold(_lines(options["gold"]), name=str(options["gold"]))
            except ValueError as exc:
                raise CommandError(str(exc)) from None
        try:
            result = aggregation.aggregate(rows, options["method"], gold=gold)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        differs = 0
        for entry in result.items:
            line: dict[str, Any] = {**_split(entry.item), "label": _plain(entry.label)}
            if result.method != "majority":
                line["posterior"] = entry.confidence
            if entry.item in consensus:
                line["consensus"] = _plain(consensus[entry.item])
                differs += consensus[entry.item] != entry.label
            self.stdout.write(json.dumps(line, ensure_ascii=False))
        annotators = {}
        for a in result.annotators:
            figures: dict[str, Any] = {"judgments": a.judgments, "reliability": a.reliability}
            if a.confusion is not None:
                figures["confusion"] = {
                    str(truth): {str(said): p for said, p in row.items()}
                    for truth, row in a.confusion.items()
                }
            if gold is not None:
                figures["gold"] = a.gold
            annotators[str(a.name)] = figures
        summary: dict[str, Any] = {
            "method": result.method,
            "items": len(result.items),
            "judgments": len(rows),
            "reliability": aggregation.RELIABILITY_NAMES[result.method],
            "annotators": annotators,
        }
        if consensus:
            summary["settled_by_consensus"] = sum(1 for i in result.items if i.item in consensus)
            summary["differs_from_consensus"] = differs
        if gold is not None:
            summary["gold_items"] = len(gold)
        self.stdout.write(json.dumps({"summary": summary}, ensure_ascii=False))
