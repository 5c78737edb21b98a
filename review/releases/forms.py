from __future__ import annotations

from typing import Any

from django import forms
from django.db.models import QuerySet

from benchmark.models import ItemStatus
from review.releases.models import Release

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
    parquet = forms.BooleanField(
        required=False,
        label="Also write Parquet for Hugging Face datasets",
        help_text="parquet/ beside data/: typed columns with the images inside, loaded by"
        ' datasets.load_dataset("parquet", data_dir=…); the card points the Hub at it.',
    )


class ReleaseChoiceField(forms.ModelChoiceField):
    def label_from_instance(self, obj: Any) -> str:
        return f"{obj.label} {obj.name}"


class CompareForm(forms.Form):
    old = ReleaseChoiceField(queryset=Release.objects.none(), label="From release")
    new = ReleaseChoiceField(queryset=Release.objects.none(), label="To release")

    def __init__(self, *args: Any, releases: QuerySet[Release], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name in ("old", "new"):
            field = self.fields[name]
            assert isinstance(field, forms.ModelChoiceField)
            field.queryset = releases
