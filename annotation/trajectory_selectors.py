"""Reads for the reference-trajectory editor. Every selector takes ``user=`` and scopes to the
user's projects: another project's item answers 404, and so does an item of a project whose
items have no trajectories."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import Prefetch
from django.http import Http404

from benchmark import selectors as benchmark_selectors
from benchmark.imaging import ops
from benchmark.models import Image, Item, Project, ProjectKind, TermKind, Trajectory
from benchmark.typing import AnyUser

REFERENCE_KEY = "reference"
RECENT_IMAGES = 60


def trajectory_project_get(*, user: AnyUser, pk: int) -> Project:
    project = benchmark_selectors.project_get(user=user, pk=pk)
    if project.kind != ProjectKind.TRAJECTORY:
        raise Http404("This project's items have no reference trajectories.")
    return project


def trajectory_item_get(*, user: AnyUser, project: Project, pk: int) -> Item:
    """The item with its reference trajectory prefetched (``item.reference_rows``)."""
    rows = Trajectory.objects.filter(key=REFERENCE_KEY)
    items = benchmark_selectors.item_list(user=user, project=project).prefetch_related(
        Prefetch("trajectories", queryset=rows, to_attr="reference_rows")
    )
    try:
        return items.get(pk=pk)
    except Item.DoesNotExist:
        raise Http404("No such item in this project.") from None


def reference_of(item: Item) -> Trajectory | None:
    rows = getattr(item, "reference_rows", None)
    if rows is None:
        rows = list(item.trajectories.filter(key=REFERENCE_KEY))
    return rows[0] if rows else None


def item_input_shas(item: Item) -> list[str]:
    refs = sorted(item.image_refs or [], key=lambda r: r.get("position", 0))
    return [r["sha256"] for r in refs if r.get("sha256") and r.get("role") != "artifact"]


@dataclass
class EditorChoices:
    tools: list[str] = field(default_factory=list)
    domains: list[str] = field(default_factory=list)
    images: dict[str, Image] = field(default_factory=dict)
    """Every image a step may start from: the item's own, then recent uploads; plus the
    sources named by stored recipes."""
    item_shas: list[str] = field(default_factory=list)


def editor_choices(
    *, user: AnyUser, project: Project, item: Item, extra_shas: list[str]
) -> EditorChoices:
    """Tool names (the project's toolset, then the image operations it lacks), the taxonomy's
    domains and the images, in a fixed number of queries."""
    names = list(project.toolset.tools.order_by("position", "name").values_list("name", flat=True))
    tools = names + [op for op in ops.OPS if op not in names]
    domains: list[str] = []
    if project.taxonomy_id:
        domains = list(
            project.taxonomy.terms.filter(kind=TermKind.DOMAIN, parent__isnull=True)  # type: ignore[union-attr]
            .order_by("position", "name")
            .values_list("name", flat=True)
        )
    item_shas = item_input_shas(item)
    wanted = set(item_shas) | {s for s in extra_shas if s}
    visible = benchmark_selectors.image_list(user=user, project=project)
    recent = list(visible.filter(source__isnull=True).order_by("-id")[:RECENT_IMAGES])
    found = {img.sha256: img for img in recent}
    missing = wanted - set(found)
    if missing:
        found.update({img.sha256: img for img in visible.filter(sha256__in=missing).order_by()})
    ordered: dict[str, Image] = {sha: found[sha] for sha in item_shas if sha in found}
    for img in recent:
        ordered.setdefault(img.sha256, img)
    for sha in extra_shas:
        if sha in found:
            ordered.setdefault(sha, found[sha])
    return EditorChoices(tools=tools, domains=domains, images=ordered, item_shas=item_shas)
