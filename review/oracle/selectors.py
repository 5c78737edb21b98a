"""Reads of oracle tests, scoped to the user: the project's runs and figures per model, the
items flagged for review, one run's results, one result's conversation, and the notice on an
item's page. Results of items whose answer is hidden from the user (a blind verifier) are
left out everywhere: the conversation holds the reference trajectory.

Figures (per run, and per model over the project's runs): **tested** items are those the
model answered (solved or failed); **solved %** = solved / tested; **flagged** = failed, the
items the model could not solve even walked through the reference; **not tested** = items
that could not be asked (no reference, a missing image, the endpoint failed). Per model, each
item counts once, by its newest tested result (its newest result when none was tested).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import PermissionDenied
from django.db.models import Count, Prefetch, QuerySet
from django.shortcuts import get_object_or_404
from django.urls import reverse

from annotation.trajectories import document as td
from annotation.trajectories.selectors import REFERENCE_KEY, reference_of
from annotation.trajectories.services import task_document
from benchmark import permissions, visibility
from benchmark.models import Item, ItemStatus, Project, Trajectory
from benchmark.notices import ItemNotice
from benchmark.typing import AnyUser
from review.oracle.models import OracleOutcome, OracleResult, OracleRun

TESTED = (OracleOutcome.SOLVED, OracleOutcome.FAILED)


def figures(outcomes: Iterable[str]) -> dict[str, Any]:
    counts = Counter(outcomes)
    solved = counts[OracleOutcome.SOLVED]
    failed = counts[OracleOutcome.FAILED]
    tested = solved + failed
    return {
        "items": tested + counts[OracleOutcome.ERROR],
        "tested": tested,
        "solved": solved,
        "failed": failed,
        "flagged": failed,
        "errors": counts[OracleOutcome.ERROR],
        "solved_pct": round(100.0 * solved / tested, 1) if tested else None,
    }


def run_figures(*, run: OracleRun) -> dict[str, Any]:
    return figures(run.results.values_list("outcome", flat=True))


# --------------------------------------------------------------------------- lookups


def _results(*, user: AnyUser) -> QuerySet[OracleResult]:
    if not user.is_authenticated:
        return OracleResult.objects.none()
    rows = OracleResult.objects.filter(run__project__memberships__user=user.pk)
    return visibility.exclude_hidden_attachments(rows, user=user)


def oracle_run_get(*, user: AnyUser, pk: int) -> OracleRun:
    runs = (
        OracleRun.objects.filter(project__memberships__user=user.pk)
        if user.is_authenticated
        else OracleRun.objects.none()
    )
    return get_object_or_404(runs.select_related("project", "created_by", "job"), pk=pk)


def oracle_result_get(*, user: AnyUser, pk: int) -> OracleResult:
    """One result, 404 outside the user's projects; 403 saying why when the item's answer is
    hidden from the user (its conversation walks the reference trajectory)."""
    rows = (
        OracleResult.objects.filter(run__project__memberships__user=user.pk)
        if user.is_authenticated
        else OracleResult.objects.none()
    )
    result = get_object_or_404(
        rows.select_related("run", "run__project", "run__created_by", "item"), pk=pk
    )
    if visibility.hidden_item_ids(user=user, items=[result.item_id]):
        raise PermissionDenied(
            "This oracle test walks the item's reference trajectory, and you are one of its "
            "blind verifiers: it opens once you have answered the question."
        )
    return result


def oracle_run_results(*, user: AnyUser, run: OracleRun) -> list[OracleResult]:
    return list(
        _results(user=user)
        .filter(run=run)
        .select_related("item")
        .defer("messages", "output")
        .order_by("item__position", "item_id")
    )


# --------------------------------------------------------------------------- the project page


@dataclass
class RunRow:
    run: OracleRun
    figures: dict[str, Any]


def oracle_runs(*, user: AnyUser, project: Project) -> list[RunRow]:
    """The project's runs, newest first, each with its figures (two queries)."""
    runs = list(
        OracleRun.objects.filter(project=project)
        .select_related("created_by", "job")
        .order_by("-created_at", "-id")
    )
    counts: dict[int, list[str]] = defaultdict(list)
    rows = (
        _results(user=user)
        .filter(run__project=project)
        .values("run_id", "outcome")
        .annotate(n=Count("id"))
        .order_by()
    )
    for row in rows:
        counts[row["run_id"]] += [row["outcome"]] * row["n"]
    return [RunRow(run, figures(counts.get(run.pk, []))) for run in runs]


@dataclass
class Flag:
    result: OracleResult
    stale: bool
    """The item's reference or answer changed after this test."""


@dataclass
class ModelRow:
    model: str
    figures: dict[str, Any]
    flagged: list[Flag] = field(default_factory=list)
    #: the items it could not be asked (newest result "not tested"), with why
    not_tested: list[OracleResult] = field(default_factory=list)


def _newest(rows: Iterable[tuple[int, int, str, str]]) -> dict[tuple[int, str], int]:
    """Result id per (item, model): the newest tested, else the newest."""
    tested: dict[tuple[int, str], int] = {}
    newest: dict[tuple[int, str], int] = {}
    for pk, item_id, model, outcome in rows:
        newest[(item_id, model)] = pk
        if outcome in TESTED:
            tested[(item_id, model)] = pk
    return {**newest, **tested}


def model_figures(*, user: AnyUser, project: Project) -> list[ModelRow]:
    """Per model (in name order): the figures over each item's newest result, and the items it
    failed (flagged for review, discarded items left out), each saying whether the item
    changed since. A fixed number of queries."""
    rows = list(
        _results(user=user)
        .filter(run__project=project)
        .order_by("id")
        .values_list("id", "item_id", "run__model", "outcome")
    )
    chosen = _newest(rows)
    outcome_of = {pk: outcome for pk, _, _, outcome in rows}
    per_model: dict[str, list[str]] = defaultdict(list)
    failed_ids: list[int] = []
    error_ids: list[int] = []
    for (_, model), pk in chosen.items():
        per_model[model].append(outcome_of[pk])
        if outcome_of[pk] == OracleOutcome.FAILED:
            failed_ids.append(pk)
        elif outcome_of[pk] == OracleOutcome.ERROR:
            error_ids.append(pk)
    flagged = (
        OracleResult.objects.filter(pk__in=failed_ids)
        .exclude(item__status=ItemStatus.DISCARDED)
        .select_related("run", "item")
        .prefetch_related(
            Prefetch(
                "item__trajectories",
                queryset=Trajectory.objects.filter(key=REFERENCE_KEY),
                to_attr="reference_rows",
            )
        )
        .defer("messages", "output")
        .order_by("item__position", "item_id", "run__model")
    )
    by_model: dict[str, list[Flag]] = defaultdict(list)
    for result in flagged:
        by_model[result.run.model].append(Flag(result, _stale(result)))
    untested: dict[str, list[OracleResult]] = defaultdict(list)
    if error_ids:  # "Not tested 1" names the item (one query, only when there is one)
        for result in (
            OracleResult.objects.filter(pk__in=error_ids)
            .select_related("run", "item")
            .only("id", "error", "run__model", "item__id", "item__external_id")
            .order_by("item__position", "item_id")
        ):
            untested[result.run.model].append(result)
    return [
        ModelRow(model, figures(outcomes), by_model.get(model, []), untested.get(model, []))
        for model, outcomes in sorted(per_model.items())
    ]


def _stale(result: OracleResult) -> bool:
    if not result.reference_fingerprint:
        return False
    item = result.item
    reference = reference_of(item)
    if reference is None:
        return True
    return td.fingerprint(task_document(item=item, reference=reference)) != (
        result.reference_fingerprint
    )


# --------------------------------------------------------------------------- the item page


def item_oracle_notices(*, user: AnyUser, project: Project, item: Item) -> list[ItemNotice]:
    """For each model whose newest tested result on ``item`` failed: "the oracle test with
    model X failed: answer ...". Nothing for an item hidden from the user, nor outside
    trajectory projects (no query there)."""
    if not project.benchmark.offers.oracle_testing or not user.is_authenticated:
        return []
    hidden = getattr(item, "answer_hidden", None)
    if hidden is None:
        hidden = bool(visibility.hidden_item_ids(user=user, items=[item.pk]))
    if hidden:
        return []
    rows = list(
        OracleResult.objects.filter(item=item)
        .order_by("id")
        .values_list("id", "item_id", "run__model", "outcome")
    )
    if not rows:
        return []
    chosen = _newest(rows)
    outcome_of = {pk: outcome for pk, _, _, outcome in rows}
    failed = [pk for pk in chosen.values() if outcome_of[pk] == OracleOutcome.FAILED]
    if not failed:
        return []
    results = list(
        OracleResult.objects.filter(pk__in=failed)
        .select_related("run")
        .defer("messages", "output")
        .order_by("run__model")
    )
    reviewer = permissions.can(user=user, project=project, action="run_judges")
    current = ""
    reference = reference_of(item)
    if reference is not None:
        current = td.fingerprint(task_document(item=item, reference=reference))
    notices = []
    for result in results:
        answer = result.answer.strip() or "(nothing)"
        if len(answer) > 200:
            answer = answer[:199] + "…"
        text = f"the model answered “{answer}”, which the item's matcher does not accept."
        if result.reference_fingerprint and result.reference_fingerprint != current:
            text += " The item has changed since this test; test it again."
        else:
            text += " Check the question, the answer and the reference steps."
        notices.append(
            ItemNotice(
                kind="oracle-failed",
                title=f"The oracle test with {result.run.model} failed:",
                text=text,
                url=reverse("review:oracle_result", args=[result.pk]) if reviewer else "",
                link_text="See the conversation",
            )
        )
    return notices
