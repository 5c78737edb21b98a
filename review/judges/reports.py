"""Reads for the judge-run pages (issue 10): a project's runs, a run's per-model figures and
why judgments were excluded, one page of its answers' reports, the released LLMI-Bench scores
beside the judge's, and the comparison of two sources of per-model figures over the same
answers (two judge runs, or a run and the tool-set F1 or the released scores of its answers)
with Spearman's rho between their model rankings (ATP-Bench Table 8, §5.3).

Lookups take ``user=`` and scope to the user's projects (another project's run answers 404);
the pages add the reviewer check (403). Figures and their definitions are those of
``review.judges.selectors`` and ``benchmark.judges``: a finished run's figures are the ones
its job recorded; a run whose job failed has figures rebuilt from the calls it stored.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.core.paginator import Page, Paginator
from django.db.models import Count, QuerySet
from django.shortcuts import get_object_or_404

from benchmark import judges
from benchmark.exceptions import ValidationFailed
from benchmark.judges import Judgment, mam, rankings
from benchmark.judges import llmi as llmi_judge
from benchmark.judges import rubric as rubric_judge
from benchmark.metrics.tag_scores import AnswerRecord
from benchmark.models import DataFormat, JobStatus, Project, Response
from benchmark.typing import AnyUser
from review.judges import people, plan_judge
from review.judges.models import JudgeCall, JudgeName, JudgeRun
from review.judges.people import PeopleRubric
from review.judges.selectors import image_num_of, judge_run_report, judgment_of

PER_PAGE = 20
"""Answers per page of a run's reports."""

# =========================================================================== columns


@dataclass(frozen=True)
class Column:
    """One per-model figure: its key in the summary, how the page names and prints it, and
    which way it ranks (MI: fewer missed images is better)."""

    name: str
    label: str
    unit: str = ""
    digits: int = 2
    lower_is_better: bool = False


COLUMNS: dict[str, tuple[Column, ...]] = {
    JudgeName.LLMI_RUBRIC: (Column("rubric", "Rubric", "%"),),
    JudgeName.LLMI_LLM: (Column("r_llm", "R_llm", digits=3),),
    JudgeName.LLMI_MLLM: (
        Column("r", "R", digits=3),
        Column("r_rule", "R_rule", digits=3),
        Column("r_llm", "R_llm", digits=3),
        Column("r_mllm", "R_mllm", digits=3),
    ),
    JudgeName.ATP_MAM: (
        Column("fs", "FS"),
        Column("sr", "SR", "%"),
        Column("mi", "MI", lower_is_better=True),
    ),
    "f1": (
        Column("f1", "Tool-set F1", "%"),
        Column("precision", "Tool-set P", "%"),
        Column("recall", "Tool-set R", "%"),
    ),
    "released": (Column("rubric", "Released rubric", "%"),),
    "people": (Column("rubric", "People's rubric", "%"),),
    JudgeName.MMS_PLAN: (Column("valid", "Judged valid", "%"),),
}
"""The columns of each source, the headline figure first."""

SUB_CHECK_COLUMNS = tuple(
    Column(code, f"{code} {name.replace('_', ' ')}", "%")
    for name, code in mam.SUB_CHECK_CODES.items()
)
"""ATP-Bench Table 10: per sub-check, the share of tool calls scored 2."""

EQUAL_WEIGHTS = {"rule": 1 / 3, "llm": 1 / 3, "mllm": 1 / 3}


def run_weights(run: JudgeRun) -> dict[str, Any]:
    """The weights of R = w_rule R_rule + w_llm R_llm + w_mllm R_mllm R_rule the run used:
    the ones it recorded (``weights``, else ``selection["weights"]``), else equal weights.
    ``default`` says the weights are the equal default; ``preset`` where they came from."""
    raw = getattr(run, "weights", None) or (run.selection or {}).get("weights")
    if isinstance(raw, Mapping) and all(
        isinstance(raw.get(k), int | float) and not isinstance(raw.get(k), bool)
        for k in EQUAL_WEIGHTS
    ):
        weights = {k: float(raw[k]) for k in EQUAL_WEIGHTS}
        equal = all(abs(v - 1 / 3) < 1e-9 for v in weights.values())
        return weights | {"default": equal, "preset": str(raw.get("preset") or "")}
    return {**EQUAL_WEIGHTS, "default": True, "preset": ""}


# =========================================================================== runs


def judge_runs_of(*, user: AnyUser, project: Project) -> QuerySet[JudgeRun]:
    """The project's judge runs, newest first (none for a non-member)."""
    if not user.is_authenticated:
        return JudgeRun.objects.none()
    return (
        JudgeRun.objects.filter(project=project, project__memberships__user=user.pk)
        .select_related("job", "created_by")
        .order_by("-created_at", "-id")
    )


def judge_run_for_member(*, user: AnyUser, pk: int) -> JudgeRun:
    """A run of one of the user's projects; 404 otherwise (the page checks the role)."""
    runs = (
        JudgeRun.objects.filter(project__memberships__user=user.pk)
        if user.is_authenticated
        else JudgeRun.objects.none()
    )
    return get_object_or_404(runs.select_related("project", "job", "created_by"), pk=pk)


def model_answer_counts(*, project: Project) -> list[tuple[str, int]]:
    """``(model, number of stored answers)`` of the project's model answers, by name."""
    rows = (
        Response.objects.filter(item__project=project, origin="model")
        .values("model_name")
        .annotate(n=Count("id"))
        .order_by("model_name")
    )
    return [(r["model_name"], r["n"]) for r in rows]


def _answers_of(run: JudgeRun) -> QuerySet[Response]:
    return Response.objects.filter(pk__in=run.calls.values("response_id"))


# =========================================================================== figures


@dataclass
class Figures:
    """A run's per-model figures: ``summary`` as ``judge_run_report`` makes it; ``partial``
    when the run's job failed and the figures cover only the calls it stored."""

    summary: dict[str, Any]
    partial: bool
    rows: list[dict[str, Any]] = field(default_factory=list)


def figure_rows(judge: str, summary: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per answering model (by name): the judge's columns, and for ATP-Bench MAM the
    six sub-check shares."""
    models = summary.get("models") or {}
    rows = []
    for name in sorted(models):
        figures = models[name] or {}
        shares = figures.get("sub_checks") or {}
        rows.append(
            {
                "model": name,
                "cells": [(c, figures.get(c.name)) for c in COLUMNS.get(judge, ())],
                "sub_checks": [(c, shares.get(c.name)) for c in SUB_CHECK_COLUMNS]
                if judge == JudgeName.ATP_MAM
                else [],
                "n": figures.get("n"),
                "excluded": figures.get("excluded") or 0,
                "criteria_excluded": figures.get("criteria_excluded"),
                "calls": figures.get("calls"),
                "n_valid": figures.get("n_valid"),
            }
        )
    return rows


def judge_run_figures(*, run: JudgeRun) -> Figures | None:
    """The run's figures; None while its job is queued or running."""
    job = run.job
    if job is not None and not job.done:
        return None
    result = job.result if job is not None and job.status == JobStatus.SUCCEEDED else None
    if (
        isinstance(result, dict)
        and result.get("run_id") == run.pk
        and isinstance(result.get("summary"), dict)
    ):
        summary, partial = result["summary"], False
    else:
        summary, partial = judge_run_report(run=run)["summary"], True
    return Figures(summary=summary, partial=partial, rows=figure_rows(run.judge, summary))


def _first_line(text: str) -> str:
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else "no reason recorded"
    return line[:200]


def judge_run_failures(*, run: JudgeRun) -> dict[str, Any]:
    """Why judgments failed: ``unparsed`` (the output did not parse, twice), ``transport``
    (the endpoint gave no answer) and the most common reasons by call label."""
    counts: Counter[tuple[str, bool, str]] = Counter()
    calls = run.plan_calls if run.judge == JudgeName.MMS_PLAN else run.calls
    for label, transport, error in calls.filter(ok=False).values_list(
        "label", "transport_error", "error"
    ):
        counts[(label, transport, _first_line(error))] += 1
    reasons = [
        {"label": label, "transport": transport, "reason": reason, "n": n}
        for (label, transport, reason), n in counts.most_common(12)
    ]
    return {
        "unparsed": sum(n for (_, t, _), n in counts.items() if not t),
        "transport": sum(n for (_, t, _), n in counts.items() if t),
        "reasons": reasons,
        "more": max(0, len(counts) - len(reasons)),
    }


# =========================================================================== released scores


def released_of(response: Response) -> rubric_judge.AnswerRubric | None:
    """The released rubric scores an imported answer carries (``extra["scores"]``), if any."""
    extra = response.extra if isinstance(response.extra, Mapping) else {}
    return _released(extra)


def _released(extra: Any) -> rubric_judge.AnswerRubric | None:
    if not isinstance(extra, Mapping):
        return None
    scores = extra.get("scores")
    if not isinstance(scores, Mapping) or not scores:
        return None
    return rubric_judge.released_rubric(extra)


def _mean(values: list[int] | list[float]) -> float | None:
    return sum(values) / len(values) if values else None


@dataclass
class _Criterion:
    judge: list[int] = field(default_factory=list)
    released: list[int] = field(default_factory=list)
    pairs: list[bool] = field(default_factory=list)

    def add(self, ours: int | None, theirs: rubric_judge.RubricScore | None) -> None:
        if ours is not None:
            self.judge.append(ours)
        if theirs is not None:
            self.released.append(theirs.score)
        if ours is not None and theirs is not None:
            self.pairs.append(ours == theirs.score)

    def as_dict(self, key: str) -> dict[str, Any]:
        return {
            "key": key,
            "judge": _mean(self.judge),
            "judge_n": len(self.judge),
            "released": _mean(self.released),
            "released_n": len(self.released),
            "agree": 100 * sum(self.pairs) / len(self.pairs) if self.pairs else None,
            "pairs": len(self.pairs),
        }


@dataclass
class _ReleasedModel:
    """One answering model's released scores beside the judge's, answer by answer."""

    released: list[rubric_judge.AnswerRubric] = field(default_factory=list)
    judge_rates: list[float] = field(default_factory=list)
    criteria: dict[str, _Criterion] = field(default_factory=lambda: defaultdict(_Criterion))

    def add(self, answer: rubric_judge.AnswerRubric, mine: dict[str, int]) -> None:
        self.released.append(answer)
        if mine:
            self.judge_rates.append(sum(mine.values()) / (2 * len(mine)))
        for key in set(answer.scores) | set(mine):
            self.criteria[key].add(mine.get(key), answer.scores.get(key))

    def as_dict(self) -> dict[str, Any]:
        figure = rubric_judge.rubric_figure(self.released)
        judge_rate = _mean(self.judge_rates)
        return {
            "released": figure.percent,
            "n": figure.n,
            "excluded": figure.excluded,
            "criteria_excluded": figure.criteria_excluded,
            "judge": None if judge_rate is None else 100 * judge_rate,
            "judge_n": len(self.judge_rates),
            "criteria": [
                self.criteria[k].as_dict(k) for k in sorted(self.criteria, key=_criterion_order)
            ],
        }


def _judge_scores(run: JudgeRun, responses: Iterable[int]) -> dict[int, dict[str, int]]:
    """``{response id: {criterion: score}}`` of the run's valid rubric judgments."""
    wanted = set(responses)
    judged: dict[int, dict[str, int]] = defaultdict(dict)
    rows = run.calls.filter(ok=True).values_list("response_id", "label", "parsed")
    for response_id, label, parsed in rows:
        score = parsed.get("score") if isinstance(parsed, Mapping) else None
        if response_id in wanted and isinstance(score, int) and not isinstance(score, bool):
            judged[response_id][label] = score
    return judged


def judge_run_released(*, run: JudgeRun) -> dict[str, Any] | None:
    """For a rubric run whose answers carry released scores: per model the released Rubric
    figure beside the judge's on the same answers, and per criterion the mean score of each
    and how often they agree exactly. None for other judges or when no answer carries any."""
    if run.judge != JudgeName.LLMI_RUBRIC:
        return None
    released: dict[int, tuple[str, rubric_judge.AnswerRubric]] = {}
    for pk, model, extra in _answers_of(run).values_list("pk", "model_name", "extra"):
        value = _released(extra)
        if value is not None:
            released[pk] = (model, value)
    if not released:
        return None
    judged = _judge_scores(run, released)
    per_model: dict[str, _ReleasedModel] = defaultdict(_ReleasedModel)
    for response_id, (model, answer) in released.items():
        per_model[model].add(answer, judged.get(response_id, {}))
    models = {model: per_model[model].as_dict() for model in sorted(per_model)}
    return {"models": models, "answers": len(released)}


def _criterion_order(key: str) -> tuple[int, str]:
    digits = key[1:]
    return (int(digits), key) if key[:1] == "r" and digits.isdigit() else (10**6, key)


# =========================================================================== answers


def _missing(label: str) -> Judgment[Any]:
    return Judgment(label=label, value=None, attempts=(judges.Attempt(raw="", error="not run"),))


def _answer(run: JudgeRun, response: Response, rows: list[JudgeCall]) -> dict[str, Any]:
    by_label = {row.label: row for row in rows}
    judgments = {label: judgment_of(row, response) for label, row in by_label.items()}
    entry: dict[str, Any] = {
        "response": response,
        "item": response.item,
        "model": response.model_name,
        "calls": rows,
        "failed": [row for row in rows if not row.ok],
    }
    if run.judge == JudgeName.LLMI_RUBRIC:
        criteria = rubric_judge.criteria_of({"rubric": response.item.rubric or []})
        for label in by_label:
            criteria.setdefault(label, "")
        answer = rubric_judge.answer_rubric([judgments.get(k) or _missing(k) for k in criteria])
        released = released_of(response)
        released_rate = released.rate if released is not None else None
        entry["rate_pct"] = None if answer.rate is None else 100 * answer.rate
        entry["released_pct"] = None if released_rate is None else 100 * released_rate
        entry["has_released"] = released is not None
        entry["criteria"] = [
            {
                "key": key,
                "text": text,
                "judge": answer.scores.get(key),
                "call": by_label.get(key),
                "released": released.scores.get(key) if released is not None else None,
                "released_error": released.errors.get(key, "") if released is not None else "",
            }
            for key, text in criteria.items()
        ]
    elif run.judge in (JudgeName.LLMI_LLM, JudgeName.LLMI_MLLM):
        weights = run_weights(run)
        reward = llmi_judge.answer_reward(
            llmi_judge.rule_reward(response.text, image_num_of(response)),
            judgments.get("llm") or _missing("llm"),
            judgments.get("mllm") or _missing("mllm"),
            llmi_judge.Weights(rule=weights["rule"], llm=weights["llm"], mllm=weights["mllm"]),
        )
        entry.update(
            llm=reward.llm.value,
            mllm=reward.mllm.value,
            r_rule=reward.r_rule,
            r_llm=reward.r_llm,
            r_mllm=reward.r_mllm,
            r=reward.r if run.judge == JudgeName.LLMI_MLLM else None,
        )
    else:
        tool_calls = mam.tool_calls_of(response.text)
        precision = judgments.get("precision")
        report = mam.AnswerReport(
            precision=(precision or _missing("precision")) if tool_calls else None,
            recall=judgments.get("recall") or _missing("recall"),
            chief=judgments.get("chief"),
        )
        checks = report.precision_value.calls if report.precision_value else ()
        entry.update(
            tool_calls=[
                {"raw": raw, "check": checks[i] if i < len(checks) else None}
                for i, raw in enumerate(tool_calls)
            ],
            precision_ok=report.precision_value is not None,
            recall=report.recall.value,
            chief=report.chief.value if report.chief is not None else None,
            valid=report.valid,
        )
    return entry


def judge_run_models(*, run: JudgeRun) -> list[tuple[str, int]]:
    """``(model, answers judged)`` of the run, by name; for a plan validity run ``(source,
    plans judged)``, "ground truth" first."""
    if run.judge == JudgeName.MMS_PLAN:
        return plan_judge.plan_run_sources(run=run)
    rows = _answers_of(run).values("model_name").annotate(n=Count("id")).order_by("model_name")
    return [(r["model_name"], r["n"]) for r in rows]


def judge_run_answers(
    *, run: JudgeRun, model: str = "", page: Any = 1, per_page: int = PER_PAGE
) -> Page[Any]:
    """One page of the run's answers in item order (of one answering model, or all), each
    with its report: ``page.object_list`` holds dicts (see ``_answer``). A plan validity
    run's page holds its plans (``plan_judge.plan_run_page``; ``model`` is the source)."""
    if run.judge == JudgeName.MMS_PLAN:
        return plan_judge.plan_run_page(run=run, source=model, page=page, per_page=per_page)
    responses = (
        _answers_of(run)
        .select_related("item")
        .order_by("item__position", "item_id", "model_name", "id")
    )
    if model:
        responses = responses.filter(model_name=model)
    current: Page[Any] = Paginator(responses, per_page).get_page(page)
    chosen: list[Response] = list(current.object_list)
    rows: dict[int, list[JudgeCall]] = defaultdict(list)
    calls = run.calls.filter(response_id__in=[r.pk for r in chosen]).defer("messages")
    for row in calls.order_by("id"):
        rows[row.response_id].append(row)
    current.object_list = [_answer(run, r, rows[r.pk]) for r in chosen]
    return current


# =========================================================================== comparing


@dataclass
class Source:
    """Per-model figures of one source over a set of answers."""

    key: str
    label: str
    kind: str
    figures: dict[str, dict[str, float | None]]
    answers: frozenset[int]
    run: JudgeRun | None = None
    partial: bool = False
    note: str = ""
    people: PeopleRubric | None = None

    @property
    def columns(self) -> tuple[Column, ...]:
        return COLUMNS[self.kind]

    @property
    def noun(self) -> str:
        """What ``answers`` holds: model answers, or plans (a plan validity run)."""
        return "plans" if self.kind == JudgeName.MMS_PLAN else "answers"

    def column(self, name: str) -> Column | None:
        return next((c for c in self.columns if c.name == name), None)


DERIVED = {
    "f1": "Tool-set F1 of the same answers",
    "released": "Released rubric scores of the same answers",
}


def is_plan_project(project: Project) -> bool:
    """An m&m's project: its judge runs judge plans (``mms-plan``), not model answers."""
    return project.data_format == DataFormat.MMS


def compare_choices(*, user: AnyUser, project: Project) -> list[tuple[str, str]]:
    """What the compare form offers: every finished run of the project, the people of its
    "score the criteria" tasks, then the sources derived from the other side's answers. An
    m&m's project offers its plan validity runs only (they judge plans, not answers)."""
    plans = is_plan_project(project)
    runs = [
        (f"run:{run.pk}", f"#{run.pk} {run.get_judge_display()} · {run.model}")
        for run in judge_runs_of(user=user, project=project)
        if (run.job is None or run.job.done) and (run.judge == JudgeName.MMS_PLAN) == plans
    ]
    if plans:
        return runs
    tasks = [
        (f"{people.PREFIX}{task.pk}", f"People: {task.name} (task #{task.pk})")
        for task in people.criterion_tasks(project=project)
    ]
    return runs + tasks + list(DERIVED.items())


Token = tuple[str, int]


def _token(value: str, side: str) -> Token:
    """``("run", id)``, ``("people", task id)`` or ``(derived name, 0)``."""
    value = (value or "").strip()
    if value in DERIVED:
        return value, 0
    if value.startswith(people.PREFIX):
        number = value.removeprefix(people.PREFIX).lstrip("#")
        if number.isdigit():
            return "people", int(number)
    number = value.removeprefix("run:").lstrip("#")
    if number.isdigit():
        return "run", int(number)
    raise ValidationFailed(
        f"{side}: {value[:40]!r} is not a source; give a judge run (run:<id>), people's scores "
        f"of a criterion task ({people.PREFIX}<task id>), " + " or ".join(DERIVED)
    )


def _people_source(project: Project, pk: int) -> Source:
    task = next((t for t in people.criterion_tasks(project=project) if t.pk == pk), None)
    if task is None:
        raise ValidationFailed(
            f"this project has no 'score the criteria' task #{pk} (people's rubric scores come "
            "from a task whose units are criteria of answers)"
        )
    scores = people.people_rubric(task=task)
    figures = scores.figures()
    unrated = len(scores.task_answers - scores.rated_answers)
    note = (
        f"People's figures: {scores.n_ratings} rating{'s' if scores.n_ratings != 1 else ''} of "
        f"{len(scores.values)} of the task's {len(scores.units)} units ({scores.n_decided} "
        f"decided by a majority), on {len(scores.rated_answers)} answer"
        f"{'s' if len(scores.rated_answers) != 1 else ''}"
        + (f"; {unrated} of the task's answers have no rating yet" if unrated else "")
        + "."
    )
    return Source(
        key=f"{people.PREFIX}{task.pk}",
        label=f"People: {task.name}",
        kind="people",
        figures={m: {"rubric": f["rubric"]} for m, f in figures.items()},
        answers=scores.rated_answers,
        note=note,
        people=scores,
    )


def _judge_on_people_units(run_source: Source, people_source: Source) -> tuple[Source, Any]:
    """A rubric run beside people: the run's figures over the units (answer x criterion) both
    scored, and the per-criterion comparison. The run's own figures stay when they share no
    unit (the notes say so)."""
    scores = people_source.people
    run = run_source.run
    assert scores is not None and run is not None
    judged = _judge_scores(run, scores.rated_answers)
    shared = [
        scores.units[key]
        for key in scores.values
        if (judged.get(scores.units[key][0]) or {}).get(scores.units[key][1]) is not None
    ]
    criteria = people.criteria_against_judge(scores, judged)
    if not shared:
        return run_source, criteria
    figures = people.judge_on_units(judged, shared, scores.models)
    restricted = Source(
        key=run_source.key,
        label=f"{run_source.label} on the units people scored",
        kind=run_source.kind,
        figures={m: {"rubric": f["rubric"]} for m, f in figures.items()},
        answers=frozenset(response for response, _ in shared),
        run=run,
        partial=run_source.partial,
        note=f"The judge's Rubric here is over the {len(shared)} unit"
        f"{'s' if len(shared) != 1 else ''} (criterion of an answer) both it and people "
        "scored, computed the same way; its figures over all its answers are on the run's page.",
    )
    return restricted, criteria


def _run_source(run: JudgeRun) -> Source:
    figures = judge_run_figures(run=run)
    if figures is None:
        raise ValidationFailed(
            f"judge run #{run.pk} has no figures yet: its job is {run.job.status if run.job else '—'}"
        )
    models = figures.summary.get("models") or {}
    if run.judge == JudgeName.MMS_PLAN:  # plans, not answers: only compared with plan runs
        answers = frozenset(run.plan_calls.values_list("plan_id", flat=True).distinct())
    else:
        answers = frozenset(run.calls.values_list("response_id", flat=True).distinct())
    return Source(
        key=f"run:{run.pk}",
        label=f"#{run.pk} {run.get_judge_display()} ({run.model})",
        kind=run.judge,
        figures={
            m: {c.name: (models[m] or {}).get(c.name) for c in COLUMNS[run.judge]} for m in models
        },
        answers=answers,
        run=run,
        partial=figures.partial,
    )


def _f1_source(project: Project, base: Source) -> Source:
    from review.answers.services import answers_score

    rows = Response.objects.filter(pk__in=base.answers).select_related("item")
    records = [
        AnswerRecord(
            file="stored answers",
            where=f"answer {r.pk}",
            model=r.model_name,
            text=r.text,
            item_id=r.item.external_id,
        )
        for r in rows
    ]
    result = answers_score(project=project, records=records)
    figures = {
        model: {
            "f1": block["tool_set"]["f1"],
            "precision": block["tool_set"]["precision"],
            "recall": block["tool_set"]["recall"],
        }
        for model, block in (result.get("models") or {}).items()
    }
    n_gt = (result.get("ground_truth") or {}).get("n_items", 0)
    return Source(
        key="f1",
        label="Tool-set F1 (against the verified ground truth)",
        kind="f1",
        figures=figures,
        answers=base.answers,
        note=f"Over the answers of {base.label}; {n_gt} verified item{'s' if n_gt != 1 else ''} "
        "with a ground-truth answer. Models without a scored query have no F1.",
    )


def _released_source(base: Source) -> Source:
    per_model: dict[str, list[rubric_judge.AnswerRubric]] = defaultdict(list)
    for model, extra in Response.objects.filter(pk__in=base.answers).values_list(
        "model_name", "extra"
    ):
        value = _released(extra)
        if value is not None:
            per_model[model].append(value)
    if not per_model:
        raise ValidationFailed(
            f"none of the answers of {base.label} carries released rubric scores"
        )
    return Source(
        key="released",
        label="Released rubric scores",
        kind="released",
        figures={
            m: {"rubric": rubric_judge.rubric_figure(v).percent} for m, v in per_model.items()
        },
        answers=base.answers,
        note=f"The scores the imported answers of {base.label} carry.",
    )


def _values(source: Source, column: Column) -> dict[str, float]:
    return {
        model: float(value)
        for model, figures in source.figures.items()
        if (value := figures.get(column.name)) is not None
    }


def _pairs(a: Source, b: Source, fa: str, fb: str) -> list[tuple[Column, Column]]:
    pairs = [(c, col) for c in a.columns if (col := b.column(c.name)) is not None]
    if not pairs:
        pairs = [(a.columns[0], b.columns[0])]
    if fa or fb:
        chosen_a = a.column(fa) if fa else a.columns[0]
        chosen_b = b.column(fb) if fb else b.columns[0]
        for name, side, chosen in ((fa, a, chosen_a), (fb, b, chosen_b)):
            if chosen is None:
                names = ", ".join(c.name for c in side.columns)
                raise ValidationFailed(
                    f"{side.label} has no figure {name[:40]!r}; choose one of {names}"
                )
        assert chosen_a is not None and chosen_b is not None
        pairs = [(chosen_a, chosen_b)] + [p for p in pairs if p != (chosen_a, chosen_b)]
    return pairs


def _people_notes(a: Source, b: Source) -> list[str] | None:
    """What to say when people's task and the other source do not cover the same answers;
    None when neither side is people."""
    side = a if a.people is not None else b if b.people is not None else None
    if side is None or side.people is None:
        return None
    other = b if side is a else a
    task_answers = side.people.task_answers
    if not task_answers & other.answers:
        return [
            f"The task's answers do not overlap {other.label}'s: {side.label} has "
            f"{len(task_answers)} answer{'s' if len(task_answers) != 1 else ''} to score, none "
            f"of them among the {len(other.answers)} of {other.label}. The two rankings "
            "describe different answers; compare with a judge run over the same answers (or "
            "make the task from the run)."
        ]
    if not side.answers & other.answers:
        n = len(task_answers & other.answers)
        return [
            f"People have not rated yet any of the {n} answer{'s' if n != 1 else ''} "
            f"{side.label} shares with {other.label}: the two rankings describe different "
            "answers."
        ]
    return []


def _answer_notes(a: Source, b: Source) -> list[str]:
    notes = []
    shared = a.answers & b.answers
    special = _people_notes(a, b)
    if special:
        notes += special
    elif not shared:
        notes.append(
            f"The two sources share no {a.noun} ({len(a.answers)} and {len(b.answers)}): their "
            f"rankings describe different {a.noun}."
        )
    elif a.answers != b.answers:
        notes.append(
            f"The two sources judged different {a.noun}: {len(shared)} shared, "
            f"{len(a.answers - b.answers)} only in {a.label}, {len(b.answers - a.answers)} only "
            f"in {b.label}. Each side's figures are over its own {a.noun}."
        )
    only_a = sorted(set(a.figures) - set(b.figures))
    only_b = sorted(set(b.figures) - set(a.figures))
    if only_a or only_b:
        parts = []
        if only_a:
            parts.append(f"{', '.join(only_a)} only in {a.label}")
        if only_b:
            parts.append(f"{', '.join(only_b)} only in {b.label}")
        notes.append(f"Not every model is in both: {'; '.join(parts)}. Rho uses the common ones.")
    common = set(a.figures) & set(b.figures)
    if len(common) < rankings.MIN_MODELS:
        notes.append(
            f"The sources have {len(common)} model{'s' if len(common) != 1 else ''} in common; "
            f"Spearman's rho needs at least {rankings.MIN_MODELS}, so it is undefined here."
        )
    return notes


def _plans_with_plans(plan_sides: list[Token]) -> None:
    """A plan validity run judged plans, not answers: it compares with another one only."""
    if plan_sides and len(plan_sides) != 2:
        raise ValidationFailed(
            f"judge run #{plan_sides[0][1]} judged plans, not answers: compare it with another "
            "m&m's plan validity run"
        )


def _sources(user: AnyUser, project: Project, tokens: list[Token]) -> list[Source]:
    """The two sides' sources: runs and people first, then what derives from the other side."""
    if not any(kind in ("run", "people") for kind, _ in tokens):
        raise ValidationFailed(
            "choose at least one judge run to compare, or people's scores of a 'score the "
            "criteria' task"
        )
    pks = [pk for kind, pk in tokens if kind == "run"]
    runs = {r.pk: r for r in judge_runs_of(user=user, project=project).filter(pk__in=pks)}
    for pk in pks:
        if pk not in runs:
            raise ValidationFailed(f"this project has no judge run #{pk}")
    built: dict[Token, Source] = {}
    for token in tokens:
        kind, pk = token
        if token in built:
            continue
        if kind == "run":
            built[token] = _run_source(runs[pk])
        elif kind == "people":
            built[token] = _people_source(project, pk)
    _plans_with_plans([t for t in tokens if t in built and built[t].kind == JudgeName.MMS_PLAN])
    sources: list[Source] = []
    for n, token in enumerate(tokens):
        if token in built:
            sources.append(built[token])
            continue
        base = built[tokens[1 - n]]
        sources.append(_f1_source(project, base) if token[0] == "f1" else _released_source(base))
    return sources


def judge_compare(
    *, user: AnyUser, project: Project, a: str, b: str, fa: str = "", fb: str = ""
) -> dict[str, Any]:
    """Two sources' per-model figures side by side and Spearman's rho (with p) between their
    rankings: for every figure both have (FS, SR, MI for two MAM runs, like ATP-Bench Table
    8b), else between their headline figures (a MAM run's FS against tool-set F1, like
    §5.3's rho = 0.879), and first the pair ``fa``/``fb`` when given. ``a``/``b``: a judge run
    of the project (``run:<id>``), people's rubric scores of a "score the criteria" task
    (``people:<task id>``, ``review.judges.people``), or ``f1``/``released``: derived from the
    answers of the source on the other side. A rubric run beside people is compared on the
    units both scored, with a per-criterion table (``criteria``). Plan validity runs compare
    with plan validity runs only. ValidationFailed says what is wrong with the request."""
    tokens = [_token(a, "first source"), _token(b, "second source")]
    sources = _sources(user, project, tokens)
    criteria = None
    kinds = [s.kind for s in sources]
    if "people" in kinds and JudgeName.LLMI_RUBRIC in kinds:
        j = kinds.index(JudgeName.LLMI_RUBRIC)
        restricted, criteria = _judge_on_people_units(sources[j], sources[1 - j])
        sources[j] = restricted
    first, second = sources
    rows = []
    for ca, cb in _pairs(first, second, fa, fb):
        result = rankings.rank_correlation(
            _values(first, ca),
            _values(second, cb),
            higher_is_better_a=not ca.lower_is_better,
            higher_is_better_b=not cb.lower_is_better,
        )
        ranked = sorted(result.ranking_a, key=lambda m: (result.ranking_a[m], m))
        rows.append(
            {
                "a": ca,
                "b": cb,
                "rho": result.rho,
                "p": result.p,
                "n": result.n,
                "note": result.note,
                "ranks": [(m, result.ranking_a[m], result.ranking_b[m]) for m in ranked],
            }
        )
    models = sorted(set(first.figures) | set(second.figures))
    table = [
        {
            "model": m,
            "a": [(c, (first.figures.get(m) or {}).get(c.name)) for c in first.columns],
            "b": [(c, (second.figures.get(m) or {}).get(c.name)) for c in second.columns],
            "in_both": m in first.figures and m in second.figures,
        }
        for m in models
    ]
    return {
        "a": first,
        "b": second,
        "rho": rows,
        "table": table,
        "notes": _answer_notes(first, second),
        "shared_answers": len(first.answers & second.answers),
        "criteria": criteria,
        "people": next((s.people for s in (first, second) if s.people is not None), None),
        "people_rule": people.RULE,
        "majority_rule": people.MAJORITY_RULE,
    }
