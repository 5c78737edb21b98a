"""Blind verification of drafted items, joint review and the per-step audit (Agentic-MME §2.4).

"Each drafted instance is evaluated by the author and at least two independent verifiers.
Verifiers first attempt the task end-to-end without accessing the reference path ... any
divergent answer triggers a joint review ... permanently discarding any instances with
unresolved disagreements ... Once strict consensus is reached on the final answer, verifiers
systematically audit step-wise annotations, ensuring that all intermediate tool actions, visual
artifacts, and retrieved URLs are accurate and logically sound."

Here that is a judgment task with free-text answers and the author rule (a *solve task*):

* verifiers answer blind: their judge screen, the item page and the API hide the expected
  answer, the accepted variants, the reference trajectory and other verifiers' answers while
  they still have to answer;
* each answer is compared with the item's answer and its accepted variants the way the
  benchmark scores a final answer (:func:`benchmark.metrics.agentic_mme.final_answer_correct`:
  the item's match type, numeric tolerance, ``contains`` by default);
* all verifiers matching (at least two) verifies the item; any divergence puts it in the
  joint-review queue (the task's disagreement list), where a reviewer accepts it, revises the
  answer and its variants (the answers are then compared again), or discards it with a reason;
* after answering, each verifier ticks a checklist for every step of the reference trajectory
  (:data:`CHECKS`); reviewers see the ticks of all verifiers per step.

The answer verification is decided against (``annotation.judgment_tasks.services.verification_begin``): when an item is first
leased for a solve task, its answer, accepted variants, match type and tolerance are recorded
on the task's Outcome (``answer_snapshot``); every verifier's answer is compared with that
record, never with the item as it is at the moment of comparison. While verification is open
(no settled outcome), the item's verifiers (anyone holding a lease or judgment of it, or
anyone it is still hidden from) may not change its answer, variants or reference trajectory,
before or after answering (:func:`verifier_may_not_edit`, a state rule of
``benchmark.permissions``, applied by the trajectory editor's and drafting's saves).

When anyone else changes the answer (value, variants, match type, tolerance) after
verification began (:func:`verification_reopen_if_changed`, called by every service that
writes the answer), verification reopens: the round is closed into a
:class:`~annotation.verification.models.VerificationRound` holding the recorded answer, the
verdict reached so far and every verifier's answer (nothing is lost), the live judgments and
leases of the item for that task are removed (they no longer count, and each verifier may
answer again: a verifier has one live judgment per item), the outcome goes back to pending
with the new answer recorded, and an item whose status the task decides goes back to draft.
A discarded item stays discarded (only the record follows the answer). The joint review's revision (``review.adjudication``) is
the exception: there a reviewer revises the answer on purpose, the record follows the new
answer and the same verifiers' answers are compared again.

The checklist rules and the answer comparison at the top of this module are plain Python; the
services (writes, under ``transaction.atomic``) and selectors (scoped to the user) follow.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db import transaction
from django.db.models import Exists, Max, OuterRef, QuerySet
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from annotation.judgment_tasks.consensus import Rule, Verdict
from annotation.judgment_tasks.models import Assignment, Judgment, JudgmentTask, Outcome, Scheme
from annotation.judgment_tasks.solving import golden_answer, is_solve_task, reference_trajectory
from annotation.verification.checklist import MAX_COMMENT, audit_steps
from annotation.verification.models import TrajectoryAudit, VerificationRound
from annotation.verification.selectors import hidden_items
from benchmark.exceptions import Conflict, Forbidden, ValidationFailed
from benchmark.models import Item, ItemStatus
from benchmark.typing import AnyUser, User

# --------------------------------------------------------------------------- the checklist


# --------------------------------------------------------------------------- which tasks


"""How ``provenance`` names the person who drafted an item: ``user:<name>`` (optionally
followed by more words), the drafting page's ``drafted by <name> with <model>``, or an item
written in the app, ``written by <name>``."""


# --------------------------------------------------------------------------- selectors


# --------------------------------------------------------------------------- services


SETTLED = (Verdict.ACCEPTED, Verdict.REJECTED, "discarded")
EDIT_ACTIONS = frozenset({"edit"})


def _solve_tasks(project_id: int) -> QuerySet[JudgmentTask]:
    return JudgmentTask.objects.filter(
        project_id=project_id, active=True, scheme=Scheme.TEXT, consensus=Rule.AUTHOR_PLUS_TWO
    )


def verifier_may_not_edit(*, user: AnyUser, item: Any, action: str) -> str | None:
    """State rule (registered with ``benchmark.permissions`` by ``annotation.apps``): while
    an item is under blind verification (an active solve task with no settled outcome for
    it), its verifiers may not change it: whoever holds a lease or a judgment of it for
    that task, and whoever it is still hidden from (a verifier who has not answered)."""
    if action not in EDIT_ACTIONS or not user.is_authenticated or not isinstance(item, Item):
        return None
    settled = Outcome.objects.filter(task=OuterRef("pk"), item_id=item.pk, verdict__in=SETTLED)
    tasks = _solve_tasks(item.project_id).filter(~Exists(settled))
    verifying = Assignment.objects.filter(task__in=tasks, item_id=item.pk, user=user.pk)
    if verifying.exists() or hidden_items(user=user).filter(pk=item.pk).exists():
        return (
            "you are one of this item's blind verifiers: while it is under verification you "
            "may not change its answer, accepted variants or reference trajectory (before or "
            "after answering); a reviewer can revise the answer in joint review"
        )
    return None


def _judgment_record(judgment: Judgment) -> dict[str, Any]:
    return {
        "user": judgment.user_id,
        "username": judgment.user.get_username(),
        "value": judgment.value,
        "reason": judgment.reason,
        "comment": judgment.comment,
        "relabel": judgment.relabel,
        "seconds": judgment.seconds,
        "created_at": judgment.created_at.isoformat(),
    }


def verification_reopen_if_changed(
    *, item: Item, user: AnyUser, where: str, revised_by_review: JudgmentTask | None = None
) -> list[Outcome]:
    """Inside the transaction of a write to ``item``'s answer (``item`` is the written row):
    for every solve task whose verification of the item began against another answer, reopen
    it (see the module docstring); ``where`` says where the change was made. For
    ``revised_by_review`` (the joint review's revision) only the recorded answer follows.
    Returns the outcomes reopened."""
    now_answer = golden_answer(item)
    outcomes = (
        Outcome.objects.select_for_update()
        .filter(
            item=item,
            answer_snapshot__isnull=False,
            task__scheme=Scheme.TEXT,
            task__consensus=Rule.AUTHOR_PLUS_TWO,
        )
        .select_related("task")
    )
    reopened = []
    who = user.get_username() if user is not None and user.is_authenticated else "someone"
    for outcome in outcomes:
        if outcome.answer_snapshot == now_answer:
            continue
        revised = revised_by_review is not None and outcome.task_id == revised_by_review.pk
        if revised or outcome.verdict == "discarded" or item.status == ItemStatus.DISCARDED:
            outcome.answer_snapshot = now_answer
            outcome.save(update_fields=["answer_snapshot", "updated_at"])
            continue
        if not outcome.task.active:
            continue
        judgments = list(
            Judgment.objects.filter(task=outcome.task, item=item)
            .select_related("user")
            .order_by("created_at", "id")
        )
        if judgments or outcome.verdict != Verdict.PENDING:
            VerificationRound.objects.create(
                task=outcome.task,
                item=item,
                answer=outcome.answer_snapshot,
                verdict=outcome.verdict,
                judgments=[_judgment_record(j) for j in judgments],
                reason=f"the answer was changed {where} by {who}",
                closed_by=user if user is not None and user.is_authenticated else None,
            )
        # Leases and judgments of the closed round go (the round keeps the answers), so
        # the verifiers are offered the item again; a judgment goes with its lease.
        Assignment.objects.filter(task=outcome.task, item=item).delete()
        outcome.verdict = Verdict.PENDING
        outcome.value = None
        outcome.relabel = {}
        outcome.reason = f"reopened: the answer was changed {where} by {who}"
        outcome.decided_by = None
        outcome.decided_at = None
        outcome.answer_snapshot = now_answer
        outcome.save()
        if outcome.task.updates_item_status and item.status != ItemStatus.DRAFT:
            item.status = ItemStatus.DRAFT
            item.discard_reason = ""
            item.save(update_fields=["status", "discard_reason", "updated_at"])
        reopened.append(outcome)
    return reopened


def _parse_checks(unit: dict[str, Any], data: Mapping[str, Any]) -> dict[str, bool]:
    raw = data.get("checks") or {}
    if not isinstance(raw, Mapping):
        raise ValidationFailed(f"step {unit['step']}: checks must be an object")
    unknown = set(raw) - set(unit["checks"])
    if unknown:
        raise ValidationFailed(
            f"step {unit['step']}: no check called {', '.join(sorted(map(str, unknown)))}"
        )
    return {name: bool(raw.get(name, False)) for name in unit["checks"]}


def audit_save(
    *,
    task: JudgmentTask,
    item: Item,
    user: User,
    steps: Mapping[str, Mapping[str, Any]],
    base_number: int | None,
) -> TrajectoryAudit:
    """Save a verifier's audit as a new version. ``steps`` maps each step key to
    ``{"checks": {name: bool}, "comment": str}``; an unticked check means the verifier does
    not confirm it. ``base_number`` is the version the verifier started from (None or 0 for
    the first); if another save came in between, 409 with nothing written."""
    if not is_solve_task(task):
        raise ValidationFailed("this task does not audit reference trajectories")
    if item.project_id != task.project_id:
        raise ValidationFailed("the item is not in this task's project")
    if not Judgment.with_gold.filter(task=task, item=item, user=user).exists():
        raise Forbidden("answer the item blind before you audit its reference trajectory")
    reference = reference_trajectory(item)
    if reference is None:
        raise ValidationFailed("this item has no reference trajectory to audit")
    units = audit_steps(reference.checkpoints or [], reference.steps or [])
    known = {u["step"] for u in units}
    unknown = set(steps) - known
    if unknown:
        raise ValidationFailed(
            "no step called "
            + ", ".join(sorted(map(str, unknown)))
            + " in the reference trajectory (was it edited meanwhile? reload the page)"
        )
    entries = []
    for unit in units:
        data = steps.get(unit["step"]) or {}
        comment = str(data.get("comment") or "").strip()
        if len(comment) > MAX_COMMENT:
            raise ValidationFailed(
                f"step {unit['step']}: the comment is longer than {MAX_COMMENT} characters"
            )
        entries.append(
            {
                "step": unit["step"],
                "axis": unit["axis"],
                "description": unit["description"],
                "checks": _parse_checks(unit, data),
                "comment": comment,
            }
        )
    with transaction.atomic():
        # Serialise the verifier's saves on their own assignment row.
        Assignment.objects.select_for_update().filter(task=task, item=item, user=user).first()
        current = (
            TrajectoryAudit.objects.filter(task=task, item=item, user=user).aggregate(
                n=Max("number")
            )["n"]
            or 0
        )
        if (base_number or 0) != current:
            raise Conflict(
                f"your audit was saved elsewhere meanwhile (version {current}); "
                "reload to see it, then tick again"
            )
        audit = TrajectoryAudit(task=task, item=item, user=user, number=current + 1, steps=entries)
        audit.full_clean()
        audit.save()
    return audit


def stamp(value: Any) -> str:
    """The item's ``updated_at`` as a form token for the stale check."""
    return value.isoformat() if value else ""


def parse_stamp(text: str) -> Any:
    value = parse_datetime(text or "")
    if value is not None and timezone.is_naive(value):
        value = timezone.make_aware(value)
    return value
