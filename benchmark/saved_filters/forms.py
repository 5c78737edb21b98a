"""The "save this filter" form: a name, and the item list's query string it keeps."""

from __future__ import annotations

from django import forms

from benchmark.models.saved_filters import NAME_MAX, QUERY_MAX


class SavedFilterForm(forms.Form):
    name = forms.CharField(
        max_length=NAME_MAX,
        label="Name",
        widget=forms.TextInput(attrs={"placeholder": "Name this filter", "autocomplete": "off"}),
    )
    query = forms.CharField(max_length=QUERY_MAX * 2, widget=forms.HiddenInput)
