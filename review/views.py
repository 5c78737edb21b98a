"""Reviewers: the disagreement queue and adjudication."""

from __future__ import annotations

from typing import Any

import orjson
from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from annotation import selectors as annotation_selectors
from annotation import verification, verification_views
from annotation.models import Judgment
from annotation.views import _judge_context
from benchmark import permissions
from benchmark import selectors as benchmark_selectors
from benchmark import services as benchmark_services
from benchmark.exceptions import DomainError, ValidationFailed
from benchmark.models import Job
from benchmark.typing import request_user
from review import agreement as agreement_module
from review import plans as review_plans
from review import services
from review.forms import BalanceForm, DecisionForm, ScorePlansForm


def _reviewable(request: HttpRequest, pk: int):  # type: ignore[no-untyped-def]
    task = annotation_selectors.task_get(user=request.user, pk=pk)
    if not permissions.can(user=request.user, project=task.project, action="review"):
        raise PermissionDenied("Only reviewers and admins see the disagreement queue.")
    return task


@login_required
@require_GET
def dispute_list(request: HttpRequest, pk: int) -> HttpResponse:
    task = _reviewable(request, pk)
    if verification.is_solve_task(task):  # blind solving: the joint-review queue
        return verification_views.joint_review_list(request, task)
    outcomes = annotation_selectors.disputes(user=request.user, task=task)
    return render(
        request,
        "review/dispute_list.html",
        {"task": task, "project": task.project, "outcomes": outcomes},
    )


@login_required
@require_http_methods(["GET", "POST"])
def adjudicate(request: HttpRequest, pk: int, item_pk: int) -> HttpResponse:
    task = _reviewable(request, pk)
    if verification.is_solve_task(task):  # blind solving: joint review of the answers
        return verification_views.joint_review(request, task, item_pk)
    item = annotation_selectors.task_item_get(user=request.user, task=task, pk=item_pk)
    form = DecisionForm(task=task)
    if request.method == "POST":
        form = DecisionForm(request.POST, task=task)
        if form.is_valid():
            try:
                services.outcome_decide(
                    task=task, item=item, reviewer=request_user(request), **form.decision_kwargs()
                )
            except DomainError as exc:
                form.add_error(None, exc.message)
            else:
                return redirect("review:dispute_list", pk=task.pk)
    context = _judge_context(request, task, item)
    context["form"] = form
    return render(request, "review/adjudicate.html", context)


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


@login_required
@require_http_methods(["GET", "POST"])
def agreement(request: HttpRequest, pk: int) -> HttpResponse:
    """The agreement dashboard of a task. Large tasks are computed by a Job."""
    task = _reviewable(request, pk)
    n = Judgment.objects.filter(task=task).count()
    job = (
        Job.objects.filter(kind=agreement_module.AGREEMENT_KIND, params__task_id=task.pk)
        .order_by("-created_at")
        .first()
    )
    if request.method == "POST":
        job = benchmark_services.job_create(
            kind=agreement_module.AGREEMENT_KIND,
            user=request_user(request),
            project=task.project,
            params={"task_id": task.pk},
        )
        transaction.on_commit(lambda: agreement_module.agreement_task.delay(job.pk))
        return redirect("review:agreement", pk=task.pk)
    report = None
    if n <= agreement_module.INLINE_LIMIT:
        report = agreement_module.agreement_compute(task=task)
    elif job is not None and job.status == "succeeded":
        report = job.result
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
        },
    )


@login_required
@require_GET
def judgments_export(request: HttpRequest, pk: int, fmt: str) -> HttpResponseBase:
    task = _reviewable(request, pk)
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


def _project_reviewable(request: HttpRequest, pk: int):  # type: ignore[no-untyped-def]
    project = benchmark_selectors.project_get(user=request.user, pk=pk)
    if not permissions.can(user=request.user, project=project, action="review"):
        raise PermissionDenied("Only reviewers and admins work on releases.")
    return project


def _bars(counts: dict[str, int]) -> list[dict[str, Any]]:
    total = sum(counts.values()) or 1
    top = max(counts.values(), default=0) or 1
    return [
        {"tool": tool, "n": n, "share": 100 * n / total, "width": 100 * n / top}
        for tool, n in sorted(counts.items(), key=lambda kv: -kv[1])
    ]


@login_required
@require_GET
def balance(request: HttpRequest, pk: int) -> HttpResponse:
    """A seeded tool-balanced subset of the verified items, with the tool distribution before
    and after."""
    project = _project_reviewable(request, pk)
    form = BalanceForm(request.GET or None)
    context: dict[str, Any] = {"project": project, "form": form}
    if form.is_bound and form.is_valid():
        try:
            subset, info = review_plans.project_balanced_subset(
                project=project, cap=form.cleaned_data["cap"] / 100, seed=form.cleaned_data["seed"]
            )
        except DomainError as exc:
            form.add_error(None, exc.message)
        else:
            if request.GET.get("download") == "1":
                response = HttpResponse(
                    orjson.dumps(
                        {
                            "cap": subset.cap,
                            "seed": form.cleaned_data["seed"],
                            "ids": subset.ids,
                            "after": subset.after,
                        }
                    ),
                    content_type="application/json",
                )
                response["Content-Disposition"] = 'attachment; filename="balanced-subset.json"'
                return response
            context.update(
                {
                    "subset": subset,
                    "info": info,
                    "before": _bars(subset.before),
                    "after": _bars(subset.after),
                }
            )
    return render(request, "review/balance.html", context)


@login_required
@require_http_methods(["GET", "POST"])
def score_plans(request: HttpRequest, pk: int) -> HttpResponse:
    """Upload predictions; get m&m's metrics against the project's ground-truth plans."""
    project = _project_reviewable(request, pk)
    form = ScorePlansForm(request.POST or None, request.FILES or None)
    result = None
    if request.method == "POST" and form.is_valid():
        upload = form.cleaned_data["predictions"]
        try:
            if upload.size > settings.BENCHWRIGHT_MAX_UPLOAD_BYTES:
                raise ValidationFailed("the file is larger than the upload limit")
            predictions = review_plans.parse_predictions(upload.read())
            result = review_plans.project_score_plans(
                project=project,
                predictions=predictions,
                plan_format=form.cleaned_data["plan_format"],
                best_match=form.cleaned_data["best_match"],
                status="verified" if form.cleaned_data["only_verified"] else None,
            )
        except DomainError as exc:
            form.add_error("predictions", exc.message)
    return render(
        request, "review/score_plans.html", {"project": project, "form": form, "result": result}
    )
