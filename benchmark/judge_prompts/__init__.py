"""Model judges for the three benchmarks, as pure code (no Django).

Modules: ``base`` (templates, calls and cache keys, strict parsing, judgments), ``rubric``
(LLMI-Bench rubric), ``llmi`` (LLM-I LLM and MLLM judges, reward R), ``mam`` (ATP-Bench
three-agent judge, FS/MI/SR), ``agentic_mme`` (Agentic-MME S and V judges), ``rankings``
(Spearman's rho between two sources' rankings), ``plan_validity`` (m&m's: does a plan solve
its query?), ``pairwise`` (which of two answers is better, asked in both orders).

The job layer's loop, for any judge::

    calls = rubric.rubric_calls(prompt=..., answer=..., criteria=..., model=...)
    for call in calls:
        j = judgment_from_outputs(call, [run(call)], rubric.parse_rubric)
        if should_retry(j):
            j = judgment_from_outputs(call, [j.raw, run(call)], rubric.parse_rubric)
    report = rubric.answer_rubric(judgments)
"""

from . import agentic_mme, llmi, mam, plan_validity, rankings, rubric
from .base import (
    MAX_ATTEMPTS,
    Attempt,
    Call,
    JudgeOutputError,
    Judgment,
    Template,
    TemplateError,
    build_call,
    cache_key,
    judgment_from_outputs,
    render,
    should_retry,
)

TEMPLATES: dict[str, Template] = {
    t.id: t
    for t in (
        rubric.RUBRIC_TEMPLATE,
        llmi.LLM_TEMPLATE,
        llmi.MLLM_TEMPLATE,
        mam.PRECISION_TEMPLATE,
        mam.RECALL_TEMPLATE,
        mam.CHIEF_TEMPLATE,
        agentic_mme.V_TEMPLATE,
        agentic_mme.S_TEMPLATE,
        plan_validity.PLAN_VALIDITY_TEMPLATE,
    )
}
"""The built-in templates by id (the defaults an admin's edited copy starts from)."""

__all__ = [
    "MAX_ATTEMPTS",
    "TEMPLATES",
    "Attempt",
    "Call",
    "JudgeOutputError",
    "Judgment",
    "Template",
    "TemplateError",
    "agentic_mme",
    "build_call",
    "cache_key",
    "judgment_from_outputs",
    "llmi",
    "mam",
    "plan_validity",
    "rankings",
    "render",
    "rubric",
    "should_retry",
]
