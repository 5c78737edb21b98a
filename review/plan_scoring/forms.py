"""Forms of the m&m's review pages."""

from __future__ import annotations

from django import forms


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
