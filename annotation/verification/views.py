"""Blind verification pages (see ``annotation.verification``): the blind solve screen (served
from the judge URL of a solve task), the verifier's audit checklist, the reviewers' audit
overview, the joint-review queue and page (served from the disagreement URLs of a solve task),
and the same over the API."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods
from django_htmx.http import HttpResponseClientRedirect
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.decorators import api_view
from rest_framework.request import Request
from rest_framework.response import Response

from annotation.judgment_tasks import selectors, services, solving
from annotation.judgment_tasks.models import JudgmentTask
from annotation.verification import checklist
from annotation.verification import selectors as verification_selectors
from annotation.verification import services as verification
from benchmark import permissions
from benchmark.exceptions import DomainError, Forbidden
from benchmark.formats.agentic_mme import split_prompt
from benchmark.images import selectors as benchmark_selectors
from benchmark.models import Item
from benchmark.presenters import checkpoint_view, checkpoint_visual, item_view
from benchmark.typing import HtmxHttpRequest, request_user

FORMAT_KEYS = ("format_instruction", "answer_format", "format")


def _go(request: HttpRequest, url: str) -> HttpResponse:
    return HttpResponseClientRedirect(url) if getattr(request, "htmx", False) else redirect(url)


def question_and_format(item: Item) -> tuple[str, str]:
    """The question and its answer-format instruction: from the item's constraints when it
    keeps one apart, else the trailing "Answer with ..." sentence of the Agentic-MME prompt
    (as the trajectory editor splits it)."""
    constraints = item.constraints or {}
    for key in FORMAT_KEYS:
        value = constraints.get(key)
        if isinstance(value, str) and value.strip():
            return item.query, value.strip()
    question, instruction = split_prompt(item.query)
    return question, instruction.strip()


def _blind_view(request: HttpRequest, task: JudgmentTask, item: Item) -> dict[str, Any]:
    """What a verifier may see before answering: the question, the item's input images and the
    format instruction. Built from those fields only, so nothing else can leak into the page."""
    view = item_view(
        item,
        benchmark_selectors.images_by_sha(
            user=request.user, shas=[r.get("sha256") for r in item.image_refs or []]
        ),
        "image_index",
    )
    question, instruction = question_and_format(item)
    return {"query": question, "images": view["images"], "format_instruction": instruction}


class SolveForm(forms.Form):
    answer = forms.CharField(
        max_length=500,
        widget=forms.TextInput(attrs={"autocomplete": "off", "autofocus": True}),
        error_messages={"required": "Write your answer before submitting."},
    )
    comment = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), required=False)
    seconds = forms.FloatField(required=False, min_value=0, widget=forms.HiddenInput)


def solve(request: HtmxHttpRequest, *, task: JudgmentTask, item_id: int) -> HttpResponse:
    """The judge page of a solve task (called from ``annotation.views.judge``): the verifier
    answers without the expected answer, the reference trajectory or others' answers."""
    item = selectors.task_item_get(user=request.user, task=task, pk=item_id)
    assignment = selectors.assignment_for(user=request.user, task=task, item=item)
    reviewer = permissions.can(user=request.user, project=task.project, action="adjudicate")
    if assignment is None and not reviewer:
        raise PermissionDenied("This item is not assigned to you. Ask for the next item.")
    mine = verification_selectors.my_judgment(user=request.user, task=task, item=item)
    form = SolveForm()
    status = 200
    if request.method == "POST" and assignment is not None and mine is None:
        form = SolveForm(request.POST)
        if form.is_valid():
            data = form.cleaned_data
            try:
                services.judgment_submit(
                    task=task,
                    item=item,
                    user=request_user(request),
                    value=data["answer"],
                    comment=data.get("comment") or "",
                    seconds=data.get("seconds") or 0,
                )
            except DomainError as exc:
                form.add_error(None, exc.message)
                status = exc.status_code if exc.status_code in (403, 409) else 200
            else:
                return _go(
                    request, reverse("annotation:verification_audit", args=[task.pk, item.pk])
                )
    context = {
        "task": task,
        "project": task.project,
        "item": item,
        "blind": _blind_view(request, task, item),
        "assignment": assignment,
        "mine": mine,
        "form": form,
        "can_adjudicate": reviewer,
    }
    return render(request, "annotation/verification_solve.html", context, status=status)


# --------------------------------------------------------------------------- the audit


def reference_units(item: Item) -> tuple[Any, list[dict[str, Any]]]:
    reference = solving.reference_trajectory(item)
    if reference is None:
        return None, []
    units = checklist.audit_steps(reference.checkpoints or [], reference.steps or [])
    for unit in units:
        unit["view"] = checkpoint_view(unit["raw"])
    return reference, units


def _artifact_shas(units: list[dict[str, Any]]) -> list[str]:
    shas = []
    for unit in units:
        stored = unit["raw"].get("reference_image")
        if isinstance(stored, dict) and isinstance(stored.get("sha256"), str):
            shas.append(stored["sha256"])
    return shas


def audited_item_context(
    request: HttpRequest,
    task: JudgmentTask,
    item: Item,
    reference: Any,
    units: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """What the audit and the joint review pages both show of an item: the item with its
    images and the reference's, the question, the golden answer, the reference and the
    answers given blind. Each of ``units`` (``reference_units``) gets its ``visual``: the
    crop its step asks about and its stored ground-truth artifact (``checkpoint_visual``),
    among the images the user may see."""
    units = units or []
    images = benchmark_selectors.images_by_sha(
        user=request.user,
        shas=[r.get("sha256") for r in item.image_refs or []]
        + [r.get("sha256") for r in (reference.image_refs if reference else []) or []]
        + _artifact_shas(units),
    )
    view = item_view(item, images, "image_index")
    for unit in units:
        unit["visual"] = checkpoint_visual(unit["raw"], view["images"], images)
    return {
        "task": task,
        "project": task.project,
        "item": item,
        "view": view,
        "question_and_format": question_and_format(item),
        "golden": solving.golden_answer(item),
        "reference": reference,
        "answers": verification_selectors.answers_for(user=request.user, task=task, item=item),
    }


def _posted_steps(post: Any, n: int) -> dict[str, dict[str, Any]]:
    """``s-<i>-step`` (the step key), ``s-<i>-<check>`` (present when ticked) and
    ``s-<i>-comment``; a check left unticked is not confirmed."""
    steps: dict[str, dict[str, Any]] = {}
    for i in range(n):
        key = post.get(f"s-{i}-step")
        if key is None:
            continue
        steps[key] = {
            "checks": {name: True for name in checklist.CHECKS if post.get(f"s-{i}-{name}")},
            "comment": post.get(f"s-{i}-comment", ""),
        }
    return steps


def _merge_audit(
    units: list[dict[str, Any]], audit: Any, posted: dict[str, dict[str, Any]] | None
) -> list[dict[str, Any]]:
    """The checklist rows with the verifier's current ticks (or what they just posted)."""
    saved = {e.get("step"): e for e in (audit.steps if audit else []) if isinstance(e, dict)}
    rows = []
    for i, unit in enumerate(units):
        entry = (posted or {}).get(unit["step"]) or saved.get(unit["step"]) or {}
        ticks = entry.get("checks") or {}
        rows.append(
            {
                **unit,
                "i": i,
                "items": [
                    {
                        "name": name,
                        "label": checklist.CHECKS[name],
                        "ticked": bool(ticks.get(name)),
                    }
                    for name in unit["checks"]
                ],
                "comment": entry.get("comment", ""),
            }
        )
    return rows


@login_required
@require_http_methods(["GET", "POST"])
def audit(request: HtmxHttpRequest, pk: int, item_id: int) -> HttpResponse:
    """After answering, the verifier sees the reference (answer, variants, trajectory) and
    ticks each step's checklist. Reviewers see every verifier's ticks per step."""
    task = selectors.task_get(user=request.user, pk=pk)
    if not solving.is_solve_task(task):
        raise Http404("This task has no audit checklist.")
    item = selectors.task_item_get(user=request.user, task=task, pk=item_id)
    reviewer = permissions.can(user=request.user, project=task.project, action="adjudicate")
    mine = verification_selectors.my_judgment(user=request.user, task=task, item=item)
    if mine is None and not reviewer:
        raise PermissionDenied("Answer the item blind first; then its reference opens for audit.")
    reference, units = reference_units(item)
    my_audit = verification_selectors.my_audit(user=request.user, task=task, item=item)
    error, status, posted = "", 200, None
    if request.method == "POST":
        if mine is None:
            raise PermissionDenied("Only the item's verifiers audit it.")
        posted = _posted_steps(request.POST, len(units))
        try:
            base = int(request.POST.get("base") or 0)
        except ValueError:
            base = -1
        try:
            verification.audit_save(
                task=task, item=item, user=request_user(request), steps=posted, base_number=base
            )
        except DomainError as exc:
            error = exc.message
            status = exc.status_code if exc.status_code in (403, 409) else 200
            if status == 409:
                my_audit = verification_selectors.my_audit(user=request.user, task=task, item=item)
        else:
            if request.POST.get("then") == "next":
                return _go(request, reverse("annotation:task_next", args=[task.pk]))
            return _go(
                request,
                reverse("annotation:verification_audit", args=[task.pk, item.pk]) + "?saved=1",
            )
    audits = verification_selectors.latest_audits(task=task, item=item) if reviewer else []
    context = {
        **audited_item_context(request, task, item, reference, units),
        "mine": mine,
        "my_audit": my_audit,
        "rows": _merge_audit(units, my_audit, posted if status != 409 else None),
        "table": verification_selectors.audit_table(units, audits) if reviewer else [],
        "audits": audits,
        "outcome": selectors.outcome_for(task=task, item=item) if reviewer else None,
        "can_adjudicate": reviewer,
        "error": error,
        "saved": request.GET.get("saved") == "1" and not error,
        "checks": checklist.CHECKS,
    }
    return render(request, "annotation/verification_audit.html", context, status=status)


@login_required
@require_GET
def audit_list(request: HttpRequest, pk: int) -> HttpResponse:
    """Reviewers: every item of the task that verifiers have audited, with the number of
    audits and of unconfirmed checks; the doubtful first."""
    task = selectors.task_get(user=request.user, pk=pk)
    if not solving.is_solve_task(task):
        raise Http404("This task has no audit checklist.")
    if not permissions.can(user=request.user, project=task.project, action="adjudicate"):
        raise PermissionDenied("Only reviewers and admins see the audits.")
    rows = verification_selectors.audit_overview(user=request.user, task=task)
    verification_selectors.audit_overview_visuals(user=request.user, rows=rows)
    return render(
        request,
        "annotation/verification_audits.html",
        {"task": task, "project": task.project, "rows": rows, "checks": checklist.CHECKS},
    )


# --------------------------------------------------------------------------- joint review


# --------------------------------------------------------------------------- API


def _api_task_item(request: Request, pk: int, item_id: int) -> tuple[JudgmentTask, Item]:
    task = selectors.task_get(user=request.user, pk=pk)
    if not solving.is_solve_task(task):
        raise Http404("This task is not a blind solve task.")
    return task, selectors.task_item_get(user=request.user, task=task, pk=item_id)


@extend_schema(
    responses={200: OpenApiTypes.OBJECT},
    description="The blind view of an item for its verifier: question, input images and format "
    "instruction. After you have answered, also your answer and whether it matches.",
)
@api_view(["GET"])
def api_blind_item(request: Request, pk: int, item_id: int) -> Response:
    task, item = _api_task_item(request, pk, item_id)
    reviewer = permissions.can(user=request.user, project=task.project, action="adjudicate")
    assignment = selectors.assignment_for(user=request.user, task=task, item=item)
    if assignment is None and not reviewer:
        raise Forbidden("this item is not assigned to you; ask for the next item")
    question, instruction = question_and_format(item)
    data: dict[str, Any] = {
        "task": task.pk,
        "item": item.pk,
        "external_id": item.external_id,
        "question": question,
        "format_instruction": instruction,
        "images": [
            {
                "sha256": ref.get("sha256"),
                "url": reverse("benchmark:image", args=[ref["sha256"]])
                if ref.get("sha256")
                else None,
                "role": ref.get("role", ""),
            }
            for ref in item.image_refs or []
        ],
    }
    mine = verification_selectors.my_judgment(user=request.user, task=task, item=item)
    if mine is not None:
        data["your_answer"] = mine.value
        outcome = selectors.outcome_for(task=task, item=item)
        golden = solving.decided_against(outcome, item)
        data["matches"] = solving.answer_matches(golden, mine.value)
    return Response(data)


class AuditStepIn(serializers.Serializer):
    checks = serializers.DictField(child=serializers.BooleanField())
    comment = serializers.CharField(required=False, allow_blank=True)


class AuditIn(serializers.Serializer):
    base = serializers.IntegerField(min_value=0, required=False, default=0)
    steps = serializers.DictField(child=AuditStepIn())


@extend_schema(
    methods=["get"],
    responses={200: OpenApiTypes.OBJECT},
    description="Your current audit (verifiers) or everyone's (reviewers).",
)
@extend_schema(methods=["post"], request=AuditIn, responses={201: OpenApiTypes.OBJECT})
@api_view(["GET", "POST"])
def api_audit(request: Request, pk: int, item_id: int) -> Response:
    task, item = _api_task_item(request, pk, item_id)
    reviewer = permissions.can(user=request.user, project=task.project, action="adjudicate")
    mine = verification_selectors.my_judgment(user=request.user, task=task, item=item)
    if mine is None and not reviewer:
        raise Forbidden("answer the item blind before you audit it")
    if request.method == "POST":
        data = AuditIn(data=request.data)
        data.is_valid(raise_exception=True)
        audit = verification.audit_save(
            task=task,
            item=item,
            user=request_user(request),
            steps=data.validated_data["steps"],
            base_number=data.validated_data.get("base", 0),
        )
        return Response(_audit_json(audit), status=201)
    audits = (
        verification_selectors.latest_audits(task=task, item=item)
        if reviewer
        else [
            a
            for a in [verification_selectors.my_audit(user=request.user, task=task, item=item)]
            if a
        ]
    )
    return Response({"audits": [_audit_json(a) for a in audits]})


def _audit_json(audit: Any) -> dict[str, Any]:
    return {
        "verifier": audit.user.get_username(),
        "number": audit.number,
        "steps": audit.steps,
        "created_at": audit.created_at.isoformat(),
    }
