"""Notices the apps built on ``benchmark`` put on an item's page (a failed oracle test, ...).

``benchmark`` may not import those apps, so it keeps only the registry: an app registers a
source in its ``AppConfig.ready()``,
``source(user=..., project=..., item=...) -> list[ItemNotice]``. The item
page asks the sources only for an item whose answer the user may see (a notice about the
item's reference or answer would give it away to a blind verifier).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from django.utils.module_loading import import_string

from benchmark.models import Item, Project
from benchmark.typing import AnyUser


@dataclass(frozen=True)
class ItemNotice:
    kind: str
    """A short name, the page's CSS hook (``item-notice-<kind>``)."""
    title: str
    text: str
    url: str = ""
    link_text: str = ""


NoticeSource = Callable[..., "list[ItemNotice]"]
"""Called as ``source(user=user, project=project, item=item)`` (the item's project, so a
source can tell at no cost whether it has anything to say about that kind of project)."""

_SOURCES: list[NoticeSource | str] = []


def register_item_notice_source(source: NoticeSource | str) -> None:
    """Add a source (once); a dotted path is imported on first use, so the app registering
    it need not import the source's module when it starts."""
    if source not in _SOURCES:
        _SOURCES.append(source)


def item_notices(*, user: AnyUser, project: Project, item: Item) -> list[ItemNotice]:
    """Every registered source's notices about ``item`` for ``user``; none for an item whose
    answer is hidden from the user (``answer_hidden``, set by the item selectors)."""
    if getattr(item, "answer_hidden", False):
        return []
    notices: list[ItemNotice] = []
    for source in _SOURCES:
        if isinstance(source, str):
            source = import_string(source)
        notices.extend(source(user=user, project=project, item=item))
    return notices
