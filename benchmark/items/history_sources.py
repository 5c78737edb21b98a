"""The sources of versions an item's history lists besides its fields' (the plans', answers'
and reference trajectory's, from ``annotation``): a registry of dotted paths (or callables),
with nothing imported, so that an app's ``ready()`` registers a source without loading the
history and item selectors in every process. ``benchmark.items.history`` reads it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

HistorySource = Callable[..., list[Any]]
_SOURCES: list[HistorySource | str] = []


def history_source_register(source: HistorySource | str) -> None:
    """Add a source of versions to the item's history (its dotted path, or the callable)."""
    if source not in _SOURCES:
        _SOURCES.append(source)
