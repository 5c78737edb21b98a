"""The "Judge answers" form."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django import forms

from review.judges.services import MAX_WORKERS
from review.judges.specs import ANSWERS, JudgeSpec, Subject


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class AnswerFilesField(forms.FileField):
    """Several answer files at once (Django's documented pattern); none is fine."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("widget", MultipleFileInput(attrs={"accept": ".json,.jsonl"}))
        kwargs.setdefault("required", False)
        super().__init__(*args, **kwargs)

    def clean(self, data: Any, initial: Any = None) -> Any:
        single = super().clean
        if not data:
            return []
        if isinstance(data, list | tuple):
            return [single(d, initial) for d in data if d]
        return [single(data, initial)]


def model_choices(models: list[tuple[str, int]], noun: str = "answer") -> list[tuple[str, str]]:
    """``(model, count)`` as checkbox choices: "model-a (3 answers)"."""
    return [(name, f"{name} ({n} {noun}{'s' if n != 1 else ''})") for name, n in models]


class JudgeRunForm(forms.Form):
    judge = forms.ChoiceField(widget=forms.RadioSelect)
    base_url = forms.URLField(
        required=False,
        assume_scheme="http",
        max_length=500,
        label="Endpoint base URL",
        help_text="An OpenAI-compatible endpoint (vLLM, Ollama, a hosted API). Empty: the "
        "project's model.",
    )
    model = forms.CharField(
        required=False,
        max_length=200,
        label="Judge model",
        help_text="Empty: the project's model.",
    )
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
        help_text="JSON or JSONL in the formats 'Score model answers' reads (LLM-I's "
        "evaluation results keep their released scores); imported as the project's model "
        "answers before the run starts.",
    )
    workers = forms.IntegerField(
        min_value=1,
        max_value=MAX_WORKERS,
        initial=4,
        label="Workers",
        help_text=f"Calls at once (1–{MAX_WORKERS}), within the endpoint's own limit.",
    )

    def __init__(
        self,
        *args: Any,
        judges: Sequence[JudgeSpec] = (),
        subject: Subject = ANSWERS,
        models: list[tuple[str, int]] = (),  # type: ignore[assignment]
        plans: int | None = None,
        **kwargs: Any,
    ) -> None:
        """``judges``: the judges the project's runs may use (``review.judges.specs.
        judges_for``), all rating ``subject``. ``models``: ``(model, number of answers)``, or
        for judges of plans (``plans``: the project's number of ground-truth plans) ``(model,
        number of predicted plans)``: plans are judged, and nothing is uploaded."""
        super().__init__(*args, **kwargs)
        judge = self.fields["judge"]
        assert isinstance(judge, forms.ChoiceField)
        judge.choices = [(spec.name, spec.label) for spec in judges]
        names = ", ".join(spec.name for spec in judges)
        if not judges:
            none = "no model judge runs over this project"
            judge.error_messages.update(required=none, invalid_choice=none)
        elif len(judges) == 1:
            only = judges[0]
            judge.error_messages["required"] = f"choose a judge: {names}"
            judge.error_messages["invalid_choice"] = (
                f"this project's {subject.plural} are judged by {only.label} ({only.name}) only"
            )
        else:
            judge.error_messages["required"] = f"choose a judge: {names}"
            judge.error_messages["invalid_choice"] = (
                f"unknown judge %(value)s; choose one of {names}"
            )
        field = self.fields["models"]
        assert isinstance(field, forms.MultipleChoiceField)
        field.choices = model_choices(models, subject.noun)
        if subject.uploads:
            return
        field.label = f"Which {subject.plural}"
        if plans is not None:
            field.help_text = (
                f"Tick one or several models to judge the {subject.plural} they predicted; none "
                f"ticked: the project's {plans} ground-truth {subject.noun}"
                f"{'s' if plans != 1 else ''} (each item's {subject.noun} and its alternatives)."
            )
        field.error_messages["invalid_choice"] = (
            f"the project has no {subject.plural} predicted by %(value)s"
        )
        del self.fields["answers"]
