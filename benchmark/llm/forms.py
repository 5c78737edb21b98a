"""The "Ask the model" form on an item's model page."""

from __future__ import annotations

from typing import Any

from django import forms

from benchmark.llm.services import MAX_PROMPT_CHARS

CACHE_CHOICES = [
    ("", "Use a recorded answer when there is one"),
    ("off", "Ask again, even if this was asked before"),
    ("replay", "Only replay a recorded answer"),
]


class AskModelForm(forms.Form):
    prompt = forms.CharField(
        max_length=MAX_PROMPT_CHARS,
        strip=True,
        widget=forms.Textarea(attrs={"rows": 5, "placeholder": "Ask about this item…"}),
        error_messages={"required": "Write a prompt for the model."},
    )
    images = forms.MultipleChoiceField(
        required=False, choices=[], widget=forms.CheckboxSelectMultiple
    )
    cache = forms.ChoiceField(required=False, choices=CACHE_CHOICES, label="Recorded answers")

    def __init__(self, *args: Any, images: list[dict[str, Any]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["images"].choices = [(e["sha256"], e["label"]) for e in images]  # type: ignore[attr-defined]
