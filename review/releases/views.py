"""Release pages (reviewers and admins): the list with the "New release" form, a release's
manifest, its check against the manifest, and its download as one .zip. A release never
changes: there are no edit or delete routes.

Releases are written in the request (not yet as a job through ``benchmark.jobs``)."""

from __future__ import annotations

import tempfile
import zipfile
from pathlib import Path
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.utils.text import slugify
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from benchmark.pages import form_submit, htmx_page, project_context, render_page
from benchmark.typing import request_user
from review.pages import project_for_review
from review.releases import selectors, services
from review.releases.forms import ALL, ReleaseForm


@login_required
@require_http_methods(["GET", "POST"])
@htmx_page
def release_list(request: HttpRequest, project_id: int) -> HttpResponse:
    project = project_for_review(request, project_id)
    form = ReleaseForm(request.POST if request.method == "POST" else None)
    if request.method == "POST":
        release, _ = form_submit(
            form,
            lambda cleaned: services.release_create(
                project=project,
                user=request_user(request),
                name=cleaned["name"],
                status=None if cleaned["status"] == ALL else cleaned["status"],
                named=cleaned["named"],
            ),
        )
        if release is not None:
            return redirect("review:release_detail", project_id=project.pk, pk=release.pk)
    context: dict[str, Any] = {
        **project_context(request, project),
        "releases": selectors.release_list(user=request.user, project=project),
        "form": form,
    }
    # An invalid form is re-rendered with 200 and its messages (htmx swaps it).
    return render_page(request, "review/releases/list.html", context, fragments={"new": "new"})


def _release(request: HttpRequest, project_id: int, pk: int) -> Any:
    project = project_for_review(request, project_id)
    return project, selectors.release_get(user=request.user, project=project, pk=pk)


@login_required
@require_GET
@htmx_page
def release_detail(request: HttpRequest, project_id: int, pk: int) -> HttpResponse:
    project, release = _release(request, project_id, pk)
    context = {**project_context(request, project), "release": release, "check": None}
    return render_page(request, "review/releases/detail.html", context)


@login_required
@require_POST
def release_verify(request: HttpRequest, project_id: int, pk: int) -> HttpResponse:
    """Check the release's folder against its manifest (as ``release_verify DIR`` does)."""
    project, release = _release(request, project_id, pk)
    context = {
        **project_context(request, project),
        "release": release,
        "check": services.release_verify(path=release.path),
    }
    return render_page(
        request, "review/releases/detail.html", context, fragments={"check": "check"}
    )


@login_required
@require_GET
def release_download(request: HttpRequest, project_id: int, pk: int) -> FileResponse:
    project, release = _release(request, project_id, pk)
    root = Path(release.path)
    if not root.is_dir():
        raise Http404("The release's folder is gone.")
    base = f"{slugify(project.name) or project.pk}-v{release.number}"
    handle = tempfile.TemporaryFile()  # noqa: SIM115 - FileResponse closes it
    with zipfile.ZipFile(handle, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            archive.write(path, arcname=f"{base}/{path.relative_to(root)}")
    handle.seek(0)
    return FileResponse(
        handle, as_attachment=True, filename=f"{base}.zip", content_type="application/zip"
    )
