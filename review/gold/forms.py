"""The gold page's forms: mark an item gold, send recent judgments back, pause a queue."""

from __future__ import annotations

import json
from typing import Any

from django import forms

from annotation.judgment_tasks import solving
from annotation.judgment_tasks.models import JudgmentTask, Scheme
from review.gold.services import SEND_BACK_MAX


class GoldMarkForm(forms.Form):
    """An item of the task's project (its id or its external id), for a task with units the
    unit's key, and the answer that counts; left empty, the value of the item's (unit's)
    accepted outcome, or for blind solving the item's reference answer."""

    item = forms.CharField(
        max_length=200, help_text="The item's id or its external id (a verified item)."
    )
    value = forms.CharField(
        max_length=500,
        required=False,
        help_text="The answer that counts; empty: the value its outcome accepted.",
    )

    unit = forms.CharField(
        max_length=100,
        required=False,
        help_text="The unit's key (response:<answer id>:<label>, or pair:<id>:<id>), as the "
        "unit's judge page and the agreement page name it.",
    )

    def __init__(self, *args: Any, task: JudgmentTask, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not task.has_units:
            del self.fields["unit"]
        else:
            self.fields["unit"].required = True
        if solving.is_solve_task(task):
            self.fields["value"].help_text = (
                "The answer that counts; empty: the item's reference answer (with its "
                "variants). Verifiers' answers are compared with it as with the reference."
            )
        if task.scheme in (Scheme.BINARY, Scheme.NOMINAL, Scheme.ORDINAL):
            labels = (
                [(1, "1 · yes"), (0, "0 · no")]
                if task.scheme == Scheme.BINARY
                else [(e["value"], e.get("label", e["value"])) for e in task.labels]
            )
            choices = [("", "(the accepted outcome's value)")] + [
                (json.dumps(v), str(label)) for v, label in labels
            ]
            self.fields["value"] = forms.ChoiceField(
                choices=choices, required=False, help_text=self.fields["value"].help_text
            )

    def gold_value(self) -> Any:
        raw = self.cleaned_data.get("value") or ""
        if not raw:
            return None
        if isinstance(self.fields["value"], forms.ChoiceField):
            return json.loads(raw)
        return raw


class SendBackForm(forms.Form):
    last = forms.IntegerField(
        min_value=1,
        max_value=SEND_BACK_MAX,
        initial=20,
        label="Last judgments",
        help_text="How many of their most recent judgments go back for review.",
    )


class PauseForm(forms.Form):
    reason = forms.CharField(max_length=200, required=False)
