"""Pages for asking a model about an item: the form, the polled job fragment with the answer,
retrying a failed call, and the item's past model calls."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HTMX_STOP_POLLING

from benchmark.exceptions import DomainError
from benchmark.jobs import services
from benchmark.llm import selectors as llm_selectors
from benchmark.llm import services as llm_services
from benchmark.llm.forms import AskModelForm
from benchmark.pages import htmx_page, item_images, model_context, project_context, render_page
from benchmark.projects import selectors
from benchmark.typing import HtmxHttpRequest, request_user

HISTORY_SIZE = 50
PURPOSE = "ask"


@login_required
@require_http_methods(["GET", "POST"])
@htmx_page
def item_model(request: HtmxHttpRequest, project_id: int, item_id: int) -> HttpResponse:
    """Ask the model about an item (starts a model-call job) and list the item's past calls."""
    project = selectors.project_get(user=request.user, pk=project_id)
    item = selectors.item_get_revealed(
        user=request.user, project=project, pk=item_id, page="Asking the model about an item"
    )
    model = model_context(project)
    images = item_images(user=request.user, item=item)
    job = None
    if request.method == "POST":
        form = AskModelForm(request.POST, images=images)
        if form.is_valid() and model["model"] is not None:
            try:
                job = llm_services.model_call_start(
                    project=project,
                    user=request_user(request),
                    item=item,
                    purpose=PURPOSE,
                    prompt=form.cleaned_data["prompt"],
                    images=form.cleaned_data["images"],
                    mode=form.cleaned_data["cache"] or None,
                )
            except DomainError as exc:
                form.add_error(None, exc.message)
            else:
                if not request.htmx:
                    return redirect("benchmark:model_call_job", pk=job.pk)
                # Keep the prompt and the choice of images for a follow-up question.
                form = AskModelForm(initial=form.cleaned_data, images=images)
    else:
        form = AskModelForm(images=images, initial={"images": [e["sha256"] for e in images]})
    calls = llm_selectors.model_call_list(user=request.user, item=item).select_related(
        "created_by"
    )[:HISTORY_SIZE]
    context = {
        **project_context(request, project),
        **model,
        "item": item,
        "form": form,
        "images": images,
        "job": job,
        "calls": calls,
    }
    return render_page(
        request,
        "benchmark/model_call.html",
        context,
        fragments={"model-panel": "model-panel", "model-history": "model-history"},
    )


@login_required
@require_GET
@htmx_page
def model_call_job(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """A model-call job: progress while it runs, then the answer or the error with a Retry
    button. The polled fragment answers 286 (stop polling) once the job is done."""
    job = services.job_refresh(job=llm_selectors.model_call_job_get(user=request.user, pk=pk))
    response = render_page(
        request, "benchmark/model_call_job.html", {"job": job}, fragments={"mcjob-*": "job"}
    )
    polled = request.htmx and (request.htmx.target or "").startswith("mcjob-")
    if polled and job.done:
        response.status_code = HTMX_STOP_POLLING
        response["HX-Trigger"] = "model-call-done"
    return response


@login_required
@require_POST
def job_retry(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """Retry a failed job as a new job; htmx gets the new job's fragment in place."""
    job = llm_selectors.model_call_job_get(user=request.user, pk=pk)
    try:
        new = llm_services.job_retry(job=job, user=request_user(request))
    except DomainError as exc:
        return HttpResponse(exc.message, status=exc.status_code, content_type="text/plain")
    if not request.htmx:
        return redirect("benchmark:model_call_job", pk=new.pk)
    return render_page(
        request, "benchmark/model_call_job.html", {"job": new}, fragments={"mcjob-*": "job"}
    )
