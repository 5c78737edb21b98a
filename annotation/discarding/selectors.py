"""Reads of discard proposals, scoped to the user's projects."""

from __future__ import annotations

from django.db.models import QuerySet
from django.shortcuts import get_object_or_404

from annotation.discarding.models import DiscardProposal, ProposalStatus
from benchmark.models import Item, Project
from benchmark.typing import AnyUser

__all__ = ["discard_proposal_get", "discard_proposal_list", "open_proposals"]


def _visible(user: AnyUser) -> QuerySet[DiscardProposal]:
    if not user.is_authenticated:
        return DiscardProposal.objects.none()
    return DiscardProposal.objects.filter(item__project__memberships__user=user.pk)


def discard_proposal_list(
    *,
    user: AnyUser,
    project: Project | None = None,
    item: Item | None = None,
    status: str | None = None,
) -> QuerySet[DiscardProposal]:
    """Proposals in the user's projects (narrowed to a project, an item, a status), oldest
    first, with the item, the proposer and the decider."""
    rows = _visible(user)
    if project is not None:
        rows = rows.filter(item__project=project)
    if item is not None:
        rows = rows.filter(item=item)
    if status is not None:
        rows = rows.filter(status=status)
    return rows.select_related("item", "proposed_by", "decided_by", "response").order_by(
        "created_at", "id"
    )


def discard_proposal_get(*, user: AnyUser, project: Project, pk: int) -> DiscardProposal:
    """One proposal of the project; 404 for another project's or one the user may not see."""
    return get_object_or_404(
        discard_proposal_list(user=user, project=project).select_related("item__project"), pk=pk
    )


def open_proposals(*, user: AnyUser, item: Item) -> QuerySet[DiscardProposal]:
    return discard_proposal_list(user=user, item=item, status=ProposalStatus.OPEN)
