"""The project's guidelines panel, shown folded above every page of the project."""

from __future__ import annotations

from typing import Any

from django import template
from django.utils.safestring import mark_safe

from benchmark.rendering.markup import markdown_html

register = template.Library()


@register.inclusion_tag("partials/guidelines.html")
def project_guidelines(project: Any = None, oob: bool = False) -> dict[str, Any]:
    """The guidelines (markdown, sanitized) of ``project`` when it has any. ``oob``: as an
    htmx out-of-band swap, so a page loaded into ``#main`` replaces the previous one's."""
    text = getattr(project, "guidelines", "") or ""
    html = mark_safe(markdown_html(text)) if text.strip() else ""  # noqa: S308 - nh3-sanitized
    return {"project": project, "html": html, "oob": oob}
