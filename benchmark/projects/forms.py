"""Forms for the benchmark pages: they validate input; services do the writing."""

from __future__ import annotations

from typing import Any, cast

from django import forms

from benchmark.models import ItemStatus, Modality
from benchmark.projects.selectors import ItemFacets, ItemFilters

ANY = [("", "Any")]


class ItemFilterForm(forms.Form):
    """Filters for a project's item list. Invalid values are reported and ignored."""

    q = forms.CharField(
        required=False,
        max_length=200,
        label="Search",
        widget=forms.TextInput(
            attrs={
                "type": "search",
                "placeholder": "Search query text or id",
                "autocomplete": "off",
            }
        ),
    )
    status = forms.ChoiceField(required=False, choices=ANY + ItemStatus.choices)
    category = forms.ChoiceField(required=False, choices=ANY)
    intent = forms.ChoiceField(required=False, choices=ANY)
    level = forms.TypedChoiceField(
        required=False,
        choices=ANY + [("1", "1"), ("2", "2"), ("3", "3")],
        coerce=int,
        empty_value=None,
    )
    modality = forms.ChoiceField(required=False, choices=ANY + Modality.choices)

    def __init__(self, *args: Any, facets: ItemFacets | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        facets = facets or ItemFacets()
        category = cast(forms.ChoiceField, self.fields["category"])
        intent = cast(forms.ChoiceField, self.fields["intent"])
        category.choices = ANY + [(c, c) for c in facets.categories]
        intent.choices = ANY + [(i, i) for i in facets.intents]
        if not facets.categories:
            self.fields["category"].disabled = True
        if not facets.intents:
            self.fields["intent"].disabled = True

    def filters(self) -> ItemFilters:
        """The valid filters; a field with an invalid value is left out."""
        data = self.cleaned_data if self.is_bound and hasattr(self, "cleaned_data") else {}
        return ItemFilters(
            status=data.get("status") or "",
            category=data.get("category") or "",
            intent=data.get("intent") or "",
            level=data.get("level"),
            modality=data.get("modality") or "",
            q=(data.get("q") or "").strip(),
        )


class RestoreForm(forms.Form):
    """Undoing a discard: why, optionally."""

    reason = forms.CharField(
        required=False,
        max_length=1000,
        label="Why",
        widget=forms.TextInput(attrs={"placeholder": "Why it is kept after all (optional)"}),
    )
