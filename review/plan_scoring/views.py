"""m&m's work on verified plans: the tool-balanced subset and scoring uploaded predictions."""

from __future__ import annotations

from typing import Any

import orjson
from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET, require_http_methods

from benchmark.exceptions import DomainError, ValidationFailed
from review.pages import project_for_review
from review.plan_scoring import services as review_plans
from review.plan_scoring.forms import BalanceForm, ScorePlansForm


def _bars(counts: dict[str, int]) -> list[dict[str, Any]]:
    total = sum(counts.values()) or 1
    top = max(counts.values(), default=0) or 1
    return [
        {"tool": tool, "n": n, "share": 100 * n / total, "width": 100 * n / top}
        for tool, n in sorted(counts.items(), key=lambda kv: -kv[1])
    ]


@login_required
@require_GET
def balance(request: HttpRequest, project_id: int) -> HttpResponse:
    """A seeded tool-balanced subset of the verified items, with the tool distribution before
    and after."""
    project = project_for_review(request, project_id, action="release")
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
def score_plans(request: HttpRequest, project_id: int) -> HttpResponse:
    """Upload predictions; get m&m's metrics against the project's ground-truth plans."""
    project = project_for_review(request, project_id, action="score")
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
