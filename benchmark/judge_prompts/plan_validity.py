"""m&m's plan validity judge: does a tool plan solve its query? (the question people answer
when they vote on a plan, asked of a model so that it can be compared with them).

One call per plan. The judge answers ``VALID`` or ``INVALID`` alone on the first line and one
line saying why on the next; :func:`parse_plan_validity` accepts exactly that (blank lines and
surrounding whitespace aside). The figure over a set of plans is the share judged valid, over
the plans whose judgment parsed; the others are excluded and counted.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .base import Call, JudgeOutputError, Judgment, Template, build_call, output_text

LABEL = "plan"
"""The label of a plan validity call (one per plan)."""

PLAN_VALIDITY_TEMPLATE = Template(
    id="mms.plan_validity",
    description="m&m's: does this tool plan solve the query? VALID or INVALID",
    system=(
        "You check plans made of tool calls. A plan is valid when running its steps in order, "
        "each with the arguments given (an argument like <node-0>.text is the output of step "
        "0), would do what the user asked: the right tools, in a workable order, with the "
        "inputs the user named, and nothing the request needs left out. Do not judge wording "
        "or style.\n"
        "Answer VALID or INVALID alone on the first line, then one line saying why."
    ),
    user="User request:\n{query}\n\nPlan:\n{plan}",
)


@dataclass(frozen=True)
class PlanVerdict:
    valid: bool
    why: str


def parse_plan_validity(raw: str) -> PlanVerdict:
    """``VALID`` or ``INVALID`` alone on the first line, one line of reason after it, nothing
    else."""
    lines = [line.strip() for line in output_text(raw).splitlines() if line.strip()]
    word = lines[0]
    if word not in ("VALID", "INVALID"):
        raise JudgeOutputError(f"first line must be VALID or INVALID, got {word[:40]!r}")
    if len(lines) < 2:
        raise JudgeOutputError("expected one line saying why after the verdict, got none")
    if len(lines) > 2:
        raise JudgeOutputError(
            f"expected the verdict and one line saying why, got {len(lines)} lines"
        )
    return PlanVerdict(valid=word == "VALID", why=lines[1])


def plan_text(steps: Sequence[Any] | None, code: str = "") -> str:
    """A plan as the judge reads it: one numbered line per step ``name(args as JSON)``; the
    code form when the plan has no steps."""
    lines = []
    for n, step in enumerate(steps or []):
        if not isinstance(step, Mapping):
            lines.append(f"{n}. {json.dumps(step, ensure_ascii=False)}")
            continue
        number = step.get("id", n)
        args = step.get("args") if isinstance(step.get("args"), Mapping) else {}
        lines.append(
            f"{number}. {step.get('name', '?')}"
            f"({json.dumps(args, ensure_ascii=False, sort_keys=True)})"
        )
    if lines:
        return "\n".join(lines)
    return code.strip() or "(empty plan)"


def plan_validity_call(
    *,
    query: str,
    steps: Sequence[Any] | None,
    code: str = "",
    model: str,
    template: Template = PLAN_VALIDITY_TEMPLATE,
) -> Call:
    return build_call(template, model, LABEL, {"query": query, "plan": plan_text(steps, code)})


@dataclass(frozen=True)
class ValidityFigure:
    """Share of plans judged valid (percent, None with no valid judgment), how many plans
    count (``n``), how many of them were judged valid, and how many failed (``excluded``)."""

    percent: float | None
    n: int
    n_valid: int
    excluded: int


def validity_figure(judgments: Sequence[Judgment[PlanVerdict]]) -> ValidityFigure:
    verdicts = [j.value for j in judgments if j.value is not None]
    n_valid = sum(1 for v in verdicts if v.valid)
    return ValidityFigure(
        percent=100 * n_valid / len(verdicts) if verdicts else None,
        n=len(verdicts),
        n_valid=n_valid,
        excluded=len(judgments) - len(verdicts),
    )
