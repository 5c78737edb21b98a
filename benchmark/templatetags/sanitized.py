"""``{{ value|sanitized }}``: HTML that ``benchmark.rendering`` sanitized (a
:class:`~benchmark.rendering.markup.SanitizedHtml`: rendered answers, the tag editor's preview)
printed as HTML; any other value escaped as ``{{ value }}`` would print it. Views and selectors
hand such HTML over as it is and mark nothing safe themselves.

    {% load sanitized %}<div class="preview-body">{{ preview|sanitized }}</div>
"""

from __future__ import annotations

from typing import Any

from django import template
from django.utils.html import conditional_escape
from django.utils.safestring import SafeString, mark_safe

from benchmark.rendering.markup import SanitizedHtml

register = template.Library()


@register.filter
def sanitized(value: Any) -> SafeString:
    if isinstance(value, SanitizedHtml):
        return mark_safe(value)  # noqa: S308 - nh3 with benchmark.rendering.markup's allowlist
    return conditional_escape("" if value is None else value)
