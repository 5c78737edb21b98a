"""The settings page's two forms: one judge template's text, and the LLM-I reward weights.
They only parse; the rules (placeholders, stale versions, sums) are the services'."""

from __future__ import annotations

from django import forms

from review.judge_settings.selectors import WEIGHT_PRESETS


class TemplateForm(forms.Form):
    template = forms.CharField(max_length=100)
    base = forms.IntegerField(min_value=0)
    op = forms.ChoiceField(
        choices=[("save", "Save"), ("reset", "Reset to default")], initial="save"
    )
    # Kept exactly as typed (the service checks emptiness and length).
    system = forms.CharField(required=False, strip=False)
    user = forms.CharField(required=False, strip=False)
    note = forms.CharField(required=False, max_length=300)


class WeightsForm(forms.Form):
    base = forms.IntegerField(min_value=0)
    rule = forms.FloatField(required=False, label="w_rule")
    llm = forms.FloatField(required=False, label="w_llm")
    mllm = forms.FloatField(required=False, label="w_mllm")
    preset = forms.ChoiceField(
        required=False, choices=[("", "")] + [(p, p) for p in WEIGHT_PRESETS]
    )

    def clean(self) -> dict:
        data = super().clean() or {}
        if not data.get("preset"):
            missing = [f"w_{n}" for n in ("rule", "llm", "mllm") if data.get(n) is None]
            if missing and not self.errors:
                raise forms.ValidationError(f"give a number for {', '.join(missing)}")
        return data
