"""Import (upload a dataset file or .zip; a job with a progress bar) and export (download in the benchmark's own format)."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import (
    FileResponse,
    HttpRequest,
    HttpResponse,
    HttpResponseBadRequest,
    StreamingHttpResponse,
)
from django.http.response import HttpResponseBase
from django.shortcuts import redirect
from django.utils.http import content_disposition_header
from django.views.decorators.http import require_GET, require_http_methods

from benchmark import selectors
from benchmark.datasets import services
from benchmark.datasets.forms import ExportForm, ImportForm
from benchmark.exceptions import DomainError
from benchmark.jobs import selectors as job_selectors
from benchmark.pages import htmx_page, project_context, render_page, require_action
from benchmark.typing import HtmxHttpRequest


@login_required
@require_http_methods(["GET", "POST"])
@htmx_page
def project_import(request: HtmxHttpRequest, project_id: int) -> HttpResponse:
    """Upload a dataset file or .zip; starts an import job and shows its progress."""
    project = selectors.project_get(user=request.user, pk=project_id)
    require_action(request, project, "import")
    job = None
    if request.method == "POST":
        form = ImportForm(request.POST, request.FILES)
        if form.is_valid():
            try:
                job = services.import_upload_start(
                    project=project,
                    user=request.user,
                    upload=form.cleaned_data["file"],
                    source=form.cleaned_data.get("source") or "",
                    mapping=form.cleaned_data.get("mapping") or "",
                    task=form.cleaned_data.get("task") or "",
                    labels=form.cleaned_data.get("labels") or "",
                    user_map=form.cleaned_data.get("user_map") or "",
                )
            except DomainError as exc:
                field, _, rest = exc.message.partition(": ")
                if field in ("mapping", "task", "labels", "user_map") and rest:
                    form.add_error(field, rest)
                else:
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
        "recent_jobs": job_selectors.job_list(
            user=request.user, project=project, kind=services.IMPORT_KIND
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
def project_export(request: HttpRequest, project_id: int) -> HttpResponseBase:
    """Download the project's data in its format (optionally one status), or as Label Studio
    tasks with their labeling config (a .zip)."""
    project = selectors.project_get(user=request.user, pk=project_id)
    require_action(request, project, "export")
    form = ExportForm(request.GET)
    if not form.is_valid():
        return HttpResponseBadRequest(
            "Invalid export options: " + "; ".join(f"{k}: {v[0]}" for k, v in form.errors.items()),
            content_type="text/plain; charset=utf-8",  # the messages quote what was sent
        )
    try:
        fmt = None
        if form.cleaned_data["format"]:  # Label Studio: tasks and their labeling config
            fmt = services.label_studio_writer(
                project=project,
                with_judgments=form.cleaned_data["with_judgments"],
                image_base_url=form.cleaned_data["image_base_url"],
            )
        export = services.dataset_export_file(
            project=project,
            user=request.user,
            status=form.cleaned_data["status"] or None,
            include_images=form.cleaned_data["images"],
            stream=True,
            fmt=fmt,
        )
    except DomainError as exc:
        return HttpResponse(exc.message, status=exc.status_code, content_type="text/plain")
    if export.chunks is not None:  # sent while the items are read
        response = StreamingHttpResponse(export.chunks, content_type=export.content_type)
        response["Content-Disposition"] = content_disposition_header(True, export.filename)
        return response
    return FileResponse(
        export.handle,
        as_attachment=True,
        filename=export.filename,
        content_type=export.content_type,
    )
