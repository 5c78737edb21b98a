"""python manage.py evaluate --project NAME --model NAME --base-url URL
[--items verified|all|release:NAME|filter:NAME] [--mode atm|gen] [--plan-format json|code]
[--strategy multi-step|step-by-step] [--feedback parse,verify,execute] [--shots N]
[--max-rounds 15] [--max-tool-calls 15] [--workers N] [--replay]
[--judge-base-url URL --judge-model NAME] [--out DIR]

Evaluates a model under test on a project's items with the protocol of the project's
benchmark kind (``benchmark.evaluation``), as an evaluation run in this process (the same job
the "Evaluate a model" page starts). Prints one JSON object per item (``item``, ``model``,
``status``, ``output``, ``scores``, and ``error`` when it failed) and then ``{"summary": {...}}``
(the protocol's figures); ``--out`` writes the outputs in the benchmark's own result format.

``--judge-base-url`` / ``--judge-model`` then run the kind's judges on the run's outputs
(``review.evaluation.judges``: the answer judges as judge runs; Agentic-MME's S/V judges
scoring its runs again), before the lines are printed; their figures go in the summary under
``judges``.

Every model call and tool call is recorded; ``--replay`` answers them only from the record (no
model server, no network) and an item whose call was never recorded fails naming it (exit
status 1). Bad input (an unknown project, a kind with no protocol yet, a bad option): one line
on stderr and exit status 2.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from benchmark.evaluation.base import Status
from benchmark.exceptions import DomainError
from benchmark.models import Project
from review.evaluation import selectors, services
from review.evaluation.judges import evaluation_judge
from review.evaluation.models import EvaluationResult, EvaluationRun

OPTIONS = frozenset(
    {"items", "mode", "plan_format", "strategy", "feedback", "shots", "max_rounds",
     "max_tool_calls", "workers"}
)  # fmt: skip


#: Lines written to stdout at once.
PRINT_BLOCK = 500


def _bad(message: str) -> CommandError:
    return CommandError(message, returncode=2)


def _flagged(message: str) -> str:
    """A setting's message as the option that set it ("max_rounds: ..." -> "--max-rounds: ...")."""
    head, sep, rest = message.partition(": ")
    if sep and head in OPTIONS:
        return f"--{head.replace('_', '-')}: {rest}"
    return message


class Command(BaseCommand):
    help = "Evaluate a model on a project's items; print one JSON object per item and a summary."
    requires_system_checks: list[str] = []

    def create_parser(self, prog_name: str, subcommand: str, **kwargs: Any) -> CommandParser:
        parser = super().create_parser(prog_name, subcommand, **kwargs)

        def error(message: str) -> None:  # one line and status 2, not argparse's usage dump
            sys.stderr.write(f"evaluate: {message}\n")
            sys.exit(2)

        parser.error = error  # type: ignore[method-assign]
        return parser

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", required=True, help="the project's name")
        parser.add_argument("--model", default="", help="the model's name at the endpoint")
        parser.add_argument("--base-url", default="", help="the OpenAI-compatible base URL")
        parser.add_argument(
            "--items",
            default="verified",
            help="verified, all, release:NAME or filter:NAME (a saved filter of the item list)",
        )
        parser.add_argument("--mode", default="atm", help="Agentic-MME: atm or gen")
        parser.add_argument("--plan-format", default="json", help="m&m's: json or code")
        parser.add_argument(
            "--strategy", default="multi-step", help="m&m's: multi-step or step-by-step"
        )
        parser.add_argument("--feedback", default="", help="m&m's: any of parse,verify,execute")
        parser.add_argument("--shots", default="0", help="ATP-Bench: N-shot examples")
        parser.add_argument("--max-rounds", default="15", help="rounds per item at most")
        parser.add_argument("--max-tool-calls", default="15", help="tool calls per item at most")
        parser.add_argument("--workers", default="4", help="items evaluated at once")
        parser.add_argument(
            "--replay", action="store_true", help="answer every call from the record only"
        )
        parser.add_argument("--judge-base-url", default="", help="a judge's base URL")
        parser.add_argument("--judge-model", default="", help="a judge model's name")
        parser.add_argument("--out", default="", help="write the outputs to this folder")

    def handle(self, *args: Any, **options: Any) -> None:
        project = Project.objects.filter(name=options["project"]).first()
        if project is None:
            raise _bad(f"--project: no project named {options['project']!r}")
        if bool(options["judge_base_url"]) != bool(options["judge_model"]):
            raise _bad("--judge-base-url and --judge-model go together")
        try:
            workers = int(options["workers"])
        except ValueError:
            raise _bad(f"--workers: {options['workers']!r} is not a whole number") from None
        # More workers than one process keeps busy: chunks in processes of their own.
        processes = services.processes_for(workers)
        settings = {
            "mode": options["mode"],
            "plan_format": options["plan_format"],
            "strategy": options["strategy"],
            "feedback": options["feedback"],
            "shots": options["shots"],
            "max_rounds": options["max_rounds"],
            "max_tool_calls": options["max_tool_calls"],
        }
        try:
            run, jobs = services.evaluation_run_create(
                project=project,
                user=None,
                model=options["model"],
                base_url=options["base_url"],
                items=options["items"],
                settings=settings,
                workers=workers,
                replay=options["replay"],
                processes=processes,
            )
        except DomainError as exc:
            raise _bad(_flagged(exc.message)) from None
        run = services.evaluation_run_execute(run=run, jobs=jobs, processes=processes)
        failed = services.job_failed_messages(jobs)
        if failed:
            raise CommandError(f"the evaluation failed: {failed[0]}")
        judges = None
        if options["judge_base_url"]:
            try:
                judges = evaluation_judge(
                    run=run,
                    base_url=options["judge_base_url"],
                    model=options["judge_model"],
                    workers=workers,
                )
            except DomainError as exc:
                raise _bad(f"--judge-base-url: {exc.message}") from None
            run.refresh_from_db(fields=["summary"])  # judged runs: figures from judged scores
        errors = self._print_items(run)
        summary = dict(run.summary or {})
        if judges is not None:
            summary["judges"] = judges
        self.stdout.write(json.dumps({"summary": summary}, ensure_ascii=False, sort_keys=True))
        spent = selectors.run_progress(run=run)
        self.stderr.write(
            f"{spent.prompt_tokens} input and {spent.completion_tokens} output tokens · cost "
            f"{services.cost_text(spent.cost)}"
            + (
                ""
                if run.price
                else " (no price per million tokens in the project's model settings)"
            )
        )
        if options["out"]:
            protocol = services.protocol_of(project)
            written = protocol.write_outputs(
                services.run_outcomes(run, files=True), options["out"], model=run.model
            )
            self.stderr.write(f"wrote {len(written)} file(s) to {options['out']}")
        if errors and run.replay:
            raise CommandError(f"replay: {len(errors)} item(s) failed; {errors[0]}")

    def _print_items(self, run: EvaluationRun) -> list[str]:
        """One JSON line per item, in item order; the failed items' "id: error"."""
        errors = []
        # What a line prints; not the trace nor the files (the largest fields, read by the
        # run's page and --out). Rows as tuples, the lines written a block at a time.
        rows = (
            EvaluationResult.objects.filter(run=run)
            .order_by("item__position", "item_id")
            .values_list("item__external_id", "status", "output", "scores", "error")
        )
        block: list[str] = []
        for external_id, status, output, scores, error in rows.iterator(chunk_size=500):
            line: dict[str, Any] = {
                "item": external_id,
                "model": run.model,
                "status": status,
                "output": output,
                "scores": scores,
            }
            if error:
                line["error"] = error
            if status == Status.ERROR:
                errors.append(f"{external_id}: {error}")
            block.append(json.dumps(line, ensure_ascii=False, sort_keys=True))
            if len(block) >= PRINT_BLOCK:
                self.stdout.write("\n".join(block))
                block = []
        if block:
            self.stdout.write("\n".join(block))
        return errors
