from __future__ import annotations

from django import forms


class OracleStartForm(forms.Form):
    model = forms.CharField(
        max_length=200,
        required=False,
        label="Model",
        help_text="Empty: the project's model.",
    )
    base_url = forms.CharField(
        max_length=500,
        required=False,
        label="Base URL",
        help_text="Another OpenAI-compatible endpoint (…/v1), admins only. Empty: the "
        "project's endpoint.",
    )
    items = forms.CharField(
        required=False,
        label="Items",
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="Item ids (the task ids, e.g. 0003 0005), separated by spaces, commas or new "
        "lines. Empty: every item with a reference trajectory that is not discarded.",
    )
