"""Finding codes in a person's words: ``{{ f.code|finding_label }}`` prints "Missing argument"
for ``missing_arg`` (the tag checker's and the plan verifier's codes; any other code reads as
its words, "some_code" → "Some code"). The code itself stays in data attributes and exports."""

from __future__ import annotations

from django import template

from benchmark.plans.verify import FINDING_LABELS
from benchmark.tags.model import CODE_LABELS

register = template.Library()

LABELS: dict[str, str] = {**CODE_LABELS, **FINDING_LABELS}


@register.filter
def finding_label(code: object) -> str:
    text = str(code or "")
    return LABELS.get(text) or text.replace("_", " ").capitalize()


@register.filter
def words(value: object) -> str:
    """A recorded value in words: a list joined ("Base URL, Model name" for
    ``['base_url', 'model']``, field names by their labels), anything else as text."""
    from benchmark.projects.services import MODEL_FIELDS

    if isinstance(value, list | tuple | set | frozenset):
        return ", ".join(MODEL_FIELDS.get(str(v), str(v)) for v in value) or "none"
    if isinstance(value, dict):
        return ", ".join(f"{k}: {words(v)}" for k, v in value.items())
    return str(value)
