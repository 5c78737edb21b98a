"""Reads of model calls, scoped to what the user may see: the user's projects, without the
calls (and model-call jobs) about an item whose answer is hidden from the user
(:mod:`benchmark.visibility`: a drafting conversation gives the answer away)."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet

from benchmark import visibility
from benchmark.jobs import selectors as job_selectors
from benchmark.models import Item, Job, ModelCall
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


def model_call_job_get(*, user: AnyUser, pk: int) -> Job:
    """A job for the model-call pages: 404 when the user may not see it, 403 saying why when
    it asked about an item whose answer is hidden from the user."""
    job = job_selectors.job_get(user=user, pk=pk)
    if visibility.job_is_hidden(user=user, job=job):
        raise PermissionDenied(
            "This model call is about an item you verify blind: its prompt and answer would "
            "give the item's answer away. It opens once you have answered the question."
        )
    return job
