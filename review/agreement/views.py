"""The agreement dashboard of a judgment task, and its raw judgments as CSV or JSONL."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from annotation.judgment_tasks.doubt.selectors import doubt_table
from annotation.judgment_tasks.models import JudgmentTask
from benchmark.exceptions import DomainError, NotFound
from benchmark.pages import htmx_page
from benchmark.typing import request_user
from review.agreement import judge_sources
from review.agreement import selectors as agreement_selectors
from review.agreement import services as agreement_module
from review.agreement.judge_examples.reports.selectors import is_report_task
from review.agreement.presenters import calibration_view, estimated_confusion, judge_rater_view
from review.gold.selectors import gold_report
from review.pages import task_for_review
from review.rate_judge.selectors import rate_figures


def _confusion_cells(confusion: dict[str, Any]) -> dict[str, Any]:
    """Cells of a confusion-matrix heat map: shade by the share of the largest count."""
    matrix = confusion.get("matrix") or []
    top = max((n for row in matrix for n in row), default=0) or 1
    size = 44
    cells = []
    for r, row in enumerate(matrix):
        for c, n in enumerate(row):
            cells.append(
                {
                    "x": 70 + c * size,
                    "y": 30 + r * size,
                    "n": n,
                    "alpha": round(n / top, 3),
                    "diag": r == c,
                }
            )
    labels = [str(label) for label in confusion.get("labels", [])]
    return {
        "cells": cells,
        "labels": [
            {"text": t, "x": 70 + i * size + size // 2, "y": 30 + i * size + size // 2}
            for i, t in enumerate(labels)
        ],
        "size": size,
        "width": 80 + len(labels) * size,
        "height": 40 + len(labels) * size,
    }


def _judge_rater_context(request: HttpRequest, task: JudgmentTask) -> dict[str, Any]:
    """The "Add a judge as rater" section: the compatible judge sources, and with
    ``?judge=<key>`` that judge's figures against the task's people (or why not)."""
    user = request_user(request)
    key = request.GET.get("judge", "").strip()
    from benchmark.metrics.judge_rater import DEFAULT_TRUST_THRESHOLD

    raw_threshold = request.GET.get("threshold", "").strip()
    context: dict[str, Any] = {
        "judge_sources": judge_sources.judge_sources_for(user=user, task=task),
        "judge_key": key,
        "judge_rater": None,
        "judge_error": "",
        "calibration": None,
        "threshold": raw_threshold or DEFAULT_TRUST_THRESHOLD,
    }
    if key:
        try:
            threshold = float(raw_threshold) if raw_threshold else DEFAULT_TRUST_THRESHOLD
        except ValueError:
            context["judge_error"] = f"threshold: {raw_threshold[:40]!r} is not a number"
            return context
        try:
            report = judge_sources.judge_rater_report(user=user, task=task, key=key)
            calibration = judge_sources.judge_calibration_report(
                user=user, task=task, key=key, threshold=threshold
            )
        except DomainError as exc:
            context["judge_error"] = exc.message
        else:
            names = judge_sources.value_names(task)
            context["judge_rater"] = judge_rater_view(report, names)
            context["calibration"] = calibration_view(calibration, names)
            context.update(_corrections_context(user, task, key, names))
    return context


def _corrections_context(
    user: Any, task: JudgmentTask, key: str, names: dict[Any, str]
) -> dict[str, Any]:
    """The calibration report's correction cases of a judge run, which a reviewer can add as
    worked examples (``review.agreement.judge_examples``); nothing for a source that is not a run."""
    from benchmark import permissions
    from review.agreement.judge_examples import selectors as examples

    if not permissions.can(user=user, project=task.project, action="run_judges"):
        return {}
    try:
        cases = examples.correction_cases(user=user, task=task, key=key)
    except DomainError:
        return {}
    shown = [
        {
            **vars(c),
            "people_shown": names.get(c.people, str(c.people)),
            "judge_shown": names.get(c.judge, str(c.judge)),
        }
        for c in cases
    ]
    return {
        "show_corrections": True,
        "corrections": shown,
        "example_sets": examples.example_sets_for(user=user, task=task),
    }


def _rate_threshold(request: HttpRequest) -> float:
    """``?rate_threshold=`` (percent, 0-100), else the default; a bad value is ignored."""
    from review.rate_judge.selectors import DEFAULT_RATE_THRESHOLD

    try:
        value = float(request.GET.get("rate_threshold", ""))
    except ValueError:
        return DEFAULT_RATE_THRESHOLD
    return value if 0.0 <= value <= 100.0 else DEFAULT_RATE_THRESHOLD


def _aggregation_context(request: HttpRequest, task: JudgmentTask) -> dict[str, Any]:
    """The "Label aggregation" section: the methods, and with ``?method=<name>`` the task's
    judgments aggregated by it (or why not)."""
    from benchmark.metrics.aggregation import METHOD_NAMES

    method = request.GET.get("method", "").strip()
    context: dict[str, Any] = {
        "aggregation_methods": [(m, METHOD_NAMES[m]) for m in agreement_selectors.PAGE_METHODS],
        "aggregation_method": method,
        "aggregation": None,
        "aggregation_error": "",
    }
    if not method:
        return context
    try:
        result = agreement_selectors.task_aggregation(
            user=request_user(request), task=task, method=method
        )
    except DomainError as exc:
        context["aggregation_error"] = exc.message
        return context
    names = judge_sources.value_names(task)
    context["aggregation"] = result
    context["aggregation_names"] = names

    def shown(entry: Any) -> dict[str, Any]:
        return {
            "item_id": entry.item_id,
            "unit": entry.unit,
            "external_id": entry.external_id,
            "label": names.get(entry.label, str(entry.label)),
            "consensus": names.get(entry.consensus, str(entry.consensus)),
            "confidence": entry.confidence,
            "judgments": entry.judgments,
        }

    context["aggregation_uncertain"] = [shown(i) for i in result.uncertain]
    context["aggregation_differs"] = [shown(i) for i in result.differs]
    context["aggregation_annotators"] = [
        {
            "name": a.name,
            "judgments": a.judgments,
            "reliability": a.reliability,
            "confusion": (
                estimated_confusion(a.confusion, result.labels, names) if a.confusion else None
            ),
        }
        for a in result.annotators
    ]
    return context


def _pairs_context(request: HttpRequest, pairs: list[dict[str, Any]]) -> dict[str, Any]:
    """The pair table's page: ``?sort=`` (see ``PAIR_SORTS``) and ``?page=``."""
    sort = request.GET.get("sort", "")
    sort = sort if sort in agreement_selectors.PAIR_SORTS else agreement_selectors.DEFAULT_SORT
    return {
        "pairs_page": agreement_selectors.pairs_page(
            pairs, sort=sort, page=request.GET.get("page")
        ),
        "pair_sort": sort,
        "pair_sorts": [(k, label) for k, (label, _) in agreement_selectors.PAIR_SORTS.items()],
    }


@login_required
@require_http_methods(["GET", "POST"])
@htmx_page
def agreement(request: HttpRequest, pk: int) -> HttpResponse:
    """The agreement dashboard of a task: the overall figures, the annotators, and the pairs
    of annotators as a sorted table paged by 25 (htmx target ``agreement-pairs`` gets the
    table alone), each pair's confusion matrix loaded on demand (``agreement_pair``). The
    figures are cached; while judgments come in, figures up to
    ``agreement_selectors.STALE_SECONDS`` old are shown with their time, and ``?refresh=1``
    recomputes them (once in a few seconds per reviewer). Large tasks are computed by a
    Job. With ``?judge=<key>`` a model judge joins as one more rater (htmx target
    ``judge-rater`` gets that section alone); with ``?method=<name>`` the judgments are aggregated
    by Dawid-Skene, GLAD, MACE or majority vote (htmx target ``label-aggregation``)."""
    task = task_for_review(request, pk, action="manage_studies")
    user = request_user(request)
    htmx = getattr(request, "htmx", None)
    target = htmx.target if htmx and not htmx.history_restore_request else None
    if request.method == "GET" and target == "judge-rater":
        context = {"task": task, "project": task.project, **_judge_rater_context(request, task)}
        response = render(request, "review/agreement.html#judge-rater", context)
        if context["judge_error"]:
            response.status_code = 400
        return response
    if request.method == "GET" and target == "label-aggregation":
        context = {"task": task, "project": task.project, **_aggregation_context(request, task)}
        response = render(request, "review/agreement.html#label-aggregation", context)
        if context["aggregation_error"]:
            response.status_code = 400
        return response
    if request.method == "POST":
        try:
            agreement_module.agreement_start(task=task, user=user)
        except DomainError as exc:
            raise PermissionDenied(exc.message) from None
        return redirect("review:agreement", pk=task.pk)
    # ?refresh=1 (the "Refresh" link next to figures that are a little old): current figures.
    refresh = request.GET.get("refresh") == "1"
    figures = agreement_selectors.agreement_figures(user=user, task=task, refresh=refresh)
    pairs = _pairs_context(request, figures.pairs)
    if target == "agreement-pairs":
        context = {"task": task, "figures": figures, **pairs}
        return render(request, "review/agreement.html#agreement-pairs", context)
    judge_context = _judge_rater_context(request, task)
    aggregation_context = _aggregation_context(request, task)
    return render(
        request,
        "review/agreement.html",
        {
            "task": task,
            "project": task.project,
            "figures": figures,
            "report": figures.report,
            "n_judgments": figures.n_judgments,
            "job": figures.job,
            "inline": figures.inline,
            "stale_seconds": agreement_selectors.STALE_SECONDS,
            **pairs,
            **judge_context,
            **aggregation_context,
            # Rate the judge: agreement rate per agent (ATP-Bench §6), None for other tasks;
            # agents below the reviewer's ?rate_threshold= (percent) are flagged.
            "judge_rates": rate_figures(task=task, threshold=_rate_threshold(request)),
            # Its reports take corrections that become worked examples (MAM, LLM-I judges).
            "report_corrections": is_report_task(task),
            # Routing by doubt: the items served first and why.
            "doubt": doubt_table(user=user, task=task),
            # Gold accuracy per annotator (gold judgments are not in the figures above).
            "gold": None if task.has_units else gold_report(user=user, task=task),
        },
        status=400
        if judge_context["judge_error"] or aggregation_context["aggregation_error"]
        else 200,
    )


@login_required
@require_GET
@htmx_page
def agreement_pair(request: HttpRequest, pk: int) -> HttpResponse:
    """One pair of annotators (``?a=<name>&b=<name>``): their figures and confusion matrix,
    the fragment the pair table loads on demand (a whole page without htmx). Same access as
    the agreement page."""
    task = task_for_review(request, pk, action="manage_studies")
    a, b = request.GET.get("a", "").strip(), request.GET.get("b", "").strip()
    try:
        pair = agreement_selectors.agreement_pair(user=request_user(request), task=task, a=a, b=b)
    except NotFound as exc:
        raise Http404(exc.message) from None
    htmx = getattr(request, "htmx", None)
    fragment = bool(htmx) and not htmx.history_restore_request  # type: ignore[union-attr]
    context = {
        "task": task,
        "project": task.project,
        "pair": pair,
        "picture": _confusion_cells(pair["confusion"]),
    }
    template = "review/agreement_pair.html" + ("#pair-confusion" if fragment else "")
    return render(request, template, context)


@login_required
@require_GET
def judgments_export(request: HttpRequest, pk: int, fmt: str) -> HttpResponseBase:
    task = task_for_review(request, pk, action="manage_studies")
    if fmt == "csv":
        response = StreamingHttpResponse(
            agreement_module.judgments_csv(task=task), content_type="text/csv"
        )
    else:
        response = StreamingHttpResponse(
            agreement_module.judgments_jsonl(task=task), content_type="application/x-ndjson"
        )
    response["Content-Disposition"] = f'attachment; filename="judgments-task{task.pk}.{fmt}"'
    return response
