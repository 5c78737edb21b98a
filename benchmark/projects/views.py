"""Web pages. Thin: each view looks things up through a selector (scoped to the user, so another
project's object answers 404), checks the role for actions, calls one service for writes, and
renders the full page or, for htmx requests, only the fragment that was asked for."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.module_loading import import_string
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from benchmark import permissions, selectors
from benchmark.audio import selectors as audio_selectors
from benchmark.datasets.forms import ExportForm
from benchmark.exceptions import DomainError
from benchmark.images import selectors as image_selectors
from benchmark.llm.selectors import model_context
from benchmark.llm.services import api_key_env_allowed
from benchmark.models import Item, ItemStatus, Project
from benchmark.notices import item_notices
from benchmark.pages import form_submit, htmx_page, project_context, render_page, require_action
from benchmark.pagination import CountedPaginator
from benchmark.people.selectors import project_for_members
from benchmark.permissions import can_create_project
from benchmark.presenters import (
    attachment_label,
    item_view,
    plan_view,
    pretty_json,
    tag_segments,
    trajectory_view,
)
from benchmark.projects import selectors as project_selectors
from benchmark.projects import services
from benchmark.projects.forms import (
    ItemFilterForm,
    ProjectCreateForm,
    ProjectEditForm,
    ProjectModelForm,
    RestoreForm,
)
from benchmark.projects.page_hooks import project_page_hooks
from benchmark.typing import request_user

PAGE_SIZE = 50


# --------------------------------------------------------------------------- projects


@login_required
@require_GET
@htmx_page
def project_list(request: HttpRequest) -> HttpResponse:
    projects = list(selectors.project_list(user=request.user))
    for project in projects:
        project.status_counts = [  # type: ignore[attr-defined]
            (value, label, getattr(project, f"n_{value}")) for value, label in ItemStatus.choices
        ]
    context = {"projects": projects, "can_create": can_create_project(user=request.user)}
    return render_page(request, "benchmark/project_list.html", context)


@login_required
@require_http_methods(["GET", "POST"])
def project_create(request: HttpRequest) -> HttpResponse:
    """A new project (staff and project admins); its creator becomes its admin."""
    if not can_create_project(user=request.user):
        raise PermissionDenied("Only staff and project admins create projects.")
    data = request.POST if request.method == "POST" else None
    form = ProjectCreateForm(
        data,
        toolsets=selectors.toolsets_usable(user=request.user),
        taxonomies=selectors.taxonomies_usable(user=request.user),
    )
    status = 200
    if data is not None:
        project, status = form_submit(
            form,
            lambda _: services.project_create(user=request_user(request), **form.service_kwargs()),
        )
        if project is not None:
            return redirect("benchmark:project_detail", project_id=project.pk)
    return render(request, "benchmark/project_create.html", {"form": form}, status=status)


@login_required
@require_GET
@htmx_page
def project_detail(request: HttpRequest, project_id: int) -> HttpResponse:
    """The project page: status counts and the filterable, paginated item list."""
    project = selectors.project_get(user=request.user, pk=project_id)
    context = project_page_context(request, project, request.GET)
    return render_page(
        request, "benchmark/project_detail.html", context, fragments={"item-list": "item-list"}
    )


def _filter_fields(query: Mapping[str, Any], start: str, *, status_hidden: bool) -> dict[str, Any]:
    """The item filter's fields in ``query`` (named ``<start><filter>``), without the status
    filter for people who are not shown item status (it is ignored for them)."""
    return {
        k[len(start) :]: v
        for k, v in query.items()
        if k.startswith(start)
        and k[len(start) :] in ItemFilterForm.base_fields
        and not (status_hidden and k[len(start) :] == "status")
    }


def project_page_context(
    request: HttpRequest, project: Project, query: Mapping[str, Any], *, prefix: str = ""
) -> dict[str, Any]:
    """The project page's context for the filters in ``query`` (the page's own query string,
    or a posted form's fields named ``<prefix>-<filter>``); pages that act on the item list
    (bulk actions) re-render the page with it."""
    facets = selectors.item_facets(user=request.user, project=project)
    status_hidden = selectors.item_status_hidden(user=request.user, project=project)
    start = f"{prefix}-" if prefix else ""
    bound = _filter_fields(query, start, status_hidden=status_hidden)
    form = ItemFilterForm(bound or None, facets=facets, status_filter=not status_hidden)
    if form.is_bound:
        form.is_valid()
    filters = form.filters()
    items = selectors.item_table_rows(user=request.user, project=project, filters=filters)
    asked = str(query.get(f"{start}page") or "1")
    at_least = int(asked) * PAGE_SIZE + 1 if asked.isdigit() and len(asked) < 7 else 0
    counts = selectors.item_status_counts(user=request.user, project=project)
    total = selectors.item_count(
        user=request.user, project=project, filters=filters, at_least=at_least,
        status_counts=counts,
    )  # fmt: skip
    if total.ids is None:
        page = CountedPaginator(items, PAGE_SIZE, count=total.n).get_page(asked)
    else:  # a search: its matches' ids came with the count, the page's rows are read by id
        page = CountedPaginator(total.ids, PAGE_SIZE, count=total.n).get_page(asked)
        page.object_list = selectors.item_table_rows_of(
            user=request.user, project=project, ids=list(page.object_list)
        )
    kind_columns = set(project.benchmark.item_columns)
    rows = list(page.object_list)
    page.object_list = rows  # read once, for the columns and the table
    filled = {
        "category": bool(facets.categories),
        "intent": bool(facets.intents),
        "level": any(getattr(row, "level", None) for row in rows),
        "modality": True,
    }
    actions = permissions.allowed_actions(user=request.user, project=project)
    extra: dict[str, Any] = {}
    for hook in project_page_hooks():
        extra.update((import_string(hook) if isinstance(hook, str) else hook)(request, project))
    return {
        **project_context(request, project),
        **extra,
        # each row links to ``items_url<id>/``: one reverse a page, not one a row
        "items_url": reverse("benchmark:item_detail", args=[project.pk, 0]).removesuffix("0/"),
        "form": form,
        "filters": filters,
        "filter_query": urlencode({k: v for k, v in bound.items() if v}),
        "filter_items": [(k, v) for k, v in bound.items() if v],
        "page": page,
        "count_label": f"{total.n:,}+" if total.capped else str(total.n),
        "counts": counts,
        "status_hidden": status_hidden,
        "status_counts": [
            (value, label, counts[value])
            for value, label in ItemStatus.choices
            if not status_hidden
        ],
        "export_form": ExportForm(),
        "drafting": model_context(project),
        # the kind's columns that hold something in this list (m&m's has no category,
        # intent or level: no three columns of "—")
        "columns": {c for c in kind_columns if filled.get(c)},
        "hidden_filters": {c for c in ("category", "intent", "level", "modality")} - kind_columns,
        "action_groups": project_selectors.project_action_groups(
            user=request.user, project=project, actions=actions
        ),
        "first_run": project_selectors.project_first_run(
            user=request.user,
            project=project,
            actions=actions,
            n_items=counts["total"],
            has_tasks=bool(extra.get("has_judgment_tasks")),
        ),
    }


@login_required
@require_http_methods(["GET", "POST"])
def project_edit(request: HttpRequest, project_id: int) -> HttpResponse:
    """The project's settings (its admins, and staff): description and guidelines, and the
    model that drafts for it. Each form posts on its own (the model form's fields carry the
    prefix "model-")."""
    project = project_for_members(user=request.user, pk=project_id)
    posted = request.POST if request.method == "POST" else None
    model_posted = posted is not None and posted.get("section") == "model"
    initial = {"description": project.description, "guidelines": project.guidelines}
    form = ProjectEditForm(None if model_posted else posted, initial=initial)
    model_form = ProjectModelForm(
        posted if model_posted else None,
        initial=ProjectModelForm.initial_for(project.settings),
        key_names=sorted(api_key_env_allowed()),
    )
    status = 200
    if posted is not None:
        if model_posted:
            done, status = form_submit(
                model_form,
                lambda cleaned: services.project_model_set(
                    project=project, user=request_user(request), values=cleaned
                ),
            )
        else:
            done, status = form_submit(
                form,
                lambda cleaned: services.project_update(
                    project=project, user=request_user(request), **cleaned
                ),
            )
        if done is not None:
            # Staff who are not members cannot open the project's page: back to its members.
            member = permissions.role_in(user=request.user, project=project) is not None
            target = "benchmark:project_detail" if member else "benchmark:members"
            return redirect(target, project_id=project.pk)
        if status == 400:
            status = 200  # an invalid form re-renders with its messages
    context = {**project_context(request, project), "form": form, "model_form": model_form}
    return render(request, "benchmark/project_edit.html", context, status=status)


# --------------------------------------------------------------------------- items


@login_required
@require_GET
@htmx_page
def item_detail(request: HttpRequest, project_id: int, item_id: int) -> HttpResponse:
    project = selectors.project_get(user=request.user, pk=project_id)
    item = selectors.item_get_detailed(user=request.user, project=project, pk=item_id)
    context = _item_context(request, project, item)
    return render_page(request, "benchmark/item_detail.html", context)


def _item_context(request: HttpRequest, project: Project, item: Item) -> dict[str, Any]:
    responses = list(item.responses.all())
    plans = list(item.plans.all())
    trajectories = list(item.trajectories.all())
    shas = [r.get("sha256") for r in item.image_refs or []]
    for traj in trajectories:
        shas += [r.get("sha256") for r in traj.image_refs or []]
    images = image_selectors.images_by_sha(user=request.user, shas=shas)
    history = list(selectors.item_status_history(user=request.user, item=item, project=project))
    restore_to = services.status_before_discard(history)
    return {
        **project_context(request, project),
        "item": item,
        "view": item_view(item, images, project.benchmark.image_index_key),
        "audio": audio_selectors.item_audio(user=request.user, item=item),
        "responses": [
            {
                "obj": r,
                "label": attachment_label(r),
                "segments": tag_segments(r.text),
                "raw": pretty_json(r.raw),
            }
            for r in responses
        ],
        "plans": [plan_view(p) for p in plans],
        "trajectories": [trajectory_view(t, images) for t in trajectories],
        "answer_hidden": item.answer_hidden,  # type: ignore[attr-defined]  # by the selector
        "notices": item_notices(user=request.user, project=project, item=item),
        "status_hidden": selectors.item_status_hidden(user=request.user, project=project),
        "status_history": history,
        "restore_to": ItemStatus(restore_to).label,
        "restore_form": RestoreForm(),
    }


@login_required
@require_POST
def item_restore(request: HttpRequest, project_id: int, item_id: int) -> HttpResponse:
    """Undo a discard (reviewers and admins): the item gets back the status it had before,
    and the change is recorded with the optional reason."""
    project = selectors.project_get(user=request.user, pk=project_id)
    item = selectors.item_get_detailed(user=request.user, project=project, pk=item_id)
    require_action(request, project, "set_status")
    form = RestoreForm(request.POST)
    error, status = "", 400
    if form.is_valid():
        try:
            services.item_restore(
                item=item, user=request_user(request), reason=form.cleaned_data["reason"]
            )
        except DomainError as exc:
            if exc.status_code == 403:
                raise PermissionDenied(exc.message) from None
            error, status = exc.message, exc.status_code
        else:
            return redirect("benchmark:item_detail", project_id=project.pk, item_id=item.pk)
    item.refresh_from_db(fields=["status", "discard_reason", "updated_at"])
    context = _item_context(request, project, item)
    context["restore_form"] = form
    context["restore_error"] = error or " ".join(
        str(e) for errors in form.errors.values() for e in errors
    )
    return render(request, "benchmark/item_detail.html", context, status=status)


# --------------------------------------------------------------------------- images


# --------------------------------------------------------------------------- import / export


# --------------------------------------------------------------------------- jobs


@login_required
@require_POST
def project_first_run_dismiss(request: HttpRequest, project_id: int) -> HttpResponse:
    """Put away the first-run checklist (the project's admins): for htmx, an empty answer
    that removes the checklist; else back to the project page."""
    project = selectors.project_get(user=request.user, pk=project_id)
    require_action(request, project, "manage")
    services.project_first_run_dismiss(project=project, user=request_user(request))
    if getattr(request, "htmx", False):
        return HttpResponse("")
    return redirect("benchmark:project_detail", project_id=project.pk)
