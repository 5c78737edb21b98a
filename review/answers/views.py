"""Reviewers of an interleaved project: upload model answers, see per-model tool-use figures."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods
from django.views.decorators.vary import vary_on_headers

from benchmark.exceptions import DomainError
from benchmark.models import Job
from review.answers import services as review_answers
from review.answers.services import answers_result_ordered
from review.pages import project_for_review


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    """A file field that takes several files (Django's documented pattern)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("widget", MultipleFileInput(attrs={"accept": ".json,.jsonl"}))
        super().__init__(*args, **kwargs)

    def clean(self, data: Any, initial: Any = None) -> Any:
        single = super().clean
        if isinstance(data, list | tuple):
            return [single(d, initial) for d in data]
        return [single(data, initial)]


class ScoreAnswersForm(forms.Form):
    answers = MultipleFileField(
        label="Answer files",
        help_text="JSON or JSONL in the benchmark's answer shape; the model is the record's "
        "'model' field, else the file name. Several files at once, one per model.",
    )
    only_verified = forms.BooleanField(
        required=False,
        label="Verified items only",
        help_text="Tool-set P/R/F1 always uses verified items only; this also limits the "
        "other figures to them.",
    )


def _bars(histogram: dict[str, int]) -> list[dict[str, Any]]:
    total = sum(histogram.values()) or 1
    top = max(histogram.values(), default=0) or 1
    return [
        {"label": label, "n": n, "share": 100 * n / total, "width": 100 * n / top}
        for label, n in histogram.items()
    ]


def _rows(result: dict[str, Any]) -> list[dict[str, Any]]:
    """One block per model (then all models), with the histogram as bars."""
    blocks = list(result["models"].values())
    if len(blocks) > 1:
        blocks.append(result["overall"])
    return [{**b, "bars": _bars(b["calls_per_answer"]["histogram"])} for b in blocks]


def _result_context(result: dict[str, Any] | None) -> dict[str, Any]:
    return {
        "inline_mb": review_answers.INLINE_BYTES // 2**20,
        "max_mb": review_answers.max_score_bytes() // 2**20,
        "result": result,
        "blocks": _rows(result) if result else [],
        "gt_bars": _bars(result["ground_truth"]["calls_per_answer"]["histogram"]) if result else [],
    }


def job_result_context(*, job: Job) -> dict[str, Any]:
    """The answer-scoring kind's result context (``benchmark.jobs.kinds``): the figures of a
    finished job, shaped as the page shows a small upload's."""
    result = answers_result_ordered(job.result) if job.result else None
    return _result_context(result)


def _panel(request: HttpRequest, template: str, context: dict[str, Any]) -> HttpResponse:
    htmx = getattr(request, "htmx", None)
    if htmx and not htmx.history_restore_request and htmx.target == "score-panel":
        template += "#panel"
    return render(request, template, context)


@login_required
@require_http_methods(["GET", "POST"])
@vary_on_headers("HX-Request")
def score_answers(request: HttpRequest, project_id: int) -> HttpResponse:
    """Upload answers; get format correctness, tool adoption, calls per answer, tool-set
    P/R/F1 against the verified ground truth and LLM-I's R_rule, per model. Up to
    INLINE_BYTES the figures come in this response; larger uploads start a scoring job whose
    progress the page polls, and whose figures appear in its place when it is done."""
    project = project_for_review(
        request,
        project_id,
        "Only reviewers and admins score model answers.",
        action="score",
    )
    interleaved = project.benchmark.offers.score_answers
    form = (
        ScoreAnswersForm(request.POST, request.FILES)
        if request.method == "POST"
        else ScoreAnswersForm()
    )
    result = None
    job = None
    if request.method == "POST" and interleaved and form.is_valid():
        uploads = form.cleaned_data["answers"]
        only_verified = form.cleaned_data["only_verified"]
        try:
            size = review_answers.uploads_check(uploads)
            if size > review_answers.INLINE_BYTES:
                job = review_answers.answers_score_start(
                    project=project, user=request.user, uploads=uploads, only_verified=only_verified
                )
            else:
                records = review_answers.read_uploads(
                    [(u.name or "answers", u.read()) for u in uploads]
                )
                result = review_answers.answers_score(
                    project=project, records=records, only_verified=only_verified
                )
        except DomainError as exc:
            form.add_error("answers", exc.message)
        if job is not None and not getattr(request, "htmx", None):
            return redirect("benchmark:job_detail", pk=job.pk)
    context = {
        "project": project,
        "form": form,
        "interleaved": interleaved,
        "job": job,
        **_result_context(result),
    }
    return _panel(request, "review/score_answers.html", context)
