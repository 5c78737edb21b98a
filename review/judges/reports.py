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
from benchmark.models import JobStatus, Project, Response
from benchmark.tags import parse_image_num
from benchmark.typing import AnyUser
from review.judges.models import JudgeCall, JudgeName, JudgeRun
from review.judges.selectors import judge_run_report, judgment_of

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
    for label, transport, error in run.calls.filter(ok=False).values_list(
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


def _image_num(response: Response) -> Any:
    value = (response.item.constraints or {}).get("image_num")
    if value is None:
        return 0
    try:
        parse_image_num(value)
    except (TypeError, ValueError):
        return 0
    return value


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
            llmi_judge.rule_reward(response.text, _image_num(response)),
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
    """``(model, answers judged)`` of the run, by name."""
    rows = _answers_of(run).values("model_name").annotate(n=Count("id")).order_by("model_name")
    return [(r["model_name"], r["n"]) for r in rows]


def judge_run_answers(
    *, run: JudgeRun, model: str = "", page: Any = 1, per_page: int = PER_PAGE
) -> Page[Any]:
    """One page of the run's answers in item order (of one answering model, or all), each
    with its report: ``page.object_list`` holds dicts (see ``_answer``)."""
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

    @property
    def columns(self) -> tuple[Column, ...]:
        return COLUMNS[self.kind]

    def column(self, name: str) -> Column | None:
        return next((c for c in self.columns if c.name == name), None)


DERIVED = {
    "f1": "Tool-set F1 of the same answers",
    "released": "Released rubric scores of the same answers",
}


def compare_choices(*, user: AnyUser, project: Project) -> list[tuple[str, str]]:
    """What the compare form offers: every finished run of the project, then the sources
    derived from the other side's answers."""
    runs = [
        (f"run:{run.pk}", f"#{run.pk} {run.get_judge_display()} · {run.model}")
        for run in judge_runs_of(user=user, project=project)
        if run.job is None or run.job.done
    ]
    return runs + list(DERIVED.items())


def _token(value: str, side: str) -> str | int:
    value = (value or "").strip()
    if value in DERIVED:
        return value
    number = value.removeprefix("run:").lstrip("#")
    if number.isdigit():
        return int(number)
    raise ValidationFailed(
        f"{side}: {value[:40]!r} is not a source; give a judge run (run:<id>), "
        + " or ".join(DERIVED)
    )


def _run_source(run: JudgeRun) -> Source:
    figures = judge_run_figures(run=run)
    if figures is None:
        raise ValidationFailed(
            f"judge run #{run.pk} has no figures yet: its job is {run.job.status if run.job else '—'}"
        )
    models = figures.summary.get("models") or {}
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


def _answer_notes(a: Source, b: Source) -> list[str]:
    notes = []
    shared = a.answers & b.answers
    if not shared:
        notes.append(
            f"The two sources share no answers ({len(a.answers)} and {len(b.answers)}): their "
            "rankings describe different answers."
        )
    elif a.answers != b.answers:
        notes.append(
            f"The two sources judged different answers: {len(shared)} shared, "
            f"{len(a.answers - b.answers)} only in {a.label}, {len(b.answers - a.answers)} only "
            f"in {b.label}. Each side's figures are over its own answers."
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


def judge_compare(
    *, user: AnyUser, project: Project, a: str, b: str, fa: str = "", fb: str = ""
) -> dict[str, Any]:
    """Two sources' per-model figures side by side and Spearman's rho (with p) between their
    rankings: for every figure both have (FS, SR, MI for two MAM runs, like ATP-Bench Table
    8b), else between their headline figures (a MAM run's FS against tool-set F1, like
    §5.3's rho = 0.879), and first the pair ``fa``/``fb`` when given. ``a``/``b``: a judge run
    of the project (``run:<id>``), or ``f1``/``released``: derived from the answers of the
    run on the other side. ValidationFailed says what is wrong with the request."""
    tokens = [_token(a, "first source"), _token(b, "second source")]
    pks = [t for t in tokens if isinstance(t, int)]
    if not pks:
        raise ValidationFailed("choose at least one judge run to compare")
    runs = {r.pk: r for r in judge_runs_of(user=user, project=project).filter(pk__in=pks)}
    for pk in pks:
        if pk not in runs:
            raise ValidationFailed(f"this project has no judge run #{pk}")
    built: dict[int, Source] = {pk: _run_source(runs[pk]) for pk in set(pks)}
    sources: list[Source] = []
    for n, token in enumerate(tokens):
        if isinstance(token, int):
            sources.append(built[token])
            continue
        other = tokens[1 - n]
        assert isinstance(other, int)
        base = built[other]
        sources.append(_f1_source(project, base) if token == "f1" else _released_source(base))
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
    }
