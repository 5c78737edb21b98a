"""Reads for the plan editor. Every selector takes ``user=`` and scopes to the user's
projects: another project's item answers 404, and so does an item of a project whose items
have no plans (not m&m's)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from django.http import Http404

from annotation.plan_editor.models import PlanVersion, steps_text
from annotation.plan_editor.services import GOLD_KEY, canonical_key
from benchmark import selectors
from benchmark.models import Item, Origin, Plan, Project
from benchmark.plans.parse import Finding, parse_code_plan, parse_json_plan
from benchmark.plans.verify import toolset_from_mapping, verify_parsed
from benchmark.typing import AnyUser

PAGE = "The plan editor"


def plan_project_get(*, user: AnyUser, pk: int) -> Project:
    project = selectors.project_get(user=user, pk=pk)
    if not project.benchmark.plans:
        raise Http404("This project's items have no plans (not an m&m's project).")
    return project


def plan_item_get(*, user: AnyUser, project: Project, pk: int) -> Item:
    """The item with its ground-truth plans (``item.editable_plans``: the gold plan and its
    alternatives, in order; not the models' predictions)."""
    item = selectors.item_get_revealed(user=user, project=project, pk=pk, page=PAGE)
    item.project = project  # reuse the project (and its role cache)
    rows = Plan.objects.filter(item=item, origin=Origin.GROUND_TRUTH).order_by("position", "id")
    item.editable_plans = list(rows)  # type: ignore[attr-defined]
    return item


def plan_of(item: Item, key: str) -> Plan | None:
    """The ground-truth plan ``key`` of the item (from :func:`plan_item_get`), or None when
    the gold plan does not exist yet; 404 for an unknown alternative."""
    key = canonical_key(key)
    for plan in getattr(item, "editable_plans", []):
        if plan.key == key:
            return plan
    if key == GOLD_KEY:
        return None
    raise Http404(f"This item has no plan {key!r}.")


def plan_steps(plan: Plan | None) -> list[Any]:
    """The steps to edit: the JSON form, else the steps read from a code-only plan."""
    if plan is None:
        return []
    if plan.steps:
        return list(plan.steps)
    if plan.code:
        return parse_code_plan(plan.code).to_json()
    return []


# --------------------------------------------------------------------------- the toolset


@dataclass
class EditorTools:
    """The project's tools as the editor offers them (``tools``: name, category, description,
    inputs with their types, outputs) and the verifier's spec of the toolset (``spec``)."""

    tools: list[dict[str, Any]] = field(default_factory=list)
    spec: dict[str, Any] = field(default_factory=dict)


def editor_tools(*, user: AnyUser, project: Project) -> EditorTools:
    """Two queries: the tools and the tool graph's edges."""
    rows = list(project.toolset.tools.order_by("position", "name"))
    names = {tool.pk: tool.name for tool in rows}
    tools = []
    spec_tools = {}
    for tool in rows:
        params = [p for p in tool.parameters or [] if isinstance(p, dict) and p.get("name")]
        outputs = [str(o) for o in tool.output_names or []]
        tools.append(
            {
                "name": tool.name,
                "category": tool.category,
                "description": tool.description,
                "inputs": [
                    {
                        "name": str(p["name"]),
                        "type": str(p.get("type") or ""),
                        "description": str(p.get("description") or ""),
                    }
                    for p in params
                ],
                "outputs": outputs,
            }
        )
        spec_tools[tool.name] = {
            "inputs": [str(p["name"]) for p in params],
            "outputs": outputs,
            "input_types": list(tool.input_types or []),
            "output_types": list(tool.output_types or []),
        }
    edges = [
        (names[s], names[t])
        for s, t in project.toolset.edges.values_list("source_id", "target_id")
        if s in names and t in names
    ]
    return EditorTools(tools=tools, spec={"tools": spec_tools, "edges": edges})


# --------------------------------------------------------------------------- findings

_ARG_PATTERNS = {
    "missing_arg": re.compile(r"needs the argument '([^']+)'"),
    "unknown_arg": re.compile(r"^step [^:]+: '([^']+)' is not an argument"),
    "dangling_reference": re.compile(r"^step [^,]+, argument '([^']+)'"),
}


@dataclass(frozen=True)
class PlanFinding:
    """A verifier finding placed where the editor shows it: the 0-based ``step`` (None: the
    whole plan) and the argument it concerns ("" for the step itself)."""

    code: str
    message: str
    step: int | None
    arg: str = ""

    @property
    def where(self) -> str:
        if self.step is None:
            return "plan"
        return f"step {self.step + 1}" + (f" · {self.arg}" if self.arg else "")


def _placed(finding: Finding) -> PlanFinding:
    arg = ""
    pattern = _ARG_PATTERNS.get(finding.code)
    if pattern is not None:
        match = pattern.search(finding.message)
        arg = match.group(1) if match else ""
    return PlanFinding(finding.code, finding.message, finding.step, arg)


def plan_findings(*, tools: EditorTools, steps: Any) -> list[PlanFinding]:
    """The plan verifier's findings on ``steps`` (no query: ``tools`` holds the toolset)."""
    parsed = parse_json_plan(steps)
    return [_placed(f) for f in verify_parsed(parsed, toolset_from_mapping(tools.spec))]


# --------------------------------------------------------------------------- versions


def _stand_in(item: Item, key: str, plan: Plan | None) -> PlanVersion:
    """Version 1 before any save: the plan as it stands."""
    version = PlanVersion(
        item=item,
        plan=plan,
        key=key,
        number=1,
        steps=steps_text(plan.steps if plan is not None else []),
        code=plan.code if plan is not None else "",
        note="imported",
    )
    if plan is not None:
        version.created_at = plan.created_at
    return version


def version_list(*, user: AnyUser, item: Item, key: str) -> list[PlanVersion]:
    """Every version of the plan ``key``, newest first, with their authors (one query).
    Before the first save, a stand-in version 1 holds the plan as it stands."""
    key = canonical_key(key)
    rows = list(
        PlanVersion.objects.filter(item=item, key=key).select_related("author").order_by("-number")
    )
    if not rows:
        plan = plan_of(item, key)
        if plan is None:
            return []
        rows = [_stand_in(item, key, plan)]
    return rows


def _latest(item: Item, key: str) -> PlanVersion | None:
    return PlanVersion.objects.filter(item=item, key=key).order_by("-number").first()


def current_number(*, user: AnyUser, item: Item, key: str) -> int | None:
    """The newest version number: 1 for a plan no save has recorded, None for no plan."""
    return editor_state(user=user, item=item, key=key)[1]


def editor_state(*, user: AnyUser, item: Item, key: str) -> tuple[list[Any], int | None]:
    """The steps to edit and the version they are (one query). The newest version's text
    keeps the arguments in the order they were written (a ``jsonb`` column does not), so it
    is preferred while it still holds what the plan holds."""
    key = canonical_key(key)
    plan = plan_of(item, key)
    latest = _latest(item, key)
    steps = plan_steps(plan)
    if latest is not None:
        if plan is not None and latest.step_list == plan.steps:
            steps = latest.step_list
        return steps, latest.number
    return steps, (1 if plan is not None else None)


def version_get(
    *, user: AnyUser, item: Item, key: str, number: int
) -> tuple[PlanVersion, PlanVersion | None]:
    """Version ``number`` and the one before it (None for version 1); 404 when there is no
    such version."""
    key = canonical_key(key)
    rows = {
        v.number: v
        for v in PlanVersion.objects.filter(
            item=item, key=key, number__in=[number, number - 1]
        ).select_related("author")
    }
    if number not in rows:
        if number == 1:
            plan = plan_of(item, key)
            if plan is not None:
                return _stand_in(item, key, plan), None
        raise Http404(f"This plan has no version {number}.")
    return rows[number], rows.get(number - 1)
