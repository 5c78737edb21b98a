"""Pages: a new item of the project's kind, the same form to edit one (409 with the other
person's change when stale, keeping what the user typed), and the item's history with revert.

Who: everyone who may "edit" in the project (annotators draft items: the papers' annotators
wrote the queries) creates, edits and reverts; a revert only adds a version, so nothing is lost.
After creating, an Agentic-MME item goes to its trajectory editor and an m&m's item to the plan
editor; the others to their edit page, which offers the tag editor for the ground truth.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import NoReverseMatch, reverse
from django.views.decorators.http import require_http_methods, require_POST

from benchmark import permissions
from benchmark import selectors as project_selectors
from benchmark.exceptions import DomainError
from benchmark.input_drafts.services import input_draft_delete
from benchmark.items import forms, history, input_drafts, selectors, services
from benchmark.items.services import COMMON_VERBS, VERB_SUFFIXES, ItemInvalid
from benchmark.models import Item, Project, Response
from benchmark.pages import htmx_page, project_context, render_page, require_action
from benchmark.typing import request_user
from benchmark.versions import StaleVersion

TEMPLATE = "benchmark/item_form.html"
HISTORY_TEMPLATE = "benchmark/item_history.html"
EDITOR_PAGE = "the item editor"


def _item(request: HttpRequest, project: Project, item_id: int) -> Item:
    item = project_selectors.item_get_revealed(
        user=request.user, project=project, pk=item_id, page=EDITOR_PAGE
    )
    reason = permissions.state_refusal(user=request.user, item=item, action="edit")
    if reason:
        raise PermissionDenied(reason)
    return item


def _context(
    request: HttpRequest,
    project: Project,
    state: forms.ItemFormState,
    *,
    item: Item | None = None,
    **extra: Any,
) -> dict[str, Any]:
    return {
        **project_context(request, project),
        "item": item,
        "gt": None,
        "created": False,
        "saved": False,
        "conflict": "",
        "conflict_changes": [],
        "base_version": None,
        "state": state,
        "values": state.values,
        "errors": state.errors,
        "choices": forms.choices(project),
        "verbs": " ".join(sorted(COMMON_VERBS)),
        "verb_suffixes": " ".join(VERB_SUFFIXES),
        "input_draft_key": input_drafts.edit_key(project_id=project.pk, item_id=item.pk)
        if item is not None
        else input_drafts.new_key(project_id=project.pk),
        **extra,
    }


def _after_create(project: Project, item: Item) -> str:
    after = project.benchmark.after_create
    if after:
        try:
            return reverse(after, kwargs={"project_id": project.pk, "item_id": item.pk})
        except NoReverseMatch:  # the editor is another feature; until it is there
            return reverse("benchmark:item_detail", args=[project.pk, item.pk])
    return reverse("benchmark:item_edit", args=[project.pk, item.pk]) + "?created=1"


@login_required
@require_http_methods(["GET", "POST"])
@htmx_page
def item_new(request: HttpRequest, project_id: int) -> HttpResponse:
    """A new item of the project's kind (a draft written by the user)."""
    project = project_selectors.project_get(user=request.user, pk=project_id)
    require_action(request, project, "edit")
    if request.method == "GET":
        empty: dict[str, Any] = {"documents": [{"text": "", "images": []}]}
        state = forms.state_from_data(empty)
        return render_page(request, TEMPLATE, _context(request, project, state))
    data, state = forms.data_from_post(project, request.POST, request.FILES)
    op = request.POST.get("op", "save")
    if op != "save" and forms.apply_document_op(state, op):
        return render_page(request, TEMPLATE, _context(request, project, state))
    try:
        item = services.item_create(project=project, user=request_user(request), data=data)
    except ItemInvalid as exc:
        state.set_errors(exc.errors)
    except DomainError as exc:
        state.set_errors({"__all__": exc.message})
    else:
        input_draft_delete(user=request.user, key=input_drafts.new_key(project_id=project.pk))
        return redirect(_after_create(project, item))
    return render(request, TEMPLATE, _context(request, project, state))


@login_required
@require_http_methods(["GET", "POST"])
@htmx_page
def item_edit(request: HttpRequest, project_id: int, item_id: int) -> HttpResponse:
    """The item's fields in the same form, saved as a new version on top of ``base_version``."""
    project = project_selectors.project_get(user=request.user, pk=project_id)
    require_action(request, project, "edit")
    item = _item(request, project, item_id)
    gt = Response.objects.filter(item=item, key="gt").first()
    extra: dict[str, Any] = {
        "gt": gt,
        "created": request.GET.get("created") == "1",
        "saved": request.GET.get("saved") == "1",
    }
    if request.method == "GET":
        state = forms.state_from_data(services.item_form_data(item))
        state.warnings = services.item_warnings(item=item)
        base = services.latest_number(item)
        context = _context(request, project, state, item=item, base_version=base, **extra)
        return render_page(request, TEMPLATE, context)
    data, state = forms.data_from_post(project, request.POST, request.FILES)
    data.pop("external_id", None)
    data.pop("gt", None)
    base_version = _int(request.POST.get("base_version"))
    op = request.POST.get("op", "save")
    if op != "save" and forms.apply_document_op(state, op):
        context = _context(request, project, state, item=item, base_version=base_version, **extra)
        return render_page(request, TEMPLATE, context)
    current = services.item_form_data(item)
    changes = {k: v for k, v in data.items() if not forms.same_value(k, v, current.get(k))}
    status = 200
    try:
        services.item_update(
            item=item,
            user=request_user(request),
            changes=changes,
            base_version=base_version,
            note=request.POST.get("note", ""),
        )
    except StaleVersion as exc:
        status = 409
        extra["conflict"] = exc.message
        extra["conflict_changes"] = selectors.version_changes(version=exc.current, item=item)
        base_version = exc.current.number  # saving again saves on top of their version
    except ItemInvalid as exc:
        state.set_errors(exc.errors)
    except DomainError as exc:
        state.set_errors({"__all__": exc.message})
        status = exc.status_code if exc.status_code != 400 else 200
    else:
        input_draft_delete(
            user=request.user, key=input_drafts.edit_key(project_id=project.pk, item_id=item.pk)
        )
        return redirect(reverse("benchmark:item_edit", args=[project.pk, item.pk]) + "?saved=1")
    context = _context(request, project, state, item=item, base_version=base_version, **extra)
    return render(request, TEMPLATE, context, status=status)


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value not in (None, "") else None
    except ValueError:
        return None


@login_required
@require_http_methods(["GET"])
@htmx_page
def item_history(request: HttpRequest, project_id: int, item_id: int) -> HttpResponse:
    """One timeline of everything edited on the item (its fields, and what the registered
    history sources add: plans, answers, the reference trajectory): who, when, what changed,
    each version's page, and its own revert for editors."""
    project = project_selectors.project_get(user=request.user, pk=project_id)
    item = project_selectors.item_get_revealed(
        user=request.user, project=project, pk=item_id, page="the item history"
    )
    return render_page(request, HISTORY_TEMPLATE, _history_context(request, project, item))


def _history_context(
    request: HttpRequest, project: Project, item: Item, **extra: Any
) -> dict[str, Any]:
    may_edit = permissions.can(
        user=request.user, project=project, action="edit"
    ) and not permissions.state_refusal(user=request.user, item=item, action="edit")
    entries = history.item_timeline(
        user=request.user, project=project, item=item, may_edit=may_edit
    )
    return {
        **project_context(request, project),
        "item": item,
        "entries": entries,
        "can_revert": may_edit,
        **extra,
    }


@login_required
@require_POST
def item_revert(request: HttpRequest, project_id: int, item_id: int, number: int) -> HttpResponse:
    project = project_selectors.project_get(user=request.user, pk=project_id)
    require_action(request, project, "edit")
    item = _item(request, project, item_id)
    history = reverse("benchmark:item_history", args=[project.pk, item.pk])
    try:
        services.item_revert(
            item=item,
            user=request_user(request),
            number=number,
            base_version=_int(request.POST.get("base_version")),
        )
    except DomainError as exc:
        context = _history_context(request, project, item, error=exc.message)
        return render(request, HISTORY_TEMPLATE, context, status=exc.status_code)
    return redirect(history)
