"""The "Evaluate a model" form: the endpoint and model, the items, the settings the
project's protocol takes (its ``settings`` tuple decides which fields there are), workers;
and the pilot lists' actions (the item list's bulk actions on the checked items)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django import forms

from annotation.bulk_actions.forms import BulkActionForm
from review.evaluation import services

SETTING_FIELDS = ("mode", "plan_format", "strategy", "feedback", "shots", "max_rounds",
                  "max_tool_calls")  # fmt: skip


def _choices(values: Sequence[str]) -> list[tuple[str, str]]:
    return [(v, v) for v in values]


class EvaluationForm(forms.Form):
    base_url = forms.URLField(
        required=False,
        assume_scheme="http",
        max_length=500,
        label="Endpoint base URL",
        help_text="Any OpenAI-compatible endpoint (vLLM, Ollama, a hosted API). Empty: the "
        "project's model.",
    )
    model = forms.CharField(
        required=False, max_length=200, label="Model", help_text="Empty: the project's model."
    )
    items = forms.ChoiceField(label="Items")
    mode = forms.ChoiceField(
        choices=_choices(services.MODES), initial="atm", label="Mode",
        help_text="atm: atomic image tools by function calling; gen: the model writes Python.",
    )  # fmt: skip
    plan_format = forms.ChoiceField(
        choices=_choices(services.PLAN_FORMATS), initial="json", label="Plan format"
    )
    strategy = forms.ChoiceField(
        choices=_choices(services.STRATEGIES), initial="multi-step", label="Planning strategy"
    )
    feedback = forms.MultipleChoiceField(
        choices=_choices(services.FEEDBACK), required=False, label="Feedback",
        widget=forms.CheckboxSelectMultiple,
    )  # fmt: skip
    shots = forms.IntegerField(min_value=0, max_value=16, initial=0, label="Examples (N-shot)")
    max_rounds = forms.IntegerField(min_value=1, max_value=100, initial=15, label="Rounds at most")
    max_tool_calls = forms.IntegerField(
        min_value=0, max_value=200, initial=15, label="Tool calls at most"
    )
    replay = forms.BooleanField(
        required=False, label="Replay",
        help_text="Answer every model and tool call from the record only (no model server, "
        "no network); an item with a call never recorded fails naming it.",
    )  # fmt: skip
    workers = forms.IntegerField(
        min_value=1, max_value=services.MAX_WORKERS, initial=4, label="Workers",
        help_text="Items evaluated at once (the endpoint's concurrency limit still applies).",
    )  # fmt: skip
    price_in = forms.FloatField(
        required=False, min_value=0, max_value=services.PRICE_MAX,
        label="Price per million input tokens",
        help_text="With the output price, the run's cost so far is shown. Empty: the prices in "
        "the project's model settings when the run calls the project's model; else the cost "
        "is unknown.",
    )  # fmt: skip
    price_out = forms.FloatField(
        required=False, min_value=0, max_value=services.PRICE_MAX,
        label="Price per million output tokens",
    )  # fmt: skip

    def __init__(
        self,
        *args: Any,
        settings: Sequence[str],
        releases: Sequence[str],
        saved_filters: Sequence[str] = (),
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        items = self.fields["items"]
        assert isinstance(items, forms.ChoiceField)
        items.choices = [
            ("verified", "Verified items"),
            ("all", "All items (not discarded)"),
            *[(f"release:{name}", f"Release {name}") for name in releases],
            *[(f"filter:{name}", f"Saved filter {name}") for name in saved_filters],
        ]
        for name in SETTING_FIELDS:
            if name not in settings:
                del self.fields[name]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if (data.get("price_in") is None) != (data.get("price_out") is None):
            missing = "price_out" if data.get("price_out") is None else "price_in"
            self.add_error(
                missing,
                "Give both prices per million tokens (input and output), or neither.",
            )
        return data

    @property
    def setting_fields(self) -> list[forms.BoundField]:
        return [self[name] for name in SETTING_FIELDS if name in self.fields]

    def protocol_settings(self) -> dict[str, Any]:
        return {name: self.cleaned_data[name] for name in SETTING_FIELDS if name in self.fields}


class PilotActionForm(BulkActionForm):
    """The pilot lists' two actions on the checked items, through the item list's bulk
    actions: "Add to task" (a judgment task of the project that lists its items) and "Propose
    discarding" (a reason required; a proposal a reviewer decides, even when a reviewer
    makes it). The checkboxes are ``ids`` as on the item list."""

    ACTIONS = {"task": "Add to task", "discard": "Propose discarding"}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("auto_id", "pilot_%s")
        super().__init__(*args, **kwargs)
        action = self.fields["action"]
        assert isinstance(action, forms.ChoiceField)
        action.choices = list(self.ACTIONS.items())
        self.fields["reason"].widget.attrs["placeholder"] = "Reason (propose discarding)"

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        data["scope"] = "selected"  # only items checked on the lists
        return data

    def params(self) -> dict[str, Any]:
        return {**super().params(), "propose": self.cleaned_data.get("action") == "discard"}


class EvaluationJudgeForm(forms.Form):
    """Judges on a finished run's outputs: the judge model's endpoint and name (empty: the
    project's model, as on the judge page) and how many calls at once."""

    base_url = forms.URLField(
        required=False,
        assume_scheme="http",
        max_length=500,
        label="Judge endpoint base URL",
        help_text="An OpenAI-compatible endpoint. Empty: the project's model.",
    )
    model = forms.CharField(
        required=False, max_length=200, label="Judge model", help_text="Empty: the project's model."
    )
    workers = forms.IntegerField(
        min_value=1, max_value=services.MAX_WORKERS, initial=4, label="Workers",
        help_text=f"Calls at once (1–{services.MAX_WORKERS}).",
    )  # fmt: skip
