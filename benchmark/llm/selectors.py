"""Reads of model calls, scoped to what the user may see."""

from __future__ import annotations

from django.db.models import QuerySet

from benchmark.models import Item, ModelCall
from benchmark.typing import AnyUser


def model_call_list(*, user: AnyUser, item: Item | None = None) -> QuerySet[ModelCall]:
    """Model calls in the user's projects (or of ``item``), newest first."""
    if not user.is_authenticated:
        return ModelCall.objects.none()
    calls = ModelCall.objects.filter(project__memberships__user=user.pk)
    if item is not None:
        calls = calls.filter(item=item)
    return calls.order_by("-created_at", "-id")
