"""Rendered answers in the browser (issue 11): "Render answers" on an interleaved project
(start a rendering job over chosen answers; the providers configured; recent renderings), a
rendered answer's page (the document as its reader sees it, what became of each tool call,
render it again) and its standalone HTML file. Reviewers and admins only: model answers are
reviewer material."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect
from django.utils.text import slugify
from django.views.decorators.http import require_GET, require_http_methods

from benchmark.exceptions import DomainError
from benchmark.models import Job
from benchmark.pages import htmx_page, project_context, render_page
from benchmark.rendering import LABELS
from benchmark.typing import HtmxHttpRequest, request_user
from review.answer_rendering import selectors
from review.answer_rendering import services as rendering_services
from review.answer_rendering.forms import RenderForm
from review.answers import services as review_answers
from review.judges.reports import model_answer_counts
from review.pages import project_for_review

WHY = selectors.WHY
RECENT_SHOWN = 50


@login_required
@require_http_methods(["GET", "POST"])
@htmx_page
def render_answers(request: HtmxHttpRequest, project_id: int) -> HttpResponse:
    """Pick the answers (stored models, or an upload imported first); POST starts one
    rendering job whose card the page polls. Below: what executes each tool, and the
    project's recent renderings. Bad input answers 400 (409 while a rendering job of the
    project is running) with the form and what is wrong."""
    project = project_for_review(request, project_id, WHY, action="score")
    if not project.benchmark.offers.render_answers:
        raise Http404("This project's answers have no tool tags to render.")
    models = model_answer_counts(project=project)
    status = 200
    errors: list[str] = []
    job: Job | None = None
    if request.method == "POST":
        form = RenderForm(request.POST, request.FILES, models=models)
        if form.is_valid():
            data = form.cleaned_data
            try:
                uploads = data["answers"]
                if uploads:
                    review_answers.uploads_check(uploads)
                job = rendering_services.rendering_start(
                    project=project,
                    user=request_user(request),
                    models=data["models"],
                    files=[(Path(u.name or "answers").name, u.read()) for u in uploads],
                )
            except DomainError as exc:
                errors.append(exc.message)
                status = exc.status_code
            else:
                if not request.htmx:
                    return redirect("benchmark:job_detail", pk=job.pk)
                models = model_answer_counts(project=project)
                form = RenderForm(models=models)
        else:
            status = 400
    else:
        form = RenderForm(models=models)
    try:
        providers = rendering_services.providers_summary()
        provider_error = ""
    except DomainError as exc:
        providers, provider_error = [], exc.message
    context = {
        **project_context(request, project),
        "form": form,
        "errors": errors,
        "job": job,
        "providers": providers,
        "provider_error": provider_error,
        "how_to": rendering_services.HOW_TO_CONFIGURE,
        "recent": list(selectors.renderings_recent(user=request.user, project=project)),
        "recent_shown": RECENT_SHOWN,
    }
    response = render_page(
        request, "review/answer_rendering/start.html", context, fragments={"render-start": "start"}
    )
    response.status_code = status
    return response


def _calls(rendering: Any) -> list[dict[str, Any]]:
    rows = []
    for i, call in enumerate(rendering.calls or [] if rendering else []):
        rows.append(
            {
                "index": i,
                **call,
                "label": LABELS.get(call.get("reason", ""), "") if call.get("reason") else "",
            }
        )
    return rows


@login_required
@require_http_methods(["GET", "POST"])
@htmx_page
def rendered_answer(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """The answer's newest rendering: the document, then each call's tool, status, reason,
    image and provider, and earlier renderings. POST renders this answer again (a job; its
    cached calls are not executed again); 409 while a rendering job of the project runs."""
    response = selectors.response_for_rendering(user=request.user, pk=pk)
    project = response.item.project
    job: Job | None = None
    error = ""
    status = 200
    if request.method == "POST":
        try:
            job = rendering_services.rendering_start(
                project=project, user=request_user(request), response_ids=[response.pk]
            )
        except DomainError as exc:
            error, status = exc.message, exc.status_code
        else:
            if not request.htmx:
                return redirect("review:rendered_answer", pk=response.pk)
    rendering = selectors.rendering_newest(response=response)
    context = {
        **project_context(request, project),
        "answer": response,
        "item": response.item,
        "rendering": rendering,
        "document": selectors.rendering_html(rendering) if rendering else "",
        "calls": _calls(rendering),
        "stale": rendering is not None and rendering.text != response.text,
        "history": selectors.rendering_history(response=response) if rendering else [],
        "job": job,
        "error": error,
    }
    page = render_page(
        request,
        "review/answer_rendering/answer.html",
        context,
        fragments={"rendered-document": "document", "render-again": "again"},
    )
    page.status_code = status
    return page


@login_required
@require_GET
def rendered_answer_download(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """The newest rendering as one HTML file (images and CSS inlined); 404 before any."""
    response = selectors.response_for_rendering(user=request.user, pk=pk)
    rendering = selectors.rendering_newest(response=response)
    if rendering is None:
        raise Http404("This answer has not been rendered yet.")
    html = selectors.rendering_standalone(rendering=rendering, response=response)
    name = slugify(f"{response.item.external_id}-{response.model_name or response.key}")
    out = HttpResponse(html, content_type="text/html; charset=utf-8")
    out["Content-Disposition"] = f'attachment; filename="{name or "answer"}.html"'
    out["X-Content-Type-Options"] = "nosniff"
    return out
