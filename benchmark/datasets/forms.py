"""Forms of import and export: they validate input; services do the writing."""

from __future__ import annotations

from django import forms

from benchmark.formats import FormatError, label_studio, tabular
from benchmark.models import ItemStatus

PROJECT_FORMAT = "project"


class ImportForm(forms.Form):
    file = forms.FileField(
        label="Dataset file",
        help_text=(
            "A data file in the project's format (e.g. ATP-Bench .jsonl), or a .zip of a "
            "dataset folder with its images; or, to fill in images an earlier import left "
            "out, a .zip of the images alone (File format: images for items already here)."
        ),
        widget=forms.ClearableFileInput(
            attrs={"accept": ".jsonl,.json,.csv,.zip,.png,.jpg,.jpeg,.gif,.webp"}
        ),
    )
    source = forms.ChoiceField(
        label="File format",
        required=False,
        choices=[
            (PROJECT_FORMAT, "The project's own format"),
            (label_studio.NAME, "Label Studio JSON (task export)"),
            (tabular.NAMES[0], "JSON Lines with a column mapping"),
            (tabular.NAMES[1], "CSV with a column mapping"),
            ("images", "Images for items already here (a .zip of images, or one image)"),
        ],
    )
    mapping = forms.CharField(
        label="Field mapping (Label Studio, JSON Lines, CSV)",
        required=False,
        help_text=(
            "Label Studio data key (or column)=item field, comma-separated, e.g. "
            "question=query,cat=category. Empty: every item field under its own name "
            "(responses, plans and trajectories included)."
        ),
        widget=forms.TextInput(attrs={"placeholder": "question=query,cat=category"}),
    )
    task = forms.CharField(
        label="Judgment task (Label Studio annotations)",
        required=False,
        max_length=200,
        help_text=(
            "The judgment task whose values the annotations' choices are; they become "
            "judgments by the project's members with the annotators' email or username "
            "(members who may judge the task only; anyone else is listed, not credited). "
            "Empty: annotations are not imported."
        ),
    )
    user_map = forms.CharField(
        label="User map (Label Studio user id=username)",
        required=False,
        help_text=(
            "Label Studio's Export button names annotators by numeric user id: say who each "
            "is, e.g. 2=annotator1,3=annotator2 (Label Studio's /api/users/ page lists the "
            "ids). Each must be a member of this project who may judge the task."
        ),
        widget=forms.TextInput(attrs={"placeholder": "2=annotator1,3=annotator2"}),
    )
    labels = forms.CharField(
        label="Label mapping (Label Studio choice=task value)",
        required=False,
        help_text=(
            "For choices that differ from the task's values, e.g. Correct=yes,Incorrect=no. "
            "With a mapping every choice must map, or nothing is imported."
        ),
        widget=forms.TextInput(attrs={"placeholder": "Correct=yes,Incorrect=no"}),
    )

    def clean_mapping(self) -> str:
        text = self.cleaned_data.get("mapping", "").strip()
        try:
            label_studio.parse_mapping(text)
        except FormatError as exc:
            raise forms.ValidationError(exc.message) from None
        return text

    def clean_labels(self) -> str:
        text = self.cleaned_data.get("labels", "").strip()
        try:
            label_studio.parse_labels(text)
        except FormatError as exc:
            raise forms.ValidationError(exc.message) from None
        return text

    def clean_user_map(self) -> str:
        text = self.cleaned_data.get("user_map", "").strip()
        try:
            label_studio.parse_user_map(text)
        except FormatError as exc:
            raise forms.ValidationError(exc.message) from None
        return text

    def clean(self) -> dict:
        data = super().clean() or {}
        source = data.get("source")
        if data.get("mapping") and source not in (label_studio.NAME, *tabular.NAMES):
            self.add_error(
                "mapping", "a field mapping goes with Label Studio JSON, JSON Lines or CSV"
            )
        if data.get("task") and source != label_studio.NAME:
            self.add_error("task", "annotations come only with Label Studio JSON")
        if data.get("labels") and not data.get("task"):
            self.add_error("labels", "a label mapping goes with a judgment task")
        if data.get("user_map") and not data.get("task"):
            self.add_error("user_map", "a user map goes with a judgment task")
        return data


class ExportForm(forms.Form):
    status = forms.ChoiceField(required=False, choices=[("", "All statuses")] + ItemStatus.choices)
    images = forms.BooleanField(required=False, label="Include images (downloads a .zip)")
    format = forms.ChoiceField(
        required=False,
        choices=[
            ("", "The project's own format"),
            (label_studio.NAME, "Label Studio tasks + labeling config (.zip)"),
        ],
    )
    image_base_url = forms.CharField(
        required=False,
        max_length=500,
        label="Image base URL (Label Studio)",
        help_text=(
            "What image paths are appended to, so Label Studio can load them: e.g. "
            "https://files.example.org/bw/, or /data/local-files/?d=bw/ for Label Studio's "
            "local files. Empty: /data/local-files/?d= (the unzipped folder as its document "
            "root)."
        ),
    )
    with_judgments = forms.CharField(
        required=False,
        max_length=200,
        label="With the judgments of task (Label Studio)",
    )

    def clean_image_base_url(self) -> str:
        text = self.cleaned_data.get("image_base_url", "").strip()
        if text:
            try:
                label_studio.image_base(text)
            except FormatError as exc:
                raise forms.ValidationError(exc.message) from None
        return text

    def clean(self) -> dict:
        data = super().clean() or {}
        if data.get("format") != label_studio.NAME:
            for name in ("image_base_url", "with_judgments"):
                if data.get(name):
                    self.add_error(name, "goes with the Label Studio format")
        return data
