"""Web pages. Thin: each view looks things up through a selector (scoped to the user, so another
project's object answers 404), checks the role for actions, calls one service for writes, and
renders the full page or, for htmx requests, only the fragment that was asked for."""

from __future__ import annotations

import json
import re
from typing import Any

import orjson
from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db.models.fields.files import FieldFile
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods
from django.views.decorators.vary import vary_on_headers
from django_htmx.http import HTMX_STOP_POLLING

from benchmark import permissions, selectors, services
from benchmark.exceptions import DomainError
from benchmark.forms import ExportForm, ImportForm, ItemFilterForm
from benchmark.models import Image, Item, ItemStatus, Origin, Plan, Project, Trajectory

PAGE_SIZE = 50

htmx_page = vary_on_headers("HX-Request", "HX-Target")


def _render(
    request: HttpRequest,
    template: str,
    context: dict[str, Any],
    *,
    fragments: dict[str, str] | None = None,
) -> HttpResponse:
    """Render the whole page, or for an htmx request the partial its target asks for:
    ``fragments`` maps a target id (or an id prefix ending in ``*``) to a partial name, and any
    other target gets the page's ``content`` partial. History restores get the full page."""
    htmx = getattr(request, "htmx", None)
    if htmx and not htmx.history_restore_request:
        target = htmx.target or ""
        fragment = "content"
        for key, name in (fragments or {}).items():
            if target == key or (key.endswith("*") and target.startswith(key[:-1])):
                fragment = name
                break
        template = f"{template}#{fragment}"
    return render(request, template, context)


def _require(request: HttpRequest, project: Project, action: str) -> None:
    if not permissions.can(user=request.user, project=project, action=action):
        raise PermissionDenied(f"Your role in this project does not allow {action}.")


def _project_context(request: HttpRequest, project: Project) -> dict[str, Any]:
    return {
        "project": project,
        "role": permissions.role_in(user=request.user, project=project),
        "actions": permissions.allowed_actions(user=request.user, project=project),
    }


# --------------------------------------------------------------------------- projects


@login_required
@require_GET
@htmx_page
def project_list(request: HttpRequest) -> HttpResponse:
    projects = list(selectors.project_list(user=request.user))
    for project in projects:
        project.status_counts = [  # type: ignore[attr-defined]
            (value, label, getattr(project, f"n_{value}")) for value, label in ItemStatus.choices
        ]
    return _render(request, "benchmark/project_list.html", {"projects": projects})


@login_required
@require_GET
@htmx_page
def project_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """The project page: status counts and the filterable, paginated item list."""
    project = selectors.project_get(user=request.user, pk=pk)
    facets = selectors.item_facets(user=request.user, project=project)
    bound = {k: v for k, v in request.GET.items() if k != "page"}
    form = ItemFilterForm(bound or None, facets=facets)
    if form.is_bound:
        form.is_valid()
    filters = form.filters()
    items = selectors.item_list_rows(user=request.user, project=project, filters=filters)
    page = Paginator(items, PAGE_SIZE).get_page(request.GET.get("page"))
    counts = selectors.item_status_counts(user=request.user, project=project)
    export_form = ExportForm()
    context = {
        **_project_context(request, project),
        "form": form,
        "filters": filters,
        "page": page,
        "counts": counts,
        "status_counts": [(value, label, counts[value]) for value, label in ItemStatus.choices],
        "export_form": export_form,
    }
    return _render(
        request, "benchmark/project_detail.html", context, fragments={"item-list": "item-list"}
    )


# --------------------------------------------------------------------------- items

TAG_RE = re.compile(r"<(tool|imgen)>(.*?)(</\1>|$)", re.S)
TAG_NAME_RE = re.compile(r"""["']?(?:tool_name|source)["']?\s*:\s*["']([^"'\n]{1,60})["']""")
NODE_RE = re.compile(r"<node-\d+>\.\w+")


def tag_segments(text: str) -> list[dict[str, Any]]:
    """Split answer text into plain runs and tool tags (``<tool>…</tool>``,
    ``<imgen>…</imgen>``; an unclosed tag runs to the end). Templates escape every run."""
    out: list[dict[str, Any]] = []
    pos = 0
    for match in TAG_RE.finditer(text or ""):
        if match.start() > pos:
            out.append({"kind": "", "text": text[pos : match.start()]})
        name = TAG_NAME_RE.search(match.group(2))
        out.append(
            {
                "kind": match.group(1),
                "text": match.group(0),
                "name": name.group(1) if name else "",
                "closed": bool(match.group(3)),
            }
        )
        pos = match.end()
    if pos < len(text or ""):
        out.append({"kind": "", "text": text[pos:]})
    return out


def node_segments(text: str) -> list[dict[str, str]]:
    """Split a plan argument into plain runs and ``<node-K>.key`` references."""
    out: list[dict[str, str]] = []
    pos = 0
    for match in NODE_RE.finditer(text):
        if match.start() > pos:
            out.append({"kind": "", "text": text[pos : match.start()]})
        out.append({"kind": "node", "text": match.group(0)})
        pos = match.end()
    if pos < len(text):
        out.append({"kind": "", "text": text[pos:]})
    return out


def _pretty_json(raw: str) -> str:
    if not raw:
        return ""
    try:
        return json.dumps(orjson.loads(raw), indent=2, ensure_ascii=False)
    except orjson.JSONDecodeError:
        return raw


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _image_entries(refs: list[dict[str, Any]], images: dict[str, Image]) -> list[dict[str, Any]]:
    """Image refs with their stored image and index: the ``img_index`` within their role
    (document images count from 0 in source order, as ATP and LLM-I address them)."""
    ordinal: dict[str, int] = {}
    entries = []
    role_order: dict[str, int] = {}
    for ref in refs:
        role_order.setdefault(ref.get("role") or "document", len(role_order))
    ordered = sorted(
        enumerate(refs),
        key=lambda pair: (
            role_order[pair[1].get("role") or "document"],
            pair[1].get("position", 0),
            pair[0],
        ),
    )
    for _, ref in ordered:
        role = ref.get("role") or "document"
        index = ordinal.get(role, 0)
        ordinal[role] = index + 1
        sha = ref.get("sha256") or ""
        entries.append(
            {
                "sha256": sha,
                "path": ref.get("path", ""),
                "role": role,
                "index": index,
                "image": images.get(sha),
            }
        )
    return entries


def _attachment_label(row: Any) -> str:
    if row.origin == Origin.MODEL:
        return f"Prediction · {row.model_name}" if row.model_name else "Prediction"
    if isinstance(row, Plan) and row.is_alternative:
        return "Alternative plan"
    return "Ground truth"


def _plan_view(plan: Plan) -> dict[str, Any]:
    steps = []
    for n, step in enumerate(plan.steps or []):
        if not isinstance(step, dict):
            steps.append({"id": n, "name": "", "args": [("", node_segments(_as_text(step)))]})
            continue
        args = step.get("args") or {}
        if not isinstance(args, dict):
            args = {"": args}
        steps.append(
            {
                "id": step.get("id", n),
                "name": step.get("name") or step.get("tool") or step.get("tool_name") or "",
                "args": [(k, node_segments(_as_text(v))) for k, v in args.items()],
            }
        )
    return {
        "obj": plan,
        "label": _attachment_label(plan),
        "steps": steps,
        "raw": _pretty_json(plan.raw),
    }


CHECKPOINT_KEYS = {"id", "axis", "description", "tools", "code_check", "visual_check"}


def _checkpoint_view(cp: Any) -> dict[str, Any]:
    if not isinstance(cp, dict):
        return {"description": _as_text(cp), "details": []}
    code = cp.get("code_check") or {}
    visual = cp.get("visual_check") or {}
    details = []
    if isinstance(code, dict):
        details += [
            (f"code_check.{k}", _as_text(v)) for k, v in code.items() if k not in ("bbox_2d",)
        ]
    for key, value in cp.items():
        if key not in CHECKPOINT_KEYS:
            details.append((key, _as_text(value)))
    return {
        "id": cp.get("id", ""),
        "axis": str(cp.get("axis", "")),
        "description": cp.get("description", ""),
        "tools": cp.get("tools") or [],
        "bbox": code.get("bbox_2d") if isinstance(code, dict) else None,
        "question": visual.get("question", "") if isinstance(visual, dict) else "",
        "expected": visual.get("expected_answer", "") if isinstance(visual, dict) else "",
        "details": details,
    }


def _trajectory_view(traj: Trajectory, images: dict[str, Image]) -> dict[str, Any]:
    entries = _image_entries(traj.image_refs or [], images)
    by_path = {e["path"]: e for e in entries if e["path"]}

    def produced(path: str) -> dict[str, Any] | None:
        if not path:
            return None
        path = path.replace("\\", "/")
        if path in by_path:
            return by_path[path]
        for ref_path, entry in by_path.items():
            if ref_path.endswith("/" + path.lstrip("./")) or path.endswith("/" + ref_path):
                return entry
        return None

    steps = []
    for n, step in enumerate(traj.steps or []):
        if not isinstance(step, dict):
            steps.append({"index": n, "tool": "", "args": _as_text(step), "output": []})
            continue
        output = step.get("output") if isinstance(step.get("output"), dict) else {}
        out_path = str(output.get("output_path", "") or "")
        steps.append(
            {
                "index": step.get("index", n),
                "tool": step.get("tool_name") or step.get("name") or "",
                "turn": step.get("turn"),
                "args": [(k, _as_text(v)) for k, v in (step.get("arguments") or {}).items()]
                if isinstance(step.get("arguments"), dict)
                else [("", _as_text(step.get("arguments", "")))],
                "output": [
                    (k, _as_text(v)) for k, v in output.items() if k not in ("output_path",)
                ],
                "output_path": out_path,
                "image": produced(out_path),
            }
        )
    orderings = []
    for oc in traj.ordering_constraints or []:
        if isinstance(oc, dict):
            orderings.append(
                {
                    "id": oc.get("id", ""),
                    "sequence": [str(s) for s in oc.get("sequence") or []],
                    "max_gap": oc.get("max_gap"),
                }
            )
    return {
        "obj": traj,
        "label": "Run" + (f" · {traj.model_name}" if traj.model_name else "")
        if traj.origin == Origin.MODEL
        else "Reference trajectory",
        "checkpoints": [_checkpoint_view(cp) for cp in traj.checkpoints or []],
        "orderings": orderings,
        "efficiency": [(k, _as_text(v)) for k, v in (traj.efficiency or {}).items()],
        "steps": steps,
        "images": entries,
        "raw": _pretty_json(traj.raw),
    }


def _item_view(item: Item, images: dict[str, Image]) -> dict[str, Any]:
    entries = _image_entries(item.image_refs or [], images)
    by_path = {e["path"]: e for e in entries if e["path"]}
    documents = []
    for n, doc in enumerate(item.documents or []):
        if isinstance(doc, dict):
            paths = doc.get("images") or []
            documents.append(
                {
                    "n": n,
                    "text": _as_text(doc.get("text", "")),
                    "images": [
                        by_path.get(p) or {"path": p, "sha256": "", "index": None}
                        for p in paths
                        if isinstance(p, str)
                    ],
                }
            )
        else:
            documents.append({"n": n, "text": _as_text(doc), "images": []})
    rubric = []
    for n, criterion in enumerate(item.rubric or []):
        if isinstance(criterion, dict):
            rubric.append(
                (criterion.get("key", f"r{n + 1}"), _as_text(criterion.get("text", criterion)))
            )
        else:
            rubric.append((f"r{n + 1}", _as_text(criterion)))
    return {
        "documents": documents,
        "images": entries,
        "query_images": [e for e in entries if e["role"] in ("query", "input")],
        "constraints": [(k, _as_text(v)) for k, v in (item.constraints or {}).items()],
        "rubric": rubric,
        "raw": _pretty_json(item.raw),
    }


@login_required
@require_GET
@htmx_page
def item_detail(request: HttpRequest, project_pk: int, pk: int) -> HttpResponse:
    project = selectors.project_get(user=request.user, pk=project_pk)
    item = selectors.item_get_detailed(user=request.user, project=project, pk=pk)
    responses = list(item.responses.all())
    plans = list(item.plans.all())
    trajectories = list(item.trajectories.all())
    shas = [r.get("sha256") for r in item.image_refs or []]
    for traj in trajectories:
        shas += [r.get("sha256") for r in traj.image_refs or []]
    images = selectors.images_by_sha(user=request.user, shas=shas)
    context = {
        **_project_context(request, project),
        "item": item,
        "view": _item_view(item, images),
        "responses": [
            {
                "obj": r,
                "label": _attachment_label(r),
                "segments": tag_segments(r.text),
                "raw": _pretty_json(r.raw),
            }
            for r in responses
        ],
        "plans": [_plan_view(p) for p in plans],
        "trajectories": [_trajectory_view(t, images) for t in trajectories],
    }
    return _render(request, "benchmark/item_detail.html", context)


# --------------------------------------------------------------------------- images


IMAGE_TYPES = {"PNG": "image/png", "JPEG": "image/jpeg", "GIF": "image/gif", "WEBP": "image/webp"}


def _image_response(field: FieldFile, content_type: str) -> FileResponse:
    try:
        handle = field.open("rb")
    except (FileNotFoundError, ValueError):
        raise Http404("The image file is missing.") from None
    response = FileResponse(handle, content_type=content_type)
    # Content-addressed, so never stale; private because access is checked per user.
    response["Cache-Control"] = "private, max-age=31536000, immutable"
    return response


@login_required
@require_GET
def image_file(request: HttpRequest, sha256: str) -> FileResponse:
    image = selectors.image_get(user=request.user, sha256=sha256)
    return _image_response(image.file, IMAGE_TYPES.get(image.format, "application/octet-stream"))


@login_required
@require_GET
def image_thumb(request: HttpRequest, sha256: str) -> FileResponse:
    image = selectors.image_get(user=request.user, sha256=sha256)
    if image.thumbnail:
        return _image_response(image.thumbnail, "image/png")
    return _image_response(image.file, IMAGE_TYPES.get(image.format, "application/octet-stream"))


# --------------------------------------------------------------------------- import / export


@login_required
@require_http_methods(["GET", "POST"])
@htmx_page
def project_import(request: HttpRequest, pk: int) -> HttpResponse:
    """Upload a dataset file or .zip; starts an import job and shows its progress."""
    project = selectors.project_get(user=request.user, pk=pk)
    _require(request, project, "import")
    job = None
    if request.method == "POST":
        form = ImportForm(request.POST, request.FILES)
        if form.is_valid():
            try:
                job = services.import_upload_start(
                    project=project, user=request.user, upload=form.cleaned_data["file"]
                )
            except DomainError as exc:
                form.add_error("file", exc.message)
            else:
                if not request.htmx:
                    return redirect("benchmark:job_detail", pk=job.pk)
                form = ImportForm()
    else:
        form = ImportForm()
    context = {
        **_project_context(request, project),
        "form": form,
        "job": job,
        "max_upload_mb": settings.BENCHWRIGHT_MAX_UPLOAD_BYTES // (1024 * 1024),
        "recent_jobs": selectors.job_list(user=request.user, project=project).filter(
            kind=services.IMPORT_KIND
        )[:5],
    }
    return _render(
        request,
        "benchmark/project_import.html",
        context,
        fragments={"import-panel": "import-panel"},
    )


@login_required
@require_GET
def project_export(request: HttpRequest, pk: int) -> HttpResponse:
    """Download the project's data in its format (optionally one status)."""
    project = selectors.project_get(user=request.user, pk=pk)
    _require(request, project, "export")
    form = ExportForm(request.GET)
    if not form.is_valid():
        return HttpResponseBadRequest(
            "Invalid export options: " + "; ".join(f"{k}: {v[0]}" for k, v in form.errors.items())
        )
    try:
        export = services.dataset_export_file(
            project=project,
            user=request.user,
            status=form.cleaned_data["status"] or None,
            include_images=form.cleaned_data["images"],
        )
    except DomainError as exc:
        return HttpResponse(exc.message, status=exc.status_code, content_type="text/plain")
    return FileResponse(
        export.handle,
        as_attachment=True,
        filename=export.filename,
        content_type=export.content_type,
    )


# --------------------------------------------------------------------------- jobs


@login_required
@require_GET
@htmx_page
def job_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """A job's progress. The polled fragment answers 286 (stop polling) once it is done."""
    job = selectors.job_get(user=request.user, pk=pk)
    response = _render(
        request, "benchmark/job_detail.html", {"job": job}, fragments={"job-*": "job"}
    )
    polled = request.htmx and (request.htmx.target or "").startswith("job-")
    if polled and job.done:
        response.status_code = HTMX_STOP_POLLING
    return response
