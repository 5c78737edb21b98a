"""The item list's bulk actions: one POST from the project page's bulk bar."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import FileResponse, HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from annotation.bulk_actions import selectors, services
from annotation.bulk_actions.forms import BulkActionForm
from benchmark import selectors as project_selectors
from benchmark.datasets.services import dataset_export_file
from benchmark.exceptions import DomainError
from benchmark.models import Project
from benchmark.projects.views import project_page_context
from benchmark.typing import request_user

FILTER_PREFIX = "filter"


def bulk_context(request: HttpRequest, project: Project) -> dict[str, Any]:
    """The bulk bar on the project page (registered with ``project_page_extend``)."""
    form = BulkActionForm(project=project, user=request.user)
    return {"bulk_form": form, "bulk_filter_prefix": FILTER_PREFIX}


@login_required
@require_POST
def bulk_action(request: HttpRequest, project_id: int) -> HttpResponseBase:
    """Apply one action to the selected items (or all items matching the list's filters):
    a summary message and back to the list, a job page for a large selection, a download
    for an export. An invalid form re-renders the page with the message (200); an action
    the role may not take answers 403 saying why."""
    project = project_selectors.project_get(user=request.user, pk=project_id)
    context = project_page_context(request, project, request.POST, prefix=FILTER_PREFIX)
    form = BulkActionForm(request.POST, project=project, user=request.user)
    if not form.is_valid():
        return _again(request, context, form, status=200)
    data = form.cleaned_data
    filters = context["filters"]
    if data["scope"] == "matching":
        ids = selectors.bulk_selection(user=request.user, project=project, filters=filters)
        seen = dict.fromkeys(ids, filters.status) if filters.status else {}
    else:
        ids = selectors.bulk_selection(user=request.user, project=project, item_ids=data["ids"])
        seen = {pk: data["ids"][pk] for pk in ids if data["ids"].get(pk)}
    user = request_user(request)
    try:
        if data["action"] == "export":
            export = dataset_export_file(
                project=project,
                user=user,
                include_images=data["images"],
                item_ids=ids,
                name_suffix="selection",
            )
            return FileResponse(
                export.handle,
                as_attachment=True,
                filename=export.filename,
                content_type=export.content_type,
            )
        result = services.bulk_action_start(
            project=project,
            user=user,
            action=data["action"],
            item_ids=ids,
            seen=seen,
            params=form.params(),
        )
    except DomainError as exc:
        if exc.status_code == 403:
            raise PermissionDenied(exc.message) from None
        form.add_error(None, exc.message)
        return _again(request, context, form, status=exc.status_code)
    if result.job is not None:
        return redirect("benchmark:job_detail", pk=result.job.pk)
    messages.success(request, result.message)
    url = reverse("benchmark:project_detail", args=[project.pk])
    return redirect(f"{url}?{context['filter_query']}" if context["filter_query"] else url)


def _again(
    request: HttpRequest, context: dict[str, Any], form: BulkActionForm, *, status: int
) -> HttpResponse:
    context = {**context, "bulk_form": form}
    return render(request, "benchmark/project_detail.html", context, status=status)
