"""Reviewers create "rate the judge" tasks from a judge run, and tasks in which people score
rubric criteria of answers; the figures are on the task's agreement page."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from benchmark.models import Origin, Response
from benchmark.pages import form_submit
from benchmark.typing import request_user
from review.pages import project_for_review
from review.rate_judge import selectors, services
from review.rate_judge.forms import CriterionTaskForm, RateJudgeForm

WHY = "Only reviewers and admins create tasks that rate the judge."


def _int(value: str | None) -> int | None:
    return int(value) if value and value.isdigit() else None


@login_required
@require_http_methods(["GET", "POST"])
def rate_judge_new(request: HttpRequest, project_id: int) -> HttpResponse:
    """Pick a judge run (``?run=`` preselects one), its agents, k and a sample of answers."""
    project = project_for_review(request, project_id, WHY, action="manage_studies")
    runs = selectors.judge_runs(user=request.user, project=project)
    data = request.POST if request.method == "POST" else None
    run_id = _int((data or request.GET).get("run"))
    run = runs.filter(pk=run_id).first() if run_id else None
    labels = services.run_labels(run=run) if run is not None else {}
    form = RateJudgeForm(data, runs=runs, labels=labels, initial={"run": run})
    status = 200
    if data is not None:
        task, status = form_submit(
            form,
            lambda cleaned: services.rate_judge_task_create(
                run=cleaned["run"],
                user=request_user(request),
                labels=cleaned["agents"],
                overlap=cleaned["overlap"],
                sample=cleaned["sample"],
                seed=cleaned["seed"] or 0,
                name=cleaned["name"],
            ),
        )
        if task is not None:
            return redirect("annotation:task_list", project_id=project.pk)
    return render(
        request,
        "review/rate_judge_new.html",
        {"project": project, "form": form, "run": run, "runs": runs, "labels": labels},
        status=status,
    )


@login_required
@require_http_methods(["GET", "POST"])
def criterion_task_new(request: HttpRequest, project_id: int) -> HttpResponse:
    """Pick the answers (a judge run's, or models') and criteria people score 0-2."""
    project = project_for_review(request, project_id, WHY, action="manage_studies")
    runs = selectors.judge_runs(user=request.user, project=project)
    models = sorted(
        set(
            Response.objects.filter(item__project=project, origin=Origin.MODEL).values_list(
                "model_name", flat=True
            )
        )
    )
    data = request.POST if request.method == "POST" else None
    form = CriterionTaskForm(data, runs=runs, models=models)
    status = 200
    if data is not None:
        task, status = form_submit(
            form,
            lambda cleaned: services.criterion_task_create(
                project=project,
                user=request_user(request),
                run=cleaned["run"],
                models=cleaned["models"],
                criteria=cleaned["criteria"],
                overlap=cleaned["overlap"],
                sample=cleaned["sample"],
                seed=cleaned["seed"] or 0,
                name=cleaned["name"],
            ),
        )
        if task is not None:
            return redirect("annotation:task_list", project_id=project.pk)
    return render(
        request,
        "review/criterion_task_new.html",
        {"project": project, "form": form, "runs": runs},
        status=status,
    )
