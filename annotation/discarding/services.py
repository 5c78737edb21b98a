"""Proposing to discard an item. Annotators may not discard (a reviewer's decision, see
``benchmark.projects.services.item_status_set``); they propose, and a reviewer accepts or
rejects the proposal (``review.adjudication.services.discard_proposal_decide``)."""

from __future__ import annotations

from django.db import IntegrityError, transaction

from annotation.discarding.models import DiscardProposal, ProposalStatus
from benchmark.exceptions import Conflict, Forbidden, ValidationFailed
from benchmark.models import Item, ItemStatus, Response
from benchmark.permissions import can
from benchmark.typing import User

__all__ = ["discard_propose"]


def discard_propose(
    *, item: Item, user: User, reason: str, response: Response | None = None
) -> DiscardProposal:
    """Propose discarding ``item`` because of ``reason``. Any project member may propose;
    one open proposal per person and item (a second answers 409); an item already
    discarded answers 409."""
    if not can(user=user, project=item.project, action="view"):
        raise Forbidden(f"you are not a member of {item.project.name!r}")
    if response is not None and response.item_id != item.pk:
        raise ValidationFailed("the answer is not one of this item's")
    reason = (reason or "").strip()
    if not reason:
        raise ValidationFailed("say why the item should be discarded")
    try:
        with transaction.atomic():
            locked = Item.objects.select_for_update().get(pk=item.pk)
            if locked.status == ItemStatus.DISCARDED:
                raise Conflict("this item is already discarded")
            mine = DiscardProposal.objects.filter(
                item=locked, proposed_by=user, status=ProposalStatus.OPEN
            )
            if mine.exists():
                raise IntegrityError
            proposal = DiscardProposal(
                item=locked, response=response, proposed_by=user, reason=reason
            )
            proposal.full_clean(exclude=["item", "response", "proposed_by"])
            proposal.save()
    except IntegrityError:
        raise Conflict(
            "you have already proposed discarding this item; a reviewer will decide"
        ) from None
    return proposal
