"""Reads of model calls, scoped to what the user may see: the user's projects, without the
calls (and model-call jobs) about an item whose answer is hidden from the user
(:mod:`benchmark.visibility`: a drafting conversation gives the answer away)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from django.db.models import BigIntegerField, Q, QuerySet
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Cast

from benchmark import selectors, visibility
from benchmark.llm.client import ModelError, ModelNotConfigured
from benchmark.llm.services import HOW_TO_CONFIGURE, model_resolve
from benchmark.models import Item, Job, ModelCall, Project
from benchmark.typing import AnyUser


def model_call_list(*, user: AnyUser, item: Item | None = None) -> QuerySet[ModelCall]:
    """Model calls in the user's projects (or of ``item``), newest first."""
    if not user.is_authenticated:
        return ModelCall.objects.none()
    calls = ModelCall.objects.filter(project__memberships__user=user.pk)
    if item is not None:
        calls = calls.filter(item=item)
    calls = visibility.exclude_hidden_attachments(calls, user=user)
    return calls.order_by("-created_at", "-id")


def model_call_jobs_visible(*, user: AnyUser, jobs: QuerySet[Job]) -> QuerySet[Job]:
    """The model-call kind's scope (see ``benchmark.jobs.kinds``): a model-call job shows
    its prompt and the model's answer, so it is visible to whoever may view its item (and,
    for a call about no item, to the project's members, which ``jobs`` already are).

    This is the one hook for the item-visibility rules (a blind verifier must not see what
    the author asked about the item): item visibility is decided by the items selector
    ``benchmark.selectors.item_list``; when it (or ``benchmark.visibility``) hides
    an item from a user, that user's view of the item's model-call jobs follows here, and so
    does ``benchmark.visibility``'s rule: a call about an item whose answer is hidden from the
    user (a blind verifier) is not theirs to see."""
    visible_items = selectors.item_list(user=user).values("pk")
    jobs = visibility.exclude_hidden_jobs(jobs, user=user)
    return jobs.annotate(
        about_item=Cast(KeyTextTransform("item_id", "params"), BigIntegerField())
    ).filter(
        Q(params__item_id=None)  # JSON null
        | Q(params__item_id__isnull=True)  # no such key
        | Q(about_item__in=visible_items)
    )


def model_context(project: Project) -> dict[str, Any]:
    """The project's model (``model``), or why there is none (``model_error``), and how to
    configure one (``how_to``); ``model_host`` is the host of its endpoint."""
    try:
        resolved = model_resolve(project=project)
    except ModelNotConfigured as exc:
        return {"model": None, "model_error": str(exc), "how_to": HOW_TO_CONFIGURE}
    host = urlsplit(resolved.config.base_url).netloc if resolved is not None else ""
    return {
        "model": resolved,
        "model_host": host,
        "model_error": "",
        "how_to": HOW_TO_CONFIGURE,
    }


def model_placeholder(*, project: Project) -> dict[str, str]:
    """The project's model as a form's placeholder (the judge and evaluation forms): its base
    URL and name, never its key; ``error`` says why there is none."""
    try:
        resolved = model_resolve(project=project)
    except ModelError as exc:
        return {"base_url": "", "model": "", "error": str(exc)}
    if resolved is None:
        return {"base_url": "", "model": "", "error": "the project has no model configured"}
    return {"base_url": resolved.config.base_url, "model": resolved.config.model, "error": ""}
