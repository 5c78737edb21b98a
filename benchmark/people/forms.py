"""Forms of the members and people pages: they validate input; services write."""

from __future__ import annotations

from typing import Any

from django import forms

from benchmark.models import Role
from benchmark.people.services import INVITATION_DAYS, MAX_INVITATION_DAYS


class MemberAddForm(forms.Form):
    username = forms.CharField(
        max_length=150, widget=forms.TextInput(attrs={"autocomplete": "off"})
    )
    role = forms.ChoiceField(choices=Role.choices, initial=Role.ANNOTATOR)


class RoleForm(forms.Form):
    role = forms.ChoiceField(choices=Role.choices)


class InvitationForm(forms.Form):
    role = forms.ChoiceField(choices=Role.choices, initial=Role.ANNOTATOR)
    days = forms.IntegerField(
        label="Valid for (days)",
        min_value=1,
        max_value=MAX_INVITATION_DAYS,
        initial=INVITATION_DAYS,
    )


class NewPasswordForm(forms.Form):
    """A password typed twice (Django's validators run in the service)."""

    password = forms.CharField(
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}), strip=False
    )
    password_again = forms.CharField(
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}), strip=False
    )

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("password") and data.get("password") != data.get("password_again"):
            self.add_error("password_again", "The two passwords differ.")
        return data


class SignupForm(NewPasswordForm):
    username = forms.CharField(
        max_length=150, widget=forms.TextInput(attrs={"autocomplete": "username"})
    )
    field_order = ["username", "password", "password_again"]


class UserCreateForm(forms.Form):
    username = forms.CharField(
        max_length=150, widget=forms.TextInput(attrs={"autocomplete": "off"})
    )
    first_name = forms.CharField(max_length=150, required=False)
    last_name = forms.CharField(max_length=150, required=False)
    password = forms.CharField(
        required=False,
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
        help_text="Leave empty to make a set-password link for them instead.",
    )
