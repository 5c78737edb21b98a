"""Reading judge runs: a run the user may see, and a run's report (per-answer scores and the
per-model figures), rebuilt from the stored calls by the judges' own parsers and
aggregations (``benchmark.judges``), so a report always says what the stored outputs say.

Figures per model (definitions in ``benchmark.judges``):

* ``llmi-rubric``: ``rubric`` = 100 x mean over answers of (sum of valid criterion scores /
  (2 x number of valid scores)); ``criteria_excluded`` counts criteria whose output never
  parsed.
* ``llmi-llm``: ``r_llm`` = mean over answers of the two normalised LLM-judge scores.
* ``llmi-mllm``: ``r_rule``, ``r_llm``, ``r_mllm`` and R = w_rule R_rule + w_llm R_llm +
  w_mllm R_mllm R_rule with the weights the run recorded (the project's when it was created,
  ``review.judge_settings``; equal, 1/3 each, by default), stated in the summary's
  ``weights``.
* ``atp-mam``: ``fs`` (mean Chief score), ``mi`` (mean missed images per answer), ``sr``
  (percent of tool calls scored 2 on all six sub-checks) and the six sub-check shares.
* ``mms-plan``: per plan, not per model: ``valid`` = percent of plans judged valid (overall,
  and per source under ``models``: "ground truth" or the predicting model).

``n`` counts the answers in the figures and ``excluded`` the answers left out because a
judgment failed (unparseable after a retry, or no answer from the endpoint).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Collection
from functools import partial
from typing import Any

from benchmark import judges, permissions
from benchmark.exceptions import NotFound
from benchmark.judges import Judgment, mam, plan_validity
from benchmark.judges import llmi as llmi_judge
from benchmark.judges import rubric as rubric_judge
from benchmark.judges.base import mean
from benchmark.models import ItemStatus, Response
from benchmark.tags import parse_image_num
from benchmark.typing import AnyUser
from review.judge_settings.selectors import weights_of_run
from review.judges.models import CallRecord, JudgeCall, JudgeName, JudgeRun

EQUAL_WEIGHTS = llmi_judge.Weights()


def judge_run_get(*, user: AnyUser, pk: int) -> JudgeRun:
    """A run of a project where the user may review; NotFound otherwise."""
    run = JudgeRun.objects.select_related("project", "job").filter(pk=pk).first()
    if run is None or not permissions.can(user=user, project=run.project, action="review"):
        raise NotFound("no such judge run")
    return run


def parser_for(label: str, response: Response) -> Callable[[str], Any]:
    """The strict parser of a call's output, by the call's label."""
    if label == "llm":
        return llmi_judge.parse_llm
    if label == "mllm":
        return llmi_judge.parse_mllm
    if label == "precision":
        count = len(mam.tool_calls_of(response.text))
        return lambda raw: mam.parse_precision(raw, count)
    if label == "recall":
        return mam.parse_recall
    if label == "chief":
        return mam.parse_chief
    if label == plan_validity.LABEL:
        return plan_validity.parse_plan_validity
    return rubric_judge.parse_rubric


def stored_judgment(row: CallRecord, parse: Callable[[str], Any]) -> Judgment[Any]:
    """A stored call (of an answer or a plan) as a judgment: its outputs parsed again with
    ``parse`` (a model error has none)."""
    if row.transport_error:
        attempts: tuple[judges.Attempt, ...] = (judges.Attempt(raw="", error=row.error),)
        value = None
    else:
        judgment = judges.judgment_from_outputs(None, row.outputs, parse)
        attempts, value = judgment.attempts, judgment.value
    return Judgment(
        label=row.label,
        value=value,
        attempts=attempts,
        key=row.key,
        template_id=row.template_id,
        template_version=row.template_version,
    )


def judgment_of(row: JudgeCall, response: Response) -> Judgment[Any]:
    """The stored call of an answer as a judgment."""
    return stored_judgment(row, parser_for(row.label, response))


def _missing(label: str) -> Judgment[Any]:
    return Judgment(label=label, value=None, attempts=(judges.Attempt(raw="", error="not run"),))


def image_num_of(response: Response) -> Any:
    """The item's LLM-I image-number constraint; unconstrained (0) when it has none."""
    value = (response.item.constraints or {}).get("image_num")
    if value is None:
        return 0
    try:
        parse_image_num(value)
    except (TypeError, ValueError):
        return 0
    return value


def _rubric(response: Response, by_label: dict[str, Judgment[Any]]) -> tuple[Any, dict]:
    criteria = rubric_judge.criteria_of({"rubric": response.item.rubric or []})
    answer = rubric_judge.answer_rubric([by_label.get(k) or _missing(k) for k in criteria])
    scores: dict[str, Any] = {k: (v.score if v else None) for k, v in answer.scores.items()}
    scores["rate"] = answer.rate
    scores["excluded"] = answer.excluded
    return answer, scores


def _reward(
    response: Response,
    by_label: dict[str, Judgment[Any]],
    weights: llmi_judge.Weights = EQUAL_WEIGHTS,
) -> tuple[Any, dict]:
    r_rule = llmi_judge.rule_reward(response.text, image_num_of(response))
    answer = llmi_judge.answer_reward(
        r_rule,
        by_label.get("llm") or _missing("llm"),
        by_label.get("mllm") or _missing("mllm"),
        weights,
    )
    scores: dict[str, Any] = {
        "llm": vars(answer.llm.value) if answer.llm.value else None,
        "mllm": vars(answer.mllm.value) if answer.mllm.value else None,
        "r_rule": answer.r_rule,
        "r_llm": answer.r_llm,
        "r_mllm": answer.r_mllm,
        "r": answer.r,
    }
    return answer, scores


def _mam(response: Response, by_label: dict[str, Judgment[Any]]) -> tuple[Any, dict]:
    has_calls = bool(mam.tool_calls_of(response.text))
    precision = (by_label.get("precision") or _missing("precision")) if has_calls else None
    report = mam.AnswerReport(
        precision=precision,
        recall=by_label.get("recall") or _missing("recall"),
        chief=by_label.get("chief"),
    )
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


_REPORT_FIELDS = (
    "id",
    "run",  # run.calls sets each row's run: without it Django fetches it row by row
    "response",
    "label",
    "key",
    "template_id",
    "template_version",
    "outputs",
    "ok",
    "error",
    "transport_error",
)


def judge_run_report(*, run: JudgeRun, responses: Collection[int] | None = None) -> dict[str, Any]:
    """``{"answers": [{"response", "item", "model", "scores", "failed"}...], "summary":
    {...}}`` from the run's stored calls, answers in item order. The summary holds
    ``models`` (figures per answering model, see the module docs) and ``excluded`` (answers
    left out, all models). ``responses``: only these answers (ids), e.g. the answers people
    rated, so the figures are over the same answers as theirs. A plan validity run reports
    per plan (``review.judges.plan_judge.plan_judge_report``)."""
    if run.judge == JudgeName.MMS_PLAN:
        from review.judges.plan_judge import plan_judge_report

        return plan_judge_report(run=run)
    calls = run.calls.all() if responses is None else run.calls.filter(response_id__in=responses)
    # Each answer once (not once per call), and of each call only what the report reads: a
    # run of 10,000 calls stays small in memory.
    answers_of: dict[int, Response] = {
        r.pk: r
        for r in Response.objects.filter(pk__in=calls.values("response_id"))
        .select_related("item")
        .defer("raw", "item__raw", "item__documents")
    }
    rows = calls.only(*_REPORT_FIELDS).order_by("id")
    by_response: dict[int, dict[str, Judgment[Any]]] = defaultdict(dict)
    failed: dict[int, list[str]] = defaultdict(list)
    for row in rows.iterator(chunk_size=2000):
        response = answers_of[row.response_id]
        by_response[row.response_id][row.label] = judgment_of(row, response)
        if not row.ok:
            failed[row.response_id].append(f"{row.label}: {row.error}")
    weights = weights_of_run(run.weights)
    builders: dict[str, Callable[[Response, dict[str, Judgment[Any]]], tuple[Any, dict]]] = {
        JudgeName.LLMI_RUBRIC: _rubric,
        JudgeName.LLMI_LLM: _reward,
        JudgeName.LLMI_MLLM: partial(_reward, weights=weights),
        JudgeName.ATP_MAM: _mam,
    }
    build = builders[JudgeName(run.judge)]
    ordered = sorted(
        answers_of.values(), key=lambda r: (r.item.position, r.item_id, r.model_name, r.pk)
    )
    per_model: dict[str, list[Any]] = defaultdict(list)
    answers = []
    for response in ordered:
        value, scores = build(response, by_response[response.pk])
        per_model[response.model_name].append(value)
        answers.append(
            {
                "response": response.pk,
                "item": response.item.external_id,
                "model": response.model_name,
                "verified": response.item.status == ItemStatus.VERIFIED,
                "scores": scores,
                "failed": failed.get(response.pk, []),
            }
        )
    models = {name: _figures(run.judge, per_model[name]) for name in sorted(per_model)}
    summary: dict[str, Any] = {
        "judge": run.judge,
        "judge_model": run.model,
        "templates": run.templates,
        "models": models,
        "excluded": sum(m["excluded"] for m in models.values()),
    }
    if run.judge == JudgeName.LLMI_MLLM:
        summary["weights"] = {"rule": weights.rule, "llm": weights.llm, "mllm": weights.mllm}
    return {"answers": answers, "summary": summary}


def _figures(judge: str, values: list[Any]) -> dict[str, Any]:
    if judge == JudgeName.LLMI_RUBRIC:
        figure = rubric_judge.rubric_figure(values)
        return {
            "rubric": figure.percent,
            "n": figure.n,
            "excluded": figure.excluded,
            "criteria_excluded": figure.criteria_excluded,
        }
    if judge == JudgeName.LLMI_LLM:
        kept = [a.r_llm for a in values if a.r_llm is not None]
        return {"r_llm": mean(kept), "n": len(kept), "excluded": len(values) - len(kept)}
    if judge == JudgeName.LLMI_MLLM:
        reward = llmi_judge.reward_figure(values)
        return {
            "r": reward.r,
            "r_rule": reward.r_rule,
            "r_llm": reward.r_llm,
            "r_mllm": reward.r_mllm,
            "n": reward.n,
            "excluded": reward.excluded,
        }
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
