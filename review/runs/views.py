"""Pages for scoring agent runs: upload run folders (a scoring job with a progress bar), the
results of an upload per model and level, and a run's page where people answer the visual
checks (V_true) and label the failure mode of a failed run."""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from benchmark import permissions, selectors
from benchmark.exceptions import Conflict, DomainError
from benchmark.images import selectors as image_selectors
from benchmark.metrics.agentic_mme import FailureMode
from benchmark.models import Job, Project
from benchmark.pages import htmx_page, project_context, render_page
from benchmark.typing import HtmxHttpRequest
from review.agreement.judge_examples.selectors import example_units
from review.agreement.presenters import calibration_view, judge_rater_view
from review.runs import selectors as run_selectors
from review.runs import services as runs
from review.runs.models import AgentRun

DOMINANT_RULE = (
    "Each failed trajectory is assigned one dominant label corresponding to the earliest or "
    "most consequential bottleneck that prevents successful task completion. When multiple "
    "problems appear in the same failed trajectory, we assign the dominant label according to "
    "the earliest or most consequential bottleneck. For example, if the model fails to crop "
    "the relevant region and later also issues a poor search query, the case is labeled as "
    "Unfaithful visual tool use rather than Bad search query."
)


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class RunUploadForm(forms.Form):
    name = forms.CharField(
        max_length=200,
        required=False,
        label="Model or upload name",
        help_text="Used when a run's run_meta.json names no model and its folder is not "
        "inside a folder named after the model.",
    )


class VerdictForm(forms.Form):
    checkpoint = forms.CharField(max_length=100)
    passed = forms.TypedChoiceField(
        choices=[("yes", "Yes"), ("no", "No")], coerce=lambda v: v == "yes"
    )
    seen = forms.IntegerField(min_value=0, required=False)


class SearchVerdictForm(forms.Form):
    checkpoint = forms.CharField(max_length=100)
    passed = forms.TypedChoiceField(
        choices=[("pass", "PASS"), ("fail", "FAIL")], coerce=lambda v: v == "pass"
    )
    seen = forms.IntegerField(min_value=0, required=False)


class LabelForm(forms.Form):
    mode = forms.ChoiceField(
        choices=[(m.value, m.label) for m in FailureMode], widget=forms.RadioSelect
    )
    note = forms.CharField(
        required=False, max_length=2000, widget=forms.Textarea(attrs={"rows": 2})
    )


def _reviewable_project(request: HttpRequest, pk: int) -> Project:
    project = selectors.project_get(user=request.user, pk=pk)
    if not permissions.can(user=request.user, project=project, action="score"):
        raise PermissionDenied("Only reviewers and admins score agent runs.")
    return project


def _require_review(request: HttpRequest, project: Project) -> None:
    if not permissions.can(user=request.user, project=project, action="score"):
        raise PermissionDenied("Only reviewers and admins score agent runs.")


@login_required
@require_http_methods(["GET", "POST"])
@htmx_page
def runs_page(request: HtmxHttpRequest, project_id: int) -> HttpResponse:
    """The project's uploads of agent runs with their overall figures, and the upload form."""
    project = _reviewable_project(request, project_id)
    form = RunUploadForm(request.POST or None)
    job = None
    errors: list[str] = []
    if request.method == "POST" and form.is_valid():
        try:
            job = runs.run_upload_start(
                project=project,
                user=request.user,
                files=request.FILES.getlist("files"),
                paths=request.POST.getlist("paths"),
                name=form.cleaned_data["name"],
            )
        except DomainError as exc:
            errors.append(exc.message)
        else:
            if not request.htmx:
                return redirect("benchmark:job_detail", pk=job.pk)
            form = RunUploadForm()
    context = {
        **project_context(request, project),
        "form": form,
        "errors": errors,
        "job": job,
        "trajectory": project.benchmark.trajectories,
        "overview": run_selectors.project_runs_overview(user=request.user, project=project),
        "pending": run_selectors.score_jobs(user=request.user, project=project)[:5],
        "max_upload_mb": settings.BENCHWRIGHT_MAX_UPLOAD_BYTES // (1024 * 1024),
    }
    return render_page(request, "review/runs.html", context, fragments={"runs-upload": "upload"})


@login_required
@require_GET
@htmx_page
def run_set_detail(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """An upload's results: per model the figures overall and per level, the failure-label
    distribution and a table of its runs."""
    run_set = run_selectors.run_set_get(user=request.user, pk=pk)
    _require_review(request, run_set.project)
    results = run_selectors.run_set_results(run_set=run_set)
    threshold, threshold_error = _threshold(request)
    found = run_selectors.run_set_check_judges(
        user=request.user,
        run_set=run_set,
        scores=[(row["run"].pk, row["data"]) for row in results["runs"]],
        threshold=threshold,
    )
    context = {
        **project_context(request, run_set.project),
        "run_set": run_set,
        "results": results,
        "levels": ["L1", "L2", "L3"],
        "check_judges": [
            {
                "judge": judge,
                "rater": judge_rater_view(report, judge.answers),
                "calibration": calibration_view(report["calibration"], judge.answers),
                "corrections": _corrections(
                    report["corrections"],
                    judge.answers,
                    results,
                    example_units(project=run_set.project, judge=judge.spec.name),
                ),
            }
            for judge, report in found
        ],
        "can_add_examples": permissions.can(
            user=request.user, project=run_set.project, action="run_judges"
        )
        and permissions.can(user=request.user, project=run_set.project, action="manage_studies"),
        "threshold": threshold,
        "threshold_error": threshold_error,
    }
    return render_page(request, "review/runs_results.html", context)


def _corrections(
    cases: list[dict[str, Any]],
    answers: dict[int, str],
    results: dict[str, Any],
    examples: dict[str, int],
) -> list[dict[str, Any]]:
    """The correction cases as the page lists them: the run's folder, the answers' names,
    the worked-example set that holds the case (0: none)."""
    folders = {row["run"].pk: row["run"].folder for row in results["runs"]}
    return [
        {
            **case,
            "example_set": examples.get(case["unit"], 0),
            "folder": folders.get(case["run_id"], str(case["run_id"])),
            "judge_said": answers.get(case["judge"], str(case["judge"])),
            "people_said": answers.get(case["people"], str(case["people"])),
        }
        for case in cases
    ]


def _threshold(request: HttpRequest) -> tuple[float | None, str]:
    """The reviewer's trust threshold (``?threshold=``, 0 to 1; 0.6 when not given), or the
    default and why the one given was not used."""
    raw = request.GET.get("threshold", "").strip()
    if not raw:
        return None, ""
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0.0 <= value <= 1.0:
        return None, f"threshold: {raw[:20]!r} is not a number between 0 and 1; 0.6 is used"
    return value, ""


@login_required
@require_POST
def run_set_rescore(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """Rescore an upload's runs against the items' current reference, as a job; the people's
    visual answers and failure labels stay. A rescore already under way answers 409 and shows
    that job's progress instead."""
    run_set = run_selectors.run_set_get(user=request.user, pk=pk)
    _require_review(request, run_set.project)
    error = ""
    try:
        job: Job | None = runs.run_set_rescore_start(run_set=run_set, user=request.user)
    except DomainError as exc:
        error = exc.message
        job = runs.rescore_job_active(run_set=run_set)
    if not request.htmx and not error and job is not None:
        return redirect("benchmark:job_detail", pk=job.pk)
    context = {
        **project_context(request, run_set.project),
        "run_set": run_set,
        "job": job,
        "rescore_job": job,
        "rescore_error": error,
        "job_notice": error,
    }
    target = (request.htmx.target or "") if request.htmx else ""
    if target.startswith("job-") and job is not None:
        # Retry from a failed rescoring job's card: the new (or running) job's card in place.
        response = render(request, "partials/job.html", context)
    elif request.htmx:
        response = render(request, "review/runs_results.html#rescore", context)
    else:
        context.update(
            results=run_selectors.run_set_results(run_set=run_set), levels=["L1", "L2", "L3"]
        )
        response = render(request, "review/runs_results.html", context)
    if error:
        response.status_code = 409
    return response


def _run_context(request: HttpRequest, run: AgentRun, **extra: Any) -> dict[str, Any]:
    page = run_selectors.run_page(run=run, user=request.user)
    initial = page["my_label"].mode if page["my_label"] else None
    if initial is None and page["suggested"] is not None:
        initial = page["suggested"].value
    label_form = extra.pop("label_form", None) or LabelForm(
        initial={"mode": initial, "note": page["my_label"].note if page["my_label"] else ""}
    )
    item = run.item
    inputs = [r.get("sha256") for r in item.image_refs or [] if r.get("role") != "artifact"]
    references = [sha for row in page["checkpoints"] for sha in row["reference_shas"]]
    produced = [i.get("sha256") for i in run.images or []]
    found = image_selectors.images_by_sha(user=request.user, shas=[*inputs, *references, *produced])
    for row in page["checkpoints"]:
        row["reference_shas"] = [sha for sha in row["reference_shas"] if sha in found]
    return {
        **project_context(request, run.run_set.project),
        "run": run,
        "input_sha": next((sha for sha in inputs if sha in found), None),
        "produced": [{**i, "found": i.get("sha256") in found} for i in run.images or []],
        "run_set": run.run_set,
        "item": run.item,
        **page,
        "modes": list(FailureMode),
        "label_form": label_form,
        "rule": DOMINANT_RULE,
        **extra,
    }


@login_required
@require_GET
@htmx_page
def run_detail(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    run = run_selectors.run_get(user=request.user, pk=pk)
    _require_review(request, run.run_set.project)
    return render_page(request, "review/runs_run.html", _run_context(request, run))


@login_required
@require_POST
def run_visual(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """Answer a visual checkpoint: does any produced image show the required detail?"""
    run = run_selectors.run_get(user=request.user, pk=pk)
    _require_review(request, run.run_set.project)
    form = VerdictForm(request.POST)
    message = ""
    status = 200
    if form.is_valid():
        try:
            runs.visual_verdict_set(
                run=run,
                user=request.user,
                checkpoint_id=form.cleaned_data["checkpoint"],
                passed=form.cleaned_data["passed"],
                seen=form.cleaned_data["seen"] or 0,
            )
        except Conflict as exc:
            message, status = exc.message, 409
        except DomainError as exc:
            message, status = exc.message, exc.status_code
    else:
        message = "Answer yes or no for one checkpoint."
        status = 400
    if not request.htmx and status == 200:
        return redirect("review:run_detail", pk=run.pk)
    run.refresh_from_db()
    context = _run_context(request, run, verdict_error=message)
    response = render_page(
        request, "review/runs_run.html", context, fragments={"run-checks": "checks"}
    )
    if request.htmx and not context["score"].acc:
        # The answer may change what the scores point at: refresh the failure-mode section too
        # (out of band), keeping what the person chose or typed there and has not saved yet.
        context["label_form"] = _label_form_after_verdict(request, context)
        label = render_to_string(
            "review/runs_run.html#label", {**context, "label_oob": True}, request=request
        )
        response.content = response.content + label.encode()
    if status != 200:
        # htmx swaps this response too (the page says what happened and shows the other
        # person's answer); the status tells scripts and tests.
        response.status_code = status
        response["HX-Retarget"] = "#run-checks"
        response["HX-Reswap"] = "outerHTML"
    return response


@login_required
@require_POST
def run_search(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """Answer a search checkpoint PASS or FAIL: did the agent's search retrieve the expected
    finding? The S judge's verdict is shown once the person answered."""
    run = run_selectors.run_get(user=request.user, pk=pk)
    _require_review(request, run.run_set.project)
    form = SearchVerdictForm(request.POST)
    message = ""
    status = 200
    if form.is_valid():
        try:
            runs.search_verdict_set(
                run=run,
                user=request.user,
                checkpoint_id=form.cleaned_data["checkpoint"],
                passed=form.cleaned_data["passed"],
                seen=form.cleaned_data["seen"] or 0,
            )
        except DomainError as exc:
            message, status = exc.message, exc.status_code
    else:
        message = "Answer PASS or FAIL for one search checkpoint."
        status = 400
    if not request.htmx and status == 200:
        return redirect("review:run_detail", pk=run.pk)
    context = _run_context(request, run, verdict_error=message)
    response = render_page(
        request, "review/runs_run.html", context, fragments={"run-checks": "checks"}
    )
    if status != 200:
        response.status_code = status
        if request.htmx:
            response["HX-Retarget"] = "#run-checks"
            response["HX-Reswap"] = "outerHTML"
    return response


def _label_form_after_verdict(request: HttpRequest, context: dict[str, Any]) -> LabelForm:
    """The label form as the person left it (the verdict form posts it along). A choice still
    on the suggestion shown follows the new suggestion, unless the person saved a label."""
    if "note" not in request.POST:
        return context["label_form"]
    mode = request.POST.get("mode") or ""
    suggested = context["suggested"]
    if context["my_label"] is None and mode in ("", request.POST.get("suggested_shown", "")):
        mode = suggested.value if suggested is not None else ""
    return LabelForm(initial={"mode": mode or None, "note": request.POST.get("note", "")})


@login_required
@require_POST
def run_label(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """Label a failed run with one of the seven failure modes (stored per reviewer)."""
    run = run_selectors.run_get(user=request.user, pk=pk)
    _require_review(request, run.run_set.project)
    form = LabelForm(request.POST)
    saved = False
    if form.is_valid():
        try:
            runs.failure_label_set(
                run=run,
                user=request.user,
                mode=form.cleaned_data["mode"],
                note=form.cleaned_data["note"],
            )
        except DomainError as exc:
            form.add_error(None, exc.message)
        else:
            saved = True
            if not request.htmx:
                return redirect("review:run_detail", pk=run.pk)
    context = _run_context(request, run, label_form=None if saved else form, label_saved=saved)
    return render_page(request, "review/runs_run.html", context, fragments={"run-label": "label"})
