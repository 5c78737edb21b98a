"""Model drafting pages: the project's drafts with the acceptance figures, drafting queries
(ATP-Bench), drafting an item's answer, rubric or plan, and one draft's candidates with keep /
edit / reject. Starting a draft starts a job (its card polls the one job view); when it is
done the candidates fragment refreshes (``model-draft-done``). Each POST calls one service."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import NoReverseMatch, reverse
from django.views.decorators.http import require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect

from annotation.model_drafts import selectors, services
from annotation.model_drafts.forms import DecideForm, QueriesForm
from annotation.model_drafts.models import DraftCandidate, DraftKind, ModelDraft
from benchmark import selectors as benchmark_selectors
from benchmark.exceptions import Conflict, DomainError, Forbidden
from benchmark.llm.selectors import model_context
from benchmark.models import Project
from benchmark.pages import htmx_page, project_context, render_page
from benchmark.typing import HtmxHttpRequest, request_user

LIST_SIZE = 100
DETAIL = "annotation/model_drafts/detail.html"


def _detail_url(draft: ModelDraft) -> str:
    return reverse("annotation:model_draft_detail", args=[draft.project_id, draft.pk])


def _started(request: HtmxHttpRequest, draft: ModelDraft) -> HttpResponse:
    url = _detail_url(draft)
    return HttpResponseClientRedirect(url) if request.htmx else redirect(url)


@login_required
@require_http_methods(["GET"])
@htmx_page
def model_drafts(request: HtmxHttpRequest, project_id: int) -> HttpResponse:
    """The project's drafts, newest first, and what became of them per kind."""
    project = benchmark_selectors.project_get(user=request.user, pk=project_id)
    context = {
        **project_context(request, project),
        "figures": selectors.drafting_figures(user=request.user, project=project),
        "drafts": selectors.model_draft_list(user=request.user, project=project)[:LIST_SIZE],
        "can_draft_queries": services.draft_kind_fits(project=project, kind=DraftKind.QUERIES),
    }
    return render_page(request, "annotation/model_drafts/list.html", context)


@login_required
@require_http_methods(["GET", "POST"])
@htmx_page
def model_draft_queries(request: HtmxHttpRequest, project_id: int) -> HttpResponse:
    """ATP-Bench: ask the model for candidate queries of a category and intent."""
    project = benchmark_selectors.project_get(user=request.user, pk=project_id)
    if not services.draft_kind_fits(project=project, kind=DraftKind.QUERIES):
        raise Http404("Drafting queries is for ATP-Bench projects.")
    context: dict[str, Any] = {**project_context(request, project), **model_context(project)}
    if request.method == "POST":
        form = QueriesForm(request.POST, project=project)
        if form.is_valid():
            try:
                draft = services.draft_queries_start(
                    project=project,
                    user=request_user(request),
                    category=form.cleaned_data["category"],
                    intent=form.cleaned_data["intent"],
                    n=form.cleaned_data["n"],
                )
            except Forbidden as exc:
                raise PermissionDenied(exc.message) from None
            except DomainError as exc:
                form.add_error(None, exc.message)
            else:
                return _started(request, draft)
    else:
        if "edit" not in context["actions"]:
            raise PermissionDenied("Your role in this project does not allow drafting.")
        form = QueriesForm(project=project)
    context["form"] = form
    return render_page(
        request,
        "annotation/model_drafts/queries.html",
        context,
        fragments={"draft-queries-form": "form"},
    )


@login_required
@require_http_methods(["GET", "POST"])
@htmx_page
def model_draft_item(
    request: HtmxHttpRequest, project_id: int, item_id: int, kind: str
) -> HttpResponse:
    """Draft an item's answer, rubric or plan: a page with the button, the item's earlier
    drafts of that kind; POST starts the job and goes to the draft."""
    project = benchmark_selectors.project_get(user=request.user, pk=project_id)
    if kind == DraftKind.QUERIES or not services.draft_kind_fits(project=project, kind=kind):
        raise Http404("No such kind of draft for this project.")
    item = benchmark_selectors.item_get_revealed(
        user=request.user, project=project, pk=item_id, page="Model drafting"
    )
    item.project = project
    context: dict[str, Any] = {
        **project_context(request, project),
        **model_context(project),
        "item": item,
        "kind": kind,
        "kind_label": DraftKind(kind).label,
        "error": "",
    }
    if request.method == "POST":
        try:
            draft = services.draft_item_start(item=item, user=request_user(request), kind=kind)
        except Forbidden as exc:
            raise PermissionDenied(exc.message) from None
        except DomainError as exc:
            context["error"] = exc.message
        else:
            return _started(request, draft)
    elif "edit" not in context["actions"]:
        raise PermissionDenied("Your role in this project does not allow drafting.")
    context["drafts"] = [
        d
        for d in selectors.model_draft_list(user=request.user, project=project).filter(
            item=item, kind=kind
        )[:20]
    ]
    return render_page(
        request, "annotation/model_drafts/item.html", context, fragments={"draft-start": "start"}
    )


def _draft(request: HtmxHttpRequest, project_id: int, pk: int) -> tuple[Project, ModelDraft]:
    project = benchmark_selectors.project_get(user=request.user, pk=project_id)
    return project, selectors.model_draft_get(user=request.user, project=project, pk=pk)


def _detail_context(
    request: HtmxHttpRequest, project: Project, draft: ModelDraft
) -> dict[str, Any]:
    return {
        **project_context(request, project),
        "draft": draft,
        "item": draft.item,
        "candidates": [_with_editor(draft, c) for c in selectors.candidate_list(draft=draft)],
    }


def _with_editor(draft: ModelDraft, candidate: DraftCandidate) -> DraftCandidate:
    candidate.editor_url = _editor_url(draft, candidate)  # type: ignore[attr-defined]
    return candidate


@login_required
@require_http_methods(["GET"])
@htmx_page
def model_draft_detail(request: HtmxHttpRequest, project_id: int, pk: int) -> HttpResponse:
    """A draft: its job while the model is asked, then the candidates to keep, edit or
    reject (the fragment ``draft-candidates`` refreshes when the job is done)."""
    project, draft = _draft(request, project_id, pk)
    return render_page(
        request,
        DETAIL,
        _detail_context(request, project, draft),
        fragments={"draft-candidates": "candidates"},
    )


@login_required
@require_POST
def model_draft_decide(
    request: HtmxHttpRequest, project_id: int, pk: int, candidate: int
) -> HttpResponse:
    """Keep, edit or reject one candidate; htmx gets the candidate's fragment (200, or 409
    with who decided first)."""
    project, draft = _draft(request, project_id, pk)
    obj: DraftCandidate = selectors.candidate_get(user=request.user, draft=draft, pk=candidate)
    form = DecideForm(request.POST)
    status = 200
    error = ""
    if form.is_valid():
        action = form.cleaned_data["action"]
        content: Any = (
            form.rubric() if draft.kind == DraftKind.RUBRIC else form.cleaned_data["query"]
        )
        try:
            obj = services.candidate_decide(
                candidate=obj, user=request_user(request), action=action, content=content
            )
        except Forbidden as exc:
            raise PermissionDenied(exc.message) from None
        except Conflict as exc:
            status, error = exc.status_code, exc.message
            obj.refresh_from_db()
        except DomainError as exc:
            error = exc.message
        else:
            onward = _onward(request, draft, obj, action)
            if onward is not None:
                return onward
    else:
        error = "; ".join(str(e) for errors in form.errors.values() for e in errors)
    obj.draft = draft
    _with_editor(draft, obj)
    if error and draft.kind == DraftKind.RUBRIC and form.is_valid():
        obj.shown = form.rubric()  # type: ignore[attr-defined]  # keep what was typed
    context = {
        **project_context(request, project),
        "draft": draft,
        "item": draft.item,
        "c": obj,
        "error": error,
        "error_for": obj.pk,
        "posted": form.data if error else None,
    }
    if not request.htmx and error:
        context = {**_detail_context(request, project, draft), **context}
        return render(request, DETAIL, context, status=status)
    return render(request, f"{DETAIL}#candidate", context, status=status)


def _onward(
    request: HtmxHttpRequest, draft: ModelDraft, candidate: DraftCandidate, action: str
) -> HttpResponse | None:
    """After a decision: "edit" of a saved answer or plan goes on in its editor; without
    JavaScript every decision goes back to the draft; htmx otherwise swaps the candidate."""
    if draft.kind in (DraftKind.ANSWER, DraftKind.PLAN) and action == "edit":
        url = _editor_url(draft, candidate)
        return HttpResponseClientRedirect(url) if request.htmx else redirect(url)
    return None if request.htmx else redirect(_detail_url(draft))


def _editor_url(draft: ModelDraft, candidate: DraftCandidate) -> str:
    """Where the annotator goes on with a drafted answer (the tag editor, whose findings show
    at once) or plan (the plan editor, with the verifier's findings); the item's page while
    the plan editor is not installed."""
    if draft.item_id is None:
        return ""
    response = (candidate.saved_as or {}).get("response")
    try:
        if draft.kind == DraftKind.PLAN:
            return reverse("annotation:plan_edit", args=[draft.project_id, draft.item_id])
        if draft.kind == DraftKind.ANSWER and response:
            return reverse(
                "annotation:tag_review", args=[draft.project_id, draft.item_id, response]
            )
    except NoReverseMatch:
        pass
    return reverse("benchmark:item_detail", args=[draft.project_id, draft.item_id])
