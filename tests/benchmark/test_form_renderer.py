"""benchmark.form_renderer prints the same bytes as Django's widget templates (it fills the
common widgets in without the template engine, for speed), and leaves other widgets to them."""

from __future__ import annotations

from typing import Any

import pytest
from django import forms
from django.forms.renderers import DjangoTemplates
from django.utils.safestring import mark_safe
from django.utils.translation import gettext_lazy

from annotation.bulk_actions.forms import BulkActionForm
from annotation.judging.models import JudgmentTask
from benchmark.form_renderer import FormRenderer
from benchmark.projects.forms import ItemFilterForm
from benchmark.projects.selectors import ItemFacets
from tests.factories import MembershipFactory, ProjectFactory, UserFactory

pytestmark = pytest.mark.django_db


class Every(forms.Form):
    text = forms.CharField(initial='a "quoted" <b>&</b>', max_length=20)
    empty = forms.CharField(required=False)
    safe = forms.CharField(initial=mark_safe("<i>kept</i>"))
    number = forms.IntegerField(initial=7, min_value=1)
    floaty = forms.FloatField(initial=1.5)
    email = forms.EmailField(required=False)
    hidden = forms.CharField(widget=forms.HiddenInput, initial="h&h")
    check = forms.BooleanField(initial=True)
    unchecked = forms.BooleanField(required=False)
    choice = forms.ChoiceField(
        choices=[("", "—"), ("a&b", "A & B"), (3, 3), ("lazy", gettext_lazy("Draft"))],
        initial="a&b",
    )
    grouped = forms.ChoiceField(
        choices=[("Fruit", [("apple", "Apple"), ("pear", "<Pear>")]), ("x", "X")], initial="pear"
    )
    many = forms.MultipleChoiceField(choices=[("1", "One"), ("2", "Two")], initial=["2"])
    attrs = forms.CharField(
        widget=forms.TextInput(attrs={"data-on": True, "data-off": False, "placeholder": "<q>"})
    )
    area = forms.CharField(widget=forms.Textarea, initial="not filled in here")
    radio = forms.ChoiceField(widget=forms.RadioSelect, choices=[("a", "A")])


def _same(form: forms.Form) -> list[str]:
    fast, slow = FormRenderer(), DjangoTemplates()
    shown = []
    for name, field in form.fields.items():
        bound = form[name]
        widget = field.widget
        value = bound.value()
        attrs = bound.build_widget_attrs({"id": bound.auto_id} if bound.auto_id else {})
        a = widget.render(bound.html_name, value, attrs=attrs, renderer=fast)
        b = widget.render(bound.html_name, value, attrs=attrs, renderer=slow)
        assert a == b, name
        shown.append(a)
    return shown


def test_every_common_widget_prints_what_the_templates_print() -> None:
    shown = _same(Every())
    assert any("<optgroup" in html for html in shown)
    _same(Every(data={"text": "<x>", "many": ["1", "2"], "choice": "3", "check": ""}))


def test_the_item_list_forms_print_what_the_templates_print() -> None:
    project = ProjectFactory(name="P")
    user = UserFactory()
    MembershipFactory(project=project, user=user, role="admin")
    JudgmentTask.objects.create(project=project, name="T & <t>", scheme="text", question="Q?")
    facets = ItemFacets(categories=["A & B", "<c>"], intents=["i"])
    _same(ItemFilterForm(facets=facets))
    _same(ItemFilterForm({"status": "draft", "q": '"x"', "level": "2"}, facets=facets))
    shown = _same(BulkActionForm(project=project, user=user))
    assert any("T &amp; &lt;t&gt;" in html for html in shown)


def test_an_unknown_widget_goes_to_the_templates(monkeypatch: Any) -> None:
    calls = []
    real = DjangoTemplates.render

    def spy(self: Any, template_name: str, *args: Any, **kwargs: Any) -> str:
        calls.append(template_name)
        return real(self, template_name, *args, **kwargs)

    monkeypatch.setattr(DjangoTemplates, "render", spy)
    form = Every()
    renderer = FormRenderer()
    form["area"].as_widget()
    form.fields["area"].widget.render("area", "x", renderer=renderer)
    form.fields["text"].widget.render("text", "x", renderer=renderer)
    form.fields["floaty"].widget.render("floaty", 1.5, renderer=renderer)
    assert calls == ["django/forms/widgets/textarea.html"] * 2
