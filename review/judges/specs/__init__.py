"""The model judges, one spec each (``base.JudgeSpec``), registered here in the order the
pages list them. A new judge is a module in this package, its templates
(``templates/review/judges/<judge>/``) and one line in ``BUILT_IN``; see
``docs/howto/new-judge.md``.

Everything else asks the registry: ``judge_spec(name)``, ``judge_specs()``, ``judges_for(
project)``. Nothing outside a judge's own module compares a judge's name
(``tests/review/test_judge_dispatch.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from benchmark.exceptions import ValidationFailed
from review.judges.specs.base import Column, JudgeSpec
from review.judges.specs.subjects import ANSWERS, CHECKPOINTS, PLANS, Subject, subject_of

if TYPE_CHECKING:
    from benchmark.models import Project

__all__ = [
    "ANSWERS",
    "CHECKPOINTS",
    "PLANS",
    "Column",
    "JudgeSpec",
    "Subject",
    "judge_choices",
    "judge_label",
    "judge_register",
    "judge_spec",
    "judge_spec_get",
    "judge_specs",
    "judge_unregister",
    "judges_for",
    "subject_of",
]

_REGISTRY: dict[str, JudgeSpec] = {}


def judge_register(spec: JudgeSpec) -> JudgeSpec:
    """Add a judge (its name must be new and fit ``JudgeRun.judge``: 20 characters)."""
    if not spec.name or len(spec.name) > 20:
        raise ValueError(f"judge name {spec.name!r} must have 1 to 20 characters")
    if spec.name in _REGISTRY and _REGISTRY[spec.name] is not spec:
        raise ValueError(f"a judge named {spec.name!r} is registered already")
    _REGISTRY[spec.name] = spec
    return spec


def judge_unregister(name: str) -> None:
    """Remove a judge (tests that register a judge of their own)."""
    _REGISTRY.pop(name, None)


def judge_specs(*, runnable: bool | None = None) -> list[JudgeSpec]:
    """Every judge in order; ``runnable``: only the judges run as judge runs (True) or only
    the others (False)."""
    return [s for s in _REGISTRY.values() if runnable is None or s.runnable == runnable]


def judge_spec(name: str) -> JudgeSpec:
    """The judge of that name; ValidationFailed naming the judges there are."""
    spec = _REGISTRY.get(str(name))
    if spec is None:
        names = ", ".join(s.name for s in judge_specs(runnable=True))
        raise ValidationFailed(f"unknown judge {name!r}; choose one of {names}")
    return spec


def judge_spec_get(name: str) -> JudgeSpec | None:
    """The judge of that name, or None when no such judge is installed."""
    return _REGISTRY.get(str(name))


def judge_label(name: str) -> str:
    """How the pages name a judge (its name when it is not installed)."""
    spec = _REGISTRY.get(str(name))
    return spec.label if spec is not None else str(name)


def judge_choices() -> list[tuple[str, str]]:
    """``(name, label)`` of every runnable judge: ``JudgeRun.judge``'s choices. A callable, so
    a new judge needs no migration."""
    return [(s.name, s.label) for s in judge_specs(runnable=True)]


def judges_for(
    project: Project, *, runnable: bool = True, comparing: bool = False
) -> list[JudgeSpec]:
    """The judges whose formats include the project's: those a judge run of the project can
    use (``runnable``), or those that judge its data elsewhere (``runnable=False``); the
    judges of each model's answers on their own, or with ``comparing`` those that judge two
    models' answers against each other (started from "Compare two models")."""
    return [
        s
        for s in judge_specs(runnable=runnable)
        if project.data_format in s.formats and s.compares_models == comparing
    ]


# The built-in judges, one line each, in the order the pages list them.
from review.judges.specs import (  # noqa: E402
    agentic_mme,
    atp_mam,
    llmi_reward,
    llmi_rubric,
    mms_plan,
    model_pairs,
    pairwise,
)

BUILT_IN: tuple[JudgeSpec, ...] = (
    llmi_rubric.JUDGE,
    llmi_reward.LLM_JUDGE,
    llmi_reward.MLLM_JUDGE,
    atp_mam.JUDGE,
    mms_plan.JUDGE,
    agentic_mme.S_JUDGE,
    agentic_mme.V_JUDGE,
    pairwise.JUDGE,
    model_pairs.JUDGE,
)
for _spec in BUILT_IN:
    judge_register(_spec)
