"""Reviewers settle disputed items and proposals to discard an item; every decision is kept
with who and when."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import orjson
from django.db import transaction
from django.utils import timezone

from annotation.discarding.models import DiscardProposal, ProposalStatus
from annotation.judgment_tasks.consensus import Verdict
from annotation.judgment_tasks.models import JudgmentTask, Outcome
from annotation.judgment_tasks.services import item_follows_outcome, judgment_agreement_sync
from annotation.judgment_tasks.solving import is_solve_task
from annotation.verification.services import verification_reopen_if_changed
from benchmark.exceptions import Conflict, Forbidden, ValidationFailed
from benchmark.models import Item, ItemStatus
from benchmark.permissions import can
from benchmark.projects.services import item_status_set
from benchmark.typing import User
from review.adjudication.models import Decision

DECISIONS = (Verdict.ACCEPTED, Verdict.REJECTED, "discarded")


def outcome_decide(
    *,
    task: JudgmentTask,
    item: Item,
    reviewer: User,
    verdict: str,
    value: Any = None,
    reason: str = "",
) -> Outcome:
    """Accept, reject, or discard with a reason; the item's status follows."""
    if not can(user=reviewer, project=task.project, action="adjudicate"):
        raise Forbidden("only reviewers and admins decide disputed items")
    if item.project_id != task.project_id:
        raise ValidationFailed("the item is not in this task's project")
    if task.has_units:
        raise ValidationFailed(
            "this task is rated unit by unit; its units are not settled by adjudication "
            "(their ratings are the figures)"
        )
    if verdict not in DECISIONS:
        raise ValidationFailed("decide accepted, rejected or discarded")
    reason = reason.strip()
    if verdict == "discarded" and not reason:
        raise ValidationFailed("say why the item is discarded")
    with transaction.atomic():
        outcome, _ = Outcome.objects.select_for_update().get_or_create(task=task, item=item)
        outcome.verdict = verdict
        outcome.value = value
        outcome.reason = reason or f"decided by {reviewer.get_username()}"
        outcome.decided_by = reviewer
        outcome.decided_at = timezone.now()
        outcome.save()
        judgment_agreement_sync(task=task, item_ids=[item.pk], unit=outcome.unit)
        Decision.objects.create(
            task=task, item=item, reviewer=reviewer, verdict=verdict, value=value, reason=reason
        )
        if task.updates_item_status:
            item_follows_outcome(item, verdict, outcome.reason, task=task, reviewer=reviewer)
    return outcome


def _clean_variants(values: Iterable[Any]) -> list[str]:
    out: list[str] = []
    for value in values:
        text = str(value).strip()
        if text and text not in out:
            out.append(text)
    return out


MATCH_TYPES = ("exact", "contains", "numeric")


def answer_revise(
    *,
    task: JudgmentTask,
    item: Item,
    reviewer: User,
    expected_answer: str,
    accepted_variants: Sequence[str],
    match_type: str,
    tolerance: float | None = None,
    reason: str = "",
    base_updated_at: Any = None,
) -> Outcome:
    """Joint review: change the item's answer, its accepted variants or its match rule, then
    compare the verifiers' answers again. If they all match now the item is verified;
    otherwise it stays in the queue with the new count. The change is recorded as a review
    decision (``revised``, with the answer before and after). A stale form (the item changed
    since ``base_updated_at``) answers 409 and writes nothing."""
    from annotation.judgment_tasks.services import outcome_recompute
    from review.adjudication.models import Decision

    if not can(user=reviewer, project=task.project, action="adjudicate"):
        raise Forbidden("only reviewers and admins revise answers in joint review")
    # (No item state rule here: in joint review a reviewer revises the answer on purpose.)
    expected_answer = _revision_check(
        task=task, item=item, expected_answer=expected_answer, match_type=match_type,
        tolerance=tolerance,
    )  # fmt: skip
    variants = [v for v in _clean_variants(accepted_variants) if v != expected_answer]
    with transaction.atomic():
        locked = Item.objects.select_for_update().get(pk=item.pk)
        outcome = Outcome.objects.select_for_update().filter(task=task, item=item).first()
        if outcome is None or outcome.verdict != Verdict.DISPUTED:
            raise Conflict("this item is not in joint review any more; reload the queue")
        if base_updated_at is not None and locked.updated_at != base_updated_at:
            raise Conflict(
                "the item was changed by someone else since you opened it; reload to see "
                "the current answer"
            )
        before = {
            "expected_answer": locked.expected_answer,
            "accepted_variants": list(locked.accepted_variants or []),
            "match_type": locked.match_type,
        }
        locked.expected_answer = expected_answer
        locked.accepted_variants = variants
        locked.match_type = match_type
        fields = ["expected_answer", "accepted_variants", "match_type", "updated_at"]
        after = {k: getattr(locked, k) for k in ("expected_answer", "accepted_variants")}
        after["match_type"] = match_type
        if tolerance is not None:
            fields.extend(_tolerance_set(locked, tolerance))
            after["tolerance"] = tolerance
        locked.full_clean()
        locked.save(update_fields=fields)
        Decision.objects.create(
            task=task,
            item=locked,
            reviewer=reviewer,
            verdict="revised",
            value={"from": before, "to": after},
            reason=reason.strip(),
        )
        # The answer the verifiers are compared with follows the revision (this task); other
        # solve tasks that began against the old answer reopen.
        verification_reopen_if_changed(
            item=locked, user=reviewer, where="in joint review", revised_by_review=task
        )
        return outcome_recompute(task=task, item=locked)


def _revision_check(
    *, task: JudgmentTask, item: Item, expected_answer: str, match_type: str,
    tolerance: float | None,
) -> str:  # fmt: skip
    """The revised answer, stripped; a revision that cannot be made raises ValidationFailed."""
    if not is_solve_task(task):
        raise ValidationFailed("this task does not compare answers with the author's answer")
    if item.project_id != task.project_id:
        raise ValidationFailed("the item is not in this task's project")
    expected_answer = (expected_answer or "").strip()
    if not expected_answer:
        raise ValidationFailed("expected answer: give the answer the item should have")
    if match_type not in MATCH_TYPES:
        raise ValidationFailed(f"match type: choose one of {', '.join(MATCH_TYPES)}")
    if match_type == "numeric":
        try:
            float(expected_answer)
        except ValueError:
            raise ValidationFailed(
                f"expected answer: {expected_answer!r} is not a number, and the match type "
                "is numeric"
            ) from None
    if tolerance is not None and (tolerance < 0 or tolerance != tolerance):
        raise ValidationFailed("tolerance: give a number of at least 0")
    return expected_answer


def _tolerance_set(locked: Item, tolerance: float) -> list[str]:
    """Store the tolerance where the task file keeps it (``golden_answer.tolerance``, so the
    export carries it), else in the item's constraints; the fields written."""
    record = locked.raw_record if locked.raw else None
    if isinstance(record, dict) and isinstance(record.get("golden_answer", {}), dict):
        record.setdefault("golden_answer", {})["tolerance"] = tolerance
        locked.raw = orjson.dumps(record).decode()
        if getattr(locked, "raw_holes", None):  # the whole record is in raw again
            locked.raw_holes = []
            return ["raw", "raw_holes"]
        return ["raw"]
    locked.constraints = {**(locked.constraints or {}), "tolerance": tolerance}
    return ["constraints"]


def discard_proposal_decide(
    *, proposal: DiscardProposal, reviewer: User, accept: bool, note: str = ""
) -> DiscardProposal:
    """Accept (the item is discarded with the proposal's reason, recorded as a status change
    by the reviewer) or reject (the item stays as it is) an annotator's proposal to discard
    an item. Either way the proposal keeps who decided, when and the note. Reviewers and
    admins only; a proposal already decided answers 409. Accepting a proposal for an item
    that is already discarded closes it without another status change."""
    if not can(user=reviewer, project=proposal.item.project, action="adjudicate"):
        raise Forbidden("only reviewers and admins decide on proposals to discard an item")
    note = (note or "").strip()
    with transaction.atomic():
        item = Item.objects.select_for_update().select_related("project").get(pk=proposal.item_id)
        locked = DiscardProposal.objects.select_for_update().get(pk=proposal.pk)
        if locked.status != ProposalStatus.OPEN:
            who = locked.decided_by.get_username() if locked.decided_by else "someone"
            raise Conflict(f"this proposal was already {locked.status} by {who}; reload the list")
        if accept:
            if item.status == ItemStatus.DISCARDED:
                note = note or "the item was already discarded"
            else:
                who = locked.proposed_by.get_username()
                reason = f"{locked.reason} (proposed by {who})"
                if note:
                    reason += f"; {note}"
                item_status_set(
                    item=item,
                    user=reviewer,
                    status=ItemStatus.DISCARDED,
                    reason=reason,
                    expect=item.status,
                )
        locked.status = ProposalStatus.ACCEPTED if accept else ProposalStatus.REJECTED
        locked.decided_by = reviewer
        locked.decided_at = timezone.now()
        locked.decision_note = note
        locked.full_clean(exclude=["item", "response", "proposed_by", "decided_by"])
        locked.save(update_fields=["status", "decided_by", "decided_at", "decision_note"])
    return locked
