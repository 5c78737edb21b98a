from __future__ import annotations

from typing import Any

from django import forms
from django.db.models import QuerySet

from benchmark.models import ItemStatus, Project
from review.releases.models import Release
from review.releases.services import BALANCED, DEFAULT_BALANCE_CAP

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
    #: m&m's projects only (the other fields are removed for other projects).
    subset = forms.ChoiceField(
        choices=[("", "All items with that status"), (BALANCED, "The tool-balanced subset")],
        required=False,
        label="Subset",
        help_text="m&m's: only the verified items the tool-balanced subset keeps "
        "(as on the Tool-balanced subset page, with the same share and seed).",
    )
    cap = forms.FloatField(
        min_value=1,
        max_value=100,
        initial=DEFAULT_BALANCE_CAP * 100,
        required=False,
        label="Largest share of any tool (%)",
    )
    seed = forms.IntegerField(min_value=0, initial=0, required=False)

    parquet = forms.BooleanField(
        required=False,
        label="Also write Parquet for Hugging Face datasets",
        help_text="parquet/ beside data/: typed columns with the images inside, loaded by"
        ' datasets.load_dataset("parquet", data_dir=…); the card points the Hub at it.',
    )

    def __init__(self, *args: Any, project: Project, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not project.benchmark.offers.balanced_subset:
            for name in ("subset", "cap", "seed"):
                del self.fields[name]


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
