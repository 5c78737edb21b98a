"""Reading judge runs: a run the user may see, and a run's report (per-thing scores and the
per-model figures), rebuilt from the stored calls by the judge's own parsers and aggregations
(its spec, ``review.judges.specs``), so a report always says what the stored outputs say.

The figures of each judge are defined in its spec module and in ``benchmark.judge_prompts``; the run
page shows their definitions (the spec's ``definitions_template``). ``n`` counts the things in
the figures and ``excluded`` the things left out because a judgment failed (unparseable after a
retry, or no answer from the endpoint).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection
from typing import Any

from benchmark import permissions
from benchmark.exceptions import NotFound
from benchmark.judge_prompts import Judgment
from benchmark.typing import AnyUser
from review.judges.calls import stored_judgment
from review.judges.models import JudgeRun
from review.judges.specs import judge_spec

__all__ = ["judge_run_get", "judge_run_report", "stored_judgment"]


def judge_run_get(*, user: AnyUser, pk: int) -> JudgeRun:
    """A run of a project where the user may review; NotFound otherwise."""
    run = JudgeRun.objects.select_related("project", "job").filter(pk=pk).first()
    if run is None or not permissions.can(user=user, project=run.project, action="run_judges"):
        raise NotFound("no such judge run")
    return run


def judge_run_report(*, run: JudgeRun, responses: Collection[int] | None = None) -> dict[str, Any]:
    """``{"answers": [one per thing judged: what it is (answers: response, item, model,
    verified; plans: item, plan, model (its source), alternative), "scores", "failed"],
    "summary": {...}}`` from the run's stored calls, things in order. The summary holds
    ``models`` (the judge's figures per answering model, or per plan source) and what the
    judge adds (``excluded``, all models; a plan run's overall figures; the weights).
    ``responses``: only these things (ids), e.g. the answers people rated, so the figures are
    over the same answers as theirs."""
    spec = judge_spec(run.judge)
    subject = spec.rates
    calls = subject.calls(run)
    if responses is not None:
        calls = calls.filter(**{f"{subject.fk_id}__in": responses})
    # Each thing once (not once per call), and of each call only what the report reads: a
    # run of 10,000 calls stays small in memory.
    things = subject.run_load(run=run, ids=calls.values(subject.fk_id))
    if responses is not None:  # a subject may add things without calls (identical pairs)
        wanted = set(responses)
        things = {pk: thing for pk, thing in things.items() if pk in wanted}
    fields = (
        "id",
        "run",  # the calls set each row's run: without it Django fetches it row by row
        subject.fk,
        "label",
        "key",
        "template_id",
        "template_version",
        "outputs",
        "ok",
        "error",
        "transport_error",
    )
    by_thing: dict[int, dict[str, Judgment[Any]]] = defaultdict(dict)
    failed: dict[int, list[str]] = defaultdict(list)
    for row in calls.only(*fields).order_by("id").iterator(chunk_size=2000):
        pk = getattr(row, subject.fk_id)
        by_thing[pk][row.label] = stored_judgment(row, spec.parser(row.label, things[pk]))
        if not row.ok:
            failed[pk].append(f"{row.label}: {row.error}")
    per_source: dict[str, list[Any]] = defaultdict(list)
    values: list[Any] = []
    answers = []
    for thing in sorted(things.values(), key=subject.order):
        value, scores = spec.scores(thing, by_thing[thing.pk], run)
        per_source[subject.source_of(thing)].append(value)
        values.append(value)
        answers.append(
            {
                **subject.report_fields(thing),
                "scores": scores,
                "failed": failed.get(thing.pk, []),
            }
        )
    models = {name: spec.figures(per_source[name]) for name in sorted(per_source)}
    summary: dict[str, Any] = {
        "judge": run.judge,
        "judge_model": run.model,
        "templates": run.templates,
        "models": models,
        **spec.summary_figures(values, models, run),
    }
    return {"answers": answers, "summary": summary}
