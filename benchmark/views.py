"""Web pages. Thin: each view looks things up through a selector (scoped to the user, so another
project's object answers 404), checks the role for actions, calls one service for writes, and
renders the full page or, for htmx requests, only the fragment that was asked for."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models.fields.files import FieldFile
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.http.response import HttpResponseBase
from django.shortcuts import redirect
from django.views.decorators.http import require_GET, require_http_methods
from django_htmx.http import HTMX_STOP_POLLING

from benchmark import selectors, services
from benchmark.exceptions import DomainError
from benchmark.forms import ExportForm, ImportForm, ItemFilterForm
from benchmark.models import (
    ItemStatus,
    ProjectKind,
)
from benchmark.pages import htmx_page, project_context, render_page, require_action
from benchmark.presenters import (
    attachment_label,
    item_view,
    plan_view,
    pretty_json,
    tag_segments,
    trajectory_view,
)
from benchmark.typing import HtmxHttpRequest

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
    return render_page(request, "benchmark/project_list.html", {"projects": projects})


@login_required
@require_GET
@htmx_page
def project_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """The project page: status counts and the filterable, paginated item list."""
    project = selectors.project_get(user=request.user, pk=pk)
    facets = selectors.item_facets(user=request.user, project=project)
    bound = {k: v for k, v in request.GET.items() if k != "page"}
    form = ItemFilterForm(bound or None, facets=facets)
    if form.is_bound:
        form.is_valid()
    filters = form.filters()
    items = selectors.item_list_rows(user=request.user, project=project, filters=filters)
    page = Paginator(items, PAGE_SIZE).get_page(request.GET.get("page"))
    counts = selectors.item_status_counts(user=request.user, project=project)
    export_form = ExportForm()
    context = {
        **project_context(request, project),
        "form": form,
        "filters": filters,
        "page": page,
        "counts": counts,
        "status_counts": [(value, label, counts[value]) for value, label in ItemStatus.choices],
        "export_form": export_form,
    }
    return render_page(
        request, "benchmark/project_detail.html", context, fragments={"item-list": "item-list"}
    )


# --------------------------------------------------------------------------- items


@login_required
@require_GET
@htmx_page
def item_detail(request: HttpRequest, project_pk: int, pk: int) -> HttpResponse:
    project = selectors.project_get(user=request.user, pk=project_pk)
    item = selectors.item_get_detailed(user=request.user, project=project, pk=pk)
    from annotation.verification import redact_unanswered  # blind verifiers

    hidden = redact_unanswered(user=request.user, item=item)
    responses = list(item.responses.all())
    plans = list(item.plans.all())
    trajectories = [] if hidden else list(item.trajectories.all())
    shas = [r.get("sha256") for r in item.image_refs or []]
    for traj in trajectories:
        shas += [r.get("sha256") for r in traj.image_refs or []]
    images = selectors.images_by_sha(user=request.user, shas=shas)
    context = {
        **project_context(request, project),
        "item": item,
        "view": item_view(
            item, images, "image_index" if project.kind == ProjectKind.TRAJECTORY else "img_index"
        ),
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
        "answer_hidden": hidden,
    }
    return render_page(request, "benchmark/item_detail.html", context)


# --------------------------------------------------------------------------- images


IMAGE_TYPES = {"PNG": "image/png", "JPEG": "image/jpeg", "GIF": "image/gif", "WEBP": "image/webp"}


def _image_response(field: FieldFile, content_type: str) -> FileResponse:
    try:
        handle = field.open("rb")
    except (FileNotFoundError, ValueError):
        raise Http404("The image file is missing.") from None
    response = FileResponse(handle, content_type=content_type)
    # Content-addressed, so never stale; private because access is checked per user.
    response["Cache-Control"] = "private, max-age=31536000, immutable"
    return response


@login_required
@require_GET
def image_file(request: HttpRequest, sha256: str) -> FileResponse:
    image = selectors.image_get(user=request.user, sha256=sha256)
    return _image_response(image.file, IMAGE_TYPES.get(image.format, "application/octet-stream"))


@login_required
@require_GET
def image_thumb(request: HttpRequest, sha256: str) -> FileResponse:
    image = selectors.image_get(user=request.user, sha256=sha256)
    if image.thumbnail:
        return _image_response(image.thumbnail, "image/png")
    return _image_response(image.file, IMAGE_TYPES.get(image.format, "application/octet-stream"))


# --------------------------------------------------------------------------- import / export


@login_required
@require_http_methods(["GET", "POST"])
@htmx_page
def project_import(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """Upload a dataset file or .zip; starts an import job and shows its progress."""
    project = selectors.project_get(user=request.user, pk=pk)
    require_action(request, project, "import")
    job = None
    if request.method == "POST":
        form = ImportForm(request.POST, request.FILES)
        if form.is_valid():
            try:
                job = services.import_upload_start(
                    project=project, user=request.user, upload=form.cleaned_data["file"]
                )
            except DomainError as exc:
                form.add_error("file", exc.message)
            else:
                if not request.htmx:
                    return redirect("benchmark:job_detail", pk=job.pk)
                form = ImportForm()
    else:
        form = ImportForm()
    context = {
        **project_context(request, project),
        "form": form,
        "job": job,
        "max_upload_mb": settings.BENCHWRIGHT_MAX_UPLOAD_BYTES // (1024 * 1024),
        "recent_jobs": selectors.job_list(user=request.user, project=project).filter(
            kind=services.IMPORT_KIND
        )[:5],
    }
    return render_page(
        request,
        "benchmark/project_import.html",
        context,
        fragments={"import-panel": "import-panel"},
    )


@login_required
@require_GET
def project_export(request: HttpRequest, pk: int) -> HttpResponseBase:
    """Download the project's data in its format (optionally one status)."""
    project = selectors.project_get(user=request.user, pk=pk)
    require_action(request, project, "export")
    form = ExportForm(request.GET)
    if not form.is_valid():
        return HttpResponseBadRequest(
            "Invalid export options: " + "; ".join(f"{k}: {v[0]}" for k, v in form.errors.items())
        )
    try:
        export = services.dataset_export_file(
            project=project,
            user=request.user,
            status=form.cleaned_data["status"] or None,
            include_images=form.cleaned_data["images"],
        )
    except DomainError as exc:
        return HttpResponse(exc.message, status=exc.status_code, content_type="text/plain")
    return FileResponse(
        export.handle,
        as_attachment=True,
        filename=export.filename,
        content_type=export.content_type,
    )


# --------------------------------------------------------------------------- jobs


@login_required
@require_GET
@htmx_page
def job_detail(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """A job's progress. The polled fragment answers 286 (stop polling) once it is done."""
    job = services.job_refresh(job=selectors.job_get(user=request.user, pk=pk))
    response = render_page(
        request, "benchmark/job_detail.html", {"job": job}, fragments={"job-*": "job"}
    )
    polled = request.htmx and (request.htmx.target or "").startswith("job-")
    if polled and job.done:
        response.status_code = HTMX_STOP_POLLING
    return response
