"""Reads of scored agent runs, scoped to the user: uploads, results per model and level, a run's page."""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db.models import Count, Prefetch, QuerySet
from django.shortcuts import get_object_or_404

from benchmark import permissions
from benchmark.jobs import selectors as job_selectors
from benchmark.metrics import agentic_mme as mme
from benchmark.models import Job, Project, Trajectory
from benchmark.typing import AnyUser
from review.runs.models import AgentRun, FailureLabel, RunSet, VisualVerdict
from review.runs.services import (
    SCORE_KIND,
    _latest_verdicts,
    _reference,
    figures,
    item_task,
    score_from_dict,
)


def run_set_list(*, user: AnyUser, project: Project) -> QuerySet[RunSet]:
    if not user.is_authenticated:
        return RunSet.objects.none()
    return (
        RunSet.objects.filter(project=project, project__memberships__user=user.pk)
        .select_related("created_by", "job")
        .annotate(n_runs=Count("runs"))
        .order_by("-created_at", "-id")
    )


def run_set_get(*, user: AnyUser, pk: int) -> RunSet:
    sets = (
        RunSet.objects.filter(project__memberships__user=user.pk)
        if user.is_authenticated
        else RunSet.objects.none()
    )
    return get_object_or_404(sets.select_related("project", "created_by", "job"), pk=pk)


def run_get(*, user: AnyUser, pk: int) -> AgentRun:
    runs = (
        AgentRun.objects.filter(run_set__project__memberships__user=user.pk)
        if user.is_authenticated
        else AgentRun.objects.none()
    )
    return get_object_or_404(
        runs.select_related("run_set", "run_set__project", "item").prefetch_related(
            Prefetch("item__trajectories", queryset=Trajectory.objects.order_by("position", "id"))
        ),
        pk=pk,
    )


def score_jobs(*, user: AnyUser, project: Project) -> QuerySet[Job]:
    """Scoring jobs of the project that have not produced a run set (running or failed)."""
    return job_selectors.job_list(user=user, project=project, kind=SCORE_KIND).filter(
        run_set__isnull=True
    )


def label_counts(labels: Iterable[tuple[int, int, str]]) -> tuple[Counter[str], int]:
    """Each reviewer's newest label per run, counted by mode, and the number of runs
    labelled. ``labels`` are ``(run id, reviewer id, mode)`` in the order they were made."""
    current: dict[tuple[int, int], str] = {}
    for run_id, reviewer_id, mode in labels:
        current[(run_id, reviewer_id)] = mode
    return Counter(current.values()), len({run_id for run_id, _ in current})


@dataclass
class ModelResults:
    model: str
    report: dict[str, Any]
    n_runs: int
    n_failed: int
    visual_checks: int
    visual_by_person: int


def run_set_results(*, run_set: RunSet) -> dict[str, Any]:
    """Figures per model in the set and for the set as a whole, the failure-label
    distribution, and one row per run. Three queries whatever the number of runs."""
    rows = list(
        run_set.runs.select_related("item")
        .only(
            "id",
            "run_set_id",
            "folder",
            "model_name",
            "score",
            "acc",
            "level",
            "position",
            "item__id",
            "item__external_id",
            "item__project_id",
        )
        .order_by("position", "id")
    )
    by_model: dict[str, list[mme.RunScore]] = defaultdict(list)
    checks: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    run_rows: list[dict[str, Any]] = []
    for run in rows:
        score = score_from_dict(run.score or {})
        by_model[run.model_name].append(score)
        checks[run.model_name][0] += int((run.score or {}).get("visual_checks", 0))
        checks[run.model_name][1] += int((run.score or {}).get("visual_by_person", 0))
        run_rows.append({"run": run, "score": score, "data": run.score or {}})
    labels = list(
        FailureLabel.objects.filter(run__run_set=run_set)
        .order_by("id")
        .values_list("run_id", "reviewer_id", "mode")
    )
    counts, n_labelled = label_counts(labels)
    per_run_labels: dict[int, Counter[str]] = defaultdict(Counter)
    latest: dict[tuple[int, int], str] = {}
    for run_id, reviewer_id, mode in labels:
        latest[(run_id, reviewer_id)] = mode
    for (run_id, _), mode in latest.items():
        per_run_labels[run_id][mode] += 1
    for row in run_rows:
        row["labels"] = [
            {"mode": mme.FailureMode(m), "n": n} for m, n in per_run_labels[row["run"].pk].items()
        ]
    models = [
        ModelResults(
            model=model or "(unnamed)",
            report=figures(scores),
            n_runs=len(scores),
            n_failed=sum(1 for s in scores if not s.acc),
            visual_checks=checks[model][0],
            visual_by_person=checks[model][1],
        )
        for model, scores in by_model.items()
    ]
    all_scores = [s for scores in by_model.values() for s in scores]
    total_labels = sum(counts.values())
    distribution = [
        {
            "mode": mode,
            "n": counts.get(mode.value, 0),
            "share": 100 * counts.get(mode.value, 0) / total_labels if total_labels else 0,
        }
        for mode in mme.FailureMode
    ]
    judge_models = sorted({str((r.score or {}).get("judge_model") or "") for r in rows} - {""})
    return {
        "models": models,
        "judge_models": judge_models,
        "overall": figures(all_scores) if all_scores else None,
        "runs": run_rows,
        "n_runs": len(rows),
        "n_failed": sum(1 for s in all_scores if not s.acc),
        "n_labelled": n_labelled,
        "distribution": distribution,
        "n_labels": total_labels,
    }


def run_page(*, run: AgentRun, user: AnyUser) -> dict[str, Any]:
    """What the run page shows: the task, the checkpoints with their results, the produced
    images, people's verdicts, suggested failure modes and the user's own label."""
    item = run.item
    reference = _reference(item)
    task = item_task(item, reference)
    latest = _latest_verdicts(run)
    score = score_from_dict(run.score or {})
    agent = mme.RunRecord(
        tuple(run.events),
        run.final_answer,
        None,
        run.meta.get("effective_tool_calls") if isinstance(run.meta, dict) else None,
        run.folder,
    )
    suggestions = mme.suggest_failure_observations(task, agent, score) if not score.acc else []
    suggested = mme.dominant_failure_mode(suggestions)
    regions: dict[str, tuple[float, float, float, float] | None] = {}
    for cid, frame in mme.reference_frames(task).items():
        regions[cid] = frame.region() if frame is not None else None
    checkpoints = (task.get("process_evaluation") or {}).get("checkpoints") or []
    by_id = {c.id: c for c in score.checkpoints}
    rows = []
    for position, cp in enumerate(checkpoints):
        if not isinstance(cp, dict):
            continue
        cid = str(cp.get("id"))
        res = by_id.get(cid)
        region = regions.get(cid)
        rows.append(
            {
                "position": position,
                "cp": cp,
                "id": cid,
                "result": res,
                "visual": (res.detail.get("visual") or {}) if res else {},
                "proxy": _proxy_detail(res),
                "judge": _judge_detail(res),
                "decided_by": (res.detail.get("decided_by") or "") if res else "",
                "verdict": latest.get(cid),
                "reference_shas": _shas_in(cp),
                "region": None
                if region is None
                else {
                    "left": region[0] / 10,
                    "top": region[1] / 10,
                    "width": (region[2] - region[0]) / 10,
                    "height": (region[3] - region[1]) / 10,
                    "box": [round(v) for v in region],
                },
                "answerable": bool(res and res.kind == "visual" and res.has_visual_check),
            }
        )
    mine = None
    if user.is_authenticated:
        mine = run.failure_labels.filter(reviewer=user.pk).order_by("-id").first()
    return {
        "task": task,
        "score": score,
        "judge_model": (run.score or {}).get("judge_model") or "",
        "checkpoints": rows,
        "suggestions": suggestions,
        "suggested": suggested,
        "my_label": mine,
        "my_label_mode": mme.FailureMode(mine.mode) if mine else None,
        "history": [
            {"label": label, "mode": mme.FailureMode(label.mode)}
            for label in run.failure_labels.select_related("reviewer").order_by("-id")[:50]
        ],
        "verdict_history": list(
            run.visual_verdicts.select_related("reviewer").order_by("-id")[:50]
        ),
    }


def _proxy_detail(res: mme.CheckpointResult | None) -> dict[str, Any]:
    """The proxy's detail of a visual check (kept aside when a judge or a person decided)."""
    if res is None:
        return {}
    for found in (res.detail.get("proxy"), res.detail.get("visual")):
        if isinstance(found, dict) and found.get("method") == "bbox_proxy":
            return found
    return {}


def _judge_detail(res: mme.CheckpointResult | None) -> dict[str, Any]:
    if res is None:
        return {}
    for found in (res.detail.get("judge"), res.detail.get("visual")):
        if isinstance(found, dict) and found.get("method") == "judge":
            return found
    return {}


_SHA_RE = re.compile(r"^[0-9a-f]{64}$")


def _shas_in(value: Any, depth: int = 0) -> list[str]:
    """Image hashes a checkpoint carries (a ground-truth intermediate image saved by the
    trajectory editor), wherever its keys put them."""
    found: list[str] = []
    if depth > 4:
        return found
    if isinstance(value, dict):
        for key, v in value.items():
            if isinstance(v, str) and "sha" in str(key).lower() and _SHA_RE.match(v):
                found.append(v)
            elif isinstance(v, dict | list):
                found.extend(_shas_in(v, depth + 1))
    elif isinstance(value, list):
        for v in value:
            found.extend(_shas_in(v, depth + 1))
    return list(dict.fromkeys(found))


def project_runs_overview(*, user: AnyUser, project: Project) -> list[dict[str, Any]]:
    """Each upload's overall figures, for the project's runs page (two queries)."""
    sets = list(run_set_list(user=user, project=project))
    scores: dict[int, list[mme.RunScore]] = defaultdict(list)
    for set_id, data in AgentRun.objects.filter(run_set__in=sets).values_list(
        "run_set_id", "score"
    ):
        scores[set_id].append(score_from_dict(data or {}))
    return [
        {"set": s, "summary": figures(scores[s.pk])["overall"] if scores[s.pk] else None}
        for s in sets
    ]


# --------------------------------------------------------------------------- the V judge as a rater


def _judge_visual(cp: dict[str, Any]) -> tuple[bool, int | None]:
    """Whether the V judge answered this checkpoint, and its answer (1 / 0 / None)."""
    if cp.get("kind") != "visual" or not cp.get("has_visual_check"):
        return False, None
    detail = cp.get("detail") or {}
    decided = detail.get("decided_by")
    if decided == "judge":
        answer = detail.get("visual")
    elif decided == "person":
        answer = detail.get("judge")  # the judge's answer a person's replaced
    else:
        return False, None
    if not isinstance(answer, dict) or answer.get("method") != "judge":
        return False, None
    passed = answer.get("passed")
    return True, None if passed is None else int(bool(passed))


def _judge_answers(scores: Iterable[tuple[int, Any]]) -> tuple[dict[str, Any], list[str]]:
    """The V judge's recorded answers in runs' scores, keyed ``run:<run id>:<checkpoint
    id>``, and the judge models the runs were scored with."""
    judge: dict[str, Any] = {}
    models: set[str] = set()
    for run_id, score in scores:
        score = score if isinstance(score, dict) else {}
        if score.get("judge_model"):
            models.add(str(score["judge_model"]))
        for cp in score.get("checkpoints") or []:
            if not isinstance(cp, dict):
                continue
            answered, value = _judge_visual(cp)
            if answered:
                judge[f"run:{run_id}:{cp.get('id')}"] = value
    return judge, sorted(models)


def run_set_visual_verdicts(*, run_set: RunSet) -> list[tuple[str, str, Any]]:
    """People's answers to the upload's visual checks as ``(run:<run id>:<checkpoint id>,
    reviewer, 1 / 0)``: each reviewer's newest answer per run and checkpoint."""
    newest: dict[tuple[int, str, str], bool] = {}
    verdicts = (
        VisualVerdict.objects.filter(run__run_set=run_set)
        .order_by("id")
        .values_list("run_id", "checkpoint_id", "reviewer__username", "passed")
    )
    for run_id, checkpoint, reviewer, passed in verdicts.iterator(2000):
        newest[(run_id, checkpoint, reviewer)] = passed
    return [
        (f"run:{run_id}:{checkpoint}", reviewer, int(passed))
        for (run_id, checkpoint, reviewer), passed in newest.items()
    ]


def run_set_judge_rater(
    *,
    user: AnyUser,
    run_set: RunSet,
    scores: Iterable[tuple[int, Any]] | None = None,
    threshold: float | None = None,
) -> dict[str, Any] | None:
    """The V judge against the people who answered visual checks of the upload's runs
    (reviewers and admins), with its calibration (``calibration``: kappa with an interval,
    TPR/FPR, flagged below ``threshold``, 0.6 by default); None when no run has a judge
    answer. ``scores``: the runs' ``(id, score)`` when the caller has read them already."""
    permissions.require(user=user, project=run_set.project, action="manage_studies")
    if scores is None:
        scores = run_set.runs.values_list("id", "score").iterator(500)
    judge, models = _judge_answers(scores)
    if not judge:
        return None
    from benchmark.metrics.judge_rater import (  # lazy: NumPy, ~0.1 s
        DEFAULT_TRUST_THRESHOLD,
        judge_as_rater,
        judge_calibration,
    )

    people = run_set_visual_verdicts(run_set=run_set)
    report = judge_as_rater(people, judge, "nominal", [0, 1])
    report["source"] = {"key": "v-judge", "label": ", ".join(models) or "V judge", "kind": "v"}
    # Can the V judge be trusted? Against the people's majority per check, with intervals and
    # its true- and false-positive rates (a yes/no scale).
    report["calibration"] = judge_calibration(
        people,
        judge,
        "nominal",
        [0, 1],
        threshold=DEFAULT_TRUST_THRESHOLD if threshold is None else threshold,
    )
    return report
