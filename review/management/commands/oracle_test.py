"""python manage.py oracle_test --project NAME [--base-url URL --model NAME] [--items ID ...]

Step-wise oracle testing (Agentic-MME §2.4): walks a model through each item's reference
trajectory, giving it every step's ground-truth result (the stored crop or processed image,
the search finding), asks for the final answer and scores it with the item's matcher. Runs as
an "oracle" job in this process and stores the results like a run started from the page.
Prints one JSON object per item (``item``, ``model``, ``outcome``: solved / failed / error,
``correct``, ``answer``, ``expected``, ``error``, ``cached``, ``latency_ms``, tokens) and then
one object ``{"summary": {...}}`` (``tested``, ``solved``, ``solved_pct``, ``flagged``,
``errors``, ``calls``). The model is the project's (or the environment's) unless
``--base-url``/``--model`` name another. Items are all those with a reference trajectory (not
discarded) unless ``--items`` names some by id. Bad input exits non-zero with a message; an
item that cannot be tested is reported on its line, and the command goes on.
"""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from benchmark.exceptions import DomainError
from benchmark.models import JobStatus, Project
from review.oracle import services as oracle
from review.oracle.models import OracleOutcome, OracleResult
from review.oracle.selectors import run_figures


class Command(BaseCommand):
    help = "Walk a model through the items' reference trajectories (oracle test); JSON lines."
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", required=True, help="the project's name")
        parser.add_argument("--base-url", default="", help="an OpenAI-compatible URL (…/v1)")
        parser.add_argument("--model", default="", help="the model's name")
        parser.add_argument(
            "--items",
            action="extend",  # several ids, and more with --items repeated
            nargs="+",
            default=[],
            metavar="ID",
            help="test only these items (their ids, e.g. task ids); default: every item with "
            "a reference trajectory",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        project = Project.objects.filter(name=options["project"]).first()
        if project is None:
            names = ", ".join(Project.objects.order_by("name").values_list("name", flat=True)[:20])
            raise CommandError(
                f"no project named {options['project']!r} (projects: {names or 'none'})"
            )
        try:
            run, job = oracle.oracle_run_create(
                project=project,
                user=None,
                base_url=options["base_url"],
                model=options["model"],
                items=options["items"],
            )
        except DomainError as exc:
            raise CommandError(exc.message) from None
        job = oracle.oracle_run_execute(job=job)
        if job.status != JobStatus.SUCCEEDED:
            raise CommandError(f"the oracle test failed: {job.error}")
        results = (
            OracleResult.objects.filter(run=run)
            .select_related("item")
            .order_by("item__position", "item_id")
        )
        for result in results:
            line = {
                "item": result.item.external_id,
                "model": run.model,
                "outcome": result.outcome,
                "correct": None
                if result.outcome == OracleOutcome.ERROR
                else result.outcome == OracleOutcome.SOLVED,
                "answer": result.answer,
                "expected": result.item.expected_answer,
                "error": result.error or None,
                "cached": result.cached,
                "latency_ms": result.latency_ms,
                "prompt_tokens": result.prompt_tokens,
                "completion_tokens": result.completion_tokens,
            }
            self.stdout.write(json.dumps(line, ensure_ascii=False))
        summary = {
            "run": run.pk,
            "model": run.model,
            **run_figures(run=run),
            "calls": job.result.get("summary", {}).get("calls"),
        }
        self.stdout.write(json.dumps({"summary": summary}, ensure_ascii=False))
