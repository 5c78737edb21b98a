from __future__ import annotations

from django import forms

from benchmark.models import ItemStatus

ALL = "all"


class ReleaseForm(forms.Form):
    name = forms.CharField(max_length=200, help_text="Unique within the project, e.g. “v1.0”.")
    status = forms.ChoiceField(
        choices=[*ItemStatus.choices, (ALL, "All items")],
        initial=ItemStatus.VERIFIED,
        label="Items with status",
    )
    named = forms.BooleanField(
        required=False,
        label="Name annotators in provenance",
        help_text="By default they appear as annotator-1, annotator-2, …",
    )
