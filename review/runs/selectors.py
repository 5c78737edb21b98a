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
from review.judges.specs.agentic_mme import S_JUDGE, V_JUDGE
from review.judges.specs.base import JudgeSpec
from review.runs.models import AgentRun, FailureLabel, RunSet, SearchVerdict, VisualVerdict
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
    rows = _checkpoint_rows(task, score, latest=latest, searches=search_checks(run=run, user=user))
    hidden = {row["position"] for row in rows if row["judge_hidden"]}
    for row in rows:
        if row["judge_hidden"]:
            # Blind until this person answered: what the S judge decided stays unseen, in
            # the checkpoint and in the failure modes suggested from it.
            row["result"], row["decided_by"] = None, ""
    if hidden:
        suggestions = [o for o in suggestions if o.step not in hidden]
        suggested = mme.dominant_failure_mode(suggestions)
    mine = None
    if user.is_authenticated:
        mine = run.failure_labels.filter(reviewer=user.pk).order_by("-id").first()
    return {
        "task": task,
        "score": score,
        "judge_model": (run.score or {}).get("judge_model") or "",
        "checkpoints": rows,
        "s_hidden": any(row["judge_hidden"] for row in rows),
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


def _region_box(region: tuple[float, float, float, float] | None) -> dict[str, Any] | None:
    if region is None:
        return None
    return {
        "left": region[0] / 10,
        "top": region[1] / 10,
        "width": (region[2] - region[0]) / 10,
        "height": (region[3] - region[1]) / 10,
        "box": [round(v) for v in region],
    }


def _checkpoint_rows(
    task: dict[str, Any],
    score: mme.RunScore,
    *,
    latest: dict[str, VisualVerdict],
    searches: dict[str, dict[str, Any]],
) -> list[dict[str, Any]]:
    """One row per checkpoint of the task: its result, what decided it, the visual check's
    reference and people's answer, and the search check a person can answer."""
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
                "region": _region_box(regions.get(cid)),
                "answerable": bool(res and res.kind == "visual" and res.has_visual_check),
                **_search_row(cid, searches),
            }
        )
    return rows


def search_checks(*, run: AgentRun, user: AnyUser) -> dict[str, dict[str, Any]]:
    """What a person answering a run's search checks sees, per answerable checkpoint id: the
    agent's queries the check put to the S judge and each one's results (as the judge read
    them), the newest answer (anyone's), and whether this person answered it yet (until then
    the judge's verdict is not shown: ``judge_hidden``). Two queries."""
    from review.runs.services import search_checkpoint_ids

    ids = search_checkpoint_ids(run.score or {})
    if not ids:
        return {}
    details = {
        str(c.get("id")): c.get("detail") or {}
        for c in (run.score or {}).get("checkpoints") or []
        if isinstance(c, dict) and str(c.get("id")) in ids
    }
    newest: dict[str, SearchVerdict] = {}
    mine: set[str] = set()
    for verdict in run.search_verdicts.select_related("reviewer").order_by("id"):
        newest[verdict.checkpoint_id] = verdict
        if verdict.reviewer_id == user.pk:
            mine.add(verdict.checkpoint_id)
    found = {}
    for cid in ids:
        queries = [str(q) for q in details[cid].get("queries") or []]
        found[cid] = {
            "queries": queries,
            "results": _search_results(run.events, queries),
            "verdict": newest.get(cid),
            "answered": cid in mine,
        }
    return found


def _search_results(events: Any, queries: list[str]) -> list[dict[str, str]]:
    """Each google_search call of the run whose query the check used, with its results as
    the S judge read them."""
    wanted = set(queries)
    results = []
    for ev in events if isinstance(events, list) else []:
        if not isinstance(ev, dict) or mme.is_declared_only(ev):
            continue
        if str(ev.get("tool_name") or "").lower() != "google_search":
            continue
        query = str((ev.get("arguments") or {}).get("query") or "")
        if query in wanted:
            results.append({"query": query, "text": mme.search_result_text(ev.get("output"))})
    return results


def _search_row(cid: str, searches: dict[str, dict[str, Any]]) -> dict[str, Any]:
    found = searches.get(cid)
    if found is None:
        return {"search_answerable": False, "search": None, "judge_hidden": False}
    return {"search_answerable": True, "search": found, "judge_hidden": not found["answered"]}


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


# --------------------------------------------------------------------------- check judges as raters


@dataclass(frozen=True)
class CheckJudge:
    """A judge that answers a kind of checkpoint while runs are scored, and the people's
    answers to the same checks it is compared with: the V judge (visual checks,
    ``VisualVerdict``) and the S judge (search checks, ``SearchVerdict``). Pages and figures
    ask this object; they never compare a judge's name."""

    key: str
    spec: JudgeSpec
    verdicts: type[VisualVerdict] | type[SearchVerdict]
    #: How its answers read in the figures (1 / 0).
    answers: dict[int, str]
    #: What one check is called ("visual check", "search check").
    noun: str
    #: The leaderboard columns whose figure this judge decides.
    columns: tuple[str, ...]
    #: Its short name on pages ("V judge") and the prefix of its sections' ids.
    title: str
    anchor: str
    #: The kind of checkpoint it answers (``benchmark.metrics.agentic_mme``): what a
    #: held-back comparison re-asks it on (``review.runs.judging.checkpoints_rejudge``).
    checkpoint_kind: str = "visual"

    @property
    def label(self) -> str:
        return self.spec.label


CHECK_JUDGES: tuple[CheckJudge, ...] = (
    CheckJudge(
        key="v-judge",
        spec=V_JUDGE,
        verdicts=VisualVerdict,
        answers={1: "yes", 0: "no"},
        noun="visual check",
        columns=("V", "V_true"),
        title="V judge",
        anchor="judge",
    ),
    CheckJudge(
        key="s-judge",
        spec=S_JUDGE,
        verdicts=SearchVerdict,
        answers={1: "PASS", 0: "FAIL"},
        noun="search check",
        columns=("S",),
        title="S judge",
        anchor="s-judge",
        checkpoint_kind="search",
    ),
)
V_CHECKS, S_CHECKS = CHECK_JUDGES


def check_judge_get(key: str) -> CheckJudge | None:
    """The check judge whose key (``v-judge``, ``s-judge``) or judge spec name is ``key``."""
    return next((j for j in CHECK_JUDGES if key in (j.key, j.spec.name)), None)


def judge_answers(
    judge: CheckJudge, scores: Iterable[tuple[int, Any]]
) -> tuple[dict[str, Any], list[str]]:
    """The judge's recorded answers in runs' scores (:func:`_judge_answers`)."""
    return _judge_answers(judge, scores)


def _judge_answers(
    judge: CheckJudge, scores: Iterable[tuple[int, Any]]
) -> tuple[dict[str, Any], list[str]]:
    """The judge's recorded answers in runs' scores, keyed ``run:<run id>:<checkpoint id>``,
    and the judge models the runs were scored with."""
    found: dict[str, Any] = {}
    models: set[str] = set()
    for run_id, score in scores:
        score = score if isinstance(score, dict) else {}
        if score.get("judge_model"):
            models.add(str(score["judge_model"]))
        for cp in score.get("checkpoints") or []:
            if not isinstance(cp, dict):
                continue
            answered, value = judge.spec.checkpoint_answer(cp)
            if answered:
                found[f"run:{run_id}:{cp.get('id')}"] = value
    return found, sorted(models)


def check_verdicts(
    *, judge: CheckJudge, runs: QuerySet[AgentRun] | None = None, run_set: RunSet | None = None
) -> list[tuple[str, str, Any]]:
    """People's answers to the judge's kind of check as ``(run:<run id>:<checkpoint id>,
    reviewer, 1 / 0)``: each reviewer's newest answer per run and checkpoint, of the upload's
    runs (``run_set``) or of ``runs``."""
    newest: dict[tuple[int, str, str], bool] = {}
    verdicts = judge.verdicts.objects.all()
    if run_set is not None:
        verdicts = verdicts.filter(run__run_set=run_set)
    if runs is not None:
        verdicts = verdicts.filter(run__in=runs)
    rows = verdicts.order_by("id").values_list(
        "run_id", "checkpoint_id", "reviewer__username", "passed"
    )
    for run_id, checkpoint, reviewer, passed in rows.iterator(2000):
        newest[(run_id, checkpoint, reviewer)] = passed
    return [
        (f"run:{run_id}:{checkpoint}", reviewer, int(passed))
        for (run_id, checkpoint, reviewer), passed in newest.items()
    ]


def run_set_visual_verdicts(*, run_set: RunSet) -> list[tuple[str, str, Any]]:
    """People's answers to the upload's visual checks (:func:`check_verdicts`)."""
    return check_verdicts(judge=V_CHECKS, run_set=run_set)


def run_set_judge_rater(
    *,
    user: AnyUser,
    run_set: RunSet,
    scores: Iterable[tuple[int, Any]] | None = None,
    threshold: float | None = None,
    judge: CheckJudge = V_CHECKS,
) -> dict[str, Any] | None:
    """The check judge (the V judge by default) against the people who answered its kind of
    check in the upload's runs (reviewers and admins), with its calibration (``calibration``:
    kappa with an interval, percent agreement, TPR/FPR, flagged below ``threshold``, 0.6 by
    default), and ``corrections``: the checks where the reviewers' majority (ties left out)
    differs from the judge (``unit``, ``run_id``, ``checkpoint``, ``judge``, ``people``,
    ``votes`` of ``n_raters``); None when no run has an answer of the judge. ``scores``: the
    runs' ``(id, score)`` when the caller has read them already."""
    permissions.require(user=user, project=run_set.project, action="manage_studies")
    if scores is None:
        scores = run_set.runs.values_list("id", "score").iterator(500)
    answers, models = _judge_answers(judge, scores)
    if not answers:
        return None
    from benchmark.metrics.judge_rater import (  # lazy: NumPy, ~0.1 s
        DEFAULT_TRUST_THRESHOLD,
        disagreements,
        judge_as_rater,
        judge_calibration,
    )

    people = check_verdicts(judge=judge, run_set=run_set)
    report = judge_as_rater(people, answers, "nominal", [0, 1])
    report["source"] = {
        "key": judge.key,
        "label": ", ".join(models) or judge.label,
        "kind": judge.key[0],
    }
    # Can the judge be trusted? Against the people's majority per check, with intervals and
    # its true- and false-positive rates (a yes/no scale).
    report["calibration"] = judge_calibration(
        people,
        answers,
        "nominal",
        [0, 1],
        threshold=DEFAULT_TRUST_THRESHOLD if threshold is None else threshold,
    )
    # The correction cases: checks where the reviewers' majority differs from the judge.
    report["corrections"] = [
        {
            **case,
            "run_id": int(case["unit"].split(":")[1]),
            "checkpoint": case["unit"].split(":", 2)[2],
        }
        for case in disagreements(people, answers, "nominal", [0, 1])
    ]
    return report


def run_set_check_judges(
    *,
    user: AnyUser,
    run_set: RunSet,
    scores: list[tuple[int, Any]],
    threshold: float | None = None,
) -> list[tuple[CheckJudge, dict[str, Any]]]:
    """Every check judge that answered checks of the upload's runs, with its report
    (:func:`run_set_judge_rater`), the V judge first."""
    found = []
    for judge in CHECK_JUDGES:
        report = run_set_judge_rater(
            user=user, run_set=run_set, scores=scores, threshold=threshold, judge=judge
        )
        if report is not None:
            found.append((judge, report))
    return found


# --------------------------------------------------------------------------- trust on a project

#: Bumped when what the figure holds or how it is computed changes (old keys are then unread).
CHECK_TRUST_CACHE_VERSION = 1


def _runs_state(project: Project) -> list[Any]:
    """What the project's runs are, for the trust cache keys: how many, the newest id, and
    the newest finished rescoring job (a rescore may change the judges' answers). Two
    queries."""
    from django.db.models import Max

    from review.runs.services import RESCORE_KIND

    runs = AgentRun.objects.filter(run_set__project=project).aggregate(
        n=Count("id"), last=Max("id")
    )
    rescored = Job.objects.filter(project=project, kind=RESCORE_KIND).aggregate(
        last=Max("finished_at")
    )["last"]
    return [runs["n"], runs["last"], rescored.isoformat() if rescored else None]


def _check_trust_key(
    *, judge: CheckJudge, project: Project, threshold: float, runs_state: list[Any]
) -> str:
    """The cache key of a check judge's trust on a project: a digest of what it is computed
    from. People's answers to its checks (how many, the newest id: a person's visual answer
    that rescores a run adds one) and the runs' state (:func:`_runs_state`). One query."""
    import hashlib

    import orjson
    from django.db.models import Max

    verdicts = judge.verdicts.objects.filter(run__run_set__project=project).aggregate(
        n=Count("id"), last=Max("id")
    )
    state = [
        CHECK_TRUST_CACHE_VERSION,
        judge.key,
        threshold,
        verdicts["n"],
        verdicts["last"],
        *runs_state,
    ]
    digest = hashlib.blake2b(orjson.dumps(state), digest_size=16).hexdigest()
    return f"check-trust:v{CHECK_TRUST_CACHE_VERSION}:p{project.pk}:{judge.key}:{digest}"


def check_judges_trust(
    *, judges: Iterable[CheckJudge], project: Project, threshold: float
) -> dict[str, dict[str, Any] | None]:
    """How far each check judge agrees with reviewers' answers to its checks on this
    project's runs (every upload), by the judge's key: Cohen's kappa against the people's
    majority per check with its bootstrap 95 % interval, flagged below ``threshold``; None
    when no check both the judge and a person answered ("no human ratings yet"). Cached
    under a key naming what it is computed from (:func:`_check_trust_key`): two queries plus
    one per judge when kept."""
    from django.core.cache import cache

    judges = list(judges)
    if not judges:
        return {}
    state = _runs_state(project)
    found: dict[str, dict[str, Any] | None] = {}
    for judge in judges:
        key = _check_trust_key(judge=judge, project=project, threshold=threshold, runs_state=state)
        kept = cache.get(key)
        if kept is None:
            kept = {
                "trust": _check_trust_compute(judge=judge, project=project, threshold=threshold)
            }
            cache.set(key, kept, 7 * 24 * 3600)
        found[judge.key] = kept["trust"]
    return found


def _check_trust_compute(
    *, judge: CheckJudge, project: Project, threshold: float
) -> dict[str, Any] | None:
    runs = AgentRun.objects.filter(run_set__project=project)
    people = check_verdicts(judge=judge, runs=runs)
    if not people:
        return None
    answered = {int(unit.split(":")[1]) for unit, _, _ in people}
    scores = runs.filter(pk__in=answered).values_list("id", "score").iterator(500)
    answers, _ = _judge_answers(judge, scores)
    if not answers:
        return None
    from benchmark.metrics.judge_rater import judge_calibration  # lazy: NumPy

    overall = judge_calibration(people, answers, "nominal", [0, 1], threshold=threshold)["overall"]
    if not overall["n_units"]:
        return None
    kappa = overall["kappa"]
    interval = kappa.get("interval") or {}
    return {
        "kappa": kappa.get("value"),
        "low": interval.get("low"),
        "high": interval.get("high"),
        "n_units": overall["n_units"],
        "flagged": overall["flagged"],
        "threshold": threshold,
        "task": 0,
        "task_name": "",
        "source": judge.key,
    }
