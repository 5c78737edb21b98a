"""Release pages (reviewers and admins): the list with the "New release" form, a release's
manifest, its check against the manifest, and its download as one .zip. A release never
changes: there are no edit or delete routes.

Small releases are written in the request; those of ``RELEASE_JOB_MIN_ITEMS`` items or more
as a "release" job through ``benchmark.jobs`` (the form sends the user to the job's page)."""

from __future__ import annotations

import tempfile
import zipfile
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.text import slugify
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect

from benchmark import selectors as project_selectors
from benchmark.models import Job, Project
from benchmark.pages import form_submit, htmx_page, project_context, render_page
from benchmark.typing import User, request_user
from review.pages import project_for_review
from review.releases import selectors, services
from review.releases.forms import ALL, CompareForm, ReleaseForm
from review.releases.models import Release


@login_required
@require_http_methods(["GET", "POST"])
@htmx_page
def release_list(request: HttpRequest, project_id: int) -> HttpResponse:
    project = project_for_review(request, project_id, action="release")
    form = ReleaseForm(request.POST if request.method == "POST" else None, project=project)
    if request.method == "POST":
        made, _ = form_submit(form, lambda cleaned: _make(project, request_user(request), cleaned))
        if made is not None:
            url = (
                reverse("benchmark:job_detail", kwargs={"pk": made.pk})
                if isinstance(made, Job)
                else reverse(
                    "review:release_detail", kwargs={"project_id": project.pk, "pk": made.pk}
                )
            )
            # htmx follows the client redirect, so the address bar shows the new page.
            return (
                HttpResponseClientRedirect(url)
                if getattr(request, "htmx", False)
                else redirect(url)
            )
    context: dict[str, Any] = {
        **project_context(request, project),
        "releases": selectors.release_list(user=request.user, project=project),
        "form": form,
    }
    # An invalid form is re-rendered with 200 and its messages (htmx swaps it).
    return render_page(request, "review/releases/list.html", context, fragments={"new": "new"})


def _make(project: Project, user: User, cleaned: dict[str, Any]) -> Release | Job:
    """Write the release now, or as a job when it holds many items."""
    status = None if cleaned["status"] == ALL else cleaned["status"]
    args: dict[str, Any] = {
        "project": project,
        "user": user,
        "name": cleaned["name"],
        "status": status,
    }
    if cleaned.get("subset"):
        cap = cleaned.get("cap")
        args.update(
            subset=cleaned["subset"],
            cap=services.DEFAULT_BALANCE_CAP if cap is None else cap / 100,
            seed=cleaned.get("seed") or 0,
        )
    if services.release_item_count(project=project, status=status) >= (
        services.RELEASE_JOB_MIN_ITEMS
    ):
        return services.release_start(**args, named=cleaned["named"], parquet=cleaned["parquet"])
    return services.release_create(**args, named=cleaned["named"], parquet=cleaned["parquet"])


def _release(request: HttpRequest, project_id: int, pk: int) -> Any:
    project = project_for_review(request, project_id, action="release")
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
        "check": services.release_check(release=release),
    }
    return render_page(
        request, "review/releases/detail.html", context, fragments={"check": "check"}
    )


@login_required
@require_GET
def release_download(request: HttpRequest, project_id: int, pk: int) -> FileResponse:
    project, release = _release(request, project_id, pk)
    base = f"{slugify(project.name) or project.pk}-v{release.number}"
    handle = tempfile.TemporaryFile()  # noqa: SIM115 - FileResponse closes it
    with services.release_folder(release=release) as root:
        files = sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else []
        if not files:
            handle.close()
            raise Http404("The release's folder is gone.")
        with zipfile.ZipFile(handle, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            for path in files:
                archive.write(path, arcname=f"{base}/{path.relative_to(root)}")
    handle.seek(0)
    return FileResponse(
        handle, as_attachment=True, filename=f"{base}.zip", content_type="application/zip"
    )


@login_required
@require_GET
def item_release_state(request: HttpRequest, project_id: int, item_id: int) -> HttpResponse:
    """The item page's "Releases" card: changed since release vN, or not released yet."""
    project = project_for_review(request, project_id, action="release")
    item = project_selectors.item_get(user=request.user, project=project, pk=item_id)
    state = selectors.item_release_state(user=request.user, project=project, item=item)
    context = {**project_context(request, project), "item": item, "state": state}
    return render(request, "review/releases/item_state.html", context)


@login_required
@require_GET
@htmx_page
def release_compare(request: HttpRequest, project_id: int) -> HttpResponse:
    """Compare two releases (``?old=<id>&new=<id>``): items added, removed and changed."""
    project = project_for_review(request, project_id, action="release")
    releases = selectors.release_list(user=request.user, project=project)
    form = CompareForm(request.GET or None, releases=releases)
    comparison = None
    if form.is_bound and form.is_valid():
        comparison = selectors.release_compare(
            user=request.user,
            project=project,
            old=form.cleaned_data["old"].pk,
            new=form.cleaned_data["new"].pk,
        )
    context = {**project_context(request, project), "form": form, "comparison": comparison}
    return render_page(request, "review/releases/compare.html", context)
