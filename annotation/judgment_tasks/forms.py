from __future__ import annotations

import json
from typing import Any

from django import forms

from annotation.judgment_tasks.models import JudgmentTask, Scheme
from benchmark import limits
from benchmark.models import Item, TaxonomyTerm
from benchmark.widgets import ParentSelect


class JudgmentForm(forms.Form):
    value = forms.CharField(max_length=500)
    reason = forms.CharField(max_length=100, required=False)
    comment = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), required=False)
    seconds = forms.FloatField(required=False, min_value=0, widget=forms.HiddenInput)

    def __init__(self, *args: Any, task: JudgmentTask, item: Item, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.task = task
        if task.scheme in (Scheme.BINARY, Scheme.NOMINAL, Scheme.ORDINAL):
            choices = (
                [("1", "1 · yes"), ("0", "0 · no")]
                if task.scheme == Scheme.BINARY
                else [(json.dumps(e["value"]), e.get("label", e["value"])) for e in task.labels]
            )
            self.fields["value"] = forms.ChoiceField(choices=choices, widget=forms.RadioSelect)
        for field in task.relabel_fields:
            terms: list[TaxonomyTerm] = []
            if task.project.taxonomy_id:
                terms = list(
                    TaxonomyTerm.objects.filter(
                        taxonomy_id=task.project.taxonomy_id, kind=field
                    ).select_related("parent")
                )
            choices = [("", "(unchanged)")] + [
                (t.name, f"{t.parent.name} › {t.name}" if t.parent else t.name) for t in terms
            ]
            widget = forms.Select()
            if field == "intent" and "category" in task.relabel_fields:
                # the intents of the category chosen beside it (static/js/app.js)
                parents: dict[str, list[str]] = {}
                for t in terms:
                    if t.parent:
                        parents.setdefault(t.name, []).append(t.parent.name)
                widget = ParentSelect(
                    parents=parents, attrs={"data-parent-select": "id_relabel_category"}
                )
            self.fields[f"relabel_{field}"] = forms.ChoiceField(
                choices=choices,
                required=False,
                label=f"Relabel {field}",
                initial=getattr(item, field, ""),
                widget=widget,
            )

    def judgment_kwargs(self) -> dict[str, Any]:
        data = self.cleaned_data
        value: Any = data["value"]
        if self.task.scheme == Scheme.BINARY:
            value = int(value)
        elif self.task.scheme in (Scheme.NOMINAL, Scheme.ORDINAL):
            try:
                value = limits.json_loads(value)
            except ValueError:
                pass
        return {
            "value": value,
            "reason": data.get("reason") or "",
            "comment": data.get("comment") or "",
            "seconds": data.get("seconds") or 0,
            "relabel": {f: data.get(f"relabel_{f}") for f in self.task.relabel_fields},
        }


class TaskForm(forms.ModelForm):
    """A judgment task; labels and the required value are JSON."""

    labels = forms.JSONField(
        required=False,
        initial=list,
        help_text='For nominal and ordinal scales: [{"value": "keep", "label": "Keep", '
        '"accept": true, "reasons": []}, ...]',
        widget=forms.Textarea(attrs={"rows": 5, "class": "mono"}),
    )
    required_value = forms.JSONField(
        required=False, help_text='For "all required": the value everyone must give, e.g. 1'
    )
    relabel_fields = forms.MultipleChoiceField(
        choices=[("category", "category"), ("intent", "intent"), ("domain", "domain")],
        required=False,
        widget=forms.CheckboxSelectMultiple,
    )

    class Meta:
        model = JudgmentTask
        fields = [
            "name", "question", "scheme", "labels", "relabel_fields", "overlap", "consensus",
            "required_value", "author_may_judge", "lease_minutes", "active", "items_listed",
        ]  # fmt: skip
        widgets = {"question": forms.Textarea(attrs={"rows": 2})}

    def clean_labels(self) -> Any:
        return self.cleaned_data.get("labels") or []
