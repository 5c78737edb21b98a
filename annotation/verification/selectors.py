"""Reads of blind verification, scoped to the user: which items are hidden from a verifier who has not answered yet, the answers and the audits."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db.models import Exists, Max, OuterRef, Q, QuerySet

from annotation.judgment_tasks.consensus import Rule, Verdict
from annotation.judgment_tasks.models import GoldItem, Judgment, JudgmentTask, Outcome, Scheme
from annotation.judgment_tasks.selectors import tasks_below_reviewer_exist
from annotation.judgment_tasks.solving import (
    answer_matches,
    author_provenance,
    decided_against,
)
from annotation.verification.checklist import CHECK_SHORT, CHECKS
from annotation.verification.models import TrajectoryAudit
from benchmark import visibility
from benchmark.exceptions import Forbidden
from benchmark.images import selectors as image_selectors
from benchmark.models import Item, ItemStatus, Membership, Origin, Trajectory
from benchmark.permissions import can, roles_for
from benchmark.presenters import checkpoint_visual, image_entries
from benchmark.typing import AnyUser


def hidden_items(*, user: AnyUser) -> QuerySet[Item]:
    """The items whose answer and reference trajectory ``user`` may not see yet: items still
    waiting for blind verification by an active solve task of their project (no settled
    outcome; a draft, when the task sets item status), which ``user`` could verify (not a
    reviewer or admin of the project, not the item's author unless the task allows it) and has
    not answered yet. One small query first asks whether any such task could hide anything
    from ``user`` (``Item.objects.none()`` when none can); otherwise use the answer as a
    subquery (``exclude(item__in=...)``).

    This is the blind-verification answer-hiding rule: ``annotation.apps`` registers it with
    :mod:`benchmark.visibility`, which every item selector applies."""
    if not user.is_authenticated:
        return Item.objects.none()

    # Decided in Python first, with one small query: without an active blind-verification
    # task in a project where ``user`` is below reviewer, nothing is hidden, and the callers
    # skip the rule (building and compiling its subqueries cost every page ~20 ms).
    def blind_tasks() -> bool:
        return tasks_below_reviewer_exist(
            user=user,
            tasks=JudgmentTask.objects.filter(
                active=True, scheme=Scheme.TEXT, consensus=Rule.AUTHOR_PLUS_TWO
            ),
        )

    if not visibility.decided(user, "blind-verification", blind_tasks):
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

    # A gold item of such a task (settled, verified) may be served to ``user`` blind like
    # any other item: hidden as well until they answer it, or its visible answer would give
    # it away (annotation.judgment_tasks.gold).
    gold_waiting = JudgmentTask.objects.filter(
        Exists(GoldItem.objects.filter(task=OuterRef("pk"), item=item, removed_at__isnull=True)),
        ~Exists(Judgment.with_gold.filter(task=OuterRef("pk"), item=item, user=user.pk)),
        project_id=OuterRef("project_id"),
        active=True,
        gold_rate__gt=0,
        scheme=Scheme.TEXT,
        consensus=Rule.AUTHOR_PLUS_TWO,
    )

    reviewer = Membership.objects.filter(
        project_id=OuterRef("project_id"), user=user.pk, role__in=roles_for("adjudicate")
    )
    return Item.objects.filter(
        ~Q(Exists(reviewer)),
        could_verify(waiting.filter(updates_item_status=False))
        | (Q(status=ItemStatus.DRAFT) & could_verify(waiting.filter(updates_item_status=True)))
        | (Q(status=ItemStatus.VERIFIED) & could_verify(gold_waiting)),
    )


def my_judgment(*, user: AnyUser, task: JudgmentTask, item: Item) -> Judgment | None:
    """The user's own answer of the item (a gold one included: to them it is like any other)."""
    if not user.is_authenticated:
        return None
    return Judgment.with_gold.filter(task=task, item=item, user=user).first()  # type: ignore[misc]


@dataclass
class AnswerRow:
    judgment: Judgment
    matches: bool


def answers_for(*, user: AnyUser, task: JudgmentTask, item: Item) -> list[AnswerRow]:
    """Every verifier's answer to the item (reviewers), or only one's own (verifiers), each
    compared with the answer the verification is decided against."""
    rows = Judgment.objects.filter(task=task, item=item).select_related("user")
    if not can(user=user, project=task.project, action="adjudicate"):
        rows = rows.filter(user=user) if user.is_authenticated else rows.none()  # type: ignore[misc]
    golden = decided_against(Outcome.objects.filter(task=task, item=item).first(), item)
    return [AnswerRow(j, answer_matches(golden, j.value)) for j in rows.order_by("created_at")]


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
    if not can(user=user, project=task.project, action="adjudicate"):
        raise Forbidden("only reviewers and admins see the audits")
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


def audit_overview_visuals(*, user: AnyUser, rows: list[dict[str, Any]]) -> None:
    """Adds to each flagged step of ``audit_overview``'s rows the crop it asks about
    (``checkpoint_visual``; None for a step without one): ``flagged`` becomes (step, checks,
    visual). Reviewers only, as the overview; two queries (the reference trajectories and
    the images ``user`` may see)."""
    if not rows:
        return
    checkpoints: dict[int, dict[str, Any]] = {}
    for item_id, raw in (
        Trajectory.objects.filter(
            item__in=[row["item"] for row in rows], origin=Origin.GROUND_TRUTH
        )
        .exclude(key__startswith="run:")
        .order_by("item_id", "-position", "-id")  # the first reference of an item wins
        .values_list("item_id", "checkpoints")
    ):
        checkpoints[item_id] = {
            str(cp.get("id")): cp for cp in raw or [] if isinstance(cp, dict) and cp.get("id")
        }
    shas = [r.get("sha256") for row in rows for r in row["item"].image_refs or []]
    for steps in checkpoints.values():
        for cp in steps.values():
            stored = cp.get("reference_image")
            if isinstance(stored, dict):
                shas.append(stored.get("sha256"))
    images = image_selectors.images_by_sha(user=user, shas=[s for s in shas if s])
    for row in rows:
        entries = image_entries(row["item"].image_refs or [], images, "image_index")
        steps = checkpoints.get(row["item"].pk, {})
        row["flagged"] = [
            (step, checks, checkpoint_visual(steps.get(str(step)), entries, images))
            for step, checks in row["flagged"]
        ]
