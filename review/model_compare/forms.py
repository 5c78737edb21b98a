"""The "Compare two models" form."""

from __future__ import annotations

from typing import Any

from django import forms

from review.judges.forms import model_choices
from review.judges.services import MAX_WORKERS


class ModelCompareForm(forms.Form):
    model_a = forms.ChoiceField(label="Model A")
    model_b = forms.ChoiceField(label="Model B")
    base_url = forms.URLField(
        required=False,
        assume_scheme="http",
        max_length=500,
        label="Endpoint base URL",
        help_text="An OpenAI-compatible endpoint. Empty: the project's model.",
    )
    model = forms.CharField(
        required=False,
        max_length=200,
        label="Judge model",
        help_text="Empty: the project's model. A judge model that is also model A or B is "
        "measured for self-preference.",
    )
    workers = forms.IntegerField(min_value=1, max_value=MAX_WORKERS, initial=4)

    def __init__(self, *args: Any, models: list[tuple[str, int]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        choices = model_choices(models)
        for name in ("model_a", "model_b"):
            field = self.fields[name]
            assert isinstance(field, forms.ChoiceField)
            field.choices = choices

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("model_a") and data.get("model_a") == data.get("model_b"):
            self.add_error("model_b", "Choose a model other than model A.")
        return data
