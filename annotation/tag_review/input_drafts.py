"""The tag editor's drafts (``benchmark.input_drafts``), keyed
``tag-review:project:<id>:item:<id>:response:<id>``: its working state (text, decisions, marks,
the note) as the page's form holds it."""

from __future__ import annotations

from typing import Any

from annotation.tag_review import selectors as tag_selectors
from benchmark import permissions, selectors
from benchmark.input_drafts.scopes import expect_parts, int_part

SCOPE = "tag-review"


def key(*, project_id: int, item_id: int, response_id: int) -> str:
    return f"{SCOPE}:project:{project_id}:item:{item_id}:response:{response_id}"


def check(*, user: Any, parts: list[str]) -> None:
    """Whoever may save a version of the answer (the same rules as the save)."""
    expect_parts(parts, "project", None, "item", None, "response", None)
    project = selectors.project_get(user=user, pk=int_part(parts, 1))
    response = tag_selectors.response_get(
        user=user, project=project, item_pk=int_part(parts, 3), pk=int_part(parts, 5)
    )
    permissions.require(user=user, project=project, action="edit", item=response.item)
