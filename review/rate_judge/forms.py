from __future__ import annotations

from typing import Any

from django import forms

from review.judges.models import JudgeRun
from review.rate_judge.units import agent_name

SAMPLE_HELP = (
    "Rate only this many answers, drawn at random (ATP-Bench sampled 400 from all models); "
    "leave empty to rate every answer."
)


def run_label(run: JudgeRun) -> str:
    return f"#{run.pk} · {run.get_judge_display()} · {run.model}"


class RunChoiceField(forms.ModelChoiceField):
    def label_from_instance(self, obj: Any) -> str:
        return run_label(obj)


class _TaskFields(forms.Form):
    overlap = forms.IntegerField(
        min_value=1, max_value=50, initial=3, label="Raters per unit (k)",
        help_text="How many people rate each unit, blind to each other.",
    )  # fmt: skip
    sample = forms.IntegerField(min_value=1, required=False, label="Sample of answers",
                                help_text=SAMPLE_HELP)  # fmt: skip
    seed = forms.IntegerField(initial=0, required=False, label="Sample seed")
    name = forms.CharField(max_length=200, required=False, help_text="Leave empty for a default.")


class RateJudgeForm(_TaskFields):
    """A "rate the judge" task: which run, which of its agents, k, and a sample."""

    run = RunChoiceField(queryset=JudgeRun.objects.none(), label="Judge run")
    agents = forms.MultipleChoiceField(
        choices=[], widget=forms.CheckboxSelectMultiple, label="Agents whose reports people rate"
    )
    field_order = ["run", "agents", "overlap", "sample", "seed", "name"]

    def __init__(self, *args: Any, runs: Any, labels: dict[str, int], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["run"].queryset = runs  # type: ignore[attr-defined]
        self.fields["agents"].choices = [  # type: ignore[attr-defined]
            (label, f"{agent_name(label)} ({n} report{'s' if n != 1 else ''})")
            for label, n in labels.items()
        ]
        if not self.is_bound:
            self.fields["agents"].initial = list(labels)


class CriterionTaskForm(_TaskFields):
    """People score rubric criteria of answers themselves: a judge run's answers, or models'."""

    run = RunChoiceField(
        queryset=JudgeRun.objects.none(), required=False, label="Answers of a judge run"
    )
    models = forms.MultipleChoiceField(
        choices=[], required=False, widget=forms.CheckboxSelectMultiple,
        label="Or the answers of these models",
    )  # fmt: skip
    criteria = forms.CharField(
        required=False, max_length=200,
        help_text="Only these criteria, e.g. r1, r3; leave empty for all of each item's criteria.",
    )  # fmt: skip
    field_order = ["run", "models", "criteria", "overlap", "sample", "seed", "name"]

    def __init__(self, *args: Any, runs: Any, models: list[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["run"].queryset = runs  # type: ignore[attr-defined]
        self.fields["models"].choices = [(m, m) for m in models]  # type: ignore[attr-defined]

    def clean_criteria(self) -> list[str]:
        text = self.cleaned_data.get("criteria") or ""
        return [c.strip() for c in text.replace(";", ",").split(",") if c.strip()]
