"""Forms of the drafting pages. They check the shape of the input; the services check the rest
and say what to fix."""

from __future__ import annotations

from typing import Any

from django import forms

from annotation.backward_drafting.models import DraftingVerdict
from annotation.backward_drafting.services import (
    DEFAULT_CROP_PROMPT,
    DEFAULT_DESCRIBE_PROMPT,
    MATCH_TYPES,
    MAX_QUERY,
    MAX_TEXT,
)
from benchmark.llm.forms import CACHE_CHOICES
from benchmark.llm.services import MAX_PROMPT_CHARS


def _prompt(initial: str) -> forms.CharField:
    return forms.CharField(
        max_length=MAX_PROMPT_CHARS,
        initial=initial,
        widget=forms.Textarea(attrs={"rows": 3}),
        error_messages={"required": "Write a prompt for the model."},
    )


def _cache() -> forms.ChoiceField:
    return forms.ChoiceField(required=False, choices=CACHE_CHOICES, label="Recorded answers")


class StartForm(forms.Form):
    """Start a session: the raw image to draft from, and the question that describes it."""

    source = forms.ChoiceField(
        choices=[],
        widget=forms.RadioSelect,
        label="Raw image",
        error_messages={
            "required": "Choose the raw image to draft from.",
            "invalid_choice": "Choose one of the item's images.",
        },
    )
    prompt = _prompt(DEFAULT_DESCRIBE_PROMPT)
    cache = _cache()

    def __init__(self, *args: Any, images: list[dict[str, Any]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["source"].choices = [(e["sha256"], e["label"]) for e in images]  # type: ignore[attr-defined]
        if len(images) == 1 and not self.is_bound:
            self.initial.setdefault("source", images[0]["sha256"])


class DescribeForm(forms.Form):
    prompt = _prompt(DEFAULT_DESCRIBE_PROMPT)
    cache = _cache()


class CropForm(forms.Form):
    """Step 2; the image editor's hidden inputs are ``crop-recipe`` and ``crop-box_px``."""

    ground_truth = forms.CharField(
        max_length=MAX_TEXT,
        label="The detail the model missed (your ground truth)",
        widget=forms.Textarea(
            attrs={"rows": 2, "placeholder": "e.g. the small blue sign on the lamp post reads …"}
        ),
        error_messages={"required": "Write down the detail the model missed."},
    )
    recipe = forms.CharField(required=False, widget=forms.HiddenInput)
    box_px = forms.CharField(required=False, widget=forms.HiddenInput)
    prompt = _prompt(DEFAULT_CROP_PROMPT)
    cache = _cache()


class MarkForm(forms.Form):
    perceives = forms.TypedChoiceField(
        choices=[("yes", "Yes"), ("no", "No")],
        coerce=lambda value: value == "yes",
        widget=forms.RadioSelect,
        label="Does the model perceive the detail?",
        error_messages={"required": "Say whether the model perceives the detail."},
    )
    verdict = forms.ChoiceField(
        choices=DraftingVerdict.choices,
        widget=forms.RadioSelect,
        label="Against your ground truth, the answer is",
        error_messages={"required": "Say whether the answer is correct or a hallucination."},
    )
    note = forms.CharField(
        required=False, max_length=MAX_TEXT, widget=forms.TextInput(attrs={"placeholder": "note"})
    )


class DraftForm(forms.Form):
    query = forms.CharField(
        max_length=MAX_QUERY,
        label="Question",
        widget=forms.Textarea(attrs={"rows": 3}),
        error_messages={"required": "Write the question that needs the visual manipulation."},
    )
    expected_answer = forms.CharField(
        max_length=MAX_TEXT,
        label="Answer",
        error_messages={"required": "Write the expected answer."},
    )
    match_type = forms.ChoiceField(
        required=False,
        choices=[("", "(keep)")] + [(m, m) for m in MATCH_TYPES],
        label="Match type",
    )
    base = forms.CharField(required=False, widget=forms.HiddenInput)
    add_checkpoint = forms.BooleanField(
        required=False, label="Start the reference trajectory with a V checkpoint from the crop"
    )
    cp_question = forms.CharField(
        required=False, max_length=MAX_TEXT, label="Checkpoint question about the crop"
    )
    cp_answer = forms.CharField(required=False, max_length=MAX_TEXT, label="Its expected answer")
    cp_description = forms.CharField(
        required=False,
        max_length=MAX_TEXT,
        label="Step intent",
        widget=forms.TextInput(attrs={"placeholder": "what the crop is for (optional)"}),
    )

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("add_checkpoint"):
            if not (data.get("cp_question") or "").strip():
                self.add_error("cp_question", "Write the question the crop answers.")
            if not (data.get("cp_answer") or "").strip():
                self.add_error("cp_answer", "Write the answer the crop shows.")
        return data
