"""The gold page of a judgment task (reviewers): its gold items (mark, list, unmark), each
annotator's gold accuracy with its interval and flag, and the actions on an annotator whose
accuracy is low: pause or resume their queue, send their recent judgments back for review."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_POST

from annotation.judgment_tasks.models import JudgmentTask
from benchmark.exceptions import DomainError
from benchmark.typing import request_user
from review.gold import selectors, services
from review.gold.forms import GoldMarkForm, PauseForm, SendBackForm
from review.pages import task_for_review

WHY = "Only reviewers and admins see and set a task's gold items."


def _page(
    request: HttpRequest,
    task: JudgmentTask,
    *,
    mark_form: GoldMarkForm | None = None,
    error: str = "",
    status: int = 200,
) -> HttpResponse:
    user = request_user(request)
    context: dict[str, Any] = {
        "task": task,
        "project": task.project,
        "gold_items": list(selectors.gold_items(user=user, task=task)),
        "gold": selectors.gold_report(user=user, task=task),
        "paused": list(selectors.paused_people(user=user, task=task)),
        "mark_form": mark_form
        or GoldMarkForm(
            task=task,
            initial={"item": request.GET.get("item", ""), "unit": request.GET.get("unit", "")},
        ),
        "send_back_form": SendBackForm(),
        "pause_form": PauseForm(),
        "error": error,
    }
    return render(request, "review/gold/gold.html", context, status=status)


@login_required
@require_GET
def gold_page(request: HttpRequest, pk: int) -> HttpResponse:
    task = task_for_review(request, pk, WHY, action="adjudicate")
    return _page(request, task)


@login_required
@require_POST
def gold_mark(request: HttpRequest, pk: int) -> HttpResponse:
    """Mark an item gold; a bad item or value re-renders the page saying why (400/404/409)."""
    task = task_for_review(request, pk, WHY, action="adjudicate")
    form = GoldMarkForm(request.POST, task=task)
    if not form.is_valid():
        return _page(request, task, mark_form=form, status=400)
    user = request_user(request)
    try:
        item = selectors.gold_item_lookup(user=user, task=task, ref=form.cleaned_data["item"])
        services.gold_mark(
            task=task,
            item=item,
            user=user,
            value=form.gold_value(),
            unit=form.cleaned_data.get("unit") or "",
        )
    except DomainError as exc:
        return _page(request, task, mark_form=form, error=exc.message, status=exc.status_code)
    return redirect("review:gold", pk=task.pk)


@login_required
@require_POST
def gold_unmark(request: HttpRequest, pk: int, item_id: int) -> HttpResponse:
    task = task_for_review(request, pk, WHY, action="adjudicate")
    unit = (request.POST.get("unit") or "")[:100]  # the gold unit of the item, if any
    return _act(request, task, services.gold_unmark, item_id=item_id, unit=unit)


@login_required
@require_POST
def queue_pause(request: HttpRequest, pk: int, user_id: int) -> HttpResponse:
    task = task_for_review(request, pk, WHY, action="adjudicate")
    form = PauseForm(request.POST)
    reason = form.cleaned_data["reason"] if form.is_valid() else ""
    return _act(request, task, services.queue_pause, annotator_id=user_id, reason=reason)


@login_required
@require_POST
def queue_resume(request: HttpRequest, pk: int, user_id: int) -> HttpResponse:
    task = task_for_review(request, pk, WHY, action="adjudicate")
    return _act(request, task, services.queue_resume, annotator_id=user_id)


@login_required
@require_POST
def judgments_send_back(request: HttpRequest, pk: int, user_id: int) -> HttpResponse:
    task = task_for_review(request, pk, WHY, action="adjudicate")
    form = SendBackForm(request.POST)
    if not form.is_valid():
        errors = "; ".join(str(e) for errs in form.errors.values() for e in errs)
        return _page(request, task, error=f"last: {errors}", status=400)
    return _act(
        request, task, services.judgments_send_back, annotator_id=user_id,
        last=form.cleaned_data["last"],
    )  # fmt: skip


def _act(request: HttpRequest, task: JudgmentTask, service: Any, **kwargs: Any) -> HttpResponse:
    """Run one of the gold page's actions; back to the page (``next``: the Team page or the
    agreement dashboard it was asked from), or the page saying why it was refused."""
    try:
        service(task=task, user=request_user(request), **kwargs)
    except DomainError as exc:
        return _page(request, task, error=exc.message, status=exc.status_code)
    back = request.POST.get("next", "")
    if back and url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}):
        return redirect(back)
    return redirect("review:gold", pk=task.pk)
