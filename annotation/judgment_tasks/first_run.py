"""What the project page's first-run checklist asks of this app: whether the project has a
judgment task yet (registered with ``benchmark.projects.page_hooks.project_page_extend``). Asked
only for those who manage the project, the only ones who see the checklist."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from annotation.judgment_tasks.models import JudgmentTask
from benchmark.models import Project
from benchmark.permissions import can


def first_run_context(request: HttpRequest, project: Project) -> dict[str, Any]:
    if not can(user=request.user, project=project, action="manage"):
        return {}
    if (project.settings or {}).get("first_run_dismissed"):
        return {}
    return {"has_judgment_tasks": JudgmentTask.objects.filter(project=project).exists()}
