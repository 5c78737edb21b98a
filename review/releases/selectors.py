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
from review.releases.services import item_fingerprint


def release_list(*, user: AnyUser, project: Project) -> QuerySet[Release]:
    """The project's releases, newest first; the fingerprints (large) are left unread."""
    if not permissions.can(user=user, project=project, action="review"):
        raise Forbidden("Only reviewers and admins see releases.")
    return (
        Release.objects.filter(project=project)
        .select_related("created_by")
        .defer("fingerprints", "manifest")
        .order_by("-number")
    )


def release_get(*, user: AnyUser, project: Project, pk: int) -> Release:
    return get_object_or_404(release_list(user=user, project=project).defer(None), pk=pk)


@dataclass
class ItemReleaseState:
    release: Release | None  # the newest release that holds the item
    changed: bool  # the item differs from what that release holds


def item_release_state(*, user: AnyUser, project: Project, item: Item) -> ItemReleaseState:
    """Whether the item changed since the newest release that holds it."""
    for release in release_list(user=user, project=project).defer("manifest"):
        frozen = dict(release.fingerprints)
        if item.pk in frozen:
            return ItemReleaseState(release, frozen[item.pk] != item_fingerprint(item=item))
    return ItemReleaseState(None, changed=False)


@dataclass
class ReleaseComparison:
    old: Release
    new: Release
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    same: int = 0


def release_compare(*, user: AnyUser, project: Project, old: int, new: int) -> ReleaseComparison:
    """Items added, removed and changed from release ``old`` to ``new`` (by item id: an item
    whose content differs between the two is changed), named by their ids in the data."""
    a = release_get(user=user, project=project, pk=old)
    b = release_get(user=user, project=project, pk=new)
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
    return ReleaseComparison(
        old=a,
        new=b,
        added=named(after.keys() - before.keys()),
        removed=named(before.keys() - after.keys()),
        changed=named(changed),
        same=len(common) - len(changed),
    )
