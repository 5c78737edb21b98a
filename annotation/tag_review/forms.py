"""Forms of the tag review screen: the working state carried by the page, and the discard form."""

from __future__ import annotations

from typing import Any

from django import forms

from annotation.tag_review.services import DISCARD_REASONS
from benchmark import limits


class WorkingStateForm(forms.Form):
    """The answer being edited, the version it was opened on, the decisions so far and the
    mark of each card, all carried in hidden fields between edits."""

    text = forms.CharField(required=False, strip=False, widget=forms.HiddenInput)
    base = forms.IntegerField(min_value=1, widget=forms.HiddenInput)
    decisions = forms.CharField(required=False, widget=forms.HiddenInput)
    marks = forms.CharField(required=False, widget=forms.HiddenInput)
    preview = forms.CharField(required=False, widget=forms.HiddenInput)

    def _json_list(self, name: str) -> list[Any]:
        raw = self.cleaned_data.get(name) or "[]"
        try:
            value = limits.json_loads(raw)
        except ValueError:
            raise forms.ValidationError(f"{name} is not valid JSON") from None
        if not isinstance(value, list):
            raise forms.ValidationError(f"{name} must be a list")
        return value

    def clean_decisions(self) -> list[Any]:
        return self._json_list("decisions")

    def clean_marks(self) -> list[str]:
        return [str(m) for m in self._json_list("marks")]


class DiscardForm(forms.Form):
    reason = forms.ChoiceField(choices=[("", "Choose a reason…"), *DISCARD_REASONS])
    detail = forms.CharField(
        required=False, max_length=1000, widget=forms.TextInput(attrs={"placeholder": "Details"})
    )

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("reason") == "other" and not (data.get("detail") or "").strip():
            self.add_error("detail", "Say why the sample is discarded.")
        return data
