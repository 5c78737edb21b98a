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

The checklist rules and the answer comparison at the top of this module are plain Python; the
services (writes, under ``transaction.atomic``) and selectors (scoped to the user) follow.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db import transaction
from django.db.models import Max
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from annotation.judging.consensus import Rule
from annotation.judging.models import Assignment, Judgment, JudgmentTask, Scheme
from annotation.verification.checklist import MAX_COMMENT, audit_steps
from annotation.verification.models import TrajectoryAudit
from annotation.verification.rules import is_solve_task, reference_trajectory
from benchmark.exceptions import Conflict, Forbidden, ValidationFailed
from benchmark.models import Item
from benchmark.typing import User

# --------------------------------------------------------------------------- the checklist


# --------------------------------------------------------------------------- which tasks


"""How ``provenance`` names the person who drafted an item: ``user:<name>`` (optionally
followed by more words) or the drafting page's ``drafted by <name> with <model>``."""


SOLVE_TASK_DEFAULTS: dict[str, Any] = {
    "question": "Solve the task without the reference: look at the images, answer in the "
    "requested format. Your answer is compared with the author's answer and its accepted "
    "variants; then audit the reference trajectory step by step.",
    "scheme": Scheme.TEXT,
    "overlap": 2,
    "consensus": Rule.AUTHOR_PLUS_TWO,
    "updates_item_status": True,
    "author_may_judge": False,
}


# --------------------------------------------------------------------------- selectors


# --------------------------------------------------------------------------- services


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
    if not Judgment.objects.filter(task=task, item=item, user=user).exists():
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
