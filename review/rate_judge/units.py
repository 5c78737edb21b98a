"""The unit sources of the two unit kinds (registered in ``review.apps``; see
``annotation.judgment_tasks.units``): which units a task has, and what the judge page shows of one.

* ``judge-report`` (rate the judge): one unit per answer and agent that the judge run reported
  on successfully, ``response:<answer id>:<label>`` with the JudgeCall's label ("precision",
  "recall", "chief", "r3", "llm", ...). ``unit_params``: ``{"judge_run": id, "labels": [...],
  "responses": [ids] | None}``. The page shows the answer and that one agent's parsed report
  (its scores and justification), nothing of the other agents nor of other raters.
* ``answer-criterion``: one unit per answer and rubric criterion of its item,
  ``response:<answer id>:r<k>``. ``unit_params``: ``{"judge_run": id}`` (the run's answers) or
  ``{"models": [...]}`` (those models' answers), ``"criteria": [...]`` (empty: all) and
  ``"responses"``. The page shows the answer and the criterion, never the judge's score.

Units are listed in item order, then model, then answer, then label in the order chosen.
"""

from __future__ import annotations

from typing import Any

from annotation.judgment_tasks.models import JudgmentTask, TaskUnit
from annotation.judgment_tasks.units import unit_key, unit_parse
from benchmark.judge_prompts import rubric as rubric_judge
from benchmark.models import Origin, Response
from benchmark.presenters import tag_segments
from benchmark.typing import AnyUser
from review.judges.models import JudgeCall
from review.judges.specs import judge_spec_get, judge_specs


def _agents() -> dict[str, str]:
    """Call label -> agent name, of every judge (its spec's ``agents``), in the order the
    judges' calls run."""
    return {label: name for spec in judge_specs() for label, name in spec.agents.items()}


def agent_name(label: str) -> str:
    """How the pages name an agent (a judge call's label): "Chief Judge", "Criterion r3"."""
    agents = _agents()
    if label in agents:
        return agents[label]
    if label[:1] == "r" and label[1:].isdigit():
        return f"Criterion {label}"
    return label


def label_order(label: str) -> tuple[int, int, str]:
    """Agents in the order their judge's calls run (MAM: Precision, Recall, Chief), then
    criteria by number, then the rest."""
    agents = list(_agents())
    if label in agents:
        return (0, agents.index(label), label)
    if label[:1] == "r" and label[1:].isdigit():
        return (1, int(label[1:]), label)
    return (2, 0, label)


def _response_order(row: Any) -> tuple[Any, ...]:
    return (row["item__position"], row["item_id"], row["model_name"], row["pk"])


# --------------------------------------------------------------------------- judge reports


def judge_report_units(*, task: JudgmentTask) -> list[tuple[int, str]]:
    params = task.unit_params or {}
    labels = list(params.get("labels") or [])
    calls = JudgeCall.objects.filter(
        run_id=params.get("judge_run"), run__project=task.project, label__in=labels, ok=True
    )
    if params.get("responses") is not None:
        calls = calls.filter(response_id__in=params["responses"])
    by_response: dict[int, set[str]] = {}
    for response_id, label in calls.values_list("response_id", "label"):
        by_response.setdefault(response_id, set()).add(label)
    responses = sorted(
        Response.objects.filter(pk__in=list(by_response)).values(
            "pk", "item_id", "item__position", "model_name"
        ),
        key=_response_order,
    )
    return [
        (row["item_id"], unit_key(response_id=row["pk"], label=label))
        for row in responses
        for label in labels
        if label in by_response[row["pk"]]
    ]


def _answer(response: Response) -> list[dict[str, Any]]:
    """The answer's text as runs and tool tags, the tags numbered from 1 in order (the
    Precision Inspector's ``index``)."""
    segments = tag_segments(response.text)
    n = 0
    for seg in segments:
        if seg["kind"]:
            n += 1
            seg["index"] = n
    return segments


def _cell(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, list | dict):
        import json

        return json.dumps(value, ensure_ascii=False)
    return str(value)


def report_view(parsed: Any) -> dict[str, Any]:
    """A parsed report as the page shows it: its single values (score, tier, justification)
    as fields, and its lists of objects (the Precision Inspector's calls, the Recall
    Inspector's missed images) as tables."""
    fields: list[tuple[str, str]] = []
    tables: list[dict[str, Any]] = []
    if not isinstance(parsed, dict):
        return {"fields": [("report", _cell(parsed))], "tables": []}
    for name, value in parsed.items():
        if isinstance(value, list) and all(isinstance(v, dict) for v in value):
            columns: list[str] = []
            for entry in value:
                columns += [k for k in entry if k not in columns]
            rows = [[_cell(entry.get(c)) for c in columns] for entry in value]
            tables.append({"name": name.replace("_", " "), "columns": columns, "rows": rows})
        else:
            fields.append((name.replace("_", " "), _cell(value)))
    return {"fields": fields, "tables": tables}


def _criterion(response: Response, label: str) -> str:
    return rubric_judge.criteria_of({"rubric": response.item.rubric or []}).get(label, "")


def judge_report_describe(*, task: JudgmentTask, unit: TaskUnit, user: AnyUser) -> dict[str, Any]:
    response_id, label = unit_parse(unit.key)
    view: dict[str, Any] = {"title": agent_name(label), "agent": agent_name(label), "label": label}
    response = (
        Response.objects.select_related("item").filter(pk=response_id, item_id=unit.item_id).first()
    )
    if response is None:
        return {**view, "missing": "This answer was deleted; rate nothing, ask a reviewer."}
    call = (
        JudgeCall.objects.filter(
            run_id=(task.unit_params or {}).get("judge_run"),
            response_id=response_id,
            label=label,
            ok=True,
        )
        .select_related("run")
        .order_by("-id")
        .first()
    )
    view["answer"] = _answer(response)
    if label[:1] == "r" and label[1:].isdigit():
        view["criterion"] = _criterion(response, label)
    if call is None:
        return {**view, "missing": "The judge's report is gone (its run was deleted)."}
    spec = judge_spec_get(call.run.judge)
    view["judge"] = spec.label if spec is not None else ""
    view["report"] = report_view(call.parsed)
    return view


# --------------------------------------------------------------------------- criteria


def criterion_responses(*, task: JudgmentTask) -> list[dict[str, Any]]:
    """The answers an answer-criterion task's ``unit_params`` choose, in unit order."""
    params = task.unit_params or {}
    if params.get("judge_run"):
        ids = set(
            JudgeCall.objects.filter(
                run_id=params["judge_run"], run__project=task.project
            ).values_list("response_id", flat=True)
        )
        rows = Response.objects.filter(pk__in=ids)
    else:
        rows = Response.objects.filter(
            item__project=task.project,
            origin=Origin.MODEL,
            model_name__in=list(params.get("models") or []),
        )
    if params.get("responses") is not None:
        rows = rows.filter(pk__in=params["responses"])
    values = rows.values("pk", "item_id", "item__position", "model_name", "item__rubric")
    return [dict(row) for row in sorted(values, key=_response_order)]


def answer_criterion_units(*, task: JudgmentTask) -> list[tuple[int, str]]:
    wanted = list((task.unit_params or {}).get("criteria") or [])
    units = []
    for row in criterion_responses(task=task):
        criteria = rubric_judge.criteria_of({"rubric": row["item__rubric"] or []})
        for label in sorted(criteria, key=label_order):
            if not wanted or label in wanted:
                units.append((row["item_id"], unit_key(response_id=row["pk"], label=label)))
    return units


def answer_criterion_describe(
    *, task: JudgmentTask, unit: TaskUnit, user: AnyUser
) -> dict[str, Any]:
    response_id, label = unit_parse(unit.key)
    view: dict[str, Any] = {"title": f"Criterion {label}", "agent": "", "label": label}
    response = (
        Response.objects.select_related("item").filter(pk=response_id, item_id=unit.item_id).first()
    )
    if response is None:
        return {**view, "missing": "This answer was deleted; rate nothing, ask a reviewer."}
    view["answer"] = _answer(response)
    view["criterion"] = _criterion(response, label) or "(the item has no such criterion now)"
    return view
