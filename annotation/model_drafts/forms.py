"""Forms of model drafting: what to draft queries for, and a decision on a candidate."""

from __future__ import annotations

from typing import Any

from django import forms

from annotation.model_drafts.parse import RUBRIC_SIZE
from annotation.model_drafts.services import ACTIONS, MAX_QUERIES
from benchmark.models import Project, TaxonomyTerm, TermKind


def taxonomy_choices(project: Project) -> tuple[list[tuple[str, str]], list[Any]]:
    """The categories of the project's taxonomy, and its intents grouped by category."""
    if project.taxonomy_id is None:
        return [], []
    terms = list(
        TaxonomyTerm.objects.filter(
            taxonomy_id=project.taxonomy_id, kind__in=[TermKind.CATEGORY, TermKind.INTENT]
        )
        .select_related("parent")
        .order_by("position", "name")
    )
    categories = [(t.name, t.name) for t in terms if t.kind == TermKind.CATEGORY]
    groups: dict[str, list[tuple[str, str]]] = {name: [] for name, _ in categories}
    loose: list[tuple[str, str]] = []
    for term in terms:
        if term.kind != TermKind.INTENT:
            continue
        if term.parent is not None and term.parent.name in groups:
            groups[term.parent.name].append((term.name, term.name))
        elif (term.name, term.name) not in loose:
            loose.append((term.name, term.name))
    intents: list[Any] = [(name, choices) for name, choices in groups.items() if choices]
    if loose:
        intents.append(("Any category", loose))
    return categories, intents


class QueriesForm(forms.Form):
    category = forms.ChoiceField(label="Category")
    intent = forms.ChoiceField(label="Intent")
    n = forms.IntegerField(
        label="How many candidates",
        min_value=1,
        max_value=MAX_QUERIES,
        initial=5,
        error_messages={
            "min_value": f"n: ask for 1 to {MAX_QUERIES} queries",
            "max_value": f"n: ask for 1 to {MAX_QUERIES} queries",
        },
    )

    def __init__(self, *args: Any, project: Project, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        categories, intents = taxonomy_choices(project)
        self.fields["category"].choices = [("", "Choose a category"), *categories]  # type: ignore[attr-defined]
        self.fields["intent"].choices = [("", "Choose an intent"), *intents]  # type: ignore[attr-defined]


class DecideForm(forms.Form):
    action = forms.ChoiceField(choices=[(a, a) for a in ACTIONS])
    query = forms.CharField(required=False, strip=True, widget=forms.Textarea(attrs={"rows": 3}))

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for n in range(1, RUBRIC_SIZE + 1):
            self.fields[f"r{n}"] = forms.CharField(required=False, strip=True, label=f"r{n}")

    def rubric(self) -> list[str]:
        return [self.cleaned_data.get(f"r{n}") or "" for n in range(1, RUBRIC_SIZE + 1)]
