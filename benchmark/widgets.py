"""Form widgets shared by the apps' forms."""

from __future__ import annotations

from typing import Any

from django import forms


class ParentSelect(forms.Select):
    """A select whose options belong to values of another select (an intent to the
    categories it sits under): each option carries ``data-parents`` ("a|b"), and the select
    names its parent in ``data-parent-select``, so static/js/app.js hides the options of
    other parents as the parent changes. The server narrows the choices too (no JavaScript)."""

    def __init__(self, *args: Any, parents: dict[str, list[str]] | None = None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.parents = parents or {}

    def create_option(self, name: str, value: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
        option = super().create_option(name, value, *args, **kwargs)
        parents = self.parents.get(str(value))
        if parents:
            option["attrs"]["data-parents"] = "|".join(parents)
        return option
