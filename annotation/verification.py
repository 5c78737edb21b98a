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

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.db import transaction
from django.db.models import Exists, Max, OuterRef, Q, QuerySet
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from annotation.consensus import Rule, Verdict
from annotation.models import (
    Assignment,
    Judgment,
    JudgmentTask,
    Outcome,
    Scheme,
    TrajectoryAudit,
)
from benchmark.exceptions import Conflict, PermissionDenied, ValidationFailed
from benchmark.metrics.agentic_mme import final_answer_correct
from benchmark.models import Item, ItemStatus, Membership, Origin, Role, Trajectory
from benchmark.permissions import can
from benchmark.typing import AnyUser, User

# --------------------------------------------------------------------------- the checklist

#: What a verifier confirms about a step of the reference trajectory, after §2.3's step-wise
#: annotation (intent, tool or operation, ground-truth intermediate artifact with its question
#: and answer, search keywords with human-verified URLs and the expected intermediate answer)
#: and §2.4's audit ("intermediate tool actions, visual artifacts, and retrieved URLs are
#: accurate and logically sound").
CHECKS: dict[str, str] = {
    "intent": "The intent is clear and says why this step is needed",
    "tool": "The tool or operation and its arguments are right",
    "checkpoint": "The checkpoint is right: its image shows the evidence and its question and "
    "expected answer hold (search: the keywords find the expected intermediate answer)",
    "url": "The reference URLs work and support the expected answer",
}
CHECK_SHORT = {"intent": "intent", "tool": "tool", "checkpoint": "checkpoint", "url": "URLs"}

URL_RE = re.compile(r"^https?://\S+$", re.IGNORECASE)
MAX_COMMENT = 2000


def checks_for(step: Mapping[str, Any]) -> list[str]:
    """The checklist of one step: intent and tool always; the checkpoint when the step has
    one to check (a visual question, a crop box, a search finding); URLs on search steps."""
    names = ["intent", "tool"]
    axis = str(step.get("axis", "")).upper()
    if axis == "S" or step.get("search_check"):
        names += ["checkpoint", "url"]
    elif any(step.get(k) for k in ("visual_check", "code_check", "answer_check")):
        names.append("checkpoint")
    return names


def step_urls(step: Mapping[str, Any]) -> list[str]:
    """Every http(s) URL among the step's values (``search_check.urls``, ``reference_urls``,
    ...), in order, once each."""
    found: dict[str, None] = {}

    def walk(value: Any) -> None:
        if isinstance(value, str):
            if URL_RE.match(value.strip()):
                found[value.strip()] = None
        elif isinstance(value, Mapping):
            for v in value.values():
                walk(v)
        elif isinstance(value, list | tuple):
            for v in value:
                walk(v)

    walk(step)
    return list(found)


def audit_steps(checkpoints: Sequence[Any], steps: Sequence[Any] = ()) -> list[dict[str, Any]]:
    """The units a verifier audits: the reference trajectory's checkpoints (each one step of
    the Agentic-MME task file, with its intent as ``description``), or its steps when it has
    no checkpoints. Each gets a stable ``step`` key (the checkpoint id, else ``#n``)."""
    source = [c for c in checkpoints if isinstance(c, Mapping)] or [
        s for s in steps if isinstance(s, Mapping)
    ]
    units = []
    for n, raw in enumerate(source):
        key = str(raw.get("id") or f"#{n + 1}")
        units.append(
            {
                "step": key,
                "axis": str(raw.get("axis", "")).upper(),
                "description": str(raw.get("description") or raw.get("intent") or ""),
                "checks": checks_for(raw),
                "urls": step_urls(raw),
                "raw": raw,
            }
        )
    return units


def golden_answer(item: Item) -> dict[str, Any]:
    """The item's answer in the shape the Agentic-MME scorer reads: value, match type (blank
    means the scorer's default, ``contains``), numeric tolerance (``golden_answer.tolerance`` of
    the task record, as the format and the trajectory editor keep it; else the item's
    constraints) and the accepted variants."""
    tolerance: Any = None
    raw = item.raw_record if item.raw else None
    source = raw.get("golden_answer") if isinstance(raw, dict) else None
    if isinstance(source, dict):
        tolerance = source.get("tolerance")
    if tolerance is None:
        tolerance = (item.constraints or {}).get("tolerance")
    try:
        tolerance = float(tolerance or 0)
    except (TypeError, ValueError):
        tolerance = 0.0
    return {
        "value": item.expected_answer,
        "match_type": item.match_type or "contains",
        "tolerance": tolerance,
        "accepted_answers": [str(v) for v in item.accepted_variants or []],
    }


def answer_matches_item(item: Item, answer: Any) -> bool:
    """Whether a verifier's answer matches the item's answer or one of its variants, compared
    as the benchmark compares a model's final answer."""
    if not item.expected_answer.strip():
        return False
    return final_answer_correct({"golden_answer": golden_answer(item)}, str(answer))


# --------------------------------------------------------------------------- which tasks


def is_solve_task(task: JudgmentTask) -> bool:
    """A task whose verifiers solve the item and are compared with the author's answer."""
    return task.scheme == Scheme.TEXT and task.consensus == Rule.AUTHOR_PLUS_TWO


AUTHOR_PREFIXES = ("user:", "drafted by ")
"""How ``provenance`` names the person who drafted an item: ``user:<name>`` (optionally
followed by more words) or the drafting page's ``drafted by <name> with <model>``."""


def author_username(item: Item) -> str:
    """Who drafted the item, from ``provenance``; empty for imported items."""
    text = (item.provenance or "").strip()
    for prefix in AUTHOR_PREFIXES:
        if text.startswith(prefix):
            rest = text[len(prefix) :].split(maxsplit=1)
            return rest[0] if rest else ""
    return ""


def author_provenance(username: str) -> tuple[list[str], list[str]]:
    """The ``provenance`` values naming ``username`` as the author: whole values, and prefixes
    (followed by more words)."""
    whole = [prefix + username for prefix in AUTHOR_PREFIXES]
    return whole, [value + " " for value in whole]


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


def reference_trajectory(item: Item) -> Trajectory | None:
    """The item's reference trajectory: its first ground-truth trajectory (not an agent run)."""
    return (
        Trajectory.objects.filter(item=item, origin=Origin.GROUND_TRUTH)
        .exclude(key__startswith="run:")
        .order_by("position", "id")
        .first()
    )


def hidden_items(*, user: AnyUser) -> QuerySet[Item]:
    """The items whose answer and reference trajectory ``user`` may not see yet: items still
    waiting for blind verification by an active solve task of their project (no settled
    outcome; a draft, when the task sets item status), which ``user`` could verify (not a
    reviewer or admin of the project, not the item's author unless the task allows it) and has
    not answered yet. One query; use it as a subquery (``exclude(item__in=...)``)."""
    if not user.is_authenticated:
        return Item.objects.none()
    item = OuterRef(OuterRef("pk"))
    waiting = JudgmentTask.objects.filter(
        ~Exists(
            Outcome.objects.filter(task=OuterRef("pk"), item=item).exclude(verdict=Verdict.PENDING)
        ),
        ~Exists(Judgment.objects.filter(task=OuterRef("pk"), item=item, user=user.pk)),
        project_id=OuterRef("project_id"),
        active=True,
        scheme=Scheme.TEXT,
        consensus=Rule.AUTHOR_PLUS_TWO,
    )
    whole, prefixes = author_provenance(user.get_username())
    author = Q(provenance__in=whole)
    for prefix in prefixes:
        author |= Q(provenance__startswith=prefix)

    def could_verify(tasks: QuerySet[JudgmentTask]) -> Q:
        return Q(Exists(tasks.filter(author_may_judge=True))) | (Q(Exists(tasks)) & ~author)

    reviewer = Membership.objects.filter(
        project_id=OuterRef("project_id"), user=user.pk, role__in=(Role.ADMIN, Role.REVIEWER)
    )
    return Item.objects.filter(
        ~Q(Exists(reviewer)),
        could_verify(waiting.filter(updates_item_status=False))
        | (Q(status=ItemStatus.DRAFT) & could_verify(waiting.filter(updates_item_status=True))),
    )


def hidden_item_ids(*, user: AnyUser, items: Iterable[Item]) -> set[int]:
    """Which of ``items`` are hidden from ``user`` (:func:`hidden_items`); one query."""
    ids = [item.pk for item in items]
    if not ids or not user.is_authenticated:
        return set()
    return set(hidden_items(user=user).filter(pk__in=ids).values_list("pk", flat=True))


def refuse_if_hidden(*, user: AnyUser, item: Item, page: str) -> None:
    """Pages that show an item's reference (the trajectory editor, backward drafting) refuse a
    blind verifier who has not answered yet, saying why."""
    if item.pk in hidden_item_ids(user=user, items=[item]):
        raise DjangoPermissionDenied(
            f"{page} shows this item's reference, and you are one of its blind verifiers: "
            "it opens once you have answered the question."
        )


def redact_unanswered(*, user: AnyUser, item: Item) -> bool:
    """Blank, in memory only, what would give the answer away (expected answer, accepted
    variants, the source record) when ``item`` is hidden from ``user``; says whether it was.
    Callers also leave out the item's trajectories."""
    if item.pk not in hidden_item_ids(user=user, items=[item]):
        return False
    item.expected_answer = ""
    item.accepted_variants = []
    item.raw = ""
    return True


def my_judgment(*, user: AnyUser, task: JudgmentTask, item: Item) -> Judgment | None:
    if not user.is_authenticated:
        return None
    return Judgment.objects.filter(task=task, item=item, user=user).first()  # type: ignore[misc]


@dataclass
class AnswerRow:
    judgment: Judgment
    matches: bool


@dataclass
class ReviewRow:
    """One item of the joint-review queue with every verifier's answer side by side."""

    outcome: Outcome
    answers: list[AnswerRow] = field(default_factory=list)

    @property
    def item(self) -> Item:
        return self.outcome.item


def joint_review_queue(*, user: AnyUser, task: JudgmentTask) -> list[ReviewRow]:
    """Items whose verifiers diverged (disputed), each with all answers and whether each one
    matches the current answer and variants. Reviewers and admins only; two queries."""
    if not can(user=user, project=task.project, action="review"):
        raise PermissionDenied("only reviewers and admins see the joint-review queue")
    outcomes = list(
        Outcome.objects.filter(task=task, verdict=Verdict.DISPUTED)
        .select_related("item")
        .order_by("item__position", "item_id")
    )
    rows = {o.item_id: ReviewRow(outcome=o) for o in outcomes}
    judgments = (
        Judgment.objects.filter(task=task, item_id__in=list(rows))
        .select_related("user")
        .order_by("item_id", "created_at", "id")
    )
    for j in judgments:
        row = rows[j.item_id]
        row.answers.append(AnswerRow(j, answer_matches_item(row.outcome.item, j.value)))
    return list(rows.values())


def answers_for(*, user: AnyUser, task: JudgmentTask, item: Item) -> list[AnswerRow]:
    """Every verifier's answer to the item (reviewers), or only one's own (verifiers)."""
    rows = Judgment.objects.filter(task=task, item=item).select_related("user")
    if not can(user=user, project=task.project, action="review"):
        rows = rows.filter(user=user) if user.is_authenticated else rows.none()  # type: ignore[misc]
    return [AnswerRow(j, answer_matches_item(item, j.value)) for j in rows.order_by("created_at")]


def latest_audits(*, task: JudgmentTask, item: Item) -> list[TrajectoryAudit]:
    """Each verifier's current (highest-numbered) audit of the item, oldest verifier first."""
    newest = (
        TrajectoryAudit.objects.filter(task=task, item=item)
        .values("user_id")
        .annotate(top=Max("number"))
    )
    keys = Q(pk__in=[])
    for row in newest:
        keys |= Q(user_id=row["user_id"], number=row["top"])
    return list(
        TrajectoryAudit.objects.filter(keys, task=task, item=item)
        .select_related("user")
        .order_by("created_at", "id")
    )


def my_audit(*, user: AnyUser, task: JudgmentTask, item: Item) -> TrajectoryAudit | None:
    if not user.is_authenticated:
        return None
    return (
        TrajectoryAudit.objects.filter(task=task, item=item, user=user)  # type: ignore[misc]
        .order_by("-number")
        .first()
    )


def audit_table(
    units: list[dict[str, Any]], audits: Sequence[TrajectoryAudit]
) -> list[dict[str, Any]]:
    """Per step, per check: each verifier's tick (True, False, or None when not audited);
    plus every comment. What reviewers read to see where the reference is doubtful."""
    entries = [{e.get("step"): e for e in a.steps if isinstance(e, dict)} for a in audits]
    table = []
    for unit in units:
        checks = []
        for name in unit["checks"]:
            ticks = [
                (audit.user, (entry.get(unit["step"]) or {}).get("checks", {}).get(name))
                for audit, entry in zip(audits, entries, strict=True)
            ]
            given = [t for _, t in ticks if t is not None]
            checks.append(
                {
                    "name": name,
                    "label": CHECKS[name],
                    "short": CHECK_SHORT[name],
                    "ticks": ticks,
                    "ok": sum(1 for t in given if t),
                    "n": len(given),
                    "doubt": any(t is False for t in given),
                }
            )
        comments = [
            (audit.user, (entry.get(unit["step"]) or {}).get("comment", ""))
            for audit, entry in zip(audits, entries, strict=True)
        ]
        table.append(
            {
                **unit,
                "rows": checks,
                "comments": [(u, c) for u, c in comments if c],
                "doubt": any(c["doubt"] for c in checks),
            }
        )
    return table


def audit_overview(*, user: AnyUser, task: JudgmentTask) -> list[dict[str, Any]]:
    """Reviewers: each audited item with its verifiers, the number of checks they left
    unconfirmed, the steps concerned and the comments; the most doubtful first. Two queries."""
    if not can(user=user, project=task.project, action="review"):
        raise PermissionDenied("only reviewers and admins see the audits")
    latest: dict[tuple[int, int], TrajectoryAudit] = {}
    for audit in (
        TrajectoryAudit.objects.filter(task=task)
        .select_related("item", "user")
        .order_by("item_id", "user_id", "number")
    ):
        latest[(audit.item_id, audit.user_id)] = audit
    rows: dict[int, dict[str, Any]] = {}
    for audit in latest.values():
        row = rows.setdefault(
            audit.item_id,
            {"item": audit.item, "verifiers": [], "unconfirmed": 0, "steps": {}, "comments": 0},
        )
        row["verifiers"].append(audit.user.get_username())
        for entry in audit.steps:
            if not isinstance(entry, dict):
                continue
            missing = [k for k, v in (entry.get("checks") or {}).items() if not v]
            row["unconfirmed"] += len(missing)
            if missing:
                row["steps"].setdefault(entry.get("step"), set()).update(missing)
            row["comments"] += bool(entry.get("comment"))
    verdicts = dict(
        Outcome.objects.filter(task=task, item_id__in=list(rows)).values_list("item_id", "verdict")
    )
    out = []
    for item_id, row in rows.items():
        row["verdict"] = verdicts.get(item_id, Verdict.PENDING)
        row["flagged"] = [
            (step, ", ".join(CHECK_SHORT.get(c, c) for c in sorted(checks)))
            for step, checks in row["steps"].items()
        ]
        out.append(row)
    out.sort(key=lambda r: (-r["unconfirmed"], -r["comments"], r["item"].position, r["item"].pk))
    return out


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
        raise PermissionDenied("answer the item blind before you audit its reference trajectory")
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
    from annotation.services import outcome_recompute
    from review.models import Decision

    if not can(user=reviewer, project=task.project, action="review"):
        raise PermissionDenied("only reviewers and admins revise answers in joint review")
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
            # Where the task file keeps it (golden_answer.tolerance), so the export carries it.
            record = locked.raw_record if locked.raw else None
            if isinstance(record, dict) and isinstance(record.get("golden_answer", {}), dict):
                record.setdefault("golden_answer", {})["tolerance"] = tolerance
                locked.raw = orjson.dumps(record).decode()
                fields.append("raw")
                if getattr(locked, "raw_holes", None):  # the whole record is in raw again
                    locked.raw_holes = []
                    fields.append("raw_holes")
            else:
                locked.constraints = {**(locked.constraints or {}), "tolerance": tolerance}
                fields.append("constraints")
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
        return outcome_recompute(task=task, item=locked)


def stamp(value: Any) -> str:
    """The item's ``updated_at`` as a form token for the stale check."""
    return value.isoformat() if value else ""


def parse_stamp(text: str) -> Any:
    value = parse_datetime(text or "")
    if value is not None and timezone.is_naive(value):
        value = timezone.make_aware(value)
    return value
