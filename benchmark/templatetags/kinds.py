"""Template questions about benchmark kinds that a page cannot ask ``project.benchmark``
(a stored result names the tag syntax it was scored in)."""

from __future__ import annotations

from django import template

from benchmark.kinds import KINDS

register = template.Library()


@register.filter
def scores_image_count_rule(syntax: str) -> bool:
    """Whether answers in tag ``syntax`` get LLM-I's image-number rule reward (R_rule)."""
    return any(kind.tag_syntax == syntax and kind.image_count_rule for kind in KINDS)
