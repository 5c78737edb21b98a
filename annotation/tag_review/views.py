"""Tag review: an answer's tool calls drawn in place as cards, edited one action per POST on a
working text the page carries, saved as a new version; history, revert, discard, stats.

A save made on an outdated version answers **409** with the page (or, for htmx, the review
fragment) showing the other person's version; the form opts in with ``data-swap-errors="409"``
(app.js swaps it).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django.views.decorators.vary import vary_on_headers
from django_htmx.http import HttpResponseClientRedirect

from annotation.discarding import selectors as discard_selectors
from annotation.discarding import services as discard_services
from annotation.tag_review import edits as tag_edits
from annotation.tag_review import input_drafts
from annotation.tag_review import selectors as tag_selectors
from annotation.tag_review import services as tag_review
from annotation.tag_review.forms import DiscardForm, WorkingStateForm
from benchmark import selectors
from benchmark.exceptions import DomainError
from benchmark.images import selectors as image_selectors
from benchmark.input_drafts.services import input_draft_delete
from benchmark.models import Image, Item, Project, Response
from benchmark.permissions import can
from benchmark.presenters import attachment_label, item_view
from benchmark.rendering.preview import render_answer
from benchmark.tags import ParsedText, ToolCall, builtin_toolset, parse, validate
from benchmark.tags.model import ERROR, WARNING
from benchmark.toolsets.specs import tag_toolset
from benchmark.typing import HtmxHttpRequest, request_user
from benchmark.versions import StaleVersion

htmx_page = vary_on_headers("HX-Request")
TEMPLATE = "annotation/tag_review.html"
IMAGE_TOOLS = ("reference", "edit")


# --------------------------------------------------------------------------- lookups


def _objects(request: HttpRequest, project_id: int, item_id: int, response_id: int) -> Response:
    project_obj = selectors.project_get(user=request.user, pk=project_id)
    if not project_obj.benchmark.offers.tag_answers:
        raise Http404("This project's answers have no tool tags.")
    return tag_selectors.response_get(
        user=request.user, project=project_obj, item_pk=item_id, pk=response_id
    )


def _draft_key(response: Response) -> str:
    return input_drafts.key(
        project_id=response.item.project_id, item_id=response.item_id, response_id=response.pk
    )


def _urls(response: Response) -> dict[str, str]:
    args = [response.item.project_id, response.item_id, response.pk]
    return {
        "review_url": reverse("annotation:tag_review", args=args),
        "versions_url": reverse("annotation:tag_versions", args=args),
        "discard_url": reverse("annotation:tag_discard", args=args),
        "stats_url": reverse("annotation:tag_stats", args=[response.item.project_id]),
        "item_url": reverse("benchmark:item_detail", args=args[:2]),
    }


def _go(request: HtmxHttpRequest, url: str) -> HttpResponse:
    return HttpResponseClientRedirect(url) if request.htmx else redirect(url)


# --------------------------------------------------------------------------- the answer


class _Answer:
    """Everything the screen needs about one text: parsed, validated, with tool specs and the
    item's images (built once per request; queries do not grow with the number of tags)."""

    def __init__(self, request: HttpRequest, project: Project, item: Item) -> None:
        self.project = project
        self.syntax = project.tag_syntax
        rows = tag_toolset(project.toolset)
        self.toolset: dict[str, Any] | None = rows or None
        self.specs = rows or {
            name: {"name": name.title(), **tool}
            for name, tool in builtin_toolset(self.syntax).items()  # type: ignore[arg-type]
        }
        images: dict[str, Image] = image_selectors.images_by_sha(
            user=request.user, shas=[r.get("sha256") for r in item.image_refs or []]
        )
        self.view = item_view(item, images)
        kind = self.benchmark = project.benchmark
        self.indexed = [e for e in self.view["images"] if e["role"] == kind.indexed_image_role]
        self.image_num = (
            (item.constraints or {}).get("image_num") if kind.image_count_rule else None
        )

    def parse(self, text: str) -> ParsedText:
        return parse(text, self.syntax)  # type: ignore[arg-type]

    def validate(self, parsed: ParsedText) -> list[Any]:
        kwargs: dict[str, Any] = {self.benchmark.indexed_images_arg: len(self.indexed)}
        if self.benchmark.image_count_rule:
            kwargs["image_num"] = self.image_num
        try:
            return validate(parsed, self.toolset, **kwargs)
        except ValueError:  # an image_num the validator does not know
            kwargs.pop("image_num", None)
            return validate(parsed, self.toolset, **kwargs)

    def entry_for(self, tool: ToolCall) -> dict[str, Any] | None:
        if (tool.tool_name or "").lower() not in IMAGE_TOOLS:
            return None
        index = (tool.params or {}).get("img_index")
        if isinstance(index, bool) or not isinstance(index, int):
            return None
        if 0 <= index < len(self.indexed) and self.indexed[index]["image"] is not None:
            return self.indexed[index]
        return None

    def image_lookup(self) -> Callable[[ToolCall], tuple[str, str] | None]:
        def lookup(tool: ToolCall) -> tuple[str, str] | None:
            entry = self.entry_for(tool)
            if entry is None:
                return None
            return reverse("benchmark:image_thumb", args=[entry["sha256"]]), entry["label"]

        return lookup

    def spec(self, name: str | None) -> dict[str, Any] | None:
        return self.specs.get((name or "").lower())


def _fields(answer: _Answer, tool: ToolCall) -> tuple[list[dict[str, Any]], list[str]]:
    """Form fields from the tool's parameter schema, prefilled; and the parameters the schema
    does not know (a fix drops them)."""
    spec = answer.spec(tag_edits.tool_name_of(tool))
    params = tool.params or {}
    specs = list(spec["params"]) if spec else [{"name": k, "type": ""} for k in params]
    fields = []
    for p in specs:
        name = str(p.get("name", ""))
        type_name = str(p.get("type", "")).lower()
        if tool.data is None:  # prefill from what can be read of a malformed payload
            value = tag_edits.guess(tool.payload_text, name)
            text = "" if value is None else tag_edits.display_value(value, type_name)
        else:
            value = params.get(name)
            text = tag_edits.display_value(value, type_name) if name in params else ""
        widget = "number" if type_name in ("int", "integer", "float", "number") else "text"
        if name in ("prompt", "code", "query") or len(text) > 60 or "\n" in text:
            widget = "textarea"
        fields.append(
            {
                "name": name,
                "input": f"p-{tool.index}-{name}",
                "type": type_name,
                "required": p.get("required", True),
                "value": text,
                "widget": widget,
                "help": p.get("description", ""),
            }
        )
    known = {f["name"] for f in fields}
    return fields, [k for k in params if k not in known]


def _severity(findings: list[Any]) -> str:
    levels = {f.severity for f in findings}
    return (
        ERROR if ERROR in levels else WARNING if WARNING in levels else ("info" if levels else "")
    )


def _menu(pairs: Any) -> str:
    """``<option>`` elements for ``(value, label)`` pairs, from the page template's partial."""
    return render_to_string(f"{TEMPLATE}#options", {"pairs": pairs})


def _tool_names(answer: _Answer) -> list[str]:
    return [spec.get("name") or name for name, spec in answer.specs.items()]


class _Drawn:
    """What many cards show alike, drawn once a page by the template's partials: the "change
    tool" menu per tool as written, the thumb per image (a 1 MB answer has 500 cards)."""

    def __init__(self, answer: _Answer) -> None:
        self.tools = [(name, str(name).lower()) for name in _tool_names(answer)]
        self._menus: dict[str, str] = {}
        self._thumbs: dict[int, str] = {}

    def tool_menu(self, written: str | None) -> str:
        key = str(written).lower()
        if key not in self._menus:
            self._menus[key] = render_to_string(
                f"{TEMPLATE}#tool-options", {"tools": self.tools, "written_key": key}
            )
        return self._menus[key]

    def thumb(self, entry: dict[str, Any] | None) -> str | None:
        if entry is None:
            return None
        if id(entry) not in self._thumbs:
            self._thumbs[id(entry)] = render_to_string("partials/thumb.html", {"entry": entry})
        return self._thumbs[id(entry)]


def _segments(
    answer: _Answer, parsed: ParsedText, findings: list[Any], marks: list[str]
) -> list[dict[str, Any]]:
    drawn = _Drawn(answer)
    by_tag: dict[int, list[Any]] = {}
    for f in findings:
        if f.tag is not None:
            by_tag.setdefault(f.tag, []).append(f)
    out: list[dict[str, Any]] = []
    for segment in parsed.segments:
        if not isinstance(segment, ToolCall):
            out.append({"text": segment.text})
            continue
        tool = segment
        mine = by_tag.get(tool.index, [])
        fields, dropped = _fields(answer, tool)
        written = tag_edits.tool_name_of(tool)
        spec = answer.spec(written)
        description = tool.description
        if tool.data is None:
            guessed = tag_edits.guess(tool.payload_text, "description")
            description = guessed if isinstance(guessed, str) else ""
        out.append(
            {
                "card": {
                    "index": tool.index,
                    "number": tool.index + 1,
                    "name": (spec or {}).get("name") or written,
                    "written": written,
                    "known": spec is not None,
                    "description": description or "",
                    "params": [
                        (k, tag_edits.display_value(v, "")) for k, v in (tool.params or {}).items()
                    ],
                    "payload": tool.payload_text,
                    "readable": tool.data is not None,
                    "closed": tool.closed,
                    "findings": mine,
                    "severity": _severity(mine),
                    "mark": marks[tool.index] if tool.index < len(marks) else "",
                    "fields": fields,
                    "dropped": dropped,
                    "image": answer.entry_for(tool),
                    "thumb": drawn.thumb(answer.entry_for(tool)),
                    "tool_options": drawn.tool_menu(written),
                }
            }
        )
    return out


def _fresh_context(request: HttpRequest, row: Response, answer: _Answer) -> dict[str, Any]:
    """The screen for the saved text as it stands: no pending decisions or marks (an empty
    list: ``_review_context`` gives every call an empty mark)."""
    return _review_context(
        request,
        row,
        answer,
        text=row.text,
        base=tag_selectors.current_number(response=row),
        decisions=[],
        marks=[],
    )


def _review_context(
    request: HttpRequest,
    response: Response,
    answer: _Answer,
    *,
    text: str,
    base: int,
    decisions: list[dict[str, Any]],
    marks: list[str],
    preview: bool = False,
    error: str = "",
    conflict: Any = None,
) -> dict[str, Any]:
    parsed = answer.parse(text)
    marks = (marks + [""] * len(parsed.tools))[: len(parsed.tools)]
    findings = answer.validate(parsed)
    item = response.item
    preview_html = render_answer(text, answer.syntax, image=answer.image_lookup(), parsed=parsed)
    context: dict[str, Any] = {
        "project": answer.project,
        "item": item,
        "response": response,
        "label": attachment_label(response),
        "view": answer.view,
        "segments": _segments(answer, parsed, findings, marks),
        "answer_findings": [f for f in findings if f.tag is None],
        "n_tags": len(parsed.tools),
        "n_findings": len(findings),
        "n_undecided": sum(1 for m in marks if not m),
        "state": {
            "text": text,
            "base": base,
            "decisions": json.dumps(decisions, ensure_ascii=False),
            "marks": json.dumps(marks),
            "preview": "1" if preview else "",
        },
        "changed": text != response.text or bool(decisions),
        "decisions": decisions,
        "preview": preview,
        "preview_html": preview_html,  # sanitized (benchmark.rendering): |sanitized prints it
        "tools": _tool_names(answer),
        # The reason menus every card repeats (500 times for a 1 MB answer of 500 calls:
        # some 60 ms of template work) are drawn once a page, by the template's partial.
        "remove_options": _menu(tag_edits.REMOVE_REASONS),
        "fix_options": _menu(tag_edits.FIX_REASONS),
        "boundaries": tag_edits.boundaries(parsed),
        "error": error,
        "conflict": conflict,
        "can_edit": tag_review.can_edit(user=request.user, project=answer.project),
        "can_discard": can(user=request.user, project=answer.project, action="set_status"),
        "discard_form": DiscardForm(),
        # Lazy: only the full page (not the #review fragment) shows them.
        "discard_proposals": discard_selectors.open_proposals(user=request.user, item=item),
        "saved": request.GET.get("saved", ""),
        "proposed": bool(request.GET.get("proposed")),
        "input_draft_key": _draft_key(response),
        **_urls(response),
    }
    if conflict is not None:
        context["conflict_diff"] = _diff(
            conflict.text, text, f"version {conflict.number} (theirs)", "your working text"
        )
    return context


def _render_review(
    request: HtmxHttpRequest, context: dict[str, Any], status: int = 200
) -> HttpResponse:
    template = TEMPLATE
    if request.htmx and not request.htmx.history_restore_request:
        template += "#review"
    return render(request, template, context, status=status)


# --------------------------------------------------------------------------- edits


def _apply(
    op: str, arg: str, post: Any, answer: _Answer, parsed: ParsedText, marks: list[str]
) -> tag_edits.Edit:
    if op == "insert":
        try:
            at = int(post.get("insert-at", ""))
        except ValueError:
            raise tag_edits.EditError("choose where the new call goes") from None
        return tag_edits.insert(
            parsed,
            marks,
            at=at,
            tool_name=post.get("insert-tool", ""),
            description=post.get("insert-desc", ""),
            params=post.get("insert-params", ""),
        )
    try:
        tag = int(arg)
    except ValueError:
        raise tag_edits.EditError("that action names no tag") from None
    if op == "keep":
        return tag_edits.keep(parsed, tag, marks)
    if op == "remove":
        return tag_edits.remove(
            parsed,
            tag,
            marks,
            reason=post.get(f"reason-{tag}", ""),
            note=post.get(f"note-{tag}", ""),
        )
    if op in ("before", "after"):
        return tag_edits.move(parsed, tag, marks, direction=op)
    if op == "retool":
        return tag_edits.retool(parsed, tag, marks, tool_name=post.get(f"tool-{tag}", ""))
    if op == "raw":
        return tag_edits.fix_raw(
            parsed,
            tag,
            marks,
            payload=post.get(f"payload-{tag}", ""),
            reason=post.get(f"fixreason-{tag}", ""),
        )
    if op == "fix":
        if not 0 <= tag < len(parsed.tools):
            raise tag_edits.EditError("that tag is gone; reload the page")
        tool = parsed.tools[tag]
        spec = answer.spec(tag_edits.tool_name_of(tool))
        specs = spec["params"] if spec else [{"name": k, "type": ""} for k in (tool.params or {})]
        values = {str(p["name"]): post.get(f"p-{tag}-{p['name']}", "") for p in specs}
        return tag_edits.fix_fields(
            parsed,
            tag,
            marks,
            specs=specs,
            values=values,
            description=post.get(f"desc-{tag}", ""),
            reason=post.get(f"fixreason-{tag}", ""),
        )
    raise tag_edits.EditError(f"unknown action {op!r}")


@login_required
@require_http_methods(["GET", "POST"])
@htmx_page
def review(
    request: HtmxHttpRequest, project_id: int, item_id: int, response_id: int
) -> HttpResponse:
    """The review screen. GET opens the current version; each POST applies one action (``op``
    = ``keep:3``, ``remove:3``, ``fix:3``, ``raw:3``, ``retool:3``, ``before:3``, ``after:3``,
    ``insert``, ``refresh``, ``save``, ``save_over:7``) to the working text and re-renders."""
    row = _objects(request, project_id, item_id, response_id)
    answer = _Answer(request, row.item.project, row.item)
    if request.method == "GET":
        return _render_review(request, _fresh_context(request, row, answer))

    user = request_user(request)
    if not tag_review.can_edit(user=user, project=answer.project):
        raise PermissionDenied("your role does not allow reviewing tags")
    form = WorkingStateForm(request.POST)
    if not form.is_valid():
        return HttpResponse("The page's working state is damaged; reload it.", status=400)
    text: str = form.cleaned_data["text"]
    base: int = form.cleaned_data["base"]
    decisions: list[dict[str, Any]] = form.cleaned_data["decisions"]
    marks: list[str] = form.cleaned_data["marks"]
    preview = bool(form.cleaned_data["preview"])
    op, _, arg = request.POST.get("op", "refresh").partition(":")
    error, conflict, status = "", None, 200

    if op in ("save", "save_over"):
        on = base
        if op == "save_over":
            try:
                on = int(arg)
            except ValueError:
                on = base
        try:
            version = tag_review.response_save_version(
                response=row,
                user=user,
                text=text,
                base_number=on,
                decisions=decisions,
                note=request.POST.get("note", ""),
            )
        except StaleVersion as exc:
            error, conflict, status = exc.message, exc.current, 409
        except DomainError as exc:
            error = exc.message
        else:
            input_draft_delete(user=user, key=_draft_key(row))
            return _go(request, f"{_urls(row)['review_url']}?saved={version.number}")
    elif op != "refresh":
        parsed = answer.parse(text)
        try:
            edit = _apply(op, arg, request.POST, answer, parsed, marks)
        except tag_edits.EditError as exc:
            error = str(exc)
        else:
            text, marks = edit.text, edit.marks
            if edit.decision is not None:
                decisions = [*decisions, edit.decision]
    context = _review_context(
        request,
        row,
        answer,
        text=text,
        base=base,
        decisions=decisions,
        marks=marks,
        preview=preview,
        error=error,
        conflict=conflict,
    )
    return _render_review(request, context, status)


@login_required
@require_POST
def discard(
    request: HtmxHttpRequest, project_id: int, item_id: int, response_id: int
) -> HttpResponse:
    """Discard the whole sample with a reason (ATP-Bench: systemic errors): reviewers and
    admins discard it (recorded as a status change); an annotator's post becomes a proposal
    that a reviewer accepts or rejects."""
    row = _objects(request, project_id, item_id, response_id)
    user = request_user(request)
    form = DiscardForm(request.POST)
    error, status = "", 200
    if form.is_valid():
        reason, detail = form.cleaned_data["reason"], form.cleaned_data["detail"]
        done = _urls(row)["review_url"]
        try:
            if can(user=user, project=row.item.project, action="set_status"):
                tag_review.item_discard(item=row.item, user=user, reason=reason, detail=detail)
            else:
                discard_services.discard_propose(
                    item=row.item,
                    user=user,
                    reason=tag_review.discard_reason_text(reason, detail),
                    response=row,
                )
                done += "?proposed=1"
        except DomainError as exc:
            if exc.status_code == 403:
                raise PermissionDenied(exc.message) from None
            error, status = exc.message, exc.status_code
        else:
            return _go(request, done)
    row.item.refresh_from_db(fields=["status", "discard_reason"])
    context = _fresh_context(request, row, _Answer(request, row.item.project, row.item))
    context["discard_form"] = form
    context["discard_error"] = error
    return render(request, TEMPLATE, context, status=status)


# --------------------------------------------------------------------------- history


def _diff(old: str, new: str, old_name: str, new_name: str) -> list[tuple[str, str]]:
    """A unified diff as ``(css class, line)`` pairs."""
    lines = difflib.unified_diff(
        old.splitlines(), new.splitlines(), old_name, new_name, lineterm="", n=2
    )
    out = []
    for line in lines:
        kind = (
            "meta"
            if line.startswith(("---", "+++", "@@"))
            else "add"
            if line.startswith("+")
            else "del"
            if line.startswith("-")
            else "ctx"
        )
        out.append((kind, line))
    return out


@login_required
@require_GET
def versions(request: HttpRequest, project_id: int, item_id: int, response_id: int) -> HttpResponse:
    row = _objects(request, project_id, item_id, response_id)
    rows = tag_selectors.version_list(user=request.user, response=row)
    return render(
        request,
        "annotation/tag_versions.html",
        {
            "project": row.item.project,
            "item": row.item,
            "response": row,
            "label": attachment_label(row),
            "versions": rows,
            **_urls(row),
        },
    )


@login_required
@require_GET
def version_detail(
    request: HttpRequest, project_id: int, item_id: int, response_id: int, number: int
) -> HttpResponse:
    row = _objects(request, project_id, item_id, response_id)
    version, previous = tag_selectors.version_get(user=request.user, response=row, number=number)
    return _version_page(request, row, version, previous)


def _version_page(
    request: HttpRequest,
    row: Response,
    version: Any,
    previous: Any,
    *,
    error: str = "",
    status: int = 200,
) -> HttpResponse:
    diff = (
        _diff(
            previous.text, version.text, f"version {previous.number}", f"version {version.number}"
        )
        if previous is not None
        else []
    )
    return render(
        request,
        "annotation/tag_version.html",
        {
            "project": row.item.project,
            "item": row.item,
            "response": row,
            "label": attachment_label(row),
            "version": version,
            "previous": previous,
            "diff": diff,
            "decisions": list(version.decisions.all()) if version.pk else [],
            "current": tag_selectors.current_number(response=row),
            "can_edit": tag_review.can_edit(user=request.user, project=row.item.project),
            "error": error,
            **_urls(row),
        },
        status=status,
    )


@login_required
@require_POST
def version_revert(
    request: HtmxHttpRequest, project_id: int, item_id: int, response_id: int, number: int
) -> HttpResponse:
    """Make a new version with version ``number``'s text."""
    row = _objects(request, project_id, item_id, response_id)
    version, previous = tag_selectors.version_get(user=request.user, response=row, number=number)
    base = request.POST.get("base", "")
    try:
        new = tag_review.response_revert(
            response=row,
            user=request_user(request),
            number=number,
            base_number=int(base) if base.isdigit() else None,
        )
    except DomainError as exc:
        if exc.status_code == 403:
            raise PermissionDenied(exc.message) from None
        status = 409 if isinstance(exc, StaleVersion) else 200
        return _version_page(request, row, version, previous, error=exc.message, status=status)
    url = reverse(
        "annotation:tag_version", args=[row.item.project_id, row.item_id, row.pk, new.number]
    )
    return _go(request, url)


# --------------------------------------------------------------------------- stats


@login_required
@require_GET
@vary_on_headers("HX-Request", "HX-Target")
def stats(request: HtmxHttpRequest, project_id: int) -> HttpResponse:
    """Per tool: how many calls were kept, fixed, removed, moved, inserted or retooled; per
    category and intent, ATP-Bench's Tables 2 and 9 over the verified items. The project page
    loads the tables into its ``#tag-stats`` section with htmx."""
    project_obj = selectors.project_get(user=request.user, pk=project_id)
    template = "annotation/tag_stats.html"
    htmx = request.htmx
    if htmx and htmx.target == "tag-stats" and not htmx.history_restore_request:
        template += "#tables"
    return render(
        request,
        template,
        {
            "project": project_obj,
            "stats": tag_selectors.decision_stats(user=request.user, project=project_obj),
            "dataset": tag_selectors.dataset_stats(user=request.user, project=project_obj),
            "definitions": tag_selectors.DATASET_STATS_DEFINITIONS,
        },
    )
