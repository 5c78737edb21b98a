"""The form renderer (``FORM_RENDERER``): Django's, except that the common widgets (text-like
inputs, check boxes, hidden inputs, selects and their options) are filled in here rather than
through the template engine.

Django renders every widget through three to five nested templates (``select.html``
includes ``select_option.html`` per option, each of which includes ``attrs.html``): about
0.2 ms a select, 2-3 ms a page for the item list's two forms. The functions below print the
same bytes as those templates (``tests/benchmark/test_form_renderer.py`` compares them); a
widget they do not know, a custom template, or a label the templates would localise
(anything but text and integers) goes to the templates.
"""

from __future__ import annotations

from collections.abc import Callable
from html import escape
from typing import Any

from django.forms.renderers import DjangoTemplates
from django.utils.functional import Promise
from django.utils.safestring import SafeData

W = "django/forms/widgets/"
INPUT_TEMPLATES = {
    f"{W}{name}.html"
    for name in (
        "text", "email", "number", "password", "url", "hidden", "checkbox", "date", "search",
        "tel", "color", "datetime", "time",
    )
}  # fmt: skip
OPTION_TEMPLATE = f"{W}select_option.html"


class _Unknown(Exception):
    """A value or a widget the templates would print differently: use them."""


def _text(value: Any) -> str:
    """``{{ value }}``: escaped unless already safe."""
    if isinstance(value, SafeData):
        return str(value)
    if isinstance(value, str | Promise | int) and not isinstance(value, float):
        return escape(str(value))
    raise _Unknown


def _formatted(value: Any) -> str:
    """``{{ value|stringformat:'s' }}`` (the filter keeps a safe value safe)."""
    shown = "%s" % (str(value) if isinstance(value, tuple) else value)
    return shown if isinstance(value, SafeData) else escape(shown)


def _attrs(attrs: dict[str, Any]) -> str:
    """``attrs.html``."""
    out = []
    for name, value in attrs.items():
        if value is False:
            continue
        out.append(f" {_text(name)}" if value is True else f' {_text(name)}="{_formatted(value)}"')
    return "".join(out)


def _input(widget: dict[str, Any]) -> str:
    """``input.html`` (and the templates that only include it)."""
    value = widget["value"]
    shown = "" if value is None else f' value="{_formatted(value)}"'
    return (
        f'<input type="{_text(widget["type"])}" name="{_text(widget["name"])}"{shown}'
        f"{_attrs(widget['attrs'])}>"
    )


def _option(option: dict[str, Any]) -> str:
    """``select_option.html``, with the line break that ends the file."""
    if option.get("template_name") != OPTION_TEMPLATE:
        raise _Unknown
    return (
        f'<option value="{_formatted(option["value"])}"{_attrs(option["attrs"])}>'
        f"{_text(option['label'])}</option>\n"
    )


def _select(widget: dict[str, Any]) -> str:
    """``select.html``."""
    out = [f'<select name="{_text(widget["name"])}"{_attrs(widget["attrs"])}>']
    for group_name, group_choices, _index in widget["optgroups"]:
        if group_name:
            out.append(f'\n  <optgroup label="{_text(group_name)}">')
        for option in group_choices:
            out.append("\n  " + _option(option))
        if group_name:
            out.append("\n  </optgroup>")
    out.append("\n</select>")
    return "".join(out)


_WIDGETS: dict[str, Callable[[dict[str, Any]], str]] = {
    **dict.fromkeys(INPUT_TEMPLATES, _input),
    f"{W}select.html": _select,
}


class FormRenderer(DjangoTemplates):
    """Django's template renderer, with the common widgets filled in without templates."""

    def render(self, template_name: str, context: dict[str, Any], request: Any = None) -> str:
        fill = _WIDGETS.get(template_name)
        widget = context.get("widget") if fill is not None else None
        if fill is not None and widget is not None and widget.get("template_name") == template_name:
            try:
                return fill(widget).strip()
            except _Unknown:
                pass
        return super().render(template_name, context, request=request)
