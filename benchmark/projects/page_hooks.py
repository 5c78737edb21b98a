"""What the apps built on ``benchmark`` add to the project page's context: a registry of
plain hooks (or their dotted paths), with no view imported, so that an app's ``ready()``
registers them without loading the project views (and all they import) in every process, a
data command's included. ``benchmark.projects.views`` calls them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.http import HttpRequest

PageHook = Callable[[HttpRequest, Any], dict[str, Any]]
_PAGE_HOOKS: list[PageHook | str] = []


def project_page_extend(hook: PageHook | str) -> None:
    """Add to the project page's context (``hook(request, project)`` or its dotted path,
    e.g. the bulk-action bar of ``annotation.bulk_actions``): registered from an app's
    ``ready()``, since ``benchmark`` does not import the apps built on it."""
    if hook not in _PAGE_HOOKS:
        _PAGE_HOOKS.append(hook)


def project_page_hooks() -> list[PageHook | str]:
    """The hooks registered, in order."""
    return list(_PAGE_HOOKS)
