"""Reads of evaluation runs, scoped to the user's projects (another project's run answers
404): a project's runs, a run with its progress, its results a page at a time, one result
with its trace, and the leaderboard (the latest finished run of each model, in the layout of
the protocol's columns, with bootstrap intervals and whether items changed since), and the
pilot's review lists over the leaderboard's runs (items models got wrong that people solved,
items every model solved)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from django.db.models import Count, Q, QuerySet, Subquery, Sum
from django.db.models.fields.json import KeyTransform
from django.shortcuts import get_object_or_404

from annotation.judgment_tasks import solving
from annotation.judgment_tasks.consensus import Verdict
from annotation.judgment_tasks.models import JudgmentTask, Outcome
from benchmark import selectors as project_selectors
from benchmark.evaluation.base import Column, EvalProtocol, Status, solved, solved_maximum
from benchmark.exceptions import DomainError
from benchmark.models import ItemStatus, Job, Project
from benchmark.typing import AnyUser
from review.evaluation import services
from review.evaluation.models import EvaluationResult, EvaluationRun


def protocol_or_none(project: Project) -> tuple[EvalProtocol | None, str]:
    """The project's protocol, or None and why there is none."""
    try:
        return services.protocol_of(project), ""
    except DomainError as exc:
        return None, exc.message


def evaluation_runs_of(*, user: AnyUser, project: Project) -> QuerySet[EvaluationRun]:
    """The project's runs, newest first (the project was looked up for the user)."""
    project_selectors.project_get(user=user, pk=project.pk)
    return (
        EvaluationRun.objects.filter(project=project)
        .select_related("job", "created_by")
        .annotate(results_done=Count("results", filter=~Q(results__status=Status.ERROR)))
        .order_by("-created_at", "-id")
    )


def evaluation_run_get(*, user: AnyUser, pk: int) -> EvaluationRun:
    """A run of one of the user's projects; 404 otherwise."""
    visible = project_selectors.project_visible(user=user).values("pk")
    return get_object_or_404(
        EvaluationRun.objects.select_related("project", "created_by", "job"),
        pk=pk,
        project__in=visible,
    )


@dataclass(frozen=True)
class Progress:
    total: int
    done: int
    errors: int
    tool_calls: int
    prompt_tokens: int
    completion_tokens: int
    #: At the run's price per million tokens; None: the run has no price (cost unknown).
    cost: float | None
    jobs: list[Job]

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def percent(self) -> int:
        return round(100 * self.done / self.total) if self.total else 100

    @property
    def left(self) -> int:
        return max(0, self.total - self.done)

    @property
    def running(self) -> bool:
        return any(not job.done for job in self.jobs)


def run_progress(*, run: EvaluationRun) -> Progress:
    """The run's one progress figure over all its chunk jobs: two queries."""
    figures = EvaluationResult.objects.filter(run=run).aggregate(
        done=Count("pk", filter=~Q(status=Status.ERROR)),
        errors=Count("pk", filter=Q(status=Status.ERROR)),
        tool_calls=Sum("tool_calls"),
        prompt=Sum("prompt_tokens"),
        completion=Sum("completion_tokens"),
    )
    jobs = list(Job.objects.filter(pk__in=run.job_ids or []).select_related("cancel_requested_by"))
    prompt, completion = figures["prompt"] or 0, figures["completion"] or 0
    return Progress(
        total=run.item_count,
        done=figures["done"] or 0,
        errors=figures["errors"] or 0,
        tool_calls=figures["tool_calls"] or 0,
        prompt_tokens=prompt,
        completion_tokens=completion,
        cost=run.cost(prompt, completion),
        jobs=jobs,
    )


@dataclass(frozen=True)
class Judging:
    """The judges of a run's outputs: what they rate (``review.evaluation.judges.judged_as``:
    "answers", "runs" or "" when not here) and the judge jobs started on the run."""

    how: str
    jobs: list[Job]

    @property
    def running(self) -> bool:
        return any(not job.done for job in self.jobs)

    @property
    def of_runs(self) -> bool:
        """The judges rescore agent runs (else they judge answers as judge runs)."""
        from review.evaluation.judges import RUNS

        return self.how == RUNS

    @property
    def rows(self) -> list[tuple[Job, int | None]]:
        """Each job with its judge run's id (None: a rescoring job, shown as the job)."""
        from review.job_names import JUDGE_KIND

        return [
            (job, (job.params or {}).get("run_id") if job.kind == JUDGE_KIND else None)
            for job in self.jobs
        ]


#: Judge jobs of a run shown on its page, newest first.
JUDGE_JOBS_SHOWN = 20


def run_judging(*, run: EvaluationRun) -> Judging:
    """What judges the run's outputs and the judge jobs started on it (one query)."""
    from review.evaluation.judges import judge_jobs_of, judged_as

    try:
        how = judged_as(run.project)
    except DomainError:
        how = ""
    if not how:
        return Judging(how="", jobs=[])
    return Judging(how=how, jobs=list(judge_jobs_of(run=run)[:JUDGE_JOBS_SHOWN]))


def run_results(*, run: EvaluationRun) -> QuerySet[EvaluationResult]:
    return (
        EvaluationResult.objects.filter(run=run)
        .select_related("item")
        .defer("trace", "output")
        .order_by("item__position", "item_id")
    )


def result_get(*, user: AnyUser, run_pk: int, item_pk: int) -> EvaluationResult:
    run = evaluation_run_get(user=user, pk=run_pk)
    return get_object_or_404(
        EvaluationResult.objects.select_related("item", "run", "run__project"),
        run=run,
        item_id=item_pk,
    )


def trace_steps(result: EvaluationResult) -> list[dict[str, Any]]:
    """The trace as steps for the page: each message's role, its texts, its images (by
    hash: the project's images, or files the run stored) and its tool calls."""
    steps = []
    for n, message in enumerate(result.trace or [], 1):
        if not isinstance(message, dict):
            steps.append({"n": n, "role": "step", "texts": [str(message)], "images": []})
            continue
        content = message.get("content")
        texts: list[str] = []
        images: list[str] = []
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            for part in content:
                if not isinstance(part, dict):
                    continue
                if part.get("type") == "text":
                    texts.append(str(part.get("text", "")))
                url = str((part.get("image_url") or {}).get("url", ""))
                if url.startswith("sha256:"):
                    images.append(url[len("sha256:") :])
        calls = [
            {
                "name": (c.get("function") or {}).get("name", ""),
                "arguments": (c.get("function") or {}).get("arguments", ""),
            }
            for c in message.get("tool_calls") or []
            if isinstance(c, dict)
        ]
        steps.append(
            {
                "n": n,
                "role": str(message.get("role", "")),
                "texts": [t for t in texts if t],
                "images": images,
                "calls": calls,
            }
        )
    return steps


def output_text(output: Any) -> str:
    """An output as the page shows it: a text as it is, anything else as indented JSON."""
    if output is None:
        return ""
    if isinstance(output, str):
        return output
    import json

    return json.dumps(output, indent=2, ensure_ascii=False, default=str)


# =========================================================================== leaderboard


def _shown(value: float | None, percent: bool) -> str:
    if value is None:
        return ""
    return f"{value:.1f}" if percent else f"{value:.2f}"


@dataclass(frozen=True)
class Cell:
    """One figure: a share (``percent``: in percent, 0-100, as the papers' tables give it) or
    a number, with its bootstrap interval."""

    value: float | None
    low: float | None
    high: float | None
    percent: bool

    @property
    def text(self) -> str:
        return _shown(self.value, self.percent)

    @property
    def low_text(self) -> str:
        return _shown(self.low, self.percent)

    @property
    def high_text(self) -> str:
        return _shown(self.high, self.percent)


def cell(column: Column, run: EvaluationRun) -> Cell:
    interval = (run.intervals or {}).get(column.key) or [None, None]
    return Cell(
        value=services.figure(run.summary or {}, column.key),
        low=interval[0],
        high=interval[1],
        percent=column.percent,
    )


@dataclass(frozen=True)
class Trust:
    """A judge's agreement with people on the project (``review.agreement.judge_sources.
    judge_trust``): Cohen's kappa with the people's majority and its bootstrap 95 % interval,
    over ``n_units`` units of the judgment task ``task``; ``flagged`` below ``threshold``."""

    kappa: float | None
    low: float | None
    high: float | None
    n_units: int
    flagged: bool
    threshold: float
    task: int
    task_name: str
    source: str
    #: "kappa", or "rated-right" for a judge whose reports people rate: ``share`` of its
    #: reports people rated right, its Wilson interval in ``low`` and ``high``.
    figure: str = "kappa"
    share: float | None = None


@dataclass(frozen=True)
class JudgeCell:
    value: Any
    digits: int
    judge_run: int
    #: The judge's trust is below the threshold.
    flagged: bool = False

    @property
    def text(self) -> str:
        if isinstance(self.value, int | float) and not isinstance(self.value, bool):
            return f"{self.value:.{self.digits}f}"
        return "" if self.value is None else str(self.value)


@dataclass(frozen=True)
class JudgeGroup:
    """A judge's columns beside the leaderboard's (its latest run that judged each model's
    answers)."""

    label: str
    columns: tuple[Any, ...]
    #: Its agreement with people on this project; None: no human ratings yet.
    trust: Trust | None = None


@dataclass(frozen=True)
class Row:
    run: EvaluationRun
    cells: list[Cell]
    changed: int
    judged: list[JudgeCell | None]


@dataclass(frozen=True)
class ColumnTrust:
    """Under a column of the protocol's own that a model judge decides while runs are scored
    (Agentic-MME's S and V: the S and V judges): that judge's agreement with reviewers'
    answers to its checks on this project's runs; ``trust`` None: no human ratings yet."""

    label: str
    trust: Trust | None


@dataclass(frozen=True)
class Leaderboard:
    columns: tuple[Column, ...]
    rows: list[Row]
    reason: str = ""
    judges: tuple[JudgeGroup, ...] = ()
    #: One entry per column: its judge's trust, or None for a column no judge decides.
    column_trust: tuple[ColumnTrust | None, ...] = ()

    @property
    def has_trust(self) -> bool:
        return bool(self.judges) or any(t is not None for t in self.column_trust)


#: Judge runs read for the leaderboard's judge columns, newest first.
JUDGE_RUNS_READ = 100


def judge_figures(
    project: Project, models: set[str], *, threshold: float | None = None
) -> tuple[tuple[JudgeGroup, ...], dict[str, list[JudgeCell | None]]]:
    """The judges' columns and, per model, their figures: from each judge's newest finished
    run whose figures name the model (the answers the evaluation stored, or uploaded ones of
    the same model). One query; then each judge's trust (its newest such run against people,
    ``judge_trust``): one query for the project's judged tasks and a few per judge shown."""
    from benchmark.metrics.judge_rater import DEFAULT_TRUST_THRESHOLD
    from benchmark.models import JobStatus
    from review.agreement.judge_sources import judge_trust, trust_tasks
    from review.judges.models import JudgeRun
    from review.judges.specs import judge_spec_get

    threshold = DEFAULT_TRUST_THRESHOLD if threshold is None else threshold

    runs = (
        JudgeRun.objects.filter(project=project, job__status=JobStatus.SUCCEEDED)
        .select_related("job")
        .order_by("-created_at", "-id")[:JUDGE_RUNS_READ]
    )
    found: dict[str, dict[str, tuple[int, dict[str, Any]]]] = {}
    newest: dict[str, JudgeRun] = {}
    order: list[str] = []
    for run in runs:
        result = run.job.result if run.job is not None else None
        summary = result.get("summary") if isinstance(result, dict) else None
        per_model = (summary or {}).get("models") if isinstance(summary, dict) else None
        if not isinstance(per_model, dict):
            continue
        for model in models & set(per_model):
            if run.judge not in found:
                order.append(run.judge)
                newest[run.judge] = run
            found.setdefault(run.judge, {}).setdefault(model, (run.pk, per_model[model] or {}))
    groups = []
    cells: dict[str, list[JudgeCell | None]] = {model: [] for model in models}
    tasks = trust_tasks(project=project) if order else []
    for name in order:
        spec = judge_spec_get(name)
        if spec is None or not spec.columns or spec.compares_models:
            continue
        found_trust = judge_trust(spec=spec, run=newest[name], tasks=tasks, threshold=threshold)
        trust = Trust(**found_trust) if found_trust is not None else None
        groups.append(JudgeGroup(label=spec.label, columns=tuple(spec.columns), trust=trust))
        flagged = trust is not None and trust.flagged
        for model in models:
            hit = found[name].get(model)
            for column in spec.columns:
                cells[model].append(
                    JudgeCell(
                        value=hit[1].get(column.name),
                        digits=column.digits,
                        judge_run=hit[0],
                        flagged=flagged,
                    )
                    if hit is not None
                    else None
                )
    return tuple(groups), cells


def column_trust(
    project: Project, columns: tuple[Column, ...], *, threshold: float | None = None
) -> tuple[ColumnTrust | None, ...]:
    """Per column, the trust of the check judge that decides it in this project's format
    (``review.runs.selectors.CHECK_JUDGES``: the S judge under S, the V judge under V and
    V_true), each computed once and cached (``check_judges_trust``); None elsewhere."""
    from benchmark.metrics.judge_rater import DEFAULT_TRUST_THRESHOLD
    from review.runs.selectors import CHECK_JUDGES, check_judges_trust

    threshold = DEFAULT_TRUST_THRESHOLD if threshold is None else threshold
    keys = {column.key for column in columns}
    judges = [
        j for j in CHECK_JUDGES if project.data_format in j.spec.formats and keys & set(j.columns)
    ]
    trusts = check_judges_trust(judges=judges, project=project, threshold=threshold)
    out: list[ColumnTrust | None] = []
    for column in columns:
        judge = next((j for j in judges if column.key in j.columns), None)
        if judge is None:
            out.append(None)
            continue
        trust = trusts[judge.key]
        out.append(
            ColumnTrust(label=judge.label, trust=Trust(**trust) if trust is not None else None)
        )
    return tuple(out)


def latest_runs(*, user: AnyUser, project: Project) -> dict[str, EvaluationRun]:
    """The leaderboard's runs: the latest finished run of each model, by model (one query
    after the project's lookup)."""
    runs = (
        evaluation_runs_of(user=user, project=project)
        .filter(finished_at__isnull=False)
        .order_by("model", "-finished_at", "-id")
    )
    latest: dict[str, EvaluationRun] = {}
    for run in runs:
        latest.setdefault(run.model, run)
    return latest


def leaderboard(*, user: AnyUser, project: Project) -> Leaderboard:
    """One row per evaluated model: its latest finished run, the figures of the protocol's
    columns with their intervals, and how many of the run's items changed since (their
    newest version now differs from the one the run recorded). A fixed number of queries
    whatever the number of runs."""
    protocol, reason = protocol_or_none(project)
    if protocol is None:
        return Leaderboard(columns=(), rows=[], reason=reason)
    latest = latest_runs(user=user, project=project)
    ids = {int(pk) for run in latest.values() for pk in (run.item_versions or {})}
    now = services.item_versions(ids)
    judges, judged = judge_figures(project, set(latest))
    rows = []
    for run in latest.values():
        cells = [cell(column, run) for column in protocol.columns]
        changed = sum(
            1 for pk, version in (run.item_versions or {}).items() if now.get(pk, -1) != version
        )
        rows.append(Row(run=run, cells=cells, changed=changed, judged=judged.get(run.model, [])))
    first = protocol.columns[0].key if protocol.columns else ""
    rows.sort(key=lambda r: -(services.figure(r.run.summary or {}, first) or -1.0))
    columns = tuple(protocol.columns)
    return Leaderboard(
        columns=columns,
        rows=rows,
        judges=judges,
        column_trust=column_trust(project, columns) if rows else (),
    )


def run_has_file(*, run: EvaluationRun, sha256: str) -> bool:
    """Whether one of the run's results stored a file with this hash."""
    for files in EvaluationResult.objects.filter(run=run).values_list("files", flat=True):
        if sha256 in (files or {}).values():
            return True
    return False


# =========================================================================== pilot lists

#: At most this many items of each pilot list are shown (the count says how many there are).
PILOT_SHOWN = 500


@dataclass(frozen=True)
class PilotResult:
    """One model's result on an item: the model and the run it is from."""

    model: str
    run: int


@dataclass(frozen=True)
class PilotItem:
    """An item of a pilot list: its row of the item table (``pk``, ``external_id``,
    ``status``, ``status_label``, ``query_shown``, ...), the models' results that put it on
    the list (those that got it wrong, or every model's), and how people solved it."""

    item: dict[str, Any]
    results: tuple[PilotResult, ...]
    people: tuple[str, ...] = ()


@dataclass(frozen=True)
class PilotLists:
    """The pilot's review lists over the leaderboard's runs (the latest finished run of each
    model): ``wrong`` the items some model got wrong that people solved, ``easy`` the items
    every evaluated model solved. ``key`` and ``maximum``: the score that says "solved" and
    the value it must reach; ``solve_tasks``: the blind-solving tasks whose accepted outcome
    counts as people solving an item."""

    models: tuple[PilotResult, ...]
    wrong: list[PilotItem]
    easy: list[PilotItem]
    wrong_total: int
    easy_total: int
    key: str = ""
    maximum: float = 1.0
    solve_tasks: tuple[str, ...] = ()
    reason: str = ""


def pilot_lists(*, user: AnyUser, project: Project, shown: int = PILOT_SHOWN) -> PilotLists:
    """The pilot's two review lists (see :class:`PilotLists`). People solved an item when it
    is verified, or its outcome in a blind-solving task of the project
    (``annotation.judgment_tasks.solving.is_solve_task``) is accepted. Discarded items are on
    neither list; an item a model has no score for (no ground truth, a failed run) counts
    neither way for that model, and an item is "solved by every model" only when each
    evaluated model solved it. A fixed number of queries whatever the number of runs and
    items (the solved score is read out of the results' JSON by the database)."""
    protocol, reason = protocol_or_none(project)
    empty = PilotLists(models=(), wrong=[], easy=[], wrong_total=0, easy_total=0)
    if protocol is None:
        return dataclasses.replace(empty, reason=reason)
    key = getattr(protocol, "solved", "")
    if not key:
        return dataclasses.replace(
            empty,
            reason=f"{project.benchmark.label}'s protocol does not say when an item is solved",
        )
    latest = latest_runs(user=user, project=project)
    models = tuple(PilotResult(model=run.model, run=run.pk) for run in latest.values())
    base = dataclasses.replace(empty, models=models, key=key, maximum=solved_maximum(protocol))
    if not models:
        return base
    by_run = {m.run: m for m in models}
    results = EvaluationResult.objects.filter(run_id__in=list(by_run))
    outcomes = _solved_by_run(results, key=key, protocol=protocol)
    evaluated = results.values("item_id")
    tasks = [t for t in JudgmentTask.objects.filter(project=project) if solving.is_solve_task(t)]
    accepted = _accepted_by_people(tasks, evaluated)
    items = (
        project_selectors.item_table_rows(user=user, project=project)
        .filter(pk__in=Subquery(evaluated))
        .exclude(status=ItemStatus.DISCARDED)
    )
    wrong: list[PilotItem] = []
    easy: list[PilotItem] = []
    wrong_total = easy_total = 0
    for row in items:
        verdicts = outcomes.get(row["pk"], {})
        if not verdicts:
            continue
        failed = tuple(by_run[run] for run, ok in verdicts.items() if not ok)
        people = (("verified",) if row["status"] == ItemStatus.VERIFIED else ()) + tuple(
            f"accepted in {name!r}" for name in sorted(accepted.get(row["pk"], []))
        )
        if failed and people:
            wrong_total += 1
            if len(wrong) < shown:
                wrong.append(PilotItem(item=row, results=_by_model(failed), people=people))
        elif len(verdicts) == len(models) and all(verdicts.values()):
            easy_total += 1
            if len(easy) < shown:
                easy.append(PilotItem(item=row, results=models))
    return dataclasses.replace(
        base,
        wrong=wrong,
        easy=easy,
        wrong_total=wrong_total,
        easy_total=easy_total,
        solve_tasks=tuple(sorted(t.name for t in tasks)),
    )


def _solved_by_run(
    results: QuerySet[EvaluationResult], *, key: str, protocol: EvalProtocol
) -> dict[int, dict[int, bool]]:
    """item -> run -> whether that run's model solved it (unscored items left out); the
    score is read out of the results' JSON by the database."""
    outcomes: dict[int, dict[int, bool]] = {}
    rows = results.annotate(score=KeyTransform(key, "scores")).values_list(
        "run_id", "item_id", "score"
    )
    for run_id, item_id, score in rows:
        verdict = solved({key: score}, protocol)
        if verdict is not None:
            outcomes.setdefault(item_id, {})[run_id] = verdict
    return outcomes


def _accepted_by_people(tasks: list[JudgmentTask], evaluated: Any) -> dict[int, list[str]]:
    """item -> the blind-solving tasks (of ``tasks``) whose outcome accepted it."""
    accepted: dict[int, list[str]] = {}
    if not tasks:
        return accepted
    names = {t.pk: t.name for t in tasks}
    rows = Outcome.objects.filter(
        task_id__in=list(names),
        unit="",
        verdict=Verdict.ACCEPTED,
        item_id__in=Subquery(evaluated),
    ).values_list("item_id", "task_id")
    for item_id, task_id in rows:
        accepted.setdefault(item_id, []).append(names[task_id])
    return accepted


def _by_model(results: tuple[PilotResult, ...]) -> tuple[PilotResult, ...]:
    return tuple(sorted(results, key=lambda r: r.model))


# =========================================================================== routing by doubt


def doubt_models_wrong(task: JudgmentTask) -> dict[str, dict[str, Any]]:
    """Routing by doubt's evaluation signal (``annotation.judgment_tasks.doubt``): per item, the share of the
    models under test (the latest finished run of each) that did not solve it against its
    reference, ``{item id: {"models_wrong": share, "models": n}}``; items no model was scored
    on are left out. Item-level tasks only; three statements."""
    if task.has_units:
        return {}
    protocol, _ = protocol_or_none(task.project)
    key = getattr(protocol, "solved", "") if protocol is not None else ""
    if protocol is None or not key:
        return {}
    latest: dict[str, int] = {}
    runs = (
        EvaluationRun.objects.filter(project_id=task.project_id, finished_at__isnull=False)
        .order_by("model", "-finished_at", "-id")
        .values_list("model", "pk")
    )
    for model, pk in runs:
        latest.setdefault(model, pk)
    if not latest:
        return {}
    results = EvaluationResult.objects.filter(run_id__in=list(latest.values()))
    out: dict[str, dict[str, Any]] = {}
    for item_id, verdicts in _solved_by_run(results, key=key, protocol=protocol).items():
        wrong = sum(not ok for ok in verdicts.values())
        out[str(item_id)] = {"models_wrong": wrong / len(verdicts), "models": len(verdicts)}
    return out
