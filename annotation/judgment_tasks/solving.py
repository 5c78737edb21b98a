"""Blind solving, the judgment task that verifies an Agentic-MME item: the rules that judging,
blind verification (``annotation.verification``) and joint review share. Which tasks are solve
tasks, who authored an item, and whether an answer matches the item's answer the way the
benchmark scores a final answer. Judging applies them itself (when it leases and decides an
item); the verification feature, built on judging, adds the blind screens and the audit."""

from __future__ import annotations

from typing import Any

from annotation.judgment_tasks.consensus import Rule
from annotation.judgment_tasks.models import JudgmentTask, Scheme
from benchmark.models import Item, Origin, Trajectory


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


def answer_matches(golden: dict[str, Any], answer: Any) -> bool:
    """Whether a verifier's answer matches ``golden`` (:func:`golden_answer`'s shape: the
    answer as verification recorded it when it began, or the item's answer now) or one of its
    variants, compared as the benchmark compares a model's final answer."""
    # Agentic-MME's answer matching (and the imaging it loads with it, ~30 ms): imported on
    # first use, not when the apps are set up (``AnnotationConfig.ready`` imports this module).
    from benchmark.metrics.agentic_mme import final_answer_correct

    if not str(golden.get("value") or "").strip():
        return False
    return final_answer_correct({"golden_answer": golden}, str(answer))


def decided_against(outcome: Any, item: Item) -> dict[str, Any]:
    """The answer a verification compares with: the one recorded on its outcome when it
    began (``answer_snapshot``), else the item's answer now."""
    snapshot = getattr(outcome, "answer_snapshot", None)
    return snapshot if isinstance(snapshot, dict) else golden_answer(item)


def answer_matches_item(item: Item, answer: Any) -> bool:
    """:func:`answer_matches` against the item's answer as it is now."""
    return answer_matches(golden_answer(item), answer)


def is_solve_task(task: JudgmentTask) -> bool:
    """A task whose verifiers solve the item and are compared with the author's answer."""
    return task.scheme == Scheme.TEXT and task.consensus == Rule.AUTHOR_PLUS_TWO


AUTHOR_PREFIXES = ("user:", "drafted by ", "written by ")


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


def is_author(provenance: str, username: str) -> bool:
    """Whether ``provenance`` names ``username`` as the item's author (the rule the queue
    applies in SQL with :func:`author_provenance`)."""
    whole, prefixes = author_provenance(username)
    return provenance in whole or any(provenance.startswith(p) for p in prefixes)


def reference_trajectory(item: Item) -> Trajectory | None:
    """The item's reference trajectory: its first ground-truth trajectory (not an agent run)."""
    return (
        Trajectory.objects.filter(item=item, origin=Origin.GROUND_TRUTH)
        .exclude(key__startswith="run:")
        .order_by("position", "id")
        .first()
    )
