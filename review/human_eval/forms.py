from __future__ import annotations

import secrets
from typing import Any

from django import forms

from review.human_eval.scales import SCALES
from review.human_eval.services import MAX_SEED


class HumanEvalForm(forms.Form):
    """A response-level evaluation: the scale, whose answers, how many, the seed, k."""

    scale = forms.ChoiceField(
        choices=[(s.key, s.title) for s in SCALES.values()],
        widget=forms.RadioSelect,
        initial="atp",
        label="Scale",
    )
    models = forms.MultipleChoiceField(
        choices=[], widget=forms.CheckboxSelectMultiple, required=False,
        label="Models whose answers people rate",
        help_text="None ticked: every model listed, as a judge run takes them.",
    )  # fmt: skip
    per_model = forms.IntegerField(
        min_value=1, required=False, label="Answers per model",
        help_text="Drawn at random with the seed (ATP-Bench rated 100 per model); for a "
        "pairwise task, the number of items compared, each giving one pair per two models "
        "that answered it. Leave empty for all.",
    )  # fmt: skip
    seed = forms.IntegerField(
        min_value=0, max_value=MAX_SEED, label="Seed",
        help_text="The same seed and choices draw the same sample again; it also sets the "
        "order in which each rater meets the answers, and is shown with the results.",
    )  # fmt: skip
    same_items = forms.BooleanField(
        required=False, initial=True, label="Same items for every model",
        help_text="Draw the items every chosen model answered, so each model is rated on the "
        "same queries; untick to draw each model's answers on their own.",
    )  # fmt: skip
    overlap = forms.IntegerField(
        min_value=1, max_value=50, initial=3, label="Raters per answer (k)",
        help_text="How many people rate each answer (or pair), blind to each other.",
    )  # fmt: skip
    name = forms.CharField(
        max_length=200, required=False,
        help_text="Raters see it: leave the models' names out. Empty: a default.",
    )  # fmt: skip

    def __init__(self, *args: Any, models: list[tuple[str, int]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["models"].choices = [  # type: ignore[attr-defined]
            (name, f"{name} ({n} answer{'s' if n != 1 else ''})") for name, n in models
        ]
        if not self.is_bound:
            # A fresh seed for each new task, shown (and editable) before it is used.
            self.fields["seed"].initial = secrets.randbelow(1_000_000)

    def clean_models(self) -> list[str]:
        """The ticked models, or every model offered when none is ticked (as judge runs
        treat an empty choice)."""
        chosen = list(self.cleaned_data.get("models") or [])
        return chosen or [str(name) for name, _ in self.fields["models"].choices]  # type: ignore[attr-defined]
