"""Editing a project's toolset. Built-in and shared toolsets are copied for the project first,
so an admin's edit never changes another project's tools."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from benchmark import permissions
from benchmark.exceptions import ValidationFailed
from benchmark.models import Project, Taxonomy, TaxonomyTerm, Tool, ToolEdge, Toolset

PARAM_TYPES = {"str", "int", "float", "bool", "list", "dict", "list[float]", "any"}


def _free_name(model: type[Toolset] | type[Taxonomy], base: str) -> str:
    """``base`` (cut to 100 characters), or with " (2)", " (3)"... when taken."""
    name, n = base[:100], 2
    while model.objects.filter(name=name).exists():
        suffix = f" ({n})"
        name = base[: 100 - len(suffix)] + suffix
        n += 1
    return name


def toolset_copy(*, toolset: Toolset, name: str) -> Toolset:
    """A new, non-built-in toolset with the tools (and m&m's edges) of ``toolset``, named
    ``name`` (with a number added when taken)."""
    copy = Toolset.objects.create(
        name=_free_name(Toolset, name), description=toolset.description, builtin=False
    )
    by_old: dict[int, Tool] = {}
    for tool in toolset.tools.all():
        old_pk = tool.pk
        tool.pk = None
        tool.toolset = copy
        tool.save()
        by_old[old_pk] = tool
    ToolEdge.objects.bulk_create(
        ToolEdge(toolset=copy, source=by_old[s], target=by_old[t])
        for s, t in toolset.edges.values_list("source_id", "target_id")
    )
    return copy


def taxonomy_copy(*, taxonomy: Taxonomy, name: str) -> Taxonomy:
    """A new, non-built-in taxonomy with the terms of ``taxonomy`` (parents before children),
    named ``name`` (with a number added when taken)."""
    copy = Taxonomy.objects.create(
        name=_free_name(Taxonomy, name), description=taxonomy.description, builtin=False
    )
    by_old: dict[int, TaxonomyTerm] = {}
    pending = list(taxonomy.terms.order_by("id"))
    while pending:
        rest = []
        for term in pending:
            if term.parent_id is not None and term.parent_id not in by_old:
                rest.append(term)
                continue
            old_pk = term.pk
            term.pk = None
            term.taxonomy = copy
            term.parent = by_old.get(term.parent_id) if term.parent_id else None
            term.save()
            by_old[old_pk] = term
        if len(rest) == len(pending):  # a parent in another taxonomy: keep them top level
            for term in rest:
                term.parent_id = None
        pending = rest
    return copy


def _own_toolset(project: Project) -> Toolset:
    """The project's toolset, copied first when it is built in or used by another project."""
    toolset = project.toolset
    shared = toolset.builtin or toolset.projects.exclude(pk=project.pk).exists()
    if not shared:
        return toolset
    copy = toolset_copy(toolset=toolset, name=f"{toolset.name} · {project.name}")
    project.toolset = copy
    project.save(update_fields=["toolset"])
    return copy


def clean_parameters(value: Any) -> list[dict[str, Any]]:
    """Parameters as a list of {"name", "type", "required", "description"}; says what is wrong
    and where otherwise."""
    if not isinstance(value, list):
        raise ValidationFailed("parameters must be a JSON list of objects")
    out = []
    seen = set()
    for i, param in enumerate(value):
        if not isinstance(param, dict):
            raise ValidationFailed(f"parameter {i + 1} must be an object")
        name = param.get("name")
        if not isinstance(name, str) or not name.strip():
            raise ValidationFailed(f"parameter {i + 1} needs a name")
        if name in seen:
            raise ValidationFailed(f"parameter {name!r} is listed twice")
        seen.add(name)
        kind = param.get("type", "str")
        if not isinstance(kind, str) or not kind:
            raise ValidationFailed(f"parameter {name!r}: type must be a string such as str or int")
        required = param.get("required", True)
        if not isinstance(required, bool):
            raise ValidationFailed(f"parameter {name!r}: required must be true or false")
        out.append(
            {
                **param,
                "name": name.strip(),
                "type": kind,
                "required": required,
                "description": str(param.get("description", "")),
            }
        )
    return out


def tool_save(
    *,
    project: Project,
    user: Any,
    tool_id: int | None,
    name: str,
    description: str,
    parameters: Any,
    category: str = "",
) -> Tool:
    """Create or change one tool of the project's toolset (project admins)."""
    permissions.require(user=user, project=project, action="manage")
    name = name.strip()
    if not name:
        raise ValidationFailed("the tool needs a name")
    params = clean_parameters(parameters)
    with transaction.atomic():
        original = project.toolset
        toolset = _own_toolset(project)
        tool = None
        if tool_id is not None:
            old = original.tools.filter(pk=tool_id).first()
            if old is None:
                raise ValidationFailed("no such tool in this project's toolset")
            tool = toolset.tools.get(name=old.name) if toolset != original else old
        same_name = toolset.tools.filter(name__iexact=name)
        if tool is not None:
            same_name = same_name.exclude(pk=tool.pk)
        if same_name.exists():
            raise ValidationFailed(f"the toolset already has a tool named {name!r}")
        if tool is None:
            tool = Tool(toolset=toolset, position=toolset.tools.count())
        tool.name, tool.description, tool.parameters, tool.category = (
            name, description, params, category,
        )  # fmt: skip
        tool.full_clean()
        tool.save()
    return tool


def tool_delete(*, project: Project, user: Any, tool_id: int) -> None:
    permissions.require(user=user, project=project, action="manage")
    with transaction.atomic():
        original = project.toolset
        old = original.tools.filter(pk=tool_id).first()
        if old is None:
            raise ValidationFailed("no such tool in this project's toolset")
        toolset = _own_toolset(project)
        toolset.tools.filter(name=old.name).delete()
