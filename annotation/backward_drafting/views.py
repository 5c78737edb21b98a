"""Backward-drafting pages: an item's sessions (and starting one), and a session's page with its
four steps: describe the raw image, ask about a crop, mark the answers, draft the question.

Each POST calls one service. For htmx it answers the fragment of its step (and triggers
``drafting-changed`` or ``drafting-marked`` so the call list and the checklist refresh); without
JavaScript it redirects back to the session page. A stale draft answers 409 with both versions.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect

from annotation.backward_drafting import selectors, services
from annotation.backward_drafting.forms import (
    CropForm,
    DescribeForm,
    DraftForm,
    MarkForm,
    StartForm,
)
from annotation.backward_drafting.models import DraftingSession, DraftingStep
from benchmark import limits
from benchmark import selectors as benchmark_selectors
from benchmark.exceptions import Conflict, DomainError, Forbidden
from benchmark.images.selectors import item_images
from benchmark.llm.selectors import model_context
from benchmark.models import Item, Project
from benchmark.pages import htmx_page, project_context, render_page
from benchmark.typing import HtmxHttpRequest, request_user

TEMPLATE = "annotation/drafting_session.html"
FRAGMENTS = {
    "drafting-status": "status",
    "drafting-calls": "calls",
    "drafting-describe": "step-describe",
    "drafting-crop": "step-crop",
    "drafting-draft": "step-draft",
}


# --------------------------------------------------------------------------- lookups


def _objects(request: HttpRequest, project_id: int, item_id: int) -> tuple[Project, Item]:
    project_obj = benchmark_selectors.project_get(user=request.user, pk=project_id)
    if not project_obj.benchmark.offers.backward_drafting:
        raise Http404("Backward drafting is for items of trajectory projects.")
    item_obj = benchmark_selectors.item_get_revealed(
        user=request.user, project=project_obj, pk=item_id, page="Backward drafting"
    )
    item_obj.project = project_obj
    return project_obj, item_obj


def _session(request: HttpRequest, project_id: int, item_id: int, pk: int) -> DraftingSession:
    _, item_obj = _objects(request, project_id, item_id)
    return selectors.drafting_session_get(user=request.user, item=item_obj, pk=pk)


def _base(request: HttpRequest, project: Project, item: Item) -> dict[str, Any]:
    return {**project_context(request, project), "item": item, **model_context(project)}


def _session_url(session: DraftingSession) -> str:
    item = session.item
    return reverse("annotation:drafting_session", args=[item.project_id, item.pk, session.pk])


# --------------------------------------------------------------------------- sessions


@login_required
@require_http_methods(["GET", "POST"])
@htmx_page
def drafting_list(request: HtmxHttpRequest, project_id: int, item_id: int) -> HttpResponse:
    """The item's drafting sessions, and the form that starts one by asking the model to
    describe the chosen raw image."""
    project_obj, item_obj = _objects(request, project_id, item_id)
    images = item_images(user=request.user, item=item_obj, index_name="image_index")
    context = _base(request, project_obj, item_obj)
    if request.method == "POST":
        form = StartForm(request.POST, images=images)
        if form.is_valid() and context["model"] is not None:
            try:
                session, _ = services.drafting_session_start(
                    item=item_obj,
                    user=request_user(request),
                    source_sha256=form.cleaned_data["source"],
                    prompt=form.cleaned_data["prompt"],
                    mode=form.cleaned_data["cache"] or None,
                )
            except DomainError as exc:
                form.add_error(None, exc.message)
            else:
                url = _session_url(session)
                return HttpResponseClientRedirect(url) if request.htmx else redirect(url)
    else:
        form = StartForm(images=images)
    context.update(
        {
            "form": form,
            "images": images,
            "sessions": selectors.drafting_session_list(user=request.user, item=item_obj),
        }
    )
    return render(
        request,
        "annotation/drafting_list.html#start" if request.htmx else "annotation/drafting_list.html",
        context,
    )


def _recipe_value(raw: str) -> dict[str, Any] | None:
    try:
        value = limits.json_loads(raw)
    except (TypeError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _session_context(
    request: HttpRequest,
    session: DraftingSession,
    *,
    describe_form: DescribeForm | None = None,
    crop_form: CropForm | None = None,
    draft_form: DraftForm | None = None,
    conflict: bool = False,
    draft_saved: bool = False,
) -> dict[str, Any]:
    item = session.item
    project = item.project
    page = selectors.drafting_page(user=request.user, session=session)
    describe_job = page.jobs[DraftingStep.DESCRIBE]
    crop_job = page.jobs[DraftingStep.CROP]
    crop = page.crop
    if describe_form is None:
        prompt = (describe_job.params or {}).get("prompt") if describe_job else None
        describe_form = DescribeForm(initial={"prompt": prompt or services.DEFAULT_DESCRIBE_PROMPT})
    if crop_form is None:
        prompt = (crop_job.params or {}).get("prompt") if crop_job else None
        crop_form = CropForm(
            prefix="crop",
            initial={
                "ground_truth": crop.ground_truth if crop else "",
                "prompt": prompt or services.DEFAULT_CROP_PROMPT,
            },
        )
    recipe = crop.recipe if crop else None
    if crop_form.is_bound:  # keep the box the annotator drew when the ask was refused
        recipe = _recipe_value(crop_form.data.get("crop-recipe", "")) or recipe
    if draft_form is None:
        draft_form = DraftForm(
            initial={
                "query": item.query,
                "expected_answer": item.expected_answer,
                "base": services.item_draft_token(item),
            }
        )
    return {
        **_base(request, project, item),
        "session": session,
        "page": page,
        "describe_form": describe_form,
        "crop_form": crop_form,
        "crop_recipe": recipe,
        "draft_form": draft_form,
        "can_add_checkpoint": not services.reference_has_checkpoints(item),
        "conflict": conflict,
        "draft_saved": draft_saved,
        "verdicts": MarkForm.base_fields["verdict"].choices,  # type: ignore[attr-defined]
    }


@login_required
@require_http_methods(["GET"])
@htmx_page
def drafting_session(
    request: HtmxHttpRequest, project_id: int, item_id: int, pk: int
) -> HttpResponse:
    """A session's page; htmx targets get their fragment (the call list, the checklist...)."""
    session = _session(request, project_id, item_id, pk)
    return render_page(request, TEMPLATE, _session_context(request, session), fragments=FRAGMENTS)


def _answer(
    request: HtmxHttpRequest,
    session: DraftingSession,
    fragment: str,
    context: dict[str, Any],
    *,
    trigger: str = "drafting-changed",
    status: int = 200,
) -> HttpResponse:
    if not request.htmx:
        if status == 200 and not context.get("errors"):
            return redirect(_session_url(session))
        return render(request, TEMPLATE, context, status=status)
    response = render(request, f"{TEMPLATE}#{fragment}", context, status=status)
    response["HX-Trigger"] = trigger
    return response


@login_required
@require_POST
def drafting_describe(
    request: HtmxHttpRequest, project_id: int, item_id: int, pk: int
) -> HttpResponse:
    """Step 1 again: ask the session's model to describe the raw image."""
    session = _session(request, project_id, item_id, pk)
    form = DescribeForm(request.POST)
    if form.is_valid():
        try:
            services.drafting_describe_ask(
                session=session,
                user=request_user(request),
                prompt=form.cleaned_data["prompt"],
                mode=form.cleaned_data["cache"] or None,
            )
        except DomainError as exc:
            form.add_error(None, exc.message)
    context = _session_context(request, session, describe_form=form)
    context["errors"] = bool(form.errors)
    return _answer(request, session, "step-describe", context)


@login_required
@require_POST
def drafting_crop(request: HtmxHttpRequest, project_id: int, item_id: int, pk: int) -> HttpResponse:
    """Step 2: derive the crop, keep it with the ground truth, ask the same model about it."""
    session = _session(request, project_id, item_id, pk)
    form = CropForm(request.POST, prefix="crop")
    if form.is_valid():
        try:
            services.drafting_crop_ask(
                session=session,
                user=request_user(request),
                ground_truth=form.cleaned_data["ground_truth"],
                recipe=form.cleaned_data["recipe"],
                prompt=form.cleaned_data["prompt"],
                mode=form.cleaned_data["cache"] or None,
            )
        except DomainError as exc:
            form.add_error(None, exc.message)
    context = _session_context(request, session, crop_form=form)
    context["errors"] = bool(form.errors)
    return _answer(request, session, "step-crop", context)


@login_required
@require_POST
def drafting_mark(
    request: HtmxHttpRequest, project_id: int, item_id: int, pk: int, call: int
) -> HttpResponse:
    """Step 3: mark one answer (perceives the detail? correct or a hallucination?)."""
    session = _session(request, project_id, item_id, pk)
    call_obj = selectors.drafting_call_get(user=request.user, session=session, pk=call)
    form = MarkForm(request.POST)
    errors: list[str] = []
    if form.is_valid():
        try:
            services.drafting_mark_save(
                session=session,
                call=call_obj,
                user=request_user(request),
                perceives=form.cleaned_data["perceives"],
                verdict=form.cleaned_data["verdict"],
                note=form.cleaned_data["note"],
            )
        except DomainError as exc:
            errors.append(exc.message)
    else:
        errors = [str(e) for field_errors in form.errors.values() for e in field_errors]
    context = _session_context(request, session)
    context.update({"errors": bool(errors), "mark_errors": errors, "mark_call": call_obj.pk})
    cv = next((c for c in context["page"].calls if c.call.pk == call_obj.pk), None)
    context["cv"] = cv
    return _answer(request, session, "call", context, trigger="drafting-marked")


@login_required
@require_POST
def drafting_draft(
    request: HtmxHttpRequest, project_id: int, item_id: int, pk: int
) -> HttpResponse:
    """Step 4: save the drafted question and answer to the item (409 when it changed)."""
    session = _session(request, project_id, item_id, pk)
    form = DraftForm(request.POST)
    status = 200
    saved = False
    if form.is_valid():
        data = form.cleaned_data
        checkpoint = None
        if data["add_checkpoint"]:
            checkpoint = services.CheckpointDraft(
                question=data["cp_question"],
                expected_answer=data["cp_answer"],
                description=data["cp_description"],
            )
        try:
            services.drafting_draft_save(
                session=session,
                user=request_user(request),
                query=data["query"],
                expected_answer=data["expected_answer"],
                match_type=data["match_type"],
                base_token=data["base"],
                checkpoint=checkpoint,
            )
        except Conflict as exc:
            status = exc.status_code
            form.add_error(None, exc.message)
            session.item.refresh_from_db()
            # Saving again from here overwrites what is shown as the other version.
            posted = request.POST.copy()
            posted["base"] = services.item_draft_token(session.item)
            form.data = posted
        except Forbidden as exc:  # e.g. a verifier of this item: nothing to fix in the form
            raise PermissionDenied(exc.message) from None
        except DomainError as exc:
            form.add_error(None, exc.message)
        else:
            saved = True
            session.item.refresh_from_db()
    if saved:
        context = _session_context(request, session, draft_saved=True)
    else:
        context = _session_context(
            request, session, draft_form=form, conflict=status == Conflict.status_code
        )
        context["errors"] = True
    return _answer(request, session, "step-draft", context, status=status)
