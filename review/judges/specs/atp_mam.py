"""ATP-Bench's three-agent judge (``atp-mam``, ``benchmark.judge_prompts.mam``), in two stages: the
Precision Inspector (six 0-2 sub-checks per tool call; no call for an answer without tool
calls) and the Recall Inspector (missed images) first, then the Chief Judge (0-100 in five
tiers) with both reports; it is not asked when an inspector's report failed. The agents read
the item's images. Per model: ``fs`` (mean Chief score), ``mi`` (mean missed images per answer,
lower is better), ``sr`` (percent of tool calls scored 2 on all six sub-checks) and the six
sub-check shares (Table 10)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from benchmark.judge_prompts import Call, Judgment, Template, mam
from benchmark.models import DataFormat, Response
from review.judges.inputs import query_images
from review.judges.specs.base import ANSWERS_COUNTS, Column, JudgeSpec, missing
from review.judges.specs.subjects import ANSWERS

if TYPE_CHECKING:
    from review.judges.models import JudgeRun

SUB_CHECK_COLUMNS = tuple(
    Column(code, f"{code} {name.replace('_', ' ')}", "%")
    for name, code in mam.SUB_CHECK_CODES.items()
)
"""ATP-Bench Table 10: per sub-check, the share of tool calls scored 2."""


def report_of(response: Response, judgments: Mapping[str, Judgment[Any]]) -> mam.AnswerReport:
    has_calls = bool(mam.tool_calls_of(response.text))
    precision = (judgments.get("precision") or missing("precision")) if has_calls else None
    return mam.AnswerReport(
        precision=precision,
        recall=judgments.get("recall") or missing("recall"),
        chief=judgments.get("chief"),
    )


class MamJudge(JudgeSpec):
    name = "atp-mam"
    label = "ATP-Bench MAM"
    rates = ANSWERS
    # Made for ATP-Bench; it judges any interleaved answer (both tag syntaxes).
    formats = (DataFormat.ATP, DataFormat.LLMI)
    templates = (mam.PRECISION_TEMPLATE, mam.RECALL_TEMPLATE, mam.CHIEF_TEMPLATE)
    agents = {
        "precision": "Precision Inspector",
        "recall": "Recall Inspector",
        "chief": "Chief Judge",
    }
    #: Each agent is identified by its name in the system message (issue 10).
    agent_templates = {
        mam.PRECISION_TEMPLATE.id: "Precision Inspector",
        mam.RECALL_TEMPLATE.id: "Recall Inspector",
        mam.CHIEF_TEMPLATE.id: "Chief Judge",
    }
    #: People rate each agent's report ("Rate the judge", ATP-Bench §6).
    report_templates = {
        "precision": mam.PRECISION_TEMPLATE.id,
        "recall": mam.RECALL_TEMPLATE.id,
        "chief": mam.CHIEF_TEMPLATE.id,
    }
    columns = (
        Column("fs", "FS"),
        Column("sr", "SR", "%"),
        Column("mi", "MI", lower_is_better=True),
    )
    count_columns = (*ANSWERS_COUNTS, Column("calls", "Tool calls"))
    sub_columns = SUB_CHECK_COLUMNS
    result_template = "review/judges/atp_mam/result.html"
    definitions_template = "review/judges/atp_mam/definitions.html"
    figures_template = "review/judges/atp_mam/figures.html"
    human_eval = {
        "atp": {"fs": ("fs", "score"), "mi": ("mi", "missed")},
        "pair": {"bt": ("fs", None)},
    }

    def parsers(self, subject: Response) -> Mapping[str, Callable[[str], Any]]:
        count = len(mam.tool_calls_of(subject.text))
        return {
            "precision": lambda raw: mam.parse_precision(raw, count),
            "recall": mam.parse_recall,
            "chief": mam.parse_chief,
        }

    def first_call_count(self, subject: Response) -> int:
        return 2 if mam.tool_calls_of(subject.text) else 1

    def first_calls(
        self, subject: Response, model: str, templates: Mapping[str, Template]
    ) -> list[Call]:
        images, legend = query_images(subject.item)
        return mam.first_stage_calls(
            query=subject.item.query + legend,
            answer=subject.text,
            model=model,
            images=images,
            precision_template=templates[mam.PRECISION_TEMPLATE.id],
            recall_template=templates[mam.RECALL_TEMPLATE.id],
        )

    later_call_count = 1  # the Chief Judge

    def later_calls(
        self,
        subject: Response,
        judgments: Mapping[str, Judgment[Any]],
        model: str,
        templates: Mapping[str, Template],
    ) -> list[Call]:
        recall = judgments.get("recall")
        recall_value = recall.value if recall else None
        if mam.tool_calls_of(subject.text):
            precision = judgments.get("precision")
            precision_value = precision.value if precision else None
        else:
            precision_value = mam.PrecisionReport(calls=())
        if recall_value is None or precision_value is None:
            return []
        images, legend = query_images(subject.item)
        return [
            mam.chief_call(
                query=subject.item.query + legend,
                answer=subject.text,
                precision=precision_value,
                recall=recall_value,
                model=model,
                template=templates[mam.CHIEF_TEMPLATE.id],
                images=images,
            )
        ]

    def scores(
        self, subject: Response, judgments: Mapping[str, Judgment[Any]], run: JudgeRun
    ) -> tuple[Any, dict[str, Any]]:
        report = report_of(subject, judgments)
        chief = report.chief.value if report.chief and report.chief.value else None
        recall = report.recall.value
        precision_value = report.precision_value
        scores: dict[str, Any] = {
            "score": chief.score if chief else None,
            "tier": chief.tier if chief else None,
            "missed": len(recall.missed) if recall else None,
            "calls": [vars(c) for c in precision_value.calls] if precision_value else None,
            "valid": report.valid,
        }
        return report, scores

    def figures(self, values: Sequence[Any]) -> dict[str, Any]:
        figures = mam.mam_figures(values)
        return {
            "fs": figures.fs,
            "sr": figures.sr,
            "mi": figures.mi,
            "sub_checks": {mam.SUB_CHECK_CODES[k]: v for k, v in figures.sub_checks.items()},
            "calls": figures.calls,
            "n": figures.n,
            "excluded": figures.excluded,
        }

    def result(
        self,
        subject: Response,
        judgments: Mapping[str, Judgment[Any]],
        rows: Mapping[str, Any],
        run: JudgeRun,
    ) -> dict[str, Any]:
        tool_calls = mam.tool_calls_of(subject.text)
        report = report_of(subject, judgments)
        checks = report.precision_value.calls if report.precision_value else ()
        return {
            "tool_calls": [
                {"raw": raw, "check": checks[i] if i < len(checks) else None}
                for i, raw in enumerate(tool_calls)
            ],
            "precision_ok": report.precision_value is not None,
            "recall": report.recall.value,
            "chief": report.chief.value if report.chief is not None else None,
            "valid": report.valid,
        }

    # ------------------------------------------------------------------ reports people rate

    def report_verdict(self, label: str, value: Any) -> str | None:
        """Precision: each tool call's six sub-check scores ("1: 222122"); Recall: how many
        images were missed; Chief: the tier (ATP-Bench §4.3's five tiers)."""
        if isinstance(value, mam.PrecisionReport):
            return "; ".join(
                f"{c.index}: " + "".join(str(c.score(name)) for name in mam.SUB_CHECKS)
                for c in value.calls
            )
        if isinstance(value, mam.RecallReport):
            return f"{len(value.missed)} missed"
        if isinstance(value, mam.ChiefVerdict):
            return value.tier
        return None

    def held_back_call_units(self, units: Sequence[str]) -> list[str]:
        """The Chief Judge reads both inspectors' reports: a held-back Chief report makes the
        inspectors' calls of the same answer too."""
        needed = set(units)
        for unit in units:
            head, _, label = unit.rpartition(":")
            if label == "chief":
                needed |= {f"{head}:precision", f"{head}:recall"}
        return sorted(needed)


JUDGE = MamJudge()
