"""The agreement dashboard of a judgment task, and its raw judgments as CSV or JSONL."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from annotation.judging.models import Judgment, JudgmentTask
from benchmark.exceptions import DomainError
from benchmark.jobs import selectors as job_selectors
from benchmark.pages import htmx_page
from benchmark.typing import request_user
from review.agreement import judge_sources
from review.agreement import services as agreement_module
from review.agreement.presenters import judge_rater_view
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
    context: dict[str, Any] = {
        "judge_sources": judge_sources.judge_sources_for(user=user, task=task),
        "judge_key": key,
        "judge_rater": None,
        "judge_error": "",
    }
    if key:
        try:
            report = judge_sources.judge_rater_report(user=user, task=task, key=key)
        except DomainError as exc:
            context["judge_error"] = exc.message
        else:
            context["judge_rater"] = judge_rater_view(report, judge_sources.value_names(task))
    return context


@login_required
@require_http_methods(["GET", "POST"])
@htmx_page
def agreement(request: HttpRequest, pk: int) -> HttpResponse:
    """The agreement dashboard of a task. Large tasks are computed by a Job. With
    ``?judge=<key>`` a model judge joins as one more rater (htmx target ``judge-rater``
    gets that section alone)."""
    task = task_for_review(request, pk)
    htmx = getattr(request, "htmx", None)
    if (
        request.method == "GET"
        and htmx
        and not htmx.history_restore_request
        and htmx.target == "judge-rater"
    ):
        context = {"task": task, "project": task.project, **_judge_rater_context(request, task)}
        response = render(request, "review/agreement.html#judge-rater", context)
        if context["judge_error"]:
            response.status_code = 400
        return response
    n = Judgment.objects.filter(task=task).count()
    if request.method == "POST":
        try:
            agreement_module.agreement_start(task=task, user=request_user(request))
        except DomainError as exc:
            raise PermissionDenied(exc.message) from None
        return redirect("review:agreement", pk=task.pk)
    job = (
        job_selectors.job_list(
            user=request.user, project=task.project, kind=agreement_module.AGREEMENT_KIND
        )
        .filter(params__task_id=task.pk)
        .first()
    )
    report = None
    if n <= agreement_module.INLINE_LIMIT:
        report = agreement_module.agreement_compute(task=task)
    elif job is not None and job.status == "succeeded":
        report = job.result
    judge_context = _judge_rater_context(request, task)
    pairs = []
    for pair in (report or {}).get("pairs", []):
        pairs.append({**pair, "picture": _confusion_cells(pair.get("confusion") or {})})
    return render(
        request,
        "review/agreement.html",
        {
            "task": task,
            "project": task.project,
            "report": report,
            "pairs": pairs,
            "n_judgments": n,
            "job": job,
            "inline": n <= agreement_module.INLINE_LIMIT,
            **judge_context,
            # Rate the judge: agreement rate per agent (ATP-Bench §6), None for other tasks.
            "judge_rates": rate_figures(task=task),
        },
        status=400 if judge_context["judge_error"] else 200,
    )


@login_required
@require_GET
def judgments_export(request: HttpRequest, pk: int, fmt: str) -> HttpResponseBase:
    task = task_for_review(request, pk)
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
