"""Reads of drafts: a user reads only their own, and only for an object they may edit."""

from __future__ import annotations

from typing import Any

from benchmark.exceptions import NotFound
from benchmark.input_drafts.scopes import scope_check
from benchmark.models import InputDraft


def input_draft_get(*, user: Any, key: str) -> InputDraft:
    """The user's draft under ``key`` (404 when they have none: another user's draft under the
    same key is not theirs to read)."""
    scope_check(user=user, key=key)
    draft = InputDraft.objects.filter(user=user, key=key).first()
    if draft is None:
        raise NotFound("You have no unsaved input here.")
    return draft
