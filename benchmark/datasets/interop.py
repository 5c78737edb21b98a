"""Hooks for interchange formats whose data reaches past benchmark (Label Studio annotations
are judgments, which live in annotation). benchmark may not import annotation, so annotation
registers its side here from ``AppConfig.ready()``, as it registers state rules and history
sources; the import/export commands call the hook by name.

Hooks:

- ``label_studio.judgments_import(project=, annotations=, task_name=, labels=, user_map=)``
  -> report dict
- ``label_studio.judgments_check(project=, task_name=, labels=, user_map=)``: ValidationFailed
  when the task cannot take annotations, the labels do not map onto its values or the user
  map names an account that is not a member of the project who may judge
- ``label_studio.judgments_export(project=, task_name=)`` -> (judgments by item id, choices)
- ``release.tool_records_import(project=, root=, id_by_external=)`` -> how many tool records of
  the release folder ``root`` were added to the project (evaluation records live in review)
- ``release.tool_records_write(project_id=, item_ids=, root=)`` -> ``RecordsWritten``: the
  items' tool records written into the release folder ``root`` (used by review.releases)
- ``release.model_calls_import(project=, root=, id_by_external=)`` -> how many model calls
  of the release folder ``root`` (its evaluations' model-call cache) were added to the project
- ``release.model_calls_write(project_id=, item_ids=, root=)`` -> how many model calls the
  project's evaluations made on the items were written into the release folder ``root``
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.utils.module_loading import import_string

from benchmark.exceptions import ValidationFailed

_hooks: dict[str, Callable[..., Any] | str] = {}


def interop_hook_register(name: str, hook: Callable[..., Any] | str) -> None:
    """Register ``hook`` (or its dotted path) under ``name``."""
    _hooks[name] = hook


def interop_hook(name: str) -> Callable[..., Any]:
    """The hook registered under ``name``; ValidationFailed when no app provides it."""
    hook = _hooks.get(name)
    if hook is None:
        raise ValidationFailed(f"nothing handles {name!r} (is the annotation app installed?)")
    return import_string(hook) if isinstance(hook, str) else hook
