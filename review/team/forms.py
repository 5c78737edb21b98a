"""The team page's filters: one judgment task or all, and the date range."""

from __future__ import annotations

from django import forms

from annotation.judgment_tasks.models import JudgmentTask

DAYS = [("all", "All days"), ("30", "Last 30 days"), ("7", "Last 7 days")]


class TeamFilterForm(forms.Form):
    task = forms.ChoiceField(required=False, label="Task")
    days = forms.ChoiceField(choices=DAYS, required=False, label="Days")

    def __init__(self, *args: object, tasks: list[JudgmentTask], **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.tasks = {str(t.pk): t for t in tasks}
        self.fields["task"].choices = [  # type: ignore[attr-defined]
            ("", "All tasks"),
            *((k, t.name) for k, t in self.tasks.items()),
        ]

    def clean_task(self) -> JudgmentTask | None:
        return self.tasks.get(self.cleaned_data.get("task") or "")

    def clean_days(self) -> int | None:
        days = self.cleaned_data.get("days") or "all"
        return None if days == "all" else int(days)
