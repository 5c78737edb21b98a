"""Judging: the task list, "next item", and the judge page (blind)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.utils.module_loading import import_string
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django.views.decorators.vary import vary_on_headers
from django_htmx.http import HttpResponseClientRedirect

from annotation.judgment_tasks import selectors, services
from annotation.judgment_tasks.forms import JudgmentForm, TaskForm
from annotation.judgment_tasks.models import Assignment, AssignmentStatus, JudgmentTask, TaskUnit
from annotation.judgment_tasks.plan_graph import layout
from annotation.judgment_tasks.screens import task_screens
from annotation.judgment_tasks.units import unit_source
from benchmark import permissions
from benchmark import selectors as project_selectors
from benchmark.audio import selectors as audio_selectors
from benchmark.exceptions import DomainError
from benchmark.images import selectors as image_selectors
from benchmark.models import Item
from benchmark.plans.verify import verify_plan
from benchmark.presenters import item_view, item_view_thumbs, plan_input_files, plan_view
from benchmark.toolsets.specs import plan_toolset
from benchmark.typing import HtmxHttpRequest, request_user

htmx_page = vary_on_headers("HX-Request")


def _go(request: HtmxHttpRequest, url: str) -> HttpResponse:
    return HttpResponseClientRedirect(url) if request.htmx else redirect(url)


@login_required
@require_GET
def task_list(request: HttpRequest, project_id: int) -> HttpResponse:
    project = project_selectors.project_get(user=request.user, pk=project_id)
    tasks = list(selectors.task_list(user=request.user, project=project))
    pushes = selectors.pushes_untaken(user=request.user, tasks=tasks)
    for task in tasks:
        task.progress = selectors.my_progress(user=request.user, task=task)  # type: ignore[attr-defined]
        task.pushes_untaken = pushes.get(task.pk, [])  # type: ignore[attr-defined]
        if task.relabel_fields:
            task.stats = selectors.verification_stats(task=task)  # type: ignore[attr-defined]
    return render(
        request,
        "annotation/task_list.html",
        {
            "project": project,
            "tasks": tasks,
            "actions": permissions.allowed_actions(user=request.user, project=project),
        },
    )


@login_required
@require_http_methods(["GET", "POST"])
@htmx_page
def task_next(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """Lease the next item (or unit) and go to it. Asked from the judge page by htmx (its
    "Next" button), the answer is the next item's judging area itself (one request)."""
    task = selectors.task_get(user=request.user, pk=pk)
    return _next(request, task)


@login_required
@require_GET
def task_next_images(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """The thumbnails of the item the user will most likely judge after ``?after=<item id>``,
    as links the browser prefetches while the current item is judged (the judge page asks
    for them once its judging area is on screen). Leases nothing, locks nothing; the item is
    read as the judge page would read it for this user, and only what that page would show
    is named. Tasks judged on a screen of their own (blind solving) and tasks with units
    answer nothing, as does a user who may not judge."""
    task = selectors.task_get(user=request.user, pk=pk)
    try:
        after = int(request.GET.get("after", ""))
    except ValueError:
        return HttpResponseBadRequest("after: give the id of the item being judged.")
    shas: list[str] = []
    if _on_judge_page(task):
        item = selectors.next_item_guess(user=request.user, task=task, after=after)
        if item is not None:
            shas = item_view_thumbs(_item_view(request, task, item))
    return render(request, "annotation/judge.html#next-images", {"next_images": shas})


@login_required
@require_POST
@htmx_page
def task_next_ahead(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """Fill the judge page's queue: lease the items (or units) after ``?after=<item id>`` (a
    unit key for a task with units), the one the user judges now under a live lease, and after
    ``&held=<key>`` (repeated, in order: the items the page holds ahead already), as many as
    the page still wants (``services.AHEAD_MAX`` minus those held), in the task's order, and
    answer their judging areas, each in a ``<template data-url=...>`` (its URL), which the
    judge page keeps hidden in its queue and shows at once when the items before it are
    submitted. ``services.AHEAD_MAX`` held already: 400, saying so. Asked again with the same
    ``held``, the same leases answer. 204 when nothing is left after them (the submit then
    goes the usual way), and for tasks judged on a screen of their own."""
    task = selectors.task_get(user=request.user, pk=pk)
    if not _on_judge_page(task):
        return HttpResponse(status=204)
    after = request.GET.get("after", "")
    if task.has_units:  # a unit key; 404 naming it when the task has no such unit
        current = (selectors.task_unit_get(user=request.user, task=task, key=after).item_id, after)
    else:
        try:
            current = (int(after), "")
        except ValueError:
            return HttpResponseBadRequest("after: give the id of the item being judged.")
    try:
        leases = services.assignments_ahead_for_user(
            task=task,
            user=request_user(request),
            ahead_of=current,
            held=request.GET.getlist("held"),
        )
    except DomainError as exc:
        return HttpResponse(exc.message, status=exc.status_code, content_type="text/plain")
    if not leases:
        return HttpResponse(status=204)
    # Each area rendered by the template the single item uses (the judging partial).
    toolset = _toolset_for(task) if task.project.benchmark.plans else None  # read once
    areas = [_lease_area(request, task, lease, toolset) for lease in leases]
    return render(request, "annotation/judge.html#ahead", {"areas": areas})


@login_required
@require_POST
def task_next_ahead_release(request: HttpRequest, pk: int) -> HttpResponse:
    """The judge page is being left: end the leases of the items it held ahead, named by
    ``held=<key>`` (repeated) in the form body, as the page sends it with
    ``navigator.sendBeacon`` (CSRF token in the body). 204; 400 saying which key is wrong."""
    task = selectors.task_get(user=request.user, pk=pk)
    try:
        services.assignments_ahead_release(
            task=task, user=request_user(request), keys=request.POST.getlist("held")
        )
    except DomainError as exc:
        return HttpResponse(exc.message, status=exc.status_code, content_type="text/plain")
    return HttpResponse(status=204)


def _lease_area(
    request: HtmxHttpRequest,
    task: JudgmentTask,
    assignment: Assignment,
    toolset: dict[str, Any] | None,
) -> dict[str, Any]:
    """The judging area of a lease ahead, rendered, and its URL."""
    url, item, task_unit = _lease_target(request, task, assignment)
    template, context = _show_context(
        request, task, item, task_unit, assignment=assignment, ahead=True, toolset=toolset
    )
    return {"url": url, "html": render_to_string(template, context, request)}


def _lease_target(
    request: HtmxHttpRequest, task: JudgmentTask, assignment: Assignment
) -> tuple[str, Item, TaskUnit | None]:
    """The URL, item and unit (or None) of ``assignment``, read as its user may see them."""
    if assignment.unit:
        url = reverse("annotation:judge_unit", args=[task.pk, assignment.unit])
        task_unit = selectors.task_unit_get(user=request.user, task=task, key=assignment.unit)
        return url, task_unit.item, task_unit
    url = reverse("annotation:judge", args=[task.pk, assignment.item_id])
    item = selectors.task_item_get(user=request.user, task=task, pk=assignment.item_id)
    return url, item, None


def _show_lease(
    request: HtmxHttpRequest, task: JudgmentTask, assignment: Assignment
) -> HttpResponse:
    """The judging area of the item (or unit) of ``assignment``, its URL pushed."""
    url, item, task_unit = _lease_target(request, task, assignment)
    response = _show(request, task, item, task_unit, assignment=assignment)
    response["HX-Push-Url"] = url
    return response


def _next(request: HtmxHttpRequest, task: JudgmentTask) -> HttpResponse:
    try:
        assignment = services.assignment_next_for_user(task=task, user=request_user(request))
    except DomainError as exc:
        raise PermissionDenied(exc.message) from None
    if assignment is None:
        if _in_place(request):
            response = render(request, "annotation/queue_empty.html#judging", {"task": task})
            response["HX-Push-Url"] = reverse("annotation:task_next", args=[task.pk])
            return response
        return render(request, "annotation/queue_empty.html", {"task": task})
    if assignment.unit:
        url = reverse("annotation:judge_unit", args=[task.pk, assignment.unit])
    else:
        url = reverse("annotation:judge", args=[task.pk, assignment.item_id])
    if not _in_place(request) or not _on_judge_page(task):
        return _go(request, url)
    # In place: the next item's judging area answers this request, its URL pushed.
    return _show_lease(request, task, assignment)


def _in_place(request: HtmxHttpRequest) -> bool:
    """An htmx request from the judge page for its judging area (not a history restore,
    which needs the whole page)."""
    return bool(
        request.htmx
        and request.htmx.target == "judging"
        and not request.htmx.history_restore_request
    )


def _on_judge_page(task: JudgmentTask) -> bool:
    """Whether the task's items (or units) are judged on the judge page (not on a screen of
    their own: blind solving, response-level evaluation)."""
    if any(applies(task) for applies, _ in task_screens()):
        return False
    return not task.has_units or unit_source(task.unit_kind).page is None


def _plan_panel(item: Item, toolset: dict[str, Any]) -> list[dict[str, Any]]:
    panels = []
    # The plans under judgment: the ground truth and its alternatives, not model predictions.
    for plan in item.plans.filter(origin="ground_truth"):
        view = plan_view(plan)
        view["graph"] = layout(plan.steps or [])
        view["findings"] = verify_plan(plan.steps if plan.steps else plan.code, toolset)
        panels.append(view)
    return panels


def _toolset_for(task: JudgmentTask) -> dict[str, Any]:
    """The tools the plans of the task's items are checked against (the items of a task are
    its project's: read through the task, the project and its toolset are read once)."""
    return plan_toolset(task.project.toolset)


def _item_view(request: HttpRequest, task: JudgmentTask, item: Item) -> dict[str, Any]:
    return item_view(
        item,
        image_selectors.images_by_sha(
            user=request.user, shas=[r.get("sha256") for r in item.image_refs or []]
        ),
        task.project.benchmark.image_index_key,
    )


def _judge_context(
    request: HttpRequest,
    task: JudgmentTask,
    item: Item,
    unit: str = "",
    lease: Assignment | None = None,
    toolset: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """``toolset``: :func:`_toolset_for` the task, when the caller read it already (a page
    drawing several items reads it once)."""
    reviewer = permissions.can(user=request.user, project=task.project, action="adjudicate")
    context: dict[str, Any] = {
        "task": task,
        "project": task.project,
        "item": item,
        "view": _item_view(request, task, item),
        "audio": audio_selectors.item_audio(user=request.user, item=item)
        if item.audio_refs
        else [],
        "judgments": selectors.judgments_visible(
            user=request.user, task=task, item=item, unit=unit, lease=lease
        ),
        "outcome": selectors.outcome_for(task=task, item=item, unit=unit) if reviewer else None,
        "can_adjudicate": reviewer,
    }
    if task.project.benchmark.plans and not unit:
        context["plans"] = _plan_panel(item, toolset or _toolset_for(task))
        context["input_files"] = plan_input_files([p["obj"] for p in context["plans"]])
    return context


@login_required
@require_http_methods(["GET", "POST"])
@htmx_page
def judge(request: HtmxHttpRequest, pk: int, item_id: int) -> HttpResponse:
    """The judge page. Annotators reach it through a lease; reviewers may look at any item.
    Nobody sees another person's judgment here unless they may review."""
    task = selectors.task_get(user=request.user, pk=pk)
    for applies, screen in task_screens():  # e.g. blind solving has its own screen
        if applies(task):
            return import_string(screen)(request, task=task, item_id=item_id)
    if task.has_units:
        raise Http404("This task is judged unit by unit; ask for the next unit.")
    if request.method == "POST":  # a submit shows the item only if it fails (read again then)
        item = selectors.task_item_for_submit(user=request.user, task=task, pk=item_id)
        return _judge_page(request, task, item, read_again=True)
    item = selectors.task_item_get(user=request.user, task=task, pk=item_id)
    return _judge_page(request, task, item)


@login_required
@require_http_methods(["GET", "POST"])
@htmx_page
def judge_unit(request: HtmxHttpRequest, pk: int, unit: str) -> HttpResponse:
    """The judge page of one unit of a task with units (rate one judge report; score one
    criterion of one answer): the item, what the unit source shows about the unit, and the
    0-2 scale. Annotators reach it through a lease of that unit; reviewers may look at any
    unit. Blind as for items: an annotator sees no one else's rating."""
    task = selectors.task_get(user=request.user, pk=pk)
    if not task.has_units:
        raise Http404("This task judges whole items.")
    task_unit = selectors.task_unit_get(user=request.user, task=task, key=unit)
    # A kind with a page of its own (response-level evaluation) draws the unit there.
    own_page = unit_source(task.unit_kind).render_page(request, task=task, unit=task_unit)
    if own_page is not None:
        return own_page
    return _judge_page(request, task, task_unit.item, task_unit)


def _judge_page(
    request: HtmxHttpRequest,
    task: JudgmentTask,
    item: Item,
    task_unit: TaskUnit | None = None,
    *,
    read_again: bool = False,
) -> HttpResponse:
    """The judge page, and the submit of a judgment from it (or of a change to one's own
    judgment, after an undo: the form carries the version it showed). ``read_again``:
    ``item`` was read for the submit alone (``task_item_for_submit``); the page, if shown,
    reads it as its reader may see it. A submit that succeeds goes to the next item: asked by
    htmx from the judge page, the answer is the next item's judging area."""
    unit = task_unit.key if task_unit is not None else ""
    if request.method != "POST":
        return _show(request, task, item, task_unit)
    form = JudgmentForm(request.POST, task=task, item=item, by_value=task_unit is not None)
    shown = _ahead_shown(request)
    if not form.is_valid():
        # Sent in the background (the next item already on screen): 400, so the page puts
        # this item back with its errors.
        status = 400 if shown is not None else 200
        return _show(
            request, task, item, task_unit, form=form, read_again=read_again, status=status
        )
    # The service checks the lease under its lock; the page's own check runs only when the
    # page is shown (a refused or invalid submit), not on every submit.
    kwargs = form.judgment_kwargs()
    version = form.cleaned_data.get("version")
    try:
        if version:
            services.judgment_edit(
                task=task, item=item, user=request_user(request), unit=unit,
                version=version, **kwargs,
            )  # fmt: skip
        else:
            services.judgment_submit(
                task=task, item=item, user=request_user(request), unit=unit, **kwargs
            )
    except DomainError as exc:
        form.add_error(None, exc.message)
        # 400 (a relabel the taxonomy does not know, a label without its reason), 403, 409:
        # the judging area says why (data-swap-errors swaps them in).
        status = exc.status_code if exc.status_code in (400, 403, 409) else 200
        if shown is not None and status == 200:  # sent in the background: a refusal
            status = 409
        return _show(
            request, task, item, task_unit, form=form, status=status, read_again=read_again
        )
    if shown is not None and _in_place(request):
        return _saved(request, task, shown)
    if _in_place(request):
        return _next(request, task)
    return _go(request, reverse("annotation:task_next", args=[task.pk]))


#: The header of a judgment sent in the background by the judge page, which already shows
#: the item leased ahead: its value is that item's id (or unit key).
AHEAD_HEADER = "X-Benchwright-Ahead"


def _ahead_shown(request: HttpRequest) -> str | None:
    return request.headers.get(AHEAD_HEADER) or None


def _saved(request: HtmxHttpRequest, task: JudgmentTask, shown: str) -> HttpResponse:
    """The answer to a judgment sent in the background: small, never the judging area the
    person works in now (the item ``shown``), only what the save changed there: the progress
    line and the undo paragraph (out-of-band fragments). It leases nothing: the page asks for
    the items ahead itself, as soon as it shows one, so that request never waits behind a
    save. The judgment is saved: a ``shown`` the page cannot name (none on screen) answers
    nothing to draw, never an error."""
    item, unit = _shown_item(request, task, shown)
    progress = (
        selectors.judging_progress(user=request.user, task=task, item=item, unit=unit)
        if item is not None
        else None
    )
    saved = {"progress": progress, "what": "unit" if unit else "item"}
    # The task names the undo link's URL.
    response = render(request, "annotation/judge.html#saved", {"saved": saved, "task": task})
    response["X-Judgment-Saved"] = "1"
    return response


def _shown_item(request: HttpRequest, task: JudgmentTask, shown: str) -> tuple[Item | None, str]:
    """The item (and unit key) the page names as on screen, or (None, "") when it names none
    the user may see."""
    try:
        if task.has_units:
            task_unit = selectors.task_unit_get(user=request.user, task=task, key=shown)
            return task_unit.item, task_unit.key
        if shown.isdigit():
            return selectors.task_item_get(user=request.user, task=task, pk=int(shown)), ""
    except Http404:
        pass
    return None, ""


def _show(
    request: HtmxHttpRequest,
    task: JudgmentTask,
    item: Item,
    task_unit: TaskUnit | None = None,
    *,
    form: JudgmentForm | None = None,
    status: int = 200,
    read_again: bool = False,
    assignment: Assignment | None = None,
) -> HttpResponse:
    """The judge page of ``item`` (or of one unit of it), or only its judging area for htmx
    from the judge page. ``assignment``: the user's lease of it, when the caller has it."""
    template, context = _show_context(
        request, task, item, task_unit, form=form, read_again=read_again, assignment=assignment
    )
    return render(request, template, context, status=status)


def _show_context(
    request: HtmxHttpRequest,
    task: JudgmentTask,
    item: Item,
    task_unit: TaskUnit | None = None,
    *,
    form: JudgmentForm | None = None,
    read_again: bool = False,
    assignment: Assignment | None = None,
    ahead: bool = False,
    toolset: dict[str, Any] | None = None,
) -> tuple[str, dict[str, Any]]:
    """The template and context of :func:`_show`. ``ahead``: leased ahead, to be kept
    hidden by the page until the current item is sent; ``toolset``: see
    :func:`_judge_context`."""
    unit = task_unit.key if task_unit is not None else ""
    what = "unit" if unit else "item"
    if assignment is None:
        assignment = selectors.assignment_for(user=request.user, task=task, item=item, unit=unit)
    reviewer = permissions.can(user=request.user, project=task.project, action="adjudicate")
    if assignment is None and not reviewer:
        raise PermissionDenied(f"This {what} is not assigned to you. Ask for the next {what}.")
    if read_again:
        item = selectors.task_item_get(user=request.user, task=task, pk=item.pk)
    context = _judge_context(request, task, item, unit, lease=assignment, toolset=toolset)
    # One's own judgment, from the judgments the page shows anyway (not read before a submit).
    mine = next((j for j in context["judgments"] if j.user_id == request.user.pk), None)
    change: dict[str, Any] | None = None
    if mine is not None:
        verdict = context["outcome"].verdict if context["outcome"] else None
        if not reviewer:
            verdict = selectors.outcome_verdict(task=task, item=item, unit=unit)
        if mine.gold:  # a gold judgment is outside the outcome: it reads as pending
            verdict = None
        change = selectors.judgment_change_state(judgment=mine, outcome_verdict=verdict)
        if form is None and not change["refusal"]:  # undone: the judgment to change
            form = JudgmentForm(
                initial=JudgmentForm.initial_from(mine, task=task),
                task=task,
                item=item,
                by_value=task_unit is not None,
            )
    if form is None:
        form = JudgmentForm(task=task, item=item, by_value=task_unit is not None)
    context.update(
        {
            "form": form,
            "assignment": assignment,
            "mine": mine,
            "change": change,
            "what": what,
            "ahead": _ahead_context(task, assignment) if ahead else None,
            "ahead_max": services.AHEAD_MAX,
            "prefetch": assignment is not None
            and assignment.status == AssignmentStatus.ACTIVE
            and _on_judge_page(task),
            "progress": selectors.judging_progress(
                user=request.user, task=task, item=item, unit=unit
            )
            if assignment is not None
            else None,
        }
    )
    if task_unit is not None:
        context["unit_view"] = selectors.unit_view(user=request.user, task=task, unit=task_unit)
        context["unit_key"] = unit
    template = "annotation/judge.html#judging" if _in_place(request) else "annotation/judge.html"
    return template, context


def _ahead_context(task: JudgmentTask, assignment: Assignment | None) -> dict[str, int]:
    """What the page needs to tell whether an item held ahead is still fresh: the seconds
    its lease has left and the lease's length."""
    left = 0
    if assignment is not None:
        left = max(0, int((assignment.expires_at - timezone.now()).total_seconds()))
    return {"lease_left": left, "lease_total": task.lease_minutes * 60}


@login_required
@require_http_methods(["GET", "POST"])
def task_edit(request: HttpRequest, project_id: int, pk: int | None = None) -> HttpResponse:
    """Create or change a judgment task (project admins)."""
    project = project_selectors.project_get(user=request.user, pk=project_id)
    if not permissions.can(user=request.user, project=project, action="manage"):
        raise PermissionDenied("Only project admins define judgment tasks.")
    task = selectors.task_get(user=request.user, pk=pk) if pk else None
    if task is not None and task.project_id != project.pk:
        raise Http404("No such task in this project.")
    form = TaskForm(request.POST or None, instance=task)
    if request.method == "POST" and form.is_valid():
        fields = {name: form.cleaned_data[name] for name in TaskForm.Meta.fields}
        try:
            services.judgment_task_save(
                project=project, user=request_user(request), task=task, **fields
            )
        except DomainError as exc:
            form.add_error(None, exc.message)
        else:
            return redirect("annotation:task_list", project_id=project.pk)
    return render(
        request, "annotation/task_edit.html", {"project": project, "task": task, "form": form}
    )


@login_required
@require_http_methods(["POST"])
def task_defaults(request: HttpRequest, project_id: int) -> HttpResponse:
    """Add the benchmark's default judgment task(s) to the project (project admins)."""
    project = project_selectors.project_get(user=request.user, pk=project_id)
    if not permissions.can(user=request.user, project=project, action="manage"):
        raise PermissionDenied("Only project admins define judgment tasks.")
    services.judgment_task_ensure_defaults(project=project)
    return redirect("annotation:task_list", project_id=project.pk)
