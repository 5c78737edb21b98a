"""Pages for step-wise oracle testing (Agentic-MME §2.4): the project's "Oracle testing" page
(figures per model, the items flagged for review, the runs, and the form that starts a run as
a job), a run's results, and one item's test (the conversation as sent, the model's output).
Reviewers and admins."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from benchmark import permissions, selectors
from benchmark.exceptions import DomainError
from benchmark.images import selectors as image_selectors
from benchmark.llm.selectors import model_context
from benchmark.models import Job, Project
from benchmark.pages import htmx_page, project_context, render_page
from benchmark.typing import HtmxHttpRequest, request_user
from review.oracle import selectors as oracle_selectors
from review.oracle import services as oracle
from review.oracle.conversation import PROMPT_VERSION, SYSTEM
from review.oracle.forms import OracleStartForm
from review.oracle.models import OracleResult, OracleRun

REFUSED = "Only reviewers and admins run and read oracle tests."


def _require_review(request: HttpRequest, project: Project) -> None:
    if not permissions.can(user=request.user, project=project, action="run_judges"):
        raise PermissionDenied(REFUSED)


@login_required
@require_http_methods(["GET", "POST"])
@htmx_page
def oracle_page(request: HtmxHttpRequest, project_id: int) -> HttpResponse:
    """Figures per model, the flagged items, the runs, and the form that starts a run."""
    project = selectors.project_get(user=request.user, pk=project_id)
    _require_review(request, project)
    form = OracleStartForm(request.POST or None)
    job: Job | None = None
    errors: list[str] = []
    status = 200
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            run, job = oracle.oracle_run_create(
                project=project,
                user=request_user(request),
                base_url=data["base_url"],
                model=data["model"],
                items=oracle.parse_item_ids(data["items"]),
                enqueue=True,
            )
        except DomainError as exc:
            if exc.status_code == 403:
                raise PermissionDenied(exc.message) from None
            errors.append(exc.message)
            status = exc.status_code
        else:
            if not request.htmx:
                return redirect("review:oracle_run", pk=run.pk)
            form = OracleStartForm()
    elif request.method == "POST":
        status = 400
    models = oracle_selectors.model_figures(user=request.user, project=project)
    context = {
        **project_context(request, project),
        **model_context(project),
        "form": form,
        "errors": errors,
        "job": job,
        "trajectory": project.benchmark.trajectories,
        "models": models,
        "flagged_count": sum(len(m.flagged) for m in models),
        "runs": oracle_selectors.oracle_runs(user=request.user, project=project),
        "prompt_version": PROMPT_VERSION,
    }
    response = render_page(
        request, "review/oracle.html", context, fragments={"oracle-start": "start"}
    )
    if status != 200 and not request.htmx:
        response.status_code = status
    return response


def _run_context(request: HttpRequest, run: OracleRun, **extra: Any) -> dict[str, Any]:
    results = oracle_selectors.oracle_run_results(user=request.user, run=run)
    job = run.job  # an "oracle" job: its kind shows it to reviewers, as this page
    return {
        **project_context(request, run.project),
        "run": run,
        "results": results,
        "figures": oracle_selectors.figures(r.outcome for r in results),
        "job": job,
        "resumable": job is None or job.done,
        **extra,
    }


@login_required
@require_GET
@htmx_page
def oracle_run_detail(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """A run's figures and every item's result."""
    run = oracle_selectors.oracle_run_get(user=request.user, pk=pk)
    _require_review(request, run.project)
    return render_page(request, "review/oracle_run.html", _run_context(request, run))


@login_required
@require_POST
def oracle_run_resume(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """Test again the run's items that have no solved or failed result, as a new job; 409
    while the run's job is still going (its card is shown instead)."""
    run = oracle_selectors.oracle_run_get(user=request.user, pk=pk)
    _require_review(request, run.project)
    error = ""
    try:
        oracle.oracle_run_resume(run=run, user=request_user(request), enqueue=True)
    except DomainError as exc:
        if exc.status_code == 403:
            raise PermissionDenied(exc.message) from None
        error = exc.message
    run = oracle_selectors.oracle_run_get(user=request.user, pk=pk)
    if not request.htmx and not error:
        return redirect("review:oracle_run", pk=run.pk)
    context = _run_context(request, run, resume_error=error, job_notice=error)
    target = (request.htmx.target or "") if request.htmx else ""
    if target.startswith("job-") and context["job"] is not None:
        response = render(request, "partials/job.html", context)
    elif request.htmx:
        response = render(request, "review/oracle_run.html#resume", context)
    else:
        response = render(request, "review/oracle_run.html", context)
    if error:
        response.status_code = 409
    return response


def _conversation(request: HttpRequest, result: OracleResult) -> dict[str, Any]:
    """The stored messages for the page: the system text, then the user turn's parts, each
    image with its stored row (when the user may see it)."""
    shas = []
    system = ""
    content: list[dict[str, Any]] = []
    for message in result.messages or []:
        if message.get("role") == "system":
            system = str(message.get("content") or "")
        elif isinstance(message.get("content"), list):
            content = message["content"]
    for part in content:
        if part.get("type") == "image":
            shas.append(part.get("sha256") or "")
    images = image_selectors.images_by_sha(user=request.user, shas=shas)
    parts = []
    for part in content:
        if part.get("type") == "image":
            sha = part.get("sha256") or ""
            label = f"Image {part.get('index')}"
            parts.append(
                {
                    "kind": "image",
                    "entry": {"sha256": sha, "image": images.get(sha), "label": label},
                }
            )
        else:
            parts.append({"kind": "text", "text": part.get("text", "")})
    return {"system": system, "parts": parts}


@login_required
@require_GET
@htmx_page
def oracle_result_detail(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """One item's test: what the model was shown, what it answered, and the item's answer."""
    result = oracle_selectors.oracle_result_get(user=request.user, pk=pk)
    _require_review(request, result.run.project)
    item = selectors.item_get(user=request.user, project=result.run.project, pk=result.item_id)
    context = {
        **project_context(request, result.run.project),
        "result": result,
        "run": result.run,
        "item": item,
        "conversation": _conversation(request, result),
        "current_system": SYSTEM,
    }
    return render_page(request, "review/oracle_result.html", context)
