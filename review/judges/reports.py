"""Reads for the judge-run pages (issue 10): a project's runs, a run's per-model figures and
why judgments were excluded, one page of its answers' reports, the released LLMI-Bench scores
beside the judge's, and the comparison of two sources of per-model figures over the same
answers (two judge runs, or a run and the tool-set F1 or the released scores of its answers)
with Spearman's rho between their model rankings (ATP-Bench Table 8, §5.3).

Every judge-specific piece (columns, scores, the result of one answer or plan) is the run's
judge spec's (``review.judges.specs``); nothing here names a judge. Lookups take ``user=`` and
scope to the user's projects (another project's run answers 404); the pages add the reviewer
check (403). A finished run's figures are the ones its job recorded; a run whose job failed has
figures rebuilt from the calls it stored.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.core.paginator import Page
from django.db.models import QuerySet
from django.shortcuts import get_object_or_404

from benchmark.exceptions import ValidationFailed
from benchmark.judge_prompts import Judgment, rankings
from benchmark.judge_prompts import rubric as rubric_judge
from benchmark.metrics.tag_scores import AnswerRecord
from benchmark.models import JobStatus, Project, Response
from benchmark.typing import AnyUser
from review.judges import people
from review.judges.calls import stored_judgment
from review.judges.models import JudgeRun
from review.judges.people import PeopleRubric
from review.judges.selectors import judge_run_report
from review.judges.specs import (
    ANSWERS,
    Column,
    JudgeSpec,
    Subject,
    judge_spec_get,
    judge_specs,
    judges_for,
    subject_of,
)
from review.judges.specs.llmi_reward import weights_shown as run_weights
from review.judges.specs.llmi_rubric import released_from, released_of
from review.judges.specs.subjects import model_answer_counts

__all__ = [
    "Column",
    "JudgePage",
    "judge_compare",
    "judge_page",
    "judge_run_answers",
    "judge_run_failures",
    "judge_run_figures",
    "judge_run_models",
    "judge_run_released",
    "judge_runs_of",
    "model_answer_counts",
    "released_of",
    "run_weights",
]

PER_PAGE = 20
"""Answers per page of a run's reports."""

# =========================================================================== columns

SOURCE_COLUMNS: dict[str, tuple[Column, ...]] = {
    "f1": (
        Column("f1", "Tool-set F1", "%"),
        Column("precision", "Tool-set P", "%"),
        Column("recall", "Tool-set R", "%"),
    ),
    "released": (Column("rubric", "Released rubric", "%"),),
    "people": (Column("rubric", "People's rubric", "%"),),
}
"""The columns of the sources that are not judge runs, the headline figure first."""


def figure_names() -> list[str]:
    """Every figure a source may have, by name (the compare form's choices)."""
    columns = [c for spec in judge_specs() for c in spec.columns]
    columns += [c for cs in SOURCE_COLUMNS.values() for c in cs]
    return sorted({c.name for c in columns})


# =========================================================================== the page


@dataclass(frozen=True)
class JudgePage:
    """A project's judge page: the judges a run can use (those of the project's format), what
    they rate, and the judges of the format that run elsewhere (Agentic-MME's S and V)."""

    judges: list[JudgeSpec]
    subject: Subject
    elsewhere: list[JudgeSpec]

    @property
    def name(self) -> str:
        return f"Judge {self.subject.plural}"

    @property
    def plans(self) -> bool:
        """The page judges plans, with the ground truth as one source."""
        return self.subject.ground_truth_source


def judge_page(project: Project) -> JudgePage:
    judges = judges_for(project)
    elsewhere = judges_for(project, runnable=False)
    return JudgePage(judges=judges, subject=subject_of(judges), elsewhere=elsewhere)


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


def figure_rows(spec: JudgeSpec | None, summary: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per answering model (or plan source), by name: the judge's columns, its counts
    (answers, excluded...) and its extra columns (ATP-Bench MAM: the six sub-check shares)."""
    models = summary.get("models") or {}
    columns = spec.columns if spec is not None else ()
    counts = spec.count_columns if spec is not None else ()
    sub_columns = spec.sub_columns if spec is not None else ()
    rows = []
    for name in sorted(models):
        figures = models[name] or {}
        shares = figures.get("sub_checks") or {}
        rows.append(
            {
                "model": name,
                "cells": [(c, figures.get(c.name)) for c in columns],
                "counts": [
                    (c, (figures.get(c.name) or 0) if c.name == "excluded" else figures.get(c.name))
                    for c in counts
                ],
                "sub_checks": [(c, shares.get(c.name)) for c in sub_columns],
                "n": figures.get("n"),
                "excluded": figures.get("excluded") or 0,
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
    return Figures(summary=summary, partial=partial, rows=figure_rows(run.spec, summary))


def _first_line(text: str) -> str:
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else "no reason recorded"
    return line[:200]


def judge_run_failures(*, run: JudgeRun) -> dict[str, Any]:
    """Why judgments failed: ``unparsed`` (the output did not parse, twice), ``transport``
    (the endpoint gave no answer) and the most common reasons by call label."""
    counts: Counter[tuple[str, bool, str]] = Counter()
    calls = run.spec.rates.calls(run)
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
    if not run.spec.released_scores:
        return None
    released: dict[int, tuple[str, rubric_judge.AnswerRubric]] = {}
    for pk, model, extra in _answers_of(run).values_list("pk", "model_name", "extra"):
        value = released_from(extra)
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


def _entry(run: JudgeRun, spec: JudgeSpec, thing: Any, rows: list[Any]) -> dict[str, Any]:
    """What the run page shows of one answer (or plan): the thing, its calls, and what the
    judge's result partial shows (``spec.result``)."""
    by_label = {row.label: row for row in rows}
    judgments: dict[str, Judgment[Any]] = {
        label: stored_judgment(row, spec.parser(label, thing)) for label, row in by_label.items()
    }
    return {
        **spec.rates.page_fields(thing, rows),
        **spec.result(thing, judgments, by_label, run),
    }


def judge_run_models(*, run: JudgeRun) -> list[tuple[str, int]]:
    """``(model, answers judged)`` of the run, by name; for a run over plans ``(source,
    plans judged)``, "ground truth" first."""
    return run.spec.rates.sources(run=run)


def judge_run_answers(
    *, run: JudgeRun, model: str = "", page: Any = 1, per_page: int = PER_PAGE
) -> Page[Any]:
    """One page of the run's answers (or plans) in order (of one answering model or source,
    or all), each with its report: ``page.object_list`` holds dicts (``_entry``)."""
    spec = run.spec
    current = spec.rates.page(run=run, source=model, page=page, per_page=per_page)
    current.object_list = [_entry(run, spec, thing, rows) for thing, rows in current.object_list]
    return current


# =========================================================================== comparing


@dataclass
class Source:
    """Per-model figures of one source over a set of answers (or plans)."""

    key: str
    label: str
    kind: str
    figures: dict[str, dict[str, float | None]]
    answers: frozenset[int]
    columns: tuple[Column, ...] = ()
    subject: Subject = ANSWERS
    rates_criteria: bool = False
    run: JudgeRun | None = None
    partial: bool = False
    note: str = ""
    people: PeopleRubric | None = None

    @property
    def noun(self) -> str:
        """What ``answers`` holds: model answers, or plans (a run over plans)."""
        return self.subject.plural

    def column(self, name: str) -> Column | None:
        return next((c for c in self.columns if c.name == name), None)


DERIVED = {
    "f1": "Tool-set F1 of the same answers",
    "released": "Released rubric scores of the same answers",
}


def compare_choices(*, user: AnyUser, project: Project) -> list[tuple[str, str]]:
    """What the compare form offers: every finished run of the project over what its judges
    rate, then (for answers) the people of its "score the criteria" tasks and the sources
    derived from the other side's answers. A project whose judges rate plans offers its runs
    over plans only."""
    subject = judge_page(project).subject
    runs = [
        (f"run:{run.pk}", f"#{run.pk} {run.get_judge_display()} · {run.model}")
        # The list needs each run's job status, not its result (a comparison's result holds
        # every pair's verdict): parsing every run's result is what made the page slow.
        for run in judge_runs_of(user=user, project=project).defer("job__result")
        if (run.job is None or run.job.done)
        and (spec := judge_spec_get(run.judge)) is not None
        and spec.rates is subject
    ]
    if subject is not ANSWERS:  # people and the derived sources are about answers
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
        columns=SOURCE_COLUMNS["people"],
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
        columns=run_source.columns,
        subject=run_source.subject,
        rates_criteria=run_source.rates_criteria,
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
    spec = run.spec
    models = figures.summary.get("models") or {}
    calls = spec.rates.calls(run)
    return Source(
        key=f"run:{run.pk}",
        label=f"#{run.pk} {run.get_judge_display()} ({run.model})",
        kind=run.judge,
        columns=spec.columns,
        subject=spec.rates,
        rates_criteria=spec.rates_criteria,
        figures={m: {c.name: (models[m] or {}).get(c.name) for c in spec.columns} for m in models},
        answers=frozenset(calls.values_list(spec.rates.fk_id, flat=True).distinct()),
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
        columns=SOURCE_COLUMNS["f1"],
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
        value = released_from(extra)
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
        columns=SOURCE_COLUMNS["released"],
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


def _same_things(sides: list[tuple[Token, Source]]) -> None:
    """A run over plans (not answers) compares with another run over plans only."""
    others = [(t, s) for t, s in sides if s.subject is not ANSWERS]
    if others and len(others) != 2:
        (_, pk), source = others[0]
        raise ValidationFailed(
            f"judge run #{pk} judged {source.noun}, not answers: compare it with another run "
            f"over {source.noun}"
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
    _same_things([(t, built[t]) for t in tokens if t in built])
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
    scorers = [n for n, s in enumerate(sources) if s.rates_criteria]
    if "people" in kinds and scorers:
        j = scorers[0]
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
