from __future__ import annotations

from typing import Any

from django import forms

from annotation.judgment_tasks.models import JudgmentTask, Scheme
from benchmark import limits


class DecisionForm(forms.Form):
    verdict = forms.ChoiceField(
        choices=[("accepted", "Accept"), ("rejected", "Reject"), ("discarded", "Discard")],
        widget=forms.RadioSelect,
    )
    value = forms.CharField(required=False, max_length=500)
    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), required=False)

    def __init__(self, *args: Any, task: JudgmentTask, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.task = task

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("verdict") == "discarded" and not (data.get("reason") or "").strip():
            self.add_error("reason", "Say why the item is discarded.")
        return data

    def decision_kwargs(self) -> dict[str, Any]:
        data = self.cleaned_data
        value: Any = data.get("value") or None
        if value is not None and self.task.scheme != Scheme.TEXT:
            try:
                value = limits.json_loads(value)
            except ValueError:
                pass
        if value is None and self.task.scheme == Scheme.BINARY:
            value = {"accepted": 1, "rejected": 0}.get(data["verdict"])
        return {"verdict": data["verdict"], "value": value, "reason": data.get("reason") or ""}


class JointDecisionForm(forms.Form):
    verdict = forms.ChoiceField(
        choices=[
            ("accepted", "Accept: the item's answer stands, the item is verified"),
            ("discarded", "Discard: the disagreement cannot be resolved"),
        ],
        widget=forms.RadioSelect,
    )
    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), required=False)

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("verdict") == "discarded" and not (data.get("reason") or "").strip():
            self.add_error("reason", "Say why the item is discarded.")
        return data


class ReviseAnswerForm(forms.Form):
    expected_answer = forms.CharField(max_length=2000)
    accepted_variants = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}),
        required=False,
        help_text="One accepted variant per line.",
    )
    match_type = forms.ChoiceField(
        choices=[("contains", "contains"), ("exact", "exact"), ("numeric", "numeric")]
    )
    tolerance = forms.FloatField(required=False, min_value=0)
    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), required=False)
    stamp = forms.CharField(widget=forms.HiddenInput, required=False)


class DiscardProposalDecisionForm(forms.Form):
    """A reviewer's decision on a proposal to discard an item."""

    decision = forms.ChoiceField(
        choices=[("accept", "Accept: discard the item"), ("reject", "Reject: keep the item")],
        error_messages={
            "required": "Choose accept or reject.",
            "invalid_choice": "Choose accept or reject.",
        },
    )
    note = forms.CharField(
        required=False,
        max_length=1000,
        widget=forms.TextInput(attrs={"placeholder": "Note (optional)"}),
    )
