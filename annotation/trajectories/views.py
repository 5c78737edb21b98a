"""The reference-trajectory editor (Agentic-MME): one page per item, served whole or as its
``editor`` fragment for htmx.

GET shows the stored trajectory. POST carries the whole working draft plus ``op``: moving,
adding and removing steps (``up:<i>``, ``add:V``, ...) re-render the draft unsaved; ``save``
calls the save service, which adds a version. A draft with mistakes re-renders as typed with
every message next to its field (200 for htmx, 400 otherwise); a save made on an outdated
version answers 409 with the other person's version shown and the annotator's draft kept
(the form says ``data-swap-errors="400 409"``, and app.js swaps those into the editor).

The history: every version with who, when and what changed in words; a version with its
field-by-field and step-by-step difference from the one before; "revert" saves a version's
document again as a new version, through the same save service.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django.views.decorators.vary import vary_on_headers

from annotation.trajectories import document as td
from annotation.trajectories import input_drafts, selectors
from annotation.trajectories.forms import editor_post
from annotation.trajectories.services import (
    SaveResult,
    TrajectoryInvalid,
    prefill_recipes,
    task_document,
    trajectory_revert,
    trajectory_save,
)
from benchmark import limits
from benchmark.exceptions import DomainError, ValidationFailed
from benchmark.input_drafts.services import input_draft_delete
from benchmark.models import Item, Project
from benchmark.typing import HtmxHttpRequest
from benchmark.versions import StaleVersion

TEMPLATE = "annotation/trajectory_edit.html"
OP_LABELS = {"V": "Visual (V)", "S": "Search (S)"}


def _errors_by_place(errors: list[td.FieldError]) -> dict[str, Any]:
    task: dict[str, list[str]] = {}
    steps: dict[int, dict[str, list[str]]] = {}
    orderings: dict[int, dict[str, list[str]]] = {}
    for e in errors:
        if e.step is not None:
            steps.setdefault(e.step, {}).setdefault(e.field, []).append(e.message)
        elif e.ordering is not None:
            orderings.setdefault(e.ordering, {}).setdefault(e.field, []).append(e.message)
        else:
            task.setdefault(e.field, []).append(e.message)
    return {"task": task, "steps": steps, "orderings": orderings}


def _recipe(text: str) -> dict[str, Any] | None:
    try:
        value = limits.json_loads(text) if text and text.strip() else None
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _context(
    request: HttpRequest,
    project: Project,
    item: Item,
    document: dict[str, Any],
    draft: td.Draft,
    number: int | None,
    fingerprint: str,
    *,
    errors: list[td.FieldError] | None = None,
    conflict: StaleVersion | None = None,
    saved: int | None = None,
    unchanged: bool = False,
    note: str = "",
) -> dict[str, Any]:
    prefill = prefill_recipes(item=item, document=document)
    recipes = [_recipe(s.recipe) or prefill.get(s.id) for s in draft.steps]
    wanted = [s.source for s in draft.steps] + [(r or {}).get("source_sha256", "") for r in recipes]
    choices = selectors.editor_choices(
        user=request.user, project=project, item=item, extra_shas=[w for w in wanted if w]
    )
    # Warnings and live checks on the working draft (pure; no queries).
    applied = td.apply_draft(
        document, draft, tools=choices.tools, domains=choices.domains, prefill=prefill
    )
    shown_errors = errors if errors is not None else []
    places = _errors_by_place(shown_errors)
    steps = _step_rows(document, draft, recipes, choices, places["steps"])
    orderings = [
        {"j": j, "d": o, "errors": places["orderings"].get(j, {})}
        for j, o in enumerate(draft.orderings)
    ]
    # An imported value outside the project's choices is offered too, so it shows as chosen.
    tools = _with(list(choices.tools), [step.tool for step in draft.steps])
    domains = _with(list(choices.domains), [draft.domain])
    return {
        "project": project,
        "item": item,
        "draft": draft,
        "version": number if number is not None else "",
        "fingerprint": fingerprint,
        "note": note,
        "steps": steps,
        "orderings": orderings,
        "errors": shown_errors,
        "task_errors": places["task"],
        "warnings": td.level_warnings(applied.document),
        "tools": tools,
        "domains": domains,
        "images": list(choices.images.values()),
        "item_shas": choices.item_shas,
        "match_types": td.MATCH_TYPES,
        "levels": td.LEVELS,
        "axes": OP_LABELS,
        "conflict": td.draft_from_document(conflict.current.document)
        if conflict is not None
        else None,
        "conflict_error": conflict,
        "saved": saved,
        "unchanged": unchanged,
        "edit_url": reverse("annotation:trajectory_edit", args=[project.pk, item.pk]),
        "versions_url": reverse("annotation:trajectory_versions", args=[project.pk, item.pk]),
        "item_url": reverse("benchmark:item_detail", args=[project.pk, item.pk]),
        "export_url": reverse("benchmark:project_export", args=[project.pk]),
        "images_url": _images_url(project),
        "input_draft_key": input_drafts.key(project_id=project.pk, item_id=item.pk),
    }


def _with(options: list[str], values: list[str]) -> list[str]:
    for value in values:
        if value and value not in options:
            options.append(value)
    return options


def _step_rows(
    document: dict[str, Any],
    draft: td.Draft,
    recipes: list[dict[str, Any] | None],
    choices: selectors.EditorChoices,
    errors: dict[int, dict[str, list[str]]],
) -> list[dict[str, Any]]:
    """What the editor shows of each step: its draft, messages, source image and recipe."""
    # A new step starts from the item's first image, else the latest upload.
    default_sha = (choices.item_shas or list(choices.images) or [""])[0]
    steps = []
    for i, (step, recipe) in enumerate(zip(draft.steps, recipes, strict=True)):
        sha = step.source or (recipe or {}).get("source_sha256") or default_sha
        image = choices.images.get(sha)
        if image is not None and recipe and recipe.get("source_sha256") != image.sha256:
            recipe = None
        steps.append(
            {
                "i": i,
                "number": i + 1,
                "prefix": f"steps-{i}-",
                "d": step,
                "errors": errors.get(i, {}),
                "image": image,
                "recipe": recipe,
                "stored_image": _stored_image(document, step.id),
                "first": i == 0,
                "last": i == len(draft.steps) - 1,
            }
        )
    return steps


def _images_url(project: Project) -> str:
    return reverse("benchmark:images", args=[project.pk])


def _stored_image(document: dict[str, Any], step_id: str) -> dict[str, Any] | None:
    for cp in (document.get("process_evaluation") or {}).get("checkpoints") or []:
        if isinstance(cp, dict) and str(cp.get("id")) == step_id:
            image = cp.get("reference_image")
            return image if isinstance(image, dict) else None
    return None


def _render(request: HttpRequest, context: dict[str, Any], status: int = 200) -> HttpResponse:
    htmx = getattr(request, "htmx", None)
    template = TEMPLATE
    if htmx and not htmx.history_restore_request:
        template = f"{TEMPLATE}#editor"
    return render(request, template, context, status=status)


def _objects(
    request: HttpRequest, project_id: int, item_id: int, page: str
) -> tuple[Project, Item]:
    project_obj = selectors.trajectory_project_get(user=request.user, pk=project_id)
    item_obj = selectors.trajectory_item_get(
        user=request.user, project=project_obj, pk=item_id, page=page
    )
    return project_obj, item_obj


@login_required
@vary_on_headers("HX-Request")
@require_http_methods(["GET", "POST"])
def trajectory_edit(request: HtmxHttpRequest, project_id: int, item_id: int) -> HttpResponse:
    project_obj, item_obj = _objects(request, project_id, item_id, "The trajectory editor")
    reference = selectors.reference_of(item_obj)
    document = task_document(item=item_obj, reference=reference)
    if request.method == "GET":
        state = selectors.version_state(item=item_obj, document=document)
        draft = td.draft_from_document(document)
        saved = request.GET.get("saved", "")
        context = _context(
            request, project_obj, item_obj, document, draft, state.number, state.fingerprint,
            saved=int(saved) if saved.isdigit() else None,
        )  # fmt: skip
        return _render(request, context)

    try:
        post = editor_post(request.POST)
    except ValidationFailed as exc:
        return HttpResponse(exc.message, status=400, content_type="text/plain; charset=utf-8")
    draft, op, note = post.draft, post.op, post.note
    base_number, base_fingerprint = post.base_number, post.base_fingerprint
    if op != "save":
        draft = td.draft_edit(draft, op)
        context = _context(
            request, project_obj, item_obj, document, draft, base_number, base_fingerprint,
            note=note,
        )  # fmt: skip
        return _render(request, context)

    try:
        result = _save(request, project_obj, item_obj, draft, base_number, base_fingerprint, note)
    except TrajectoryInvalid as exc:
        context = _context(
            request, project_obj, item_obj, document, draft, base_number, base_fingerprint,
            errors=exc.errors, note=note,
        )  # fmt: skip
        return _render(request, context, status=200 if request.htmx else 400)
    except StaleVersion as exc:
        # Saving from here is a deliberate overwrite: the form now carries their version.
        context = _context(
            request, project_obj, item_obj, document, draft, exc.current.number, exc.current.fingerprint,
            conflict=exc, note=note,
        )  # fmt: skip
        return _render(request, context, status=409)
    except DomainError as exc:
        if exc.status_code == 403:
            raise PermissionDenied(exc.message) from None
        raise
    input_draft_delete(
        user=request.user, key=input_drafts.key(project_id=project_id, item_id=item_id)
    )
    if not request.htmx:
        url = reverse("annotation:trajectory_edit", args=[project_id, item_id])
        return redirect(f"{url}?saved={result.number}" if result.changed else url)
    saved_item = selectors.trajectory_item_get(user=request.user, project=project_obj, pk=item_id)
    saved_document = result.document
    context = _context(
        request,
        project_obj,
        saved_item,
        saved_document,
        td.draft_from_document(saved_document),
        result.number,
        result.fingerprint,
        saved=result.number if result.changed else None,
        unchanged=not result.changed,
    )
    context["input_draft_saved"] = True  # the page's drafts.js starts afresh
    return _render(request, context)


def _save(
    request: HtmxHttpRequest,
    project: Project,
    item: Item,
    draft: td.Draft,
    base_number: int | None,
    base_fingerprint: str,
    note: str,
) -> SaveResult:
    choices = selectors.editor_choices(user=request.user, project=project, item=item, extra_shas=[])
    return trajectory_save(
        user=request.user,
        project=project,
        item=item,
        draft=draft,
        base_number=base_number,
        base_fingerprint=base_fingerprint,
        tools=choices.tools,
        domains=choices.domains,
        note=note,
    )


# --------------------------------------------------------------------------- history

HISTORY_PAGE = "The trajectory history"


def _history_urls(project: Project, item: Item) -> dict[str, str]:
    return {
        "edit_url": reverse("annotation:trajectory_edit", args=[project.pk, item.pk]),
        "item_url": reverse("benchmark:item_detail", args=[project.pk, item.pk]),
        "versions_url": reverse("annotation:trajectory_versions", args=[project.pk, item.pk]),
    }


@login_required
@require_GET
def trajectory_versions(request: HttpRequest, project_id: int, item_id: int) -> HttpResponse:
    """Every version of the item's reference trajectory, newest first, with what changed."""
    project_obj, item_obj = _objects(request, project_id, item_id, HISTORY_PAGE)
    document = task_document(item=item_obj, reference=selectors.reference_of(item_obj))
    rows = selectors.version_list(user=request.user, item=item_obj, document=document)
    return render(
        request,
        "annotation/trajectory_versions.html",
        {
            "project": project_obj,
            "item": item_obj,
            "rows": rows,
            **_history_urls(project_obj, item_obj),
        },
    )


@login_required
@require_GET
def trajectory_version(
    request: HttpRequest, project_id: int, item_id: int, number: int
) -> HttpResponse:
    project_obj, item_obj = _objects(request, project_id, item_id, HISTORY_PAGE)
    return _version_page(request, project_obj, item_obj, number)


def _version_page(
    request: HttpRequest,
    project: Project,
    item: Item,
    number: int,
    *,
    errors: list[str] | None = None,
    conflict: bool = False,
    status: int = 200,
) -> HttpResponse:
    document = task_document(item=item, reference=selectors.reference_of(item))
    page = selectors.version_get(user=request.user, item=item, number=number, document=document)
    version = page.version
    return render(
        request,
        "annotation/trajectory_version.html",
        {
            "project": project,
            "item": item,
            "version": version,
            "previous": page.previous,
            "diff": page.diff,
            "unchanged_steps": [s for s in page.diff.steps if s.status == "unchanged"],
            "current": page.state.number,
            "is_current": version.number == page.state.number,
            "can_revert": version.recorded and version.number != page.state.number,
            "next_number": version.number + 1 if version.number < page.state.number else None,
            "errors": errors or [],
            "conflict": conflict,
            **_history_urls(project, item),
        },
        status=status,
    )


@login_required
@require_POST
def trajectory_version_revert(
    request: HtmxHttpRequest, project_id: int, item_id: int, number: int
) -> HttpResponse:
    """Save version ``number``'s document again as a new version (the base the page was opened
    on is checked: a revert on an outdated page answers 409)."""
    project_obj, item_obj = _objects(request, project_id, item_id, HISTORY_PAGE)
    base = request.POST.get("base", "").strip()
    choices = selectors.editor_choices(
        user=request.user, project=project_obj, item=item_obj, extra_shas=[]
    )
    try:
        result = trajectory_revert(
            user=request.user,
            project=project_obj,
            item=item_obj,
            number=number,
            base_number=int(base) if base.isdigit() else None,
            tools=choices.tools,
            domains=choices.domains,
            note=request.POST.get("note", ""),
        )
    except TrajectoryInvalid as exc:
        messages = [f"{e.where.capitalize()} · {e.field}: {e.message}" for e in exc.errors]
        return _version_page(request, project_obj, item_obj, number, errors=messages, status=400)
    except StaleVersion as exc:
        return _version_page(
            request, project_obj, item_obj, number, errors=[exc.message], conflict=True,
            status=409,
        )  # fmt: skip
    except DomainError as exc:
        if exc.status_code == 403:
            raise PermissionDenied(exc.message) from None
        if exc.status_code == 404:
            raise Http404(exc.message) from None
        return _version_page(
            request, project_obj, item_obj, number, errors=[exc.message], status=400
        )
    url = reverse("annotation:trajectory_version", args=[project_id, item_id, result.number])
    return redirect(url)
