"""A project's saved filters: the list (apply or delete each), saving the item list's current
filters under a name, deleting one. Applying one is a link to the item list with its query."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from benchmark import permissions, selectors
from benchmark.exceptions import DomainError
from benchmark.models import Project
from benchmark.pages import form_submit, htmx_page, project_context, render_page
from benchmark.saved_filters import selectors as saved_selectors
from benchmark.saved_filters import services
from benchmark.saved_filters.forms import SavedFilterForm
from benchmark.typing import request_user


def saved_filters_context(request: HttpRequest, project: Project) -> dict[str, object]:
    """The saved filters on the project page's item list (registered with
    ``project_page_extend``): each to apply, and whether this user may delete it."""
    return {
        "saved_filters": _rows(request, project),
        "saved_filter_form": SavedFilterForm(),
    }


def _rows(request: HttpRequest, project: Project) -> list[dict[str, object]]:
    admin = permissions.can(user=request.user, project=project, action="manage")
    return [
        {"obj": saved, "deletable": admin or saved.created_by_id == request.user.pk}
        for saved in saved_selectors.saved_filter_list(user=request.user, project=project)
    ]


@login_required
@require_http_methods(["GET", "POST"])
@htmx_page
def saved_filters(request: HttpRequest, project_id: int) -> HttpResponse:
    """GET: the project's saved filters. POST (``name``, ``query``): save the item list's
    filters under that name, then the list with them applied; an invalid name or query
    re-renders this page with the message."""
    project = selectors.project_get(user=request.user, pk=project_id)
    form = SavedFilterForm(request.POST if request.method == "POST" else None)
    status = 200
    if request.method == "POST":
        saved, status = form_submit(
            form,
            lambda data: services.saved_filter_create(
                project=project, user=request_user(request), name=data["name"], query=data["query"]
            ),
        )
        if saved is not None:
            messages.success(request, f"Saved the filter {saved.name!r}.")
            url = reverse("benchmark:project_detail", args=[project.pk])
            return redirect(f"{url}?{saved.query}")
        if status == 400:
            status = 200  # an invalid form re-renders with its messages
    context = {
        **project_context(request, project),
        "form": form,
        "saved_filters": _rows(request, project),
    }
    response = render_page(request, "benchmark/saved_filters/list.html", context)
    response.status_code = status
    return response


@login_required
@require_POST
def saved_filter_delete(request: HttpRequest, project_id: int, pk: int) -> HttpResponse:
    """Delete a saved filter (its creator or a project admin; 403 saying why otherwise)."""
    project = selectors.project_get(user=request.user, pk=project_id)
    saved = saved_selectors.saved_filter_get(user=request.user, project=project, pk=pk)
    try:
        services.saved_filter_delete(saved_filter=saved, user=request_user(request))
    except DomainError as exc:
        if exc.status_code == 403:
            raise PermissionDenied(exc.message) from None
        raise
    messages.success(request, f"Deleted the saved filter {saved.name!r}.")
    return redirect("benchmark:saved_filters", project_id=project.pk)
