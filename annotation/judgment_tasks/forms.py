from __future__ import annotations

import json
from typing import Any

from django import forms

from annotation.judgment_tasks.models import JudgmentTask, Scheme
from benchmark import limits
from benchmark.models import Item, TaxonomyTerm
from benchmark.widgets import ParentSelect

#: The keys that move to the relabel fields, in the task's order (c is the comment, r the
#: reason, n next, u undo, digits the choices).
RELABEL_KEYS = "eiop"


def _relabel_terms(task: JudgmentTask) -> dict[str, list[TaxonomyTerm]]:
    """The taxonomy terms the task's relabel fields offer, by kind, in one statement, kept on
    the task instance: a submit answered with the next item builds the form twice (the
    submitted one, the next item's) for the same task in one request."""
    cached: dict[str, list[TaxonomyTerm]] | None = getattr(task, "_relabel_terms", None)
    if cached is not None:
        return cached
    by_kind: dict[str, list[TaxonomyTerm]] = {}
    if task.relabel_fields and task.project.taxonomy_id:
        rows = TaxonomyTerm.objects.filter(
            taxonomy_id=task.project.taxonomy_id, kind__in=task.relabel_fields
        ).select_related("parent")
        for term in rows:
            by_kind.setdefault(term.kind, []).append(term)
    task._relabel_terms = by_kind  # type: ignore[attr-defined]
    return by_kind


class JudgmentForm(forms.Form):
    """A judgment on the judge page, and its keys: each choice has a key (its value on a
    binary or 0-2 scale, where the key also submits; else its place, 1-9); the comment
    (``c``), the reason (``r``) and the relabel fields (``e``, ``i``, ...) are reached by
    keys shown by their labels. ``version``: set when the page changes an existing judgment
    (undo), the version it showed."""

    value = forms.CharField(max_length=500)
    reason = forms.CharField(max_length=100, required=False)
    comment = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 2, "data-focus-key": "c"}), required=False
    )
    seconds = forms.FloatField(required=False, min_value=0, widget=forms.HiddenInput)
    version = forms.IntegerField(required=False, min_value=1, widget=forms.HiddenInput)

    def __init__(
        self, *args: Any, task: JudgmentTask, item: Item, by_value: bool = False, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.task = task
        #: Keys pick by value and submit at once (binary votes, the 0-2 rating of a unit).
        self.pick_submits = by_value or task.scheme == Scheme.BINARY
        if task.scheme in (Scheme.BINARY, Scheme.NOMINAL, Scheme.ORDINAL):
            choices = (
                [("1", "1 · yes"), ("0", "0 · no")]
                if task.scheme == Scheme.BINARY
                else [(json.dumps(e["value"]), e.get("label", e["value"])) for e in task.labels]
            )
            self.fields["value"] = forms.ChoiceField(choices=choices, widget=forms.RadioSelect)
        reasons = [
            (e.get("label", e["value"]), [(r, r) for r in e.get("reasons") or []])
            for e in (task.labels if task.scheme == Scheme.NOMINAL else [])
            if e.get("reasons")
        ]
        if reasons:
            self.fields["reason"] = forms.ChoiceField(
                choices=[("", "(none)"), *reasons],
                required=False,
                widget=forms.Select(attrs={"data-focus-key": "r"}),
                help_text="The labels that ask for one need a reason.",
            )
        relabel_terms = _relabel_terms(task)
        for n, field in enumerate(task.relabel_fields):
            terms = relabel_terms.get(field, [])
            focus = {"data-focus-key": RELABEL_KEYS[n]} if n < len(RELABEL_KEYS) else {}
            choices = [("", "(unchanged)")] + [
                (t.name, f"{t.parent.name} › {t.name}" if t.parent else t.name) for t in terms
            ]
            widget = forms.Select(attrs=focus)
            if field == "intent" and "category" in task.relabel_fields:
                # the intents of the category chosen beside it (static/js/app.js)
                parents: dict[str, list[str]] = {}
                for t in terms:
                    if t.parent:
                        parents.setdefault(t.name, []).append(t.parent.name)
                widget = ParentSelect(
                    parents=parents, attrs={"data-parent-select": "id_relabel_category", **focus}
                )
            self.fields[f"relabel_{field}"] = forms.ChoiceField(
                choices=choices,
                required=False,
                label=f"Relabel {field}",
                initial=getattr(item, field, ""),
                widget=widget,
            )

    def choice_rows(self) -> list[dict[str, Any]]:
        """The choices as radios with their keys (None past the ninth by place)."""
        field = self["value"]
        if not isinstance(field.field, forms.ChoiceField):
            return []
        rows = []
        for n, radio in enumerate(field, start=1):
            key = str(radio.data["value"]) if self.pick_submits else str(n) if n <= 9 else None
            label = str(radio.choice_label)
            # "1 · yes" is named "yes" beside its key 1 in the keys line.
            name = label.split(" · ", 1)[1] if key and label.startswith(f"{key} · ") else label
            rows.append({"radio": radio, "key": key, "name": name})
        return rows

    def choice_keys(self) -> list[str]:
        return [row["key"] for row in self.choice_rows() if row["key"] is not None]

    def keyed_fields(self) -> list[dict[str, Any]]:
        """The reason and relabel fields, each with the key that moves to it."""
        rows = []
        for name in ["reason", *(f"relabel_{f}" for f in self.task.relabel_fields)]:
            if name == "reason" and not isinstance(self.fields[name], forms.ChoiceField):
                continue
            field = self[name]
            rows.append({"field": field, "key": field.field.widget.attrs.get("data-focus-key")})
        return rows

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

    @classmethod
    def initial_from(cls, judgment: Any, *, task: JudgmentTask) -> dict[str, Any]:
        """The form's initial values for changing ``judgment`` of ``task`` (after an undo)."""
        value = judgment.value
        if task.scheme in (Scheme.NOMINAL, Scheme.ORDINAL):
            value = json.dumps(value)
        initial = {
            "value": str(value),
            "reason": judgment.reason,
            "comment": judgment.comment,
            "version": judgment.version,
        }
        for field, new in (judgment.relabel or {}).items():
            initial[f"relabel_{field}"] = new
        return initial


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

    reliability_threshold = forms.FloatField(
        required=False,
        min_value=0,
        max_value=1,
        label=JudgmentTask._meta.get_field("reliability_threshold").verbose_name.capitalize(),
        help_text=JudgmentTask._meta.get_field("reliability_threshold").help_text,
    )

    class Meta:
        model = JudgmentTask
        fields = [
            "name", "question", "scheme", "labels", "relabel_fields", "overlap", "consensus",
            "required_value", "author_may_judge", "lease_minutes", "active", "items_listed",
            "serve_by_doubt", "reliability_threshold",
            "gold_rate", "gold_threshold", "gold_min_judgments",
        ]  # fmt: skip
        widgets = {"question": forms.Textarea(attrs={"rows": 2})}

    #: The gold fields may be left out (a form or client that does not know them): defaults.
    GOLD_DEFAULTS = {"gold_rate": 0, "gold_threshold": 0.7, "gold_min_judgments": 5}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk is None:
            self.initial.setdefault(
                "reliability_threshold",
                JudgmentTask._meta.get_field("reliability_threshold").default,
            )
        for name in self.GOLD_DEFAULTS:
            self.fields[name].required = False

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        for name, default in self.GOLD_DEFAULTS.items():
            if cleaned.get(name) is None and name not in self.errors:
                kept = getattr(self.instance, name, None) if self.instance.pk else None
                cleaned[name] = default if kept is None else kept
        return cleaned

    def clean_labels(self) -> Any:
        return self.cleaned_data.get("labels") or []

    def clean_reliability_threshold(self) -> float:
        """Left empty: the default (routing by doubt's reliability gate)."""
        value = self.cleaned_data.get("reliability_threshold")
        if value is None:
            return float(JudgmentTask._meta.get_field("reliability_threshold").default)
        return float(value)
