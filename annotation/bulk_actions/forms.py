"""The bulk-action bar of the item list: which action, on which items, with what."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth import get_user_model

from annotation.bulk_actions.selectors import MAX_HAND_SELECTED
from annotation.bulk_actions.services import BULK_ACTIONS
from annotation.judgment_tasks.models import JudgmentTask, UnitKind
from benchmark.models import ItemStatus, Project
from benchmark.permissions import can
from benchmark.typing import AnyUser

SCOPES = [("selected", "The selected items"), ("matching", "All items matching the filters")]


class BulkActionForm(forms.Form):
    """``ids`` are ``<item id>:<status seen>`` (the status the user saw, so a change made
    meanwhile is skipped and reported) or plain ids."""

    action = forms.ChoiceField(choices=[("", "Choose an action…"), *BULK_ACTIONS.items()])
    scope = forms.ChoiceField(
        required=False, choices=SCOPES, initial="selected", widget=forms.HiddenInput
    )
    status = forms.ChoiceField(required=False, choices=[("", "Status…"), *ItemStatus.choices])
    task = forms.ModelChoiceField(
        required=False, queryset=JudgmentTask.objects.none(), empty_label="Task…"
    )
    users = forms.ModelMultipleChoiceField(
        required=False, queryset=get_user_model().objects.none(), label="People"
    )
    reason = forms.CharField(
        required=False,
        max_length=1000,
        widget=forms.TextInput(attrs={"placeholder": "Reason (discard)"}),
    )
    images = forms.BooleanField(required=False, label="with images")

    def __init__(
        self, *args: Any, project: Project, user: AnyUser | None = None, **kwargs: Any
    ) -> None:
        kwargs.setdefault("auto_id", "bulk_%s")  # the filter form on the page has id_status
        super().__init__(*args, **kwargs)
        self.project = project
        if user is not None and not can(user=user, project=project, action="set_status"):
            # Offered to annotators: proposing discards (and exporting where allowed); the
            # other actions still answer 403 saying why when posted.
            offered = {"discard"} | (
                {"export"} if can(user=user, project=project, action="export") else set()
            )
            self.fields["action"].widget.choices = [  # type: ignore[attr-defined]
                (value, "Propose discarding" if value == "discard" else label)
                for value, label in [("", "Choose an action…"), *BULK_ACTIONS.items()]
                if not value or value in offered
            ]
        task = self.fields["task"]
        assert isinstance(task, forms.ModelChoiceField)
        task.queryset = JudgmentTask.objects.filter(
            project=project, unit_kind=UnitKind.ITEM
        ).order_by("name")
        users = self.fields["users"]
        assert isinstance(users, forms.ModelMultipleChoiceField)
        users.queryset = (
            get_user_model()
            .objects.filter(memberships__project=project, is_active=True)
            .order_by("username")
        )

    def _selected(self) -> dict[int, str]:
        """``{item id: status seen or ""}`` from the ``ids`` checkboxes."""
        raw = self.data.getlist("ids") if hasattr(self.data, "getlist") else []
        if len(raw) > MAX_HAND_SELECTED:
            raise forms.ValidationError(
                f"selection: select at most {MAX_HAND_SELECTED} items by hand, or choose all "
                "items matching the filters"
            )
        out: dict[int, str] = {}
        for value in raw:
            pk, _, status = str(value).partition(":")
            if not pk.strip().isdigit() or (status and status not in ItemStatus.values):
                raise forms.ValidationError(f"selection: {value!r} is not an item of the list")
            out[int(pk)] = status
        return out

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        data["ids"] = self._selected()
        data["scope"] = data.get("scope") or "selected"
        if data["scope"] == "selected" and not data["ids"]:
            raise forms.ValidationError(
                "selection: select at least one item (or all items matching the filters)"
            )
        return data

    def params(self) -> dict[str, Any]:
        """The action's parameters as the service takes them."""
        data = self.cleaned_data
        return {
            "status": data.get("status") or "",
            "reason": data.get("reason") or "",
            "task": data["task"].pk if data.get("task") else None,
            "users": [u.pk for u in data.get("users") or []],
        }
