"""Response-level human evaluation: reviewers create the task and read its results; raters
score one answer (or one pair of answers) at a time on its own page, blind to the models.

The rating page is the unit's page (``annotation:judge_unit`` hands it here, see
``annotation.judgment_tasks.units``): the query with its documents and images, the rendered answer
(:func:`_answer_shown`), the scale with its criteria, and keys for every score. Nothing on it
names a model: answers are read without their model (``selectors.unit_answers``), and the
task's name is checked when the task is made.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterator
from typing import Any

import orjson
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods

from annotation.judgment_tasks import selectors as judging_selectors
from annotation.judgment_tasks.models import JudgmentTask, TaskUnit
from annotation.judgment_tasks.services import judgment_submit
from benchmark.exceptions import DomainError
from benchmark.formats.csv_safe import csv_row
from benchmark.images import selectors as image_selectors
from benchmark.input_drafts.services import input_draft_delete
from benchmark.models import Item, Response
from benchmark.pages import form_submit, htmx_page
from benchmark.permissions import can
from benchmark.presenters import item_view
from benchmark.rendering.preview import render_answer
from benchmark.tags import SYNTAXES, ToolCall
from benchmark.typing import request_user
from review.answer_rendering.selectors import rendered_document
from review.human_eval import input_drafts, selectors, services
from review.human_eval.forms import HumanEvalForm
from review.human_eval.scales import ATP, PAIR, Scale, scale_of
from review.pages import project_for_review, task_for_review

WHY = "Only reviewers and admins create human evaluations and read their results."
IMAGE_TOOLS = ("reference", "edit")


# =========================================================================== creating


@login_required
@require_http_methods(["GET", "POST"])
def human_eval_new(request: HttpRequest, project_id: int) -> HttpResponse:
    """Pick the scale, the models, how many answers, the seed and k."""
    project = project_for_review(request, project_id, WHY, action="manage_studies")
    models = selectors.project_models(project=project)
    data = request.POST if request.method == "POST" else None
    form = HumanEvalForm(data, models=models)
    status = 200
    if data is not None:
        task, status = form_submit(
            form,
            lambda cleaned: services.human_eval_task_create(
                project=project,
                user=request_user(request),
                scale=cleaned["scale"],
                models=cleaned["models"],
                per_model=cleaned["per_model"],
                seed=cleaned["seed"],
                same_items=cleaned["same_items"],
                overlap=cleaned["overlap"],
                name=cleaned["name"],
            ),
        )
        if task is not None:
            return redirect("review:human_eval_results", pk=task.pk)
    return render(
        request,
        "review/human_eval_new.html",
        {"project": project, "form": form, "models": models},
        status=status,
    )


# =========================================================================== rating


def _image_lookup(item: Item, images: dict[str, Any], role: str) -> Callable[..., Any]:
    """Reference (and Edit) calls shown as the item's image at ``img_index``, counted as the
    tag validator counts them (document images for ATP-Bench, input images for LLM-I)."""
    view = item_view(item, images)
    indexed = [e for e in view["images"] if e["role"] == role]

    def lookup(tool: ToolCall) -> tuple[str, str] | None:
        if (tool.tool_name or "").lower() not in IMAGE_TOOLS:
            return None
        index = (tool.params or {}).get("img_index")
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(indexed):
            return None
        entry = indexed[index]
        if entry.get("image") is None:
            return None
        return reverse("benchmark:image_thumb", args=[entry["sha256"]]), entry["label"]

    return lookup


def _answer_shown(
    response: Response, *, syntax: str = "", image: Callable[..., Any] | None = None
) -> dict[str, Any]:
    """The answer as its reader sees it (sanitized HTML, printed with ``|sanitized``): the
    rendered ``document`` when the answer has been rendered (``review.answer_rendering``), else a
    ``preview``: its markdown rendered and sanitised with each tool call drawn in place (the
    referenced image, or a card naming the tool and its prompt)."""
    document = rendered_document(response)
    if document:
        return {"document": document}
    syntax = syntax or response.item.project.tag_syntax
    syntax = syntax if syntax in SYNTAXES else SYNTAXES[0]
    return {"preview": render_answer(response.text, syntax, image=image)}


def _posted_value(scale: Scale, data: Any) -> Any:
    if scale.key == ATP:
        return {f.key: data.get(f.key, "") for f in scale.fields}
    return data.get("value", "")


def _shown(scale: Scale, value: Any) -> str:
    """A rating as the page prints it: "# Inappr. 1 · MI 0 · FS 4", "4 · Good", "B is better"."""
    if scale.key == ATP and isinstance(value, dict):
        return " · ".join(f"{f.label} {value.get(f.key, '—')}" for f in scale.fields)
    label = next((e["label"] for e in scale.labels if e["value"] == value), None)
    return str(label if label is not None else value)


def _form_fields(scale: Scale, entered: dict[str, Any]) -> list[dict[str, Any]]:
    """What the rating form shows: per field its value so far (ATP-Bench B.2: counts start
    at 0), or per choice its label, criteria and key."""
    if scale.key == ATP:
        return [
            {"field": f, "value": str(entered.get(f.key, "" if f.points else f.low))}
            for f in scale.fields
        ]
    if scale.key == PAIR:
        keys = {"a": "a", "b": "b", "tie": "t"}
        return [
            {"value": e["value"], "label": e["label"], "key": keys[e["value"]], "criteria": "",
             "checked": entered.get("value") == e["value"]}
            for e in scale.labels
        ]  # fmt: skip
    points = scale.fields[0].points
    return [
        {"value": n, "label": f"{n} · {name}", "key": n, "criteria": criteria,
         "checked": entered.get("value") == str(n)}
        for n, name, criteria in points
    ]  # fmt: skip


def _seconds(data: Any) -> float:
    try:
        return max(0.0, float(data.get("seconds") or 0))
    except ValueError:
        return 0.0


def rate_unit(request: HttpRequest, *, task: JudgmentTask, unit: TaskUnit) -> HttpResponse:
    """One answer (or pair) of a human evaluation: raters reach it through a lease, reviewers
    may look at any. POST records the rating; a bad one answers 400 with what is wrong."""
    scale = scale_of(task)
    if scale is None:
        raise Http404("This task is not a human evaluation of answers.")
    item = unit.item
    user = request_user(request)
    reviewer = can(user=user, project=task.project, action="adjudicate")
    assignment = judging_selectors.assignment_for(user=user, task=task, item=item, unit=unit.key)
    if assignment is None and not reviewer:
        raise PermissionDenied("This answer is not assigned to you. Ask for the next one.")
    judgments = judging_selectors.judgments_visible(user=user, task=task, item=item, unit=unit.key)
    for judgment in judgments:
        judgment.shown = _shown(scale, judgment.value)  # type: ignore[attr-defined]
    mine = next((j for j in judgments if j.user_id == user.pk), None)
    error, status = "", 200
    entered: dict[str, Any] = {}
    if request.method == "POST" and mine is None:
        value = _posted_value(scale, request.POST)
        entered = value if isinstance(value, dict) else {"value": value}
        try:
            judgment_submit(
                task=task,
                item=item,
                user=user,
                unit=unit.key,
                value=value,
                comment=(request.POST.get("comment") or "")[:5000],
                seconds=_seconds(request.POST),
            )
        except DomainError as exc:
            error, status = exc.message, exc.status_code
        else:
            input_draft_delete(user=user, key=input_drafts.key(task_id=task.pk, unit=unit.key))
            return redirect("annotation:task_next", pk=task.pk)
    images = image_selectors.images_by_sha(
        user=user, shas=[r.get("sha256") for r in item.image_refs or []]
    )
    syntax = task.project.tag_syntax if task.project.tag_syntax in SYNTAXES else SYNTAXES[0]
    lookup = _image_lookup(item, images, task.project.benchmark.indexed_image_role)
    answers = selectors.unit_answers(task=task, unit=unit)
    sides = ("A", "B") if scale.key == PAIR else ("",)
    context = {
        "task": task,
        "project": task.project,
        "item": item,
        "view": item_view(item, images),
        "scale": scale,
        "answers": [
            {"side": side, **_answer_shown(answer, syntax=syntax, image=lookup)}
            for side, answer in zip(sides, answers, strict=False)
        ],
        "missing": len(answers) < len(sides),
        "assignment": assignment,
        "mine": mine,
        "judgments": judgments if reviewer else [],
        "can_adjudicate": reviewer,
        "error": error,
        "fields": _form_fields(scale, entered),
        "input_draft_key": input_drafts.key(task_id=task.pk, unit=unit.key),
    }
    return render(request, "review/human_eval_rate.html", context, status=status)


# =========================================================================== results


def _results_task(request: HttpRequest, pk: int) -> JudgmentTask:
    task = task_for_review(request, pk, WHY, action="manage_studies")
    if scale_of(task) is None:
        raise Http404("This task is not a human evaluation of answers.")
    return task


def _compare_context(request: HttpRequest, task: JudgmentTask) -> dict[str, Any]:
    runs = selectors.comparable_runs(user=request.user, task=task)
    context: dict[str, Any] = {"runs": runs, "run_id": None, "compare": None, "compare_error": ""}
    raw = (request.GET.get("run") or "").strip()
    if not raw:
        return context
    run = runs.filter(pk=int(raw)).first() if raw.isdigit() else None
    if run is None:
        context["compare_error"] = (
            f"{raw[:40]!r} is not a finished judge run of this project that this scale "
            "compares with; choose one from the list"
        )
        return context
    context["run_id"] = run.pk
    try:
        context["compare"] = selectors.judge_comparison(task=task, run=run)
    except DomainError as exc:
        context["compare_error"] = exc.message
    return context


@login_required
@require_GET
@htmx_page
def human_eval_results(request: HttpRequest, pk: int) -> HttpResponse:
    """Per model the mean of each scale with bootstrap intervals (Table 11 / Table 2's
    "Human"), or win rates and Bradley-Terry for pairs; agreement per scale; with ``?run=``
    Spearman's rho against that judge run (htmx target ``judge-compare``: that part alone)."""
    task = _results_task(request, pk)
    compare = _compare_context(request, task)
    status = 400 if compare["compare_error"] else 200
    htmx = getattr(request, "htmx", None)
    context: dict[str, Any] = {"task": task, "project": task.project, **compare}
    if htmx and not htmx.history_restore_request and htmx.target == "judge-compare":
        return render(
            request, "review/human_eval_results.html#judge-compare", context, status=status
        )
    context["results"] = selectors.human_eval_results(task=task)
    context["params"] = task.unit_params or {}
    return render(request, "review/human_eval_results.html", context, status=status)


def _csv(task: JudgmentTask) -> Iterator[str]:
    buffer = io.StringIO()
    fields = selectors.ratings_fields(task=task)
    csv.writer(buffer).writerow(fields)
    writer = csv.DictWriter(buffer, fieldnames=fields, quoting=csv.QUOTE_ALL)
    for row in selectors.ratings_rows(task=task):
        writer.writerow(csv_row({k: "" if v is None else v for k, v in row.items()}))
        yield buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
    yield buffer.getvalue()


def _jsonl(task: JudgmentTask) -> Iterator[bytes]:
    for row in selectors.ratings_rows(task=task):
        yield orjson.dumps(row) + b"\n"


@login_required
@require_GET
def human_eval_export(request: HttpRequest, pk: int, fmt: str) -> HttpResponseBase:
    """Every rating with its model(s), as CSV (safe to open in a spreadsheet) or JSONL."""
    task = _results_task(request, pk)
    if fmt == "csv":
        response = StreamingHttpResponse(_csv(task), content_type="text/csv")
    else:
        response = StreamingHttpResponse(_jsonl(task), content_type="application/x-ndjson")
    response["Content-Disposition"] = f'attachment; filename="human-eval-task{task.pk}.{fmt}"'
    return response
