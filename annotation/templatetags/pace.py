"""``{% my_pace project %}``: the logged-in annotator's own pace in ``project`` (the "My work"
panel of the judging page), from :func:`annotation.judgment_tasks.pace.annotator_pace`."""

from __future__ import annotations

from typing import Any

from django import template

from annotation.judgment_tasks.pace import PACE_DAYS, annotator_pace

register = template.Library()


@register.inclusion_tag("annotation/_my_pace.html", takes_context=True)
def my_pace(context: template.Context, project: Any) -> dict[str, Any]:
    request = context.get("request")
    user = getattr(request, "user", None)
    pace = annotator_pace(user=user, project=project) if user is not None else None
    return {"pace": pace, "pace_days": PACE_DAYS}
