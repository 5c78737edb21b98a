"""Pages for asking a model about an item: the form (the call is a job, shown by the one job
card and polled at the one job view), retrying a failed call, and the item's past model
calls."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from benchmark import selectors
from benchmark.exceptions import DomainError
from benchmark.images.selectors import item_images
from benchmark.jobs import selectors as job_selectors
from benchmark.llm import selectors as llm_selectors
from benchmark.llm import services as llm_services
from benchmark.llm.forms import AskModelForm
from benchmark.llm.selectors import model_context
from benchmark.pages import htmx_page, project_context, render_page
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
                    return redirect("benchmark:job_detail", pk=job.pk)
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
@require_POST
def job_retry(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """Retry a failed job as a new job; htmx gets the new job's fragment in place."""
    try:
        job = job_selectors.job_get(user=request.user, pk=pk)
        new = llm_services.job_retry(job=job, user=request_user(request))
    except DomainError as exc:
        return HttpResponse(exc.message, status=exc.status_code, content_type="text/plain")
    if not request.htmx:
        return redirect("benchmark:job_detail", pk=new.pk)
    return render(request, "partials/job.html", {"job": new})
