"""Forms for the benchmark pages: they validate input; services do the writing."""

from __future__ import annotations

from typing import Any, cast

from django import forms

from benchmark.kinds import KINDS
from benchmark.models import ItemStatus, Modality
from benchmark.selectors import ItemFacets, ItemFilters
from benchmark.widgets import ParentSelect

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

    def __init__(
        self,
        *args: Any,
        facets: ItemFacets | None = None,
        status_filter: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        if not status_filter:
            # item status is hidden from the user (annotators, in a project with gold items)
            del self.fields["status"]
        facets = facets or ItemFacets()
        category = cast(forms.ChoiceField, self.fields["category"])
        intent = cast(forms.ChoiceField, self.fields["intent"])
        category.choices = ANY + [(c, c) for c in facets.categories]
        # the intents of the chosen category only (ATP-Bench's intents sit under a category);
        # with JavaScript the menu follows the category before the form is sent
        chosen = str(self.data.get("category") or "") if self.is_bound else ""
        shown = [
            i
            for i in facets.intents
            if not chosen
            or chosen not in facets.categories
            or not facets.intent_categories.get(i)
            or chosen in facets.intent_categories[i]
        ]
        intent.choices = ANY + [(i, i) for i in shown]
        intent.widget = ParentSelect(
            parents=facets.intent_categories, attrs={"data-parent-select": "id_category"}
        )
        intent.widget.choices = intent.choices
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


def benchmark_choices() -> list[tuple[str, str]]:
    """The registered benchmark kinds, as the new-project form offers them."""
    return [(kind.name, kind.choice_label) for kind in KINDS]


def _source_choices(rows: Any, kind: str) -> list[tuple[str, str]]:
    """``use:<pk>`` for a built-in row, ``copy:<pk>`` for a copy of any row."""
    choices = [
        ("", f"The benchmark's built-in {kind}"),
        ("copy", f"A copy of the benchmark's built-in {kind}"),
    ]
    for row in rows:
        if row.builtin:
            choices.append((f"use:{row.pk}", f"{row.name} (built-in)"))
        choices.append((f"copy:{row.pk}", f"A copy of {row.name}"))
    return choices


class ProjectCreateForm(forms.Form):
    name = forms.CharField(max_length=200)
    data_format = forms.ChoiceField(label="Benchmark", choices=benchmark_choices)
    toolset = forms.ChoiceField(
        required=False,
        help_text="A built-in toolset is shared until the project first edits it; a copy is "
        "the project's own from the start.",
    )
    taxonomy = forms.ChoiceField(required=False)
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}))
    guidelines = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 8}),
        help_text="Markdown. Shown, folded, on every annotation screen of the project.",
    )

    def __init__(self, *args: Any, toolsets: Any = (), taxonomies: Any = (), **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._rows = {"toolset": list(toolsets), "taxonomy": list(taxonomies)}
        cast(forms.ChoiceField, self.fields["toolset"]).choices = _source_choices(
            self._rows["toolset"], "toolset"
        )
        cast(forms.ChoiceField, self.fields["taxonomy"]).choices = _source_choices(
            self._rows["taxonomy"], "taxonomy"
        )

    def _source(self, field: str) -> tuple[Any, bool]:
        """(row or None for the built-in one, copy it)."""
        value = self.cleaned_data.get(field) or ""
        if value in ("", "copy"):
            return None, value == "copy"
        how, _, pk = value.partition(":")
        row = next(r for r in self._rows[field] if str(r.pk) == pk)
        return row, how == "copy"

    def service_kwargs(self) -> dict[str, Any]:
        toolset, copy_toolset = self._source("toolset")
        taxonomy, copy_taxonomy = self._source("taxonomy")
        data = self.cleaned_data
        return {
            "name": data["name"],
            "data_format": data["data_format"],
            "toolset": toolset,
            "copy_toolset": copy_toolset,
            "taxonomy": taxonomy,
            "copy_taxonomy": copy_taxonomy,
            "description": data["description"],
            "guidelines": data["guidelines"],
        }


class ProjectEditForm(forms.Form):
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}))
    guidelines = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 14}),
        help_text="Markdown. Shown, folded, on every annotation screen of the project.",
    )


class ProjectModelForm(forms.Form):
    """The model the project drafts with (``project_model_set`` checks the values). Empty
    fields are the server's default. The API key is never typed here: only the name of an
    allow-listed environment variable that holds it."""

    prefix = "model"

    base_url = forms.CharField(
        max_length=500,
        required=False,
        label="Base URL",
        help_text="An OpenAI-compatible endpoint, e.g. http://127.0.0.1:11434/v1. Empty: the "
        "server's default.",
    )
    model = forms.CharField(
        max_length=200, required=False, label="Model name", help_text="Empty: the server's default."
    )
    api_key_env = forms.ChoiceField(
        required=False,
        label="API key variable",
        help_text="The server environment variable that holds the endpoint's key (the operator "
        "allows them in MODEL_API_KEY_ENV_ALLOWLIST). The key itself is never shown.",
    )
    cache = forms.ChoiceField(
        required=False,
        label="Cache mode",
        choices=[
            ("use", "use: answer repeated calls from the record"),
            ("off", "off"),
            ("replay", "replay: only recorded answers"),
        ],
    )
    concurrency = forms.IntegerField(required=False, label="Concurrency")
    rpm = forms.IntegerField(required=False, label="Requests per minute", help_text="0: no limit.")
    timeout = forms.FloatField(required=False, label="Timeout", help_text="Seconds per call.")
    price_per_1k_tokens = forms.FloatField(
        required=False,
        label="Price per 1k tokens",
        help_text="For the drafting cost figures.",
    )
    price_per_m_input = forms.FloatField(
        required=False,
        label="Price per million input tokens",
        help_text="With the output price: the cost so far of an evaluation of this model.",
    )
    price_per_m_output = forms.FloatField(required=False, label="Price per million output tokens")

    def __init__(self, *args: Any, key_names: list[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        choices = [("", "none")] + [(name, name) for name in key_names]
        current = self.initial.get("api_key_env")
        if current and current not in key_names:
            choices.append((current, f"{current} (no longer allowed)"))
        self.fields["api_key_env"].choices = choices  # type: ignore[attr-defined]

    @classmethod
    def initial_for(cls, settings: dict[str, Any] | None) -> dict[str, Any]:
        raw = (settings or {}).get("model") or {}
        if not isinstance(raw, dict):
            return {}
        return {name: raw.get(name) for name in cls.base_fields if raw.get(name) is not None}
