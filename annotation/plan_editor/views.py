"""The m&m's plan editor: one page per item and plan (``?key=`` for an alternative).

The plan's JSON form is the page's state: a textarea (``steps``) the page's script keeps in
sync with the step list it draws (add, remove, reorder, choose a tool, fill its arguments with
``<node-N>.key`` references offered from earlier steps' outputs). Without the script the
textarea is shown and the JSON is edited directly; saving works the same.

As the plan changes, htmx posts it to ``plan_findings`` (debounced), which answers the
verifier's findings (placed next to their step and argument by the script) and the code form
generated from the JSON form (an out-of-band swap). Save posts the form: a save made on an
outdated version answers 409 with the other person's version shown and the user's plan kept
in the editor; bad input answers 400 with the message naming the field.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django.views.decorators.vary import vary_on_headers

from annotation.plan_editor import input_drafts, selectors, services
from annotation.plan_editor.diff import diff_summary, step_diff
from benchmark import limits, permissions
from benchmark.audio import selectors as audio_selectors
from benchmark.exceptions import DomainError, ValidationFailed
from benchmark.input_drafts.services import input_draft_delete
from benchmark.models import Item, Project
from benchmark.plans.codegen import plan_to_code
from benchmark.plans.parse import PlanFormatError
from benchmark.presenters import plan_input_files
from benchmark.typing import HtmxHttpRequest, request_user
from benchmark.versions import StaleVersion

TEMPLATE = "annotation/plan_edit.html"
MAX_JSON = 200_000


def _objects(request: HttpRequest, project_id: int, item_id: int) -> tuple[Project, Item]:
    project = selectors.plan_project_get(user=request.user, pk=project_id)
    item = selectors.plan_item_get(user=request.user, project=project, pk=item_id)
    return project, item


def _key(request: HttpRequest) -> str:
    data = request.POST if request.method == "POST" else request.GET
    return services.canonical_key(str(data.get("key", "")))


def _keyed(url: str, key: str, **extra: Any) -> str:
    query = {"key": key} if key != services.GOLD_KEY else {}
    query.update({k: v for k, v in extra.items() if v is not None})
    return f"{url}?{urlencode(query)}" if query else url


def _steps_from_post(request: HttpRequest) -> Any:
    text = str(request.POST.get("steps", ""))
    if len(text) > MAX_JSON:
        raise ValidationFailed(f"steps: longer than {MAX_JSON} characters")
    if not text.strip():
        raise ValidationFailed("steps: the plan is empty (a JSON list of steps)")
    try:
        return limits.json_loads(text)
    except ValueError as exc:
        raise ValidationFailed(f"steps: not valid JSON ({exc})") from None


def _base_from_post(request: HttpRequest) -> int | None:
    text = str(request.POST.get("base_number", "")).strip()
    return int(text) if text.isdigit() and len(text) < 10 else None


def _code(steps: Any) -> tuple[str, str]:
    """The code form of ``steps``, or why there is none."""
    try:
        return plan_to_code(steps), ""
    except PlanFormatError as exc:
        return "", str(exc)


def _findings_context(tools: selectors.EditorTools, steps: Any) -> dict[str, Any]:
    findings = selectors.plan_findings(tools=tools, steps=steps)
    code, code_error = _code(steps) if isinstance(steps, list) and steps else ("", "")
    return {"findings": findings, "code": code, "code_error": code_error}


def _context(
    request: HttpRequest,
    project: Project,
    item: Item,
    key: str,
    *,
    steps: Any = None,
    steps_json: str | None = None,
    base_number: int | None = None,
    error: str = "",
    conflict: StaleVersion | None = None,
    note: str = "",
) -> dict[str, Any]:
    plan = selectors.plan_of(item, key)
    stored, number = selectors.editor_state(user=request.user, item=item, key=key)
    if steps is None:
        steps = stored
    if base_number is None and conflict is None:
        base_number = number
    tools = selectors.editor_tools(user=request.user, project=project)
    refusal = None
    if not permissions.can(user=request.user, project=project, action="edit"):
        refusal = "Your role in this project does not allow editing plans."
    else:
        refusal = permissions.state_refusal(user=request.user, item=item, action="edit")
    edit_url = reverse("annotation:plan_edit", args=[project.pk, item.pk])
    conflict_steps = conflict.current.step_list if conflict is not None else None
    saved = str(request.GET.get("saved", ""))
    return {
        "project": project,
        "item": item,
        "key": key,
        "plan": plan,
        "is_alternative": bool(plan and plan.is_alternative),
        "plans": [
            {"plan": p, "url": _keyed(edit_url, p.key), "current": p.key == key}
            for p in getattr(item, "editable_plans", [])
        ],
        "new_gold": plan is None,
        "steps_json": steps_json
        if steps_json is not None
        else json.dumps(steps, ensure_ascii=False, indent=2),
        "base_number": base_number if base_number is not None else "",
        "tools": tools.tools,
        "input_files": plan_input_files(getattr(item, "editable_plans", [])),
        "audio": audio_selectors.item_audio(user=request.user, item=item)
        if item.audio_refs
        else [],
        "error": error,
        "conflict": conflict,
        "conflict_steps": conflict_steps,
        "conflict_summary": diff_summary(conflict_steps, steps) if conflict is not None else "",
        "saved": int(saved) if saved.isdigit() else None,
        "note": note,
        "refusal": refusal,
        "edit_url": edit_url,
        "findings_url": reverse("annotation:plan_findings", args=[project.pk, item.pk]),
        "versions_url": _keyed(
            reverse("annotation:plan_versions", args=[project.pk, item.pk]), key
        ),
        "alternative_add_url": reverse(
            "annotation:plan_alternative_add", args=[project.pk, item.pk]
        ),
        "alternative_remove_url": reverse(
            "annotation:plan_alternative_remove", args=[project.pk, item.pk]
        ),
        "item_url": reverse("benchmark:item_detail", args=[project.pk, item.pk]),
        "input_draft_key": input_drafts.key(project_id=project.pk, item_id=item.pk, plan_key=key),
        **_findings_context(tools, steps),
    }


@login_required
@vary_on_headers("HX-Request")
@require_http_methods(["GET", "POST"])
def plan_edit(request: HtmxHttpRequest, project_id: int, item_id: int) -> HttpResponse:
    """GET: the editor on the plan ``?key=`` (the ground truth by default). POST: save."""
    project, item = _objects(request, project_id, item_id)
    key = _key(request)
    if request.method == "GET":
        return render(request, TEMPLATE, _context(request, project, item, key))

    steps_json = str(request.POST.get("steps", ""))
    note = str(request.POST.get("note", ""))
    base_number = _base_from_post(request)
    plan = selectors.plan_of(item, key)
    try:
        steps = _steps_from_post(request)
        services.plan_save(
            item=item,
            user=request_user(request),
            steps=steps,
            key=key,
            is_alternative=bool(plan and plan.is_alternative),
            base_number=base_number,
            note=note,
        )
    except StaleVersion as exc:
        # Saving from here is a deliberate overwrite: the form now carries their number.
        context = _context(
            request, project, item, key, steps=_loads(steps_json), steps_json=steps_json,
            base_number=exc.current.number, conflict=exc, note=note,
        )  # fmt: skip
        return render(request, TEMPLATE, context, status=409)
    except DomainError as exc:
        if exc.status_code == 403:
            raise PermissionDenied(exc.message) from None
        context = _context(
            request, project, item, key, steps=_loads(steps_json), steps_json=steps_json,
            base_number=base_number, error=exc.message, note=note,
        )  # fmt: skip
        return render(request, TEMPLATE, context, status=exc.status_code)
    input_draft_delete(
        user=request.user,
        key=input_drafts.key(project_id=project.pk, item_id=item.pk, plan_key=key),
    )
    number = selectors.current_number(user=request.user, item=item, key=key)
    return redirect(
        _keyed(reverse("annotation:plan_edit", args=[project_id, item_id]), key, saved=number)
    )


def _loads(text: str) -> Any:
    try:
        return limits.json_loads(text)
    except ValueError:
        return []


@login_required
@require_POST
def plan_findings(request: HtmxHttpRequest, project_id: int, item_id: int) -> HttpResponse:
    """The verifier's findings on the posted plan (``steps``, JSON) and its code form: the
    editor's live check, answered as the ``findings`` fragment (and the code panel out of
    band). Bad JSON is a finding, not an error: the user is still typing."""
    project, item = _objects(request, project_id, item_id)
    permissions.require(user=request.user, project=project, action="view")
    tools = selectors.editor_tools(user=request.user, project=project)
    try:
        context = _findings_context(tools, _steps_from_post(request))
    except ValidationFailed as exc:
        finding = selectors.PlanFinding("parse_error", exc.message.removeprefix("steps: "), None)
        context = {"findings": [finding], "code": "", "code_error": "no code form yet"}
    return render(
        request, "annotation/plan_findings.html", {"project": project, "item": item, **context}
    )


# --------------------------------------------------------------------------- alternatives


@login_required
@require_POST
def plan_alternative_add(request: HtmxHttpRequest, project_id: int, item_id: int) -> HttpResponse:
    project, item = _objects(request, project_id, item_id)
    url = reverse("annotation:plan_edit", args=[project_id, item_id])
    try:
        plan = services.plan_alternative_add(item=item, user=request_user(request))
    except DomainError as exc:
        if exc.status_code == 403:
            raise PermissionDenied(exc.message) from None
        context = _context(request, project, item, services.GOLD_KEY, error=exc.message)
        return render(request, TEMPLATE, context, status=exc.status_code)
    return redirect(_keyed(url, plan.key))


@login_required
@require_POST
def plan_alternative_remove(
    request: HtmxHttpRequest, project_id: int, item_id: int
) -> HttpResponse:
    project, item = _objects(request, project_id, item_id)
    key = _key(request)
    plan = selectors.plan_of(item, key)
    if plan is None:
        raise Http404("No such plan.")
    try:
        services.plan_alternative_remove(plan=plan, user=request_user(request))
    except DomainError as exc:
        if exc.status_code == 403:
            raise PermissionDenied(exc.message) from None
        context = _context(request, project, item, key, error=exc.message)
        return render(request, TEMPLATE, context, status=exc.status_code)
    return redirect(reverse("annotation:plan_edit", args=[project_id, item_id]))


# --------------------------------------------------------------------------- history


def _history_urls(project: Project, item: Item, key: str) -> dict[str, str]:
    return {
        "edit_url": _keyed(reverse("annotation:plan_edit", args=[project.pk, item.pk]), key),
        "item_url": reverse("benchmark:item_detail", args=[project.pk, item.pk]),
        "versions_url": _keyed(
            reverse("annotation:plan_versions", args=[project.pk, item.pk]), key
        ),
    }


@login_required
@require_GET
def plan_versions(request: HttpRequest, project_id: int, item_id: int) -> HttpResponse:
    """Every version of the plan, newest first, with who, when and what changed."""
    project, item = _objects(request, project_id, item_id)
    key = _key(request)
    versions = selectors.version_list(user=request.user, item=item, key=key)
    rows = []
    for n, version in enumerate(versions):
        older = versions[n + 1] if n + 1 < len(versions) else None
        rows.append(
            {
                "v": version,
                "url": _keyed(
                    reverse("annotation:plan_version", args=[project.pk, item.pk, version.number]),
                    key,
                ),
                "summary": diff_summary(older.step_list, version.step_list)
                if older is not None
                else f"{len(version.step_list)} step(s)",
            }
        )
    return render(
        request,
        "annotation/plan_versions.html",
        {"project": project, "item": item, "key": key, "rows": rows,
         **_history_urls(project, item, key)},
    )  # fmt: skip


@login_required
@require_GET
def plan_version(request: HttpRequest, project_id: int, item_id: int, number: int) -> HttpResponse:
    project, item = _objects(request, project_id, item_id)
    return _version_page(request, project, item, _key(request), number)


def _version_page(
    request: HttpRequest,
    project: Project,
    item: Item,
    key: str,
    number: int,
    *,
    error: str = "",
    status: int = 200,
) -> HttpResponse:
    version, previous = selectors.version_get(user=request.user, item=item, key=key, number=number)
    current = selectors.current_number(user=request.user, item=item, key=key)
    plan = next((p for p in getattr(item, "editable_plans", []) if p.key == key), None)
    return render(
        request,
        "annotation/plan_version.html",
        {
            "project": project,
            "item": item,
            "key": key,
            "version": version,
            "previous": previous,
            "changes": step_diff(previous.step_list if previous else [], version.step_list),
            "current": current,
            "can_revert": plan is not None and version.recorded and version.number != current,
            "revert_url": reverse(
                "annotation:plan_version_revert", args=[project.pk, item.pk, version.number]
            ),
            "error": error,
            **_history_urls(project, item, key),
        },
        status=status,
    )


@login_required
@require_POST
def plan_version_revert(
    request: HtmxHttpRequest, project_id: int, item_id: int, number: int
) -> HttpResponse:
    """Save version ``number``'s steps again as a new version (made on the posted ``base``:
    a revert from an outdated page answers 409)."""
    project, item = _objects(request, project_id, item_id)
    key = _key(request)
    plan = selectors.plan_of(item, key)
    if plan is None:
        raise Http404("No such plan.")
    base = str(request.POST.get("base", "")).strip()
    try:
        services.plan_revert(
            plan=plan,
            user=request_user(request),
            number=number,
            base_number=int(base) if base.isdigit() and len(base) < 10 else None,
            note=str(request.POST.get("note", "")),
        )
    except DomainError as exc:
        if exc.status_code == 403:
            raise PermissionDenied(exc.message) from None
        if exc.status_code == 404:
            raise Http404(exc.message) from None
        return _version_page(
            request, project, item, key, number, error=exc.message, status=exc.status_code
        )
    latest = selectors.current_number(user=request.user, item=item, key=key) or 1
    url = reverse("annotation:plan_version", args=[project_id, item_id, latest])
    return redirect(_keyed(url, key))
