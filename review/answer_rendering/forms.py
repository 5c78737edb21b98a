"""The "Render answers" form."""

from __future__ import annotations

from typing import Any

from django import forms

from review.judges.forms import AnswerFilesField, model_choices


class RenderForm(forms.Form):
    models = forms.MultipleChoiceField(
        required=False,
        widget=forms.CheckboxSelectMultiple,
        label="Which answers",
        help_text="Tick one or several models; none ticked: every model's answers (with an "
        "upload: the uploaded models').",
        error_messages={"invalid_choice": "the project has no model answers of %(value)s"},
    )
    answers = AnswerFilesField(
        label="Upload answer files",
        help_text="JSON or JSONL in the formats 'Score model answers' reads; imported as the "
        "project's model answers before rendering starts.",
    )

    def __init__(self, *args: Any, models: list[tuple[str, int]] = (), **kwargs: Any) -> None:  # type: ignore[assignment]
        super().__init__(*args, **kwargs)
        field = self.fields["models"]
        assert isinstance(field, forms.MultipleChoiceField)
        field.choices = model_choices(models)
