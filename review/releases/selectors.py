"""Reading releases: scoped to projects the user may review (another project's release 404s)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from django.db.models import QuerySet
from django.shortcuts import get_object_or_404

from benchmark import permissions
from benchmark.exceptions import Forbidden
from benchmark.models import Item, Project
from benchmark.typing import AnyUser
from review.releases.models import Release
from review.releases.services import (
    field_prints,
    fields_changed,
    item_record,
    record_field_prints,
    record_fingerprint,
)


def release_list(*, user: AnyUser, project: Project) -> QuerySet[Release]:
    """The project's releases, newest first; the fingerprints (large) are left unread."""
    if not permissions.can(user=user, project=project, action="release"):
        raise Forbidden("Only reviewers and admins see releases.")
    return (
        Release.objects.filter(project=project)
        .select_related("created_by")
        .defer("fingerprints", "field_fingerprints", "manifest")
        .order_by("-number")
    )


def release_get(*, user: AnyUser, project: Project, pk: int) -> Release:
    return get_object_or_404(release_list(user=user, project=project).defer(None), pk=pk)


@dataclass
class ItemReleaseState:
    release: Release | None  # the newest release that holds the item
    changed: bool  # the item differs from what that release holds
    #: The fields that differ, when ``changed`` and the release recorded field fingerprints.
    fields: list[str] | None = None


def item_release_state(*, user: AnyUser, project: Project, item: Item) -> ItemReleaseState:
    """Whether the item changed since the newest release that holds it, and in which fields."""
    for release in release_list(user=user, project=project).defer("manifest"):
        frozen = dict(release.fingerprints)
        if item.pk in frozen:
            record = item_record(item=item)
            if frozen[item.pk] == record_fingerprint(record):
                return ItemReleaseState(release, changed=False)
            before = field_prints(release.field_fingerprints, item.pk)
            fields = None if before is None else fields_changed(before, record_field_prints(record))
            return ItemReleaseState(release, changed=True, fields=fields)
    return ItemReleaseState(None, changed=False)


@dataclass
class ChangedItem:
    name: str  # the item's id in the data
    #: The top-level fields of its record that changed; None when a release did not record
    #: field fingerprints (made before they were).
    fields: list[str] | None


@dataclass
class ReleaseComparison:
    old: Release
    new: Release
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    same: int = 0
    #: Each changed item (in ``changed`` order) with the fields that changed.
    changed_items: list[ChangedItem] = field(default_factory=list)
    #: Why fields are not named (a release made before field fingerprints), else "".
    field_note: str = ""


def release_compare(*, user: AnyUser, project: Project, old: int, new: int) -> ReleaseComparison:
    """Items added, removed and changed from release ``old`` to ``new`` (by item id: an item
    whose content differs between the two is changed), named by their ids in the data."""
    return release_diff(
        old=release_get(user=user, project=project, pk=old),
        new=release_get(user=user, project=project, pk=new),
    )


def release_diff(*, old: Release, new: Release) -> ReleaseComparison:
    """The comparison of two releases already looked up (``release_compare`` scopes them to
    the user; ``manage.py release --compare`` runs with the shell's rights)."""
    a, b, project = old, new, old.project
    before, after = dict(a.fingerprints), dict(b.fingerprints)
    names = dict(
        Item.objects.filter(project=project, pk__in=before.keys() | after.keys()).values_list(
            "pk", "external_id"
        )
    )

    def named(pks: Iterable[int]) -> list[str]:
        return sorted(names.get(pk, f"deleted item #{pk}") for pk in pks)

    common = before.keys() & after.keys()
    changed = [pk for pk in common if before[pk] != after[pk]]
    missing = [r.label for r in (a, b) if not r.field_fingerprints]
    changed_items = sorted(
        (
            ChangedItem(
                names.get(pk, f"deleted item #{pk}"),
                None if missing else _fields_between(a, b, pk),
            )
            for pk in changed
        ),
        key=lambda c: c.name,
    )
    return ReleaseComparison(
        old=a,
        new=b,
        added=named(after.keys() - before.keys()),
        removed=named(before.keys() - after.keys()),
        changed=[c.name for c in changed_items],
        same=len(common) - len(changed),
        changed_items=changed_items,
        field_note=(
            f"{' and '.join(missing)} recorded no per-field fingerprints (made before they "
            "were), so changed items are listed without the fields that changed."
            if missing and changed
            else ""
        ),
    )


def _fields_between(a: Release, b: Release, pk: int) -> list[str] | None:
    before = field_prints(a.field_fingerprints, pk)
    after = field_prints(b.field_fingerprints, pk)
    if before is None or after is None:
        return None
    return fields_changed(before, after)
