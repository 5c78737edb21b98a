from __future__ import annotations

import json
from typing import Any

from django import forms

from annotation.models import JudgmentTask, Scheme


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
                value = json.loads(value)
            except ValueError:
                pass
        if value is None and self.task.scheme == Scheme.BINARY:
            value = {"accepted": 1, "rejected": 0}.get(data["verdict"])
        return {"verdict": data["verdict"], "value": value, "reason": data.get("reason") or ""}


class BalanceForm(forms.Form):
    cap = forms.FloatField(
        min_value=1, max_value=100, initial=15, label="Largest share of any tool (%)"
    )
    seed = forms.IntegerField(min_value=0, initial=0)


class ScorePlansForm(forms.Form):
    predictions = forms.FileField(help_text='JSONL, one {"id", "prediction"} per line')
    plan_format = forms.ChoiceField(
        choices=[("auto", "Detect per line"), ("json", "JSON"), ("code", "Python code")],
        initial="auto",
    )
    best_match = forms.BooleanField(required=False, label="Best match over alternative plans")
    only_verified = forms.BooleanField(required=False, initial=True, label="Verified items only")
