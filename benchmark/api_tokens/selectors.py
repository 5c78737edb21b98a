"""Reads of API tokens, scoped to their owner: another user's token answers 404."""

from __future__ import annotations

from django.db.models import QuerySet, Sum
from django.shortcuts import get_object_or_404

from benchmark.models import ApiToken
from benchmark.typing import AnyUser


def api_token_list(*, user: AnyUser) -> QuerySet[ApiToken]:
    """``user``'s own tokens, newest first, each with ``n_requests`` (every use counted)."""
    if not user.is_authenticated:
        return ApiToken.objects.none()
    return (
        ApiToken.objects.filter(user_id=user.pk)
        .annotate(n_requests=Sum("uses__requests"))
        .order_by("-created_at", "-id")
    )


def api_token_get(*, user: AnyUser, pk: int) -> ApiToken:
    """One of ``user``'s own tokens; any other id answers 404."""
    return get_object_or_404(ApiToken.objects.select_related("user"), pk=pk, user_id=user.pk)
