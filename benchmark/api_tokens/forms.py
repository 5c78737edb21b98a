"""The form of the API tokens page: it validates input; services write."""

from __future__ import annotations

from django import forms

from benchmark.api_tokens.services import MAX_EXPIRY_DAYS, MAX_NAME


class ApiTokenCreateForm(forms.Form):
    name = forms.CharField(
        max_length=MAX_NAME,
        help_text="What it is for, e.g. 'laptop' or 'CI'.",
        widget=forms.TextInput(attrs={"autocomplete": "off"}),
    )
    expires_days = forms.IntegerField(
        label="Expires after (days)",
        required=False,
        min_value=1,
        max_value=MAX_EXPIRY_DAYS,
        help_text="Leave empty for a token that works until you revoke it.",
    )
