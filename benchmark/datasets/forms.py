"""Forms of import and export: they validate input; services do the writing."""

from __future__ import annotations

from django import forms

from benchmark.models import ItemStatus


class ImportForm(forms.Form):
    file = forms.FileField(
        label="Dataset file",
        help_text=(
            "A data file in the project's format (e.g. ATP-Bench .jsonl), or a .zip of a "
            "dataset folder with its images."
        ),
        widget=forms.ClearableFileInput(attrs={"accept": ".jsonl,.json,.zip"}),
    )


class ExportForm(forms.Form):
    status = forms.ChoiceField(required=False, choices=[("", "All statuses")] + ItemStatus.choices)
    images = forms.BooleanField(required=False, label="Include images (downloads a .zip)")
