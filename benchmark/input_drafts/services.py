"""Writes of drafts: the browser's autosave, Discard, and the real save's clean-up."""

from __future__ import annotations

import json
from typing import Any

from benchmark.exceptions import DomainError, ValidationFailed
from benchmark.input_drafts.scopes import scope_check
from benchmark.models import InputDraft

#: The most a draft may hold, as JSON: the tag editor's working text of a 1 MB answer fits.
PAYLOAD_MAX_BYTES = 2 * 1024 * 1024


class DraftTooLarge(DomainError):
    status_code = 413


def _size_message(size: int) -> str:
    return (
        f"This unsaved input is too large to keep on the server ({size // 1024} KB; at most "
        f"{PAYLOAD_MAX_BYTES // 1024} KB). It is still kept in this browser; save it to keep it."
    )


def payload_size_check(size: int) -> None:
    """Refuse a body of ``size`` bytes before reading it."""
    if size > PAYLOAD_MAX_BYTES:
        raise DraftTooLarge(_size_message(size))


def _clean_payload(payload: Any) -> list[list[str]]:
    if not isinstance(payload, list) or not all(
        isinstance(pair, list)
        and len(pair) == 2
        and isinstance(pair[0], str)
        and isinstance(pair[1], str)
        for pair in payload
    ):
        raise ValidationFailed("A draft's payload is a list of [field name, value] pairs.")
    if any("\x00" in name or "\x00" in value for name, value in payload):
        raise ValidationFailed("A draft may not contain NUL characters.")
    return payload


def input_draft_save(*, user: Any, key: str, version: str, payload: Any) -> InputDraft:
    """Keep the user's input under ``key`` (one draft per user and key: the newest wins)."""
    scope_check(user=user, key=key)
    pairs = _clean_payload(payload)
    size = len(json.dumps(pairs, ensure_ascii=False).encode())
    payload_size_check(size)
    version = str(version or "")[:64]
    # The fields' own rules (no queries: the user is the request's, and one draft per user and
    # key is the database's constraint, which update_or_create keeps).
    InputDraft(key=key, version=version, payload=pairs).clean_fields(exclude=["user"])
    # update_or_create runs in its own transaction, locking the row it updates.
    draft, _ = InputDraft.objects.update_or_create(
        user=user, key=key, defaults={"version": version, "payload": pairs}
    )
    return draft


def input_draft_delete(*, user: Any, key: str) -> None:
    """Drop the user's draft under ``key``: they discarded it, or the real save succeeded (the
    save's view calls this after its service; no check: deleting one's own draft is always
    allowed, and there may be none)."""
    InputDraft.objects.filter(user=user, key=key).delete()
