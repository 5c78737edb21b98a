"""python manage.py judge --project NAME --judge JUDGE
[--answers FILE ...] [--model-answers MODEL ...] [--base-url URL] [--model NAME] [--workers N]

Runs a model judge (any runnable judge of ``review.judges.specs``: ``--help`` lists them) over
a project's stored model answers (or plans, for a judge of plans) as a judge job, in this
process.
``--answers`` first imports answer files (the formats ``score_responses`` reads) as the
project's model answers; it and ``--model-answers`` take several values and may be repeated. Prints one JSON object per judged answer (``item``, ``model``,
``scores``, ``failed``) and then one object ``{"summary": {...}}`` with the per-model figures
(``rubric``, ``fs``, ``sr``, ``mi``, ``r_llm``, ``r_mllm``, ``r``, ``valid``; each judge's
are defined in its spec, ``review/judges/specs/``). The judge model is the project's (or the environment's) unless
``--base-url``/``--model`` name another. Bad input exits non-zero with a message.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from benchmark.exceptions import DomainError
from benchmark.models import JobStatus, Project
from review.judges import services as judge_services
from review.judges.selectors import judge_run_report
from review.judges.specs import judge_specs
from review.management.commands.score_responses import _files


class Command(BaseCommand):
    help = "Run a model judge over a project's model answers and print the reports as JSON."
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", required=True, help="the project's name")
        parser.add_argument(
            "--judge", required=True, choices=[s.name for s in judge_specs(runnable=True)]
        )
        # Several values after one option, and more with the option repeated (a repeat used
        # to replace the values before it).
        parser.add_argument(
            "--answers",
            action="extend",
            nargs="+",
            type=Path,
            default=[],
            metavar="FILE",
            help="answer files to import first",
        )
        parser.add_argument(
            "--model-answers",
            action="extend",
            nargs="+",
            default=[],
            metavar="MODEL",
            help="judge only these models' answers (default: every model's)",
        )
        parser.add_argument("--base-url", default="", help="the judge's OpenAI-compatible URL")
        parser.add_argument("--model", default="", help="the judge model's name")
        parser.add_argument("--workers", type=int, default=4, help="concurrent calls")

    def handle(self, *args: Any, **options: Any) -> None:
        project = Project.objects.filter(name=options["project"]).first()
        if project is None:
            names = ", ".join(Project.objects.order_by("name").values_list("name", flat=True)[:20])
            raise CommandError(
                f"no project named {options['project']!r} (projects: {names or 'none'})"
            )
        try:
            if options["answers"]:
                imported = judge_services.answers_import(
                    project=project, files=_files(options["answers"])
                )
                self.stderr.write(
                    f"answers: {imported.created} new, {imported.updated} changed, "
                    f"{imported.unchanged} unchanged, {len(imported.unknown)} for unknown items"
                )
            run, job = judge_services.judge_run_create(
                project=project,
                user=None,
                judge=options["judge"],
                base_url=options["base_url"],
                model=options["model"],
                models=options["model_answers"],
                workers=options["workers"],
            )
        except DomainError as exc:
            raise CommandError(exc.message) from None
        job = judge_services.judge_run_execute(job=job)
        if job.status != JobStatus.SUCCEEDED:
            raise CommandError(f"the judge run failed: {job.error}")
        report = judge_run_report(run=run)
        for answer in report["answers"]:
            self.stdout.write(json.dumps(answer, ensure_ascii=False))
        summary = {**report["summary"], "calls": job.result.get("summary", {}).get("calls")}
        self.stdout.write(json.dumps({"summary": summary}, ensure_ascii=False))
