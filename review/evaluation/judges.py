"""Model judges on a finished evaluation run, from the run's page or ``evaluate
--judge-base-url``: what the kind's judges rate, asked of its protocol (``judged_as``).

- ``answers`` (ATP-Bench, LLM-I: the kinds whose outputs are answer texts, kept as the
  model's answers when the run finished): every runnable judge of the project's judge page
  (ATP-Bench MAM; the LLM-I rubric and judges) as a judge run of those answers, through the
  one judge runner and its job (``review.judges.services``). The leaderboard reads their
  figures as it reads any judge run's.
- ``runs`` (Agentic-MME: the outputs are agent runs): the S and V judges of run scoring. One
  job (``evaluation_judge`` kind) scores the runs the evaluation produced that this judge
  model has not scored yet again exactly as an uploaded run folder is scored
  (``review.runs.services.run_files_score``) with the judge model, stores those scores on the
  results and the run's figures (Acc, S, V, Overthink) from all of them. A run judged so and
  resumed later (its failed items evaluated again) has its new runs judged by the same judge
  once it finishes.

Either way (one ``Judges`` object per way, ``JUDGES``), a run judged and then resumed has
what the resume added judged by the judges that judged it, as soon as its last chunk finishes
(``evaluation_judge_follow``, from the "evaluate" job that finishes it); what they judged
before is kept.

A judge job of a run is found by its params (``evaluation_run``): the run's page lists them
with their progress."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import QuerySet

from benchmark import permissions
from benchmark.evaluation.base import Status
from benchmark.exceptions import Conflict, DomainError, ValidationFailed
from benchmark.jobs import services as job_services
from benchmark.jobs.kinds import Progress
from benchmark.kinds import kind_for
from benchmark.models import Job, JobStatus, Project
from benchmark.typing import User
from review import job_names
from review.evaluation.models import EvaluationResult, EvaluationRun

ANSWERS = "answers"
RUNS = "runs"
EVALUATION_JUDGE_KIND = job_names.EVALUATION_JUDGE_KIND
#: The name the S/V judges' figures go by in ``evaluate``'s summary.
RUN_JUDGES = "agentic-mme-sv"


def judged_as(project: Project) -> str:
    """What the judges of the project's evaluations rate: ``answers``, ``runs`` or "" (its
    outputs are judged where they are scored, not here)."""
    from review.evaluation.services import protocol_of

    if kind_for(project).answer_text:
        return ANSWERS
    return str(getattr(protocol_of(project), "judged_as", "") or "")


def judge_jobs_of(*, run: EvaluationRun) -> QuerySet[Job]:
    """The judge jobs started on the run's outputs, newest first."""
    return Job.objects.filter(
        project_id=run.project_id,
        kind__in=[job_names.JUDGE_KIND, EVALUATION_JUDGE_KIND],
        params__evaluation_run=run.pk,
    ).order_by("-created_at", "-id")


def _check(run: EvaluationRun) -> str:
    how = judged_as(run.project)
    if not how:
        raise ValidationFailed(
            f"{kind_for(run.project).label} outputs are not judged here: its judges run where "
            "they are scored"
        )
    if run.finished_at is None:
        raise Conflict(f"evaluation #{run.pk} has not finished; judge it once every item has run")
    if not EvaluationResult.objects.filter(run=run, status=Status.OK).exists():
        raise ValidationFailed(f"evaluation #{run.pk} has no finished output to judge")
    if judge_jobs_of(run=run).filter(status__in=[JobStatus.QUEUED, JobStatus.RUNNING]).exists():
        raise Conflict(f"judges are still running on evaluation #{run.pk}; wait for them")
    return how


def evaluation_judge_start(
    *,
    run: EvaluationRun,
    user: User | None,
    base_url: str = "",
    model: str = "",
    workers: int = 4,
    enqueue: bool = True,
) -> list[Job]:
    """Start the kind's judges on the run's outputs with the judge model at ``base_url`` /
    ``model`` (empty: the project's model): one judge run a judge for answers, one rescoring
    job for agent runs. With ``enqueue`` the jobs are enqueued after commit (the page);
    without, the caller runs them (the command line). ``user`` None is the command line.
    ValidationFailed when there is nothing to judge or no judge model; Conflict while the
    run or its judges are still running."""
    from review.judges import services as judge_services

    if user is not None:
        permissions.require(user=user, project=run.project, action="evaluate")
        permissions.require(user=user, project=run.project, action="run_judges")
    how = _check(run)
    config, _ = judge_services.judge_config(project=run.project, base_url=base_url, model=model)
    return JUDGES[how].start(
        run=run, user=user, base_url=base_url, model=model, judge_model=config.model,
        workers=workers, enqueue=enqueue,
    )  # fmt: skip


class Judges:
    """The judges of one way of judging an evaluation's outputs (``judged_as``): how they
    start on a finished run, and how they follow a resume (judge the outputs the resume
    added, with the judges that judged the run before, keeping what they judged)."""

    how: str = ""

    def start(
        self,
        *,
        run: EvaluationRun,
        user: User | None,
        base_url: str,
        model: str,
        judge_model: str,
        workers: int,
        enqueue: bool,
    ) -> list[Job]:
        raise NotImplementedError

    def follow(self, *, run: EvaluationRun, user: User | None, follows: int | None) -> list[Job]:
        """Called with the run's row locked, no judge job of the run queued or running: the
        jobs (enqueued after commit) judging the outputs its judges have not judged yet."""
        raise NotImplementedError


class AnswerJudges(Judges):
    """Every runnable answer judge of the project's judge page, each as a judge run of the
    model's answers (ATP-Bench's MAM; LLM-I's rubric and LLM/MLLM judges). After a resume,
    each judge run that judged the run (the newest of each judge, if it succeeded) is
    resumed: the judge runner makes only the calls of the answers it has not judged, and
    keeps the others (``review.judges.services.judge_run_follow``)."""

    how = ANSWERS

    def start(
        self,
        *,
        run: EvaluationRun,
        user: User | None,
        base_url: str,
        model: str,
        judge_model: str,
        workers: int,
        enqueue: bool,
    ) -> list[Job]:
        from review.judges import services as judge_services
        from review.judges.reports import judge_page

        specs = judge_page(run.project).judges
        if not specs:
            raise ValidationFailed(f"no model judge runs over project {run.project.name!r}")
        jobs = []
        with transaction.atomic():
            for spec in specs:
                _, job = judge_services.judge_run_create(
                    project=run.project, user=user, judge=spec.name, base_url=base_url,
                    model=model, models=[run.model], workers=workers, enqueue=enqueue,
                    evaluation_run=run.pk,
                )  # fmt: skip
                jobs.append(job)
        return jobs

    def follow(self, *, run: EvaluationRun, user: User | None, follows: int | None) -> list[Job]:
        from review.judges import services as judge_services
        from review.judges.models import JudgeRun

        newest: dict[str, JudgeRun] = {}
        rows = (
            JudgeRun.objects.filter(project_id=run.project_id, selection__evaluation_run=run.pk)
            .select_related("job", "project")
            .order_by("-created_at", "-id")
        )
        for judge_run in rows:
            newest.setdefault(judge_run.judge, judge_run)
        jobs = []
        for judge_run in newest.values():
            job = judge_run.job
            if job is None or job.status != JobStatus.SUCCEEDED:
                continue
            if not judge_services.judge_run_unjudged(run=judge_run):
                continue
            jobs.append(judge_services.judge_run_follow(run=judge_run, user=user, follows=follows))
        return jobs


class RunJudges(Judges):
    """The S and V judges of run scoring on agent runs (Agentic-MME): one
    ``evaluation_judge`` job. After a resume, the same judge (the endpoint and model of the
    run's newest such job that succeeded) scores the runs it has not scored."""

    how = RUNS

    def start(
        self,
        *,
        run: EvaluationRun,
        user: User | None,
        base_url: str,
        model: str,
        judge_model: str,
        workers: int,
        enqueue: bool,
    ) -> list[Job]:
        return [
            _runs_judge_start(
                run=run,
                user=user,
                base_url=base_url,
                model=model,
                judge_model=judge_model,
                enqueue=enqueue,
            )
        ]

    def follow(self, *, run: EvaluationRun, user: User | None, follows: int | None) -> list[Job]:
        jobs = judge_jobs_of(run=run).filter(kind=EVALUATION_JUDGE_KIND)
        last = jobs.filter(status=JobStatus.SUCCEEDED).first()
        if last is None or not isinstance(last.result, dict):
            return []
        judge_model = str(last.result.get("judge_model") or "")
        if not judge_model or not _to_judge(run, judge_model):
            return []
        return [
            _runs_judge_start(
                run=run,
                user=user,
                base_url=str(last.params.get("base_url") or ""),
                model=str(last.params.get("model") or ""),
                judge_model=judge_model,
                enqueue=True,
                follows=follows,
            )  # fmt: skip
        ]


#: The judges of each way an evaluation's outputs are judged, by ``judged_as``.
JUDGES: dict[str, Judges] = {j.how: j for j in (AnswerJudges(), RunJudges())}


def _to_judge(run: EvaluationRun, judge_model: str) -> list[EvaluationResult]:
    """The run's finished agent runs the judge model ``judge_model`` has not scored (scored
    by the proxies, or by another judge model), in item order."""
    rows = (
        EvaluationResult.objects.filter(run=run, status=Status.OK)
        .select_related("item")
        .only("id", "files", "scores", "item__external_id", "run_id")
        .order_by("item__position", "item_id")
    )
    return [r for r in rows if (r.scores or {}).get("judge_model") != judge_model]


def _runs_judge_start(
    *,
    run: EvaluationRun,
    user: User | None,
    base_url: str,
    model: str,
    judge_model: str,
    enqueue: bool,
    follows: int | None = None,
) -> Job:
    params: dict[str, Any] = {
        "project_id": run.project_id,
        "run_id": run.pk,
        "evaluation_run": run.pk,
        "base_url": base_url,
        "model": model,
    }
    if follows is not None:
        params["follows"] = follows
    start = job_services.job_start if enqueue else job_services.job_create
    total = len(_to_judge(run, judge_model))
    return start(
        kind=EVALUATION_JUDGE_KIND, user=user, project=run.project, params=params, total=total
    )


def evaluation_judge_follow(
    *, run: EvaluationRun, user: User | None, follows: int | None = None
) -> list[Job]:
    """When an evaluation finishes again after a resume: the judges that judged it before
    judge what the resume added, as jobs enqueued after commit (``Judges.follow`` of the
    kind's way of judging: the answer judges' runs resumed, or the S/V judge's rescoring of
    the new runs); ``follows`` is the "evaluate" job that finished the run. Nothing when the
    run was never judged, a judge job of the run is queued or running, or everything is
    judged already. Chunks finishing together start the jobs once: the run's row is locked
    while this one looks."""
    judges = JUDGES.get(judged_as(run.project))
    if judges is None:
        return []
    # Most runs were never judged: one query says so, without the lock and without loading
    # the judges' code (~30 ms of imports at the end of every evaluation otherwise).
    if not judge_jobs_of(run=run).exists():
        return []
    with transaction.atomic():
        run = EvaluationRun.objects.select_for_update().get(pk=run.pk)
        if run.finished_at is None:
            return []
        if judge_jobs_of(run=run).filter(status__in=[JobStatus.QUEUED, JobStatus.RUNNING]).exists():
            return []
        return judges.follow(run=run, user=user, follows=follows)


def evaluation_judge(
    *, run: EvaluationRun, base_url: str, model: str, workers: int = 4
) -> dict[str, Any]:
    """The command line's ``--judge-base-url``: the kind's judges on the run's outputs, in
    this process, through the job pipeline; ``{judge: the run's figures of this model}``
    (a judge whose job failed: ``{"error": ...}``)."""
    from review.judges.models import JudgeRun
    from review.judges.selectors import judge_run_report

    jobs = evaluation_judge_start(
        run=run, user=None, base_url=base_url, model=model, workers=workers, enqueue=False
    )
    figures: dict[str, Any] = {}
    for job in jobs:
        job_services.job_run(job_id=job.pk)
        job.refresh_from_db()
        if job.kind == EVALUATION_JUDGE_KIND:
            result = job.result if isinstance(job.result, dict) else {}
            figures[RUN_JUDGES] = {"error": job.error} if job.error else result
            continue
        judge_run = JudgeRun.objects.get(pk=job.params["run_id"])
        if job.error:
            figures[judge_run.judge] = {"error": job.error}
            continue
        summary = judge_run_report(run=judge_run)["summary"]
        figures[judge_run.judge] = {
            "judge_run": judge_run.pk,
            **((summary.get("models") or {}).get(run.model) or {}),
        }
    return figures


@dataclass
class _Rescored:
    result: EvaluationResult
    scores: dict[str, Any]


def evaluation_judge_job(*, job: Job, progress: Progress) -> dict[str, Any]:
    """The ``evaluation_judge`` job's runner (agent runs): score the runs the evaluation
    produced that this judge model has not scored yet again as an uploaded run is scored,
    with the S/V judge model, then store the scores and the run's figures from all of them
    (one transaction). Running it again gives the same scores (runs it scored are kept; the
    judge's answers are kept and reused)."""
    from review.evaluation.records import files_read
    from review.evaluation.services import run_summarize
    from review.runs import services as run_services

    try:
        run = EvaluationRun.objects.select_related("project").get(pk=job.params["run_id"])
    except (EvaluationRun.DoesNotExist, KeyError):
        raise DomainError("the evaluation run of this job no longer exists") from None
    judge = run_services.run_judge_at(
        project=run.project,
        base_url=str(job.params.get("base_url") or ""),
        model=str(job.params.get("model") or ""),
        user_id=job.created_by_id,
    )
    results = _to_judge(run, judge.model)
    kept = EvaluationResult.objects.filter(run=run, status=Status.OK).count() - len(results)
    items = run_services.items_for_scoring(
        project=run.project, external_ids=[r.item.external_id for r in results]
    )
    rescored: list[_Rescored] = []
    progress(progress=0, total=len(results), message=f"judging {len(results)} runs")
    for n, result in enumerate(results, 1):
        score = run_services.run_files_score(
            item=items[result.item.external_id], files=files_read(result.files or {}), judge=judge
        )
        rescored.append(
            _Rescored(result, run_services.score_to_dict(score, judge_model=judge.model))
        )
        progress(
            progress=n,
            total=len(results),
            message=f"{n} of {len(results)} runs judged · {judge.calls} judge calls",
        )
    with transaction.atomic():
        for row in rescored:
            row.result.scores = row.scores
        EvaluationResult.objects.bulk_update([r.result for r in rescored], ["scores"])
        summary = run_summarize(run=run)
        run.summary = {**summary, "judge_model": judge.model}
        run.save(update_fields=["summary"])
    return {
        "run_id": run.pk,
        "judge_model": judge.model,
        "runs": len(rescored),
        "already_judged": kept,
        "judge_calls": judge.calls,
        **{key: summary.get(key) for key in ("acc", "S", "V", "overthink")},
    }
