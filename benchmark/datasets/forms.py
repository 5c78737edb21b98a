"""Forms of import and export: they validate input; services do the writing."""

from __future__ import annotations

from django import forms

from benchmark.formats import FormatError, label_studio
from benchmark.models import ItemStatus

PROJECT_FORMAT = "project"


class ImportForm(forms.Form):
    file = forms.FileField(
        label="Dataset file",
        help_text=(
            "A data file in the project's format (e.g. ATP-Bench .jsonl), or a .zip of a "
            "dataset folder with its images."
        ),
        widget=forms.ClearableFileInput(attrs={"accept": ".jsonl,.json,.zip"}),
    )
    source = forms.ChoiceField(
        label="File format",
        required=False,
        choices=[
            (PROJECT_FORMAT, "The project's own format"),
            (label_studio.NAME, "Label Studio JSON (task export)"),
        ],
    )
    mapping = forms.CharField(
        label="Field mapping (Label Studio)",
        required=False,
        help_text=(
            "Label Studio data key=item field, comma-separated, e.g. "
            "question=query,cat=category. Empty: every item field under its own name."
        ),
        widget=forms.TextInput(attrs={"placeholder": "question=query,cat=category"}),
    )

    def clean_mapping(self) -> str:
        text = self.cleaned_data.get("mapping", "").strip()
        try:
            label_studio.parse_mapping(text)
        except FormatError as exc:
            raise forms.ValidationError(exc.message) from None
        return text

    def clean(self) -> dict:
        data = super().clean() or {}
        if data.get("mapping") and data.get("source") != label_studio.NAME:
            self.add_error("mapping", "a field mapping goes with Label Studio JSON")
        return data


class ExportForm(forms.Form):
    status = forms.ChoiceField(required=False, choices=[("", "All statuses")] + ItemStatus.choices)
    images = forms.BooleanField(required=False, label="Include images (downloads a .zip)")
