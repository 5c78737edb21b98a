"""Reads for the reference-trajectory editor. Every selector takes ``user=`` and scopes to the
user's projects: another project's item answers 404, and so does an item of a project whose
items have no trajectories."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db.models import Prefetch
from django.http import Http404

from annotation.trajectories import document as td
from annotation.trajectories.diff import DocumentDiff, document_diff
from annotation.trajectories.models import TrajectoryVersion, document_text
from benchmark import selectors, visibility
from benchmark.images import selectors as image_selectors
from benchmark.imaging import ops
from benchmark.models import Image, Item, Project, TermKind, Trajectory
from benchmark.typing import AnyUser

REFERENCE_KEY = "reference"
RECENT_IMAGES = 60


def trajectory_project_get(*, user: AnyUser, pk: int) -> Project:
    project = selectors.project_get(user=user, pk=pk)
    if not project.benchmark.trajectories:
        raise Http404("This project's items have no reference trajectories.")
    return project


def trajectory_item_get(
    *, user: AnyUser, project: Project, pk: int, page: str = "The trajectory editor"
) -> Item:
    """The item with its reference trajectory prefetched (``item.reference_rows``); 403
    saying why when its answer is hidden from the user (a blind verifier)."""
    rows = Trajectory.objects.filter(key=REFERENCE_KEY)
    items = selectors.item_list(user=user, project=project).prefetch_related(
        Prefetch("trajectories", queryset=rows, to_attr="reference_rows")
    )
    try:
        item = items.get(pk=pk)
    except Item.DoesNotExist:
        raise Http404("No such item in this project.") from None
    visibility.refuse_hidden(item, page=page)
    return item


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
    visible = image_selectors.image_list(user=user, project=project)
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


# --------------------------------------------------------------------------- versions

FIRST_NOTE = "Before the first save in the editor (as imported or edited elsewhere)"
OUTSIDE_NOTE = "Changed outside the editor (drafting, joint review or an import)"


@dataclass
class VersionState:
    """Which version the item's current document is. ``recorded`` is False when no row holds it
    yet: before the first save (version 1), or after a change made outside the editor (the
    next number); the next save records it first."""

    number: int
    fingerprint: str
    recorded: bool
    latest: TrajectoryVersion | None


def version_state(*, item: Item, document: dict[str, Any]) -> VersionState:
    """One query: the newest version row, without its document."""
    latest = (
        TrajectoryVersion.objects.filter(item=item)
        .select_related("author")
        .defer("document")
        .order_by("-number")
        .first()
    )
    return state_of(latest=latest, document=document)


def state_of(*, latest: TrajectoryVersion | None, document: dict[str, Any]) -> VersionState:
    fingerprint = td.fingerprint(document)
    if latest is None:
        return VersionState(1, fingerprint, False, None)
    if latest.fingerprint == fingerprint:
        return VersionState(latest.number, fingerprint, True, latest)
    return VersionState(latest.number + 1, fingerprint, False, latest)


def unrecorded_version(
    *, item: Item, document: dict[str, Any], state: VersionState
) -> TrajectoryVersion:
    """A stand-in (not saved) for the current document when no row holds it."""
    first = state.latest is None
    version = TrajectoryVersion(
        item=item,
        number=state.number,
        document=document_text(document),
        fingerprint=state.fingerprint,
        note=FIRST_NOTE if first else OUTSIDE_NOTE,
        base_number=None,
    )
    version.__dict__["_data"] = document
    version.created_at = item.created_at if first else item.updated_at
    return version


@dataclass
class VersionRow:
    version: TrajectoryVersion
    diff: DocumentDiff | None
    """Against the previous version; None for version 1."""
    current: bool

    @property
    def summary(self) -> str:
        return self.diff.summary() if self.diff is not None else ""


def version_list(*, user: AnyUser, item: Item, document: dict[str, Any]) -> list[VersionRow]:
    """Every version, newest first, each with what changed from the one before (one query,
    whatever the number of versions). The current document leads the list as a stand-in when
    no save has recorded it yet."""
    rows = list(
        TrajectoryVersion.objects.filter(item=item).select_related("author").order_by("number")
    )
    state = state_of(latest=rows[-1] if rows else None, document=document)
    if not state.recorded:
        rows.append(unrecorded_version(item=item, document=document, state=state))
    out: list[VersionRow] = []
    previous: TrajectoryVersion | None = None
    for version in rows:
        diff = document_diff(previous.data, version.data) if previous is not None else None
        out.append(VersionRow(version, diff, version.number == state.number))
        previous = version
    out.reverse()
    return out


@dataclass
class VersionPage:
    version: TrajectoryVersion
    previous: TrajectoryVersion | None
    diff: DocumentDiff
    state: VersionState


def version_get(*, user: AnyUser, item: Item, number: int, document: dict[str, Any]) -> VersionPage:
    """Version ``number`` (a stand-in when it is the unrecorded current document), the one
    before it and the difference; 404 when there is no such version. Two queries."""
    rows = {
        v.number: v
        for v in TrajectoryVersion.objects.filter(
            item=item, number__in=[number, number - 1]
        ).select_related("author")
    }
    state = version_state(item=item, document=document)
    if not state.recorded and number == state.number:
        rows[number] = unrecorded_version(item=item, document=document, state=state)
    if number not in rows:
        raise Http404(f"This trajectory has no version {number}.")
    version, previous = rows[number], rows.get(number - 1)
    return VersionPage(
        version=version,
        previous=previous,
        diff=document_diff(previous.data if previous is not None else None, version.data),
        state=state,
    )
