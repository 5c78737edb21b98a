"""Scoring agent runs (Agentic-MME): reading run folders, scoring them against a trajectory
project's items, a person's visual verdicts (V_true) and reviewers' failure-mode labels.

The metric formulas are ``benchmark.metrics.agentic_mme``; this module reads and checks run
folders (pure: also used by ``manage.py score_runs``), and holds the services that write and the
selectors that read the stored runs.

A run folder holds ``tool_use_list.json`` (a JSON list of the logged tool events) and
``model_answer.txt``, optionally ``run_meta.json`` (the released runners write ``task_id``,
``task_file``, ``model`` and ``effective_tool_calls`` there) and ``tool_images/``. A run belongs
to the task named by ``run_meta.task_id``, else by the stem of ``run_meta.task_file``, else by
the folder's name (the released runners name the folder after the task file).

V_true: a visual checkpoint passes when *any* image the run produced shows the required detail
(App. A.2's any-pass rule). On the web a person answers that question per checkpoint; the
newest answer counts. Until someone answers, the figure comes from the scorer's geometric proxy
(the run's crop regions against the reference region), and the page says which is which. The
command line has no person to ask, so it always uses the proxy.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import json
import re
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.db.models import Prefetch
from django.utils.text import get_valid_filename

from benchmark import permissions
from benchmark.exceptions import Conflict, Forbidden, ValidationFailed
from benchmark.images import services as image_services
from benchmark.jobs import services as job_services
from benchmark.jobs import uploads as job_uploads
from benchmark.judge_prompts import Template
from benchmark.llm import services as llm_services
from benchmark.llm.cache import CachedAnswer
from benchmark.llm.client import ModelConfig, ModelNotConfigured
from benchmark.llm.services import ModelCallCache
from benchmark.metrics import agentic_mme as mme
from benchmark.models import (
    Image,
    Item,
    Job,
    JobStatus,
    ModelCall,
    Project,
    Trajectory,
)
from benchmark.typing import AnyUser, User
from review import job_names
from review.judges.specs.agentic_mme import S_JUDGE, V_JUDGE
from review.runs import judging
from review.runs.folders import TOOL_IMAGES_DIR, RunFolder, _where, read_run_folders
from review.runs.models import AgentRun, FailureLabel, RunSet, SearchVerdict, VisualVerdict

SCORE_KIND = job_names.RUNS_SCORE_KIND
RESCORE_KIND = job_names.RUNS_RESCORE_KIND
MAX_RUN_IMAGES = 200

# =========================================================================== run folders (pure)


# =========================================================================== scoring (pure)


def apply_visual_verdicts(score: mme.RunScore, verdicts: Mapping[str, bool]) -> mme.RunScore:
    """Put people's answers in place of the judge's or the proxy's for the visual checks they
    answered, and recompute V, V_true, the undetermined count, base and PQS as ``score_run``
    does."""
    if not verdicts:
        return score
    for res in score.checkpoints:
        if res.kind != "visual" or not res.has_visual_check or res.id not in verdicts:
            continue
        if res.detail.get("decided_by") == judging.JUDGE:
            res.detail["judge"] = res.detail.get("visual")
        else:
            res.detail["proxy"] = res.detail.get("visual")
        res.detail["visual"] = {"method": "person", "passed": bool(verdicts[res.id])}
        res.detail["decided_by"] = judging.PERSON
        res.visual_passed = bool(verdicts[res.id])
    return judging.recompute(score)


def score_from_dict(data: Mapping[str, Any]) -> mme.RunScore:
    """A RunScore back from ``RunScore.to_dict()`` (checkpoints as plain results)."""
    names = {f.name for f in dataclasses.fields(mme.RunScore)} - {"checkpoints"}
    kwargs = {k: data[k] for k in names if k in data}
    checkpoints = [
        mme.CheckpointResult(**{k: v for k, v in cp.items() if k in _CP_FIELDS})
        for cp in data.get("checkpoints") or []
    ]
    return mme.RunScore(**kwargs, checkpoints=checkpoints)


_CP_FIELDS = {f.name for f in dataclasses.fields(mme.CheckpointResult)}


def score_to_dict(score: mme.RunScore, *, judge_model: str = "") -> dict[str, Any]:
    """The stored score: ``RunScore.to_dict()`` plus how many visual checks a person answered
    and which judge model was used ("" when the proxies were)."""
    out = score.to_dict()
    out["judge_model"] = judge_model
    out["visual_by_person"] = sum(
        1
        for c in score.checkpoints
        if c.kind == "visual" and (c.detail.get("visual") or {}).get("method") == "person"
    )
    out["visual_checks"] = sum(
        1 for c in score.checkpoints if c.kind == "visual" and c.has_visual_check
    )
    return out


def figures(scores: Sequence[mme.RunScore]) -> dict[str, Any]:
    """Overall and per-level figures with the released scorer's overthink analysis, plus
    ``acc_pct`` (Acc on the 0-100 scale, as the paper's tables print it)."""
    report = mme.aggregate(scores)
    for summary in [report["overall"], *report["levels"].values()]:
        if summary.get("n"):
            summary["acc_pct"] = 100.0 * summary["acc"]
    return report


# =========================================================================== tasks from items


def item_task(item: Item, reference: Trajectory | None) -> dict[str, Any]:
    """The task config of an item in the released JSON shape: its raw source record with the
    current values (answer, match type, level, checkpoints, ordering, efficiency) put in."""
    raw = item.raw_record if item.raw else None
    task: dict[str, Any] = copy.deepcopy(raw) if isinstance(raw, dict) else {}
    task["task_id"] = item.external_id
    meta = dict(task.get("meta") or {})
    meta["level"] = item.level
    if item.domain:
        meta["domain"] = item.domain
    task["meta"] = meta
    golden = dict(task.get("golden_answer") or {})
    golden["value"] = item.expected_answer
    if item.match_type:
        golden["match_type"] = item.match_type
    task["golden_answer"] = golden
    if reference is not None:
        pe = dict(task.get("process_evaluation") or {})
        pe["checkpoints"] = list(reference.checkpoints or [])
        pe["ordering_constraints"] = list(reference.ordering_constraints or [])
        pe["efficiency"] = dict(reference.efficiency or {})
        task["process_evaluation"] = pe
    return task


def _reference(item: Item) -> Trajectory | None:
    refs = [t for t in item.trajectories.all() if t.key == "reference"]
    if refs:
        return refs[0]
    truths = [t for t in item.trajectories.all() if t.origin == "ground_truth"]
    return truths[0] if truths else None


def _items_with_reference(project: Project, ids: Iterable[str]) -> dict[str, Item]:
    items = Item.objects.filter(project=project, external_id__in=set(ids)).prefetch_related(
        Prefetch("trajectories", queryset=Trajectory.objects.order_by("position", "id"))
    )
    return {item.external_id: item for item in items}


def run_score(
    *,
    item: Item,
    run: mme.RunRecord,
    verdicts: Mapping[str, bool] | None = None,
    judge: judging.RunJudge | None = None,
) -> mme.RunScore:
    """Score a run against its item: the judge model where given (else the proxies), then
    people's visual answers over both."""
    task = item_task(item, _reference(item))
    score = judging.score_run_judged(
        task, run, judge=judge, accepted=list(item.accepted_variants or [])
    )
    return apply_visual_verdicts(score, verdicts or {})


class _RecordingCache:
    """The project's ModelCall table as the judge's cache: answers recorded for the key are
    read (``ModelCallCache``), and each new answer that parsed is recorded as a ModelCall."""

    def __init__(self, *, project: Project, config: ModelConfig, user_id: int | None) -> None:
        self.project = project
        self.config = config
        self.user_id = user_id
        self.reader = ModelCallCache()

    def get(self, key: str) -> CachedAnswer | None:
        return self.reader.get(key)

    def put(self, key: str, answer: CachedAnswer) -> None:
        ModelCall.objects.create(
            request_key=key,
            project=self.project,
            purpose=JUDGE_PURPOSE,
            endpoint=self.config.base_url[:500],
            model=answer.model[:200] or self.config.model[:200],
            answer=answer.text,
            latency_ms=answer.latency_ms,
            prompt_tokens=answer.prompt_tokens,
            completion_tokens=answer.completion_tokens,
            attempts=1,
            created_by_id=self.user_id,
        )


JUDGE_PURPOSE = "agentic-mme judge"


def run_judge_at(
    *, project: Project, base_url: str = "", model: str = "", user_id: int | None = None
) -> judging.RunJudge:
    """The S/V run judge at ``base_url``/``model`` (over the project's model, as a judge run
    takes them: ``review.judges.services.judge_config``), its answers read from and recorded
    in the project's model calls like the configured judge's. ValidationFailed when there is
    no judge model."""
    from review.judges.services import judge_config

    config, params = judge_config(project=project, base_url=base_url, model=model)
    return judging.RunJudge(
        config=config,
        cache=_RecordingCache(project=project, config=config, user_id=user_id),
        params=params,
        scope=f"project:{project.pk}",
        templates=run_judge_templates(project=project),
    )


def run_judge_templates(
    *, project: Project, versions: Mapping[str, str] | None = None
) -> dict[str, Template]:
    """The S and V judges' templates by id: the project's newest version of each (the
    template-version service; a worked-examples version takes effect when runs are scored
    again), or exactly ``versions`` (``{id: version}``) where given."""
    from review.judges.run_settings import judge_templates_for

    found: dict[str, Template] = {}
    for spec in (S_JUDGE, V_JUDGE):
        found.update(judge_templates_for(project=project, judge=spec.name, versions=versions))
    return found


def items_for_scoring(*, project: Project, external_ids: Iterable[str]) -> dict[str, Item]:
    """The project's items of these ids with their reference trajectories (what
    ``run_files_score`` scores against), by external id: two queries."""
    return _items_with_reference(project, external_ids)


def run_files_score(
    *, item: Item, files: Mapping[str, bytes], judge: judging.RunJudge | None = None
) -> mme.RunScore:
    """Score a run given as its folder's files (``tool_use_list.json``, ``model_answer.txt``,
    ``run_meta.json``, ``tool_images/``: what an evaluation stores) exactly as an uploaded
    run folder is scored: the folder is written to a temporary directory, read by the run
    folder reader and scored by ``run_score`` with ``judge``."""
    with tempfile.TemporaryDirectory(prefix="bw-run-") as tmp:
        root = Path(tmp) / get_valid_filename(item.external_id or "run")
        for name, data in files.items():
            path = root / _safe_relative(name)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        folders = read_run_folders(root)
        if len(folders) != 1:
            raise ValidationFailed(f"item {item.external_id}: its stored run is not a run folder")
        return run_score(item=item, run=folders[0].agent_run(), judge=judge)


def run_judge_for(
    *, project: Project, user_id: int | None = None, offline: bool = False
) -> judging.RunJudge | None:
    """The project's configured model as the run judge (``model_resolve``), or None: then the
    proxies decide. A model setting that is present but wrong stops the job with its message."""
    try:
        resolved = llm_services.model_resolve(project=project)
    except ModelNotConfigured as exc:
        raise ValidationFailed(f"the judge model: {exc}") from None
    if resolved is None:
        return None
    return judging.RunJudge(
        config=resolved.config,
        cache=_RecordingCache(project=project, config=resolved.config, user_id=user_id)
        if resolved.cache_mode != "off"
        else None,
        params=dict(resolved.params),
        scope=f"project:{project.pk}",
        offline=offline,
        templates=run_judge_templates(project=project),
    )


# =========================================================================== services: upload


def _require_review(user: AnyUser, project: Project) -> User:
    permissions.require(user=user, project=project, action="score")
    if not isinstance(user, User):
        raise Forbidden("log in to score runs")
    return user


UPLOAD_AREA = job_names.RUNS_UPLOAD_AREA


def _safe_relative(name: str) -> PurePosixPath:
    parts = [p for p in name.replace("\\", "/").split("/") if p not in ("", ".")]
    if not parts or ".." in parts or re.match(r"^[A-Za-z]:", parts[0]):
        raise ValidationFailed(f"the upload holds an unsafe path {name!r}")
    return PurePosixPath(*parts)


def run_upload_start(
    *,
    project: Project,
    user: AnyUser,
    files: Sequence[UploadedFile],
    paths: Sequence[str] = (),
    name: str = "",
) -> Job:
    """Store uploaded run folders (one or more .zip files, or the files of several folders
    with their relative ``paths``) under MEDIA_ROOT/runs-upload/<job>/ and start the scoring
    job (enqueued after commit by the job pipeline). Nothing is stored for the runs until the
    job has checked all of them."""
    reviewer = _require_review(user, project)
    if not project.benchmark.offers.score_runs:
        raise ValidationFailed("agent runs are scored in trajectory (Agentic-MME) projects")
    files = [f for f in files if f is not None]
    if not files:
        raise ValidationFailed("choose a .zip of run folders, or the run folders themselves")
    max_bytes = settings.BENCHWRIGHT_MAX_UPLOAD_BYTES
    total = sum(f.size or 0 for f in files)
    if total > max_bytes:
        raise ValidationFailed(
            f"the upload is {total / 1e6:.1f} MB; the limit is {max_bytes / 1e6:.1f} MB"
        )
    zips = [f for f in files if (f.name or "").lower().endswith(".zip")]
    if zips and len(zips) != len(files):
        raise ValidationFailed("upload either .zip files or run folders, not both at once")
    if not zips and len(paths) != len(files):
        raise ValidationFailed(
            "the folder upload lost its file paths (it needs JavaScript); upload a .zip instead"
        )
    label = name.strip() or ", ".join(Path(f.name or "upload").name for f in files)[:200]
    # Unpack and check with no transaction open (on SQLite a transaction holds the write
    # lock); the job pipeline then creates the job and the staging folder becomes its folder.
    budget = job_uploads.UploadBudget(max_bytes=max_bytes)
    with job_uploads.place_uploads(UPLOAD_AREA, budget) as placed:
        sources: list[tuple[str, Path]] = []
        if zips:
            stems: set[str] = set()
            for upload in zips:
                stem = job_uploads.safe_filename(Path(upload.name or "upload").stem, "upload")
                while stem in stems:
                    stem = f"{stem}-{len(stems) + 1}"
                stems.add(stem)
                archive = Path(upload.name or "upload").name
                inner = placed.add_zip(upload, archive=archive, into=stem)
                sources.append((stem if len(zips) > 1 else "", inner))
        else:
            for upload, rel in zip(files, paths, strict=True):
                placed.add_file(upload, _safe_relative(rel).parts)
            sources.append(("", placed.root))

        def claim(root: Path) -> dict[str, Any]:
            placed.move_to(root)
            return {
                "path": str(root),
                "sources": [[prefix, str(placed.final(path))] for prefix, path in sources],
            }

        return job_services.job_start(
            kind=SCORE_KIND,
            user=reviewer,
            project=project,
            params={"project_id": project.pk, "name": label, "filename": label},
            uploads=claim,
        )


@dataclass
class _Prepared:
    folder: RunFolder
    item: Item
    model: str
    score: mme.RunScore
    images: list[Path]


def run_set_score(*, job: Job, progress: Callable[..., None] | None = None) -> RunSet:
    """The scoring job's work: read and check every run folder under the job's upload, match
    each to the project's item by task id, score it, then store the run set, the runs and
    their images in one transaction. Any problem raises ValidationFailed naming the run
    folder and file, and nothing is stored."""
    project = Project.objects.get(pk=job.params["project_id"])
    root = Path(job.params["path"])
    label = str(job.params.get("name") or "upload")
    tick = progress or (lambda *a, **k: None)
    sources = job.params.get("sources") or [["", str(root)]]
    folders, models = _run_folders_read(sources, label, tick)
    items = _items_with_reference(project, (f.task_id for f in folders))
    judge = run_judge_for(project=project, user_id=job.created_by_id)
    _check_tasks_known(project, folders, items)
    prepared = _runs_score(folders, models, items, judge, tick)
    tick(progress=0, message="storing images")
    with transaction.atomic():
        run_set = RunSet.objects.create(
            project=project,
            name=label[:200],
            filename=str(job.params.get("filename") or "")[:255],
            job=job,
            created_by=job.created_by,
        )
        rows = [
            AgentRun(
                run_set=run_set,
                item=p.item,
                folder=p.folder.name[:500],
                model_name=p.model,
                events=p.folder.events,
                events_raw=p.folder.events_raw,
                final_answer=p.folder.answer,
                meta=p.folder.meta,
                images=_run_images_store(p, project),
                score=score_to_dict(p.score, judge_model=judge.model if judge else ""),
                level=p.score.level,
                acc=p.score.acc,
                position=position,
            )
            for position, p in enumerate(prepared)
        ]
        AgentRun.objects.bulk_create(rows, batch_size=500)
    return run_set


def _run_folders_read(
    sources: list[list[str]], label: str, tick: Callable[..., None]
) -> tuple[list[RunFolder], dict[int, str]]:
    """Every run folder of every uploaded source, and the model of each (keyed by ``id``): the
    folder's own, else its parent folder's name (unless that is ``runs``), else the source's
    prefix, else the upload's label."""
    folders: list[RunFolder] = []
    models: dict[int, str] = {}
    for prefix, path in sources:
        for folder in read_run_folders(Path(path)):
            parent = PurePosixPath(folder.name).parent
            models[id(folder)] = (
                folder.model
                or (parent.name if parent.name and parent.name.lower() != "runs" else "")
                or prefix
                or label
            )[:200]
            if prefix:
                folder.name = f"{prefix}/{folder.name}"
            folders.append(folder)
            tick(progress=0, message=f"read {len(folders)} run folders")
    return folders, models


def _check_tasks_known(project: Project, folders: list[RunFolder], items: dict[str, Item]) -> None:
    unknown = [f for f in folders if f.task_id not in items]
    if unknown:
        shown = "; ".join(f"{f.name!r} (task {f.task_id!r})" for f in unknown[:5])
        more = f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""
        raise ValidationFailed(
            f"{len(unknown)} run folder{'s' if len(unknown) != 1 else ''} name a task that is "
            f"not an item of {project.name!r}: {shown}{more}"
        )


def _runs_score(
    folders: list[RunFolder],
    models: dict[int, str],
    items: dict[str, Item],
    judge: judging.RunJudge | None,
    tick: Callable[..., None],
) -> list[_Prepared]:
    """Score every run (one run per task and model) and list the images it produced."""
    seen: dict[tuple[str, str], str] = {}
    prepared: list[_Prepared] = []
    tick(progress=0, total=len(folders), message="scoring")
    for n, folder in enumerate(folders, start=1):
        model = models[id(folder)]
        key = (model, folder.task_id)
        if key in seen:
            raise ValidationFailed(
                f"run folders {seen[key]!r} and {folder.name!r} are both runs of task "
                f"{folder.task_id!r} by {model!r}; upload one run per task and model"
            )
        seen[key] = folder.name
        item = items[folder.task_id]
        run = folder.agent_run()
        score = run_score(item=item, run=run, judge=judge)
        # Only files inside the run folder: a logged absolute path must not reach other files.
        inside = folder.path.resolve()
        images = [p for p in run.produced_images() if p.resolve().is_relative_to(inside)]
        if len(images) > MAX_RUN_IMAGES:
            raise ValidationFailed(
                f"run folder {folder.name!r}: {len(images)} images; the limit is {MAX_RUN_IMAGES}"
            )
        prepared.append(_Prepared(folder, item, model, score, images))
        tick(progress=n)
    return prepared


def _run_images_store(p: _Prepared, project: Project) -> list[dict[str, Any]]:
    stored = []
    for i, path in enumerate(p.images):
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise ValidationFailed(
                f"{_where(p.folder.name, path.name)}: cannot be read ({exc})"
            ) from None
        try:
            image = image_services.image_store(data=data, name=path.name, project=project)
        except ValidationFailed as exc:
            raise ValidationFailed(f"{_where(p.folder.name, path.name)}: {exc.message}") from None
        stored.append({"sha256": image.sha256, "name": path.name, "position": i})
    return stored


def run_set_score_job(*, job: Job, progress: Callable[..., None]) -> dict[str, Any]:
    """The run-scoring kind's runner: score the upload, store it as a RunSet."""
    run_set = run_set_score(job=job, progress=progress)
    return {"run_set_id": run_set.pk, "runs": run_set.runs.count()}


# =========================================================================== services: people


def _latest_verdicts(run: AgentRun) -> dict[str, VisualVerdict]:
    latest: dict[str, VisualVerdict] = {}
    for verdict in run.visual_verdicts.select_related("reviewer").order_by("id"):
        latest[verdict.checkpoint_id] = verdict
    return latest


@contextlib.contextmanager
def _stored_run_dir(run: AgentRun) -> Iterator[Path | None]:
    """A temporary run folder holding the run's stored images in ``tool_images/`` (None when
    it produced none), so a rescore sees the images the upload's scoring saw (``require_images``
    checks count them). An image whose file is gone counts as not produced."""
    entries = [i for i in run.images or [] if isinstance(i, dict) and i.get("sha256")]
    if not entries:
        yield None
        return
    images = {
        img.sha256: img for img in Image.objects.filter(sha256__in=[i["sha256"] for i in entries])
    }
    with tempfile.TemporaryDirectory(prefix="benchwright-run-") as tmp:
        folder = Path(tmp) / TOOL_IMAGES_DIR
        folder.mkdir()
        for n, entry in enumerate(entries):
            image = images.get(entry["sha256"])
            if image is None:
                continue
            name = get_valid_filename(PurePosixPath(str(entry.get("name") or "")).name)
            target = folder / (name or f"{entry['sha256'][:16]}.png")
            if target.exists():
                target = folder / f"{n}-{target.name}"
            try:
                with image.file.open("rb") as src, target.open("wb") as dst:
                    shutil.copyfileobj(src, dst)
            except (OSError, ValueError):
                target.unlink(missing_ok=True)
        yield Path(tmp)


def _run_record(run: AgentRun, run_dir: Path | None) -> mme.RunRecord:
    return mme.RunRecord(
        tuple(run.events),
        run.final_answer,
        run_dir,
        run.meta.get("effective_tool_calls") if isinstance(run.meta, dict) else None,
        run.folder,
    )


def run_checkpoints_rejudge(
    *, run: AgentRun, judge: judging.RunJudge, kind: str, ids: Sequence[str]
) -> dict[str, int | None]:
    """Ask ``judge`` again on the checkpoints ``ids`` of ``kind`` of a stored run (its stored
    images, its item's current task), nothing else; the run's score is not changed
    (``judging.checkpoints_rejudge``)."""
    task = item_task(run.item, _reference(run.item))
    with _stored_run_dir(run) as run_dir:
        return judging.checkpoints_rejudge(
            task,
            _run_record(run, run_dir),
            judge=judge,
            kind=kind,
            ids=ids,
            accepted=list(run.item.accepted_variants or []),
        )


def run_rescore(*, run: AgentRun, judge: judging.RunJudge | None = None) -> AgentRun:
    """Score a stored run again against its item's current task (answer, variants, reference
    trajectory) with the judge model if given (else the proxies) and the newest person's
    verdict per visual checkpoint."""
    verdicts = {cid: v.passed for cid, v in _latest_verdicts(run).items()}
    with _stored_run_dir(run) as run_dir:
        score = run_score(
            item=run.item, run=_run_record(run, run_dir), verdicts=verdicts, judge=judge
        )
    run.score = score_to_dict(score, judge_model=judge.model if judge else "")
    run.level = score.level
    run.acc = score.acc
    run.save(update_fields=["score", "level", "acc"])
    return run


def run_set_rescore_start(*, run_set: RunSet, user: AnyUser) -> Job:
    """Enqueue a job that scores every run of the upload again against its item's current
    reference (after an item was edited). People's visual verdicts and failure labels stay and
    count as before. Conflict while a rescore of the same upload is queued or running."""
    reviewer = _require_review(user, run_set.project)
    job_services.jobs_sweep()  # a rescore whose worker died does not block a new one
    with transaction.atomic():
        RunSet.objects.select_for_update().filter(pk=run_set.pk).first()
        busy = rescore_job_active(run_set=run_set)
        if busy is not None:
            raise Conflict(f"this upload is being rescored already (job #{busy.pk})")
        return job_services.job_start(
            kind=RESCORE_KIND,
            user=reviewer,
            project=run_set.project,
            total=run_set.runs.count(),
            params={"run_set_id": run_set.pk, "name": run_set.name},
        )


def run_set_rescore(*, job: Job, progress: Callable[..., None] | None = None) -> dict[str, Any]:
    """The rescoring job's work: each run of the upload scored again, one run per transaction
    under the run's lock (a verdict given meanwhile is not lost and counts), against the
    items as they are now. Running it twice gives the same scores."""
    tick = progress or (lambda *a, **k: None)
    run_set = RunSet.objects.get(pk=job.params["run_set_id"])
    ids = list(run_set.runs.order_by("position", "id").values_list("pk", "item_id"))
    items = {
        item.pk: item
        for item in Item.objects.filter(pk__in={i for _, i in ids}).prefetch_related(
            Prefetch("trajectories", queryset=Trajectory.objects.order_by("position", "id"))
        )
    }
    judge = run_judge_for(project=run_set.project, user_id=job.created_by_id)
    tick(progress=0, total=len(ids), message="rescoring")
    changed = acc_changed = 0
    for n, (pk, item_id) in enumerate(ids, start=1):
        with transaction.atomic():
            run = AgentRun.objects.select_for_update().filter(pk=pk).first()
            if run is not None:
                run.item = items[item_id]
                before = (run.score, run.acc)
                run_rescore(run=run, judge=judge)
                changed += json.loads(json.dumps(run.score)) != before[0]
                acc_changed += run.acc != before[1]
        tick(progress=n)
    return {
        "run_set_id": run_set.pk,
        "runs": len(ids),
        "changed": changed,
        "acc_changed": acc_changed,
    }


def visual_verdict_set(
    *, run: AgentRun, user: AnyUser, checkpoint_id: str, passed: bool, seen: int
) -> VisualVerdict:
    """Record a person's answer for a visual checkpoint and rescore the run. ``seen`` is the
    id of the newest answer the person saw (0 for none): if someone answered since, nothing
    is written and Conflict says who answered what."""
    reviewer = _require_review(user, run.run_set.project)
    visual = {
        c.get("id")
        for c in run.score.get("checkpoints") or []
        if c.get("kind") == "visual" and c.get("has_visual_check")
    }
    if checkpoint_id not in visual:
        raise ValidationFailed(f"checkpoint {checkpoint_id!r} has no visual check in this run")
    with transaction.atomic():
        locked = AgentRun.objects.select_for_update().select_related("item").get(pk=run.pk)
        current = (
            VisualVerdict.objects.filter(run=locked, checkpoint_id=checkpoint_id)
            .select_related("reviewer")
            .order_by("-id")
            .first()
        )
        if current is not None and current.pk != seen:
            answer = "yes" if current.passed else "no"
            raise Conflict(
                f"{current.reviewer.get_username()} answered {checkpoint_id} with "
                f"{answer!r} while you were looking; reload to see it, then answer again"
            )
        verdict = VisualVerdict.objects.create(
            run=locked, checkpoint_id=checkpoint_id, passed=passed, reviewer=reviewer
        )
        judge = None
        if (locked.score or {}).get("judge_model"):
            # The judge's recorded answers, so a person's answer keeps the judge's other ones.
            judge = run_judge_for(project=run.run_set.project, offline=True)
        run_rescore(run=locked, judge=judge)
    run.score, run.acc, run.level = locked.score, locked.acc, locked.level
    return verdict


def search_checkpoint_ids(score: Mapping[str, Any]) -> set[str]:
    """The search checkpoints of a stored score that people can answer: those whose check put
    the agent's search queries and results to the S judge (or, without a judge, to the
    keyword proxy)."""
    return {
        str(c.get("id"))
        for c in score.get("checkpoints") or []
        if isinstance(c, dict)
        and c.get("kind") == "search"
        and "queries" in (c.get("detail") or {})
    }


def search_verdict_set(
    *, run: AgentRun, user: AnyUser, checkpoint_id: str, passed: bool, seen: int
) -> SearchVerdict:
    """Record a person's PASS / FAIL for a search checkpoint: did the agent's search retrieve
    the expected finding? The run's score stays as it is (the S judge's verdict counts; the
    answer stands beside it). ``seen`` is the id of the newest answer to the check the person
    saw (0 for none): if someone answered since, nothing is written and Conflict says who
    answered what."""
    reviewer = _require_review(user, run.run_set.project)
    if checkpoint_id not in search_checkpoint_ids(run.score or {}):
        raise ValidationFailed(
            f"checkpoint {checkpoint_id!r} is not a search check of this run that searched "
            "(only google_search checkpoints with the agent's queries can be answered)"
        )
    with transaction.atomic():
        locked = AgentRun.objects.select_for_update().get(pk=run.pk)
        current = (
            SearchVerdict.objects.filter(run=locked, checkpoint_id=checkpoint_id)
            .select_related("reviewer")
            .order_by("-id")
            .first()
        )
        if current is not None and current.pk != seen:
            answer = "PASS" if current.passed else "FAIL"
            raise Conflict(
                f"{current.reviewer.get_username()} answered {checkpoint_id} with "
                f"{answer} while you were looking; reload to see it, then answer again"
            )
        verdict = SearchVerdict(
            run=locked, checkpoint_id=checkpoint_id, passed=passed, reviewer=reviewer
        )
        verdict.full_clean(exclude=["run", "reviewer"])
        verdict.save()
    return verdict


def failure_label_set(*, run: AgentRun, user: AnyUser, mode: str, note: str = "") -> FailureLabel:
    """A reviewer's failure-mode label for a failed run (every label kept, newest counts)."""
    reviewer = _require_review(user, run.run_set.project)
    if run.acc:
        raise ValidationFailed("this run answered correctly; only failed runs are labelled")
    try:
        mme.FailureMode(mode)
    except ValueError:
        raise ValidationFailed("choose one of the seven failure modes") from None
    note = note.strip()
    if len(note) > 2000:
        raise ValidationFailed("the note is longer than 2,000 characters")
    label = FailureLabel(run=run, reviewer=reviewer, mode=mode, note=note)
    label.full_clean(exclude=["run", "reviewer"])
    with transaction.atomic():
        label.save()
    return label


# =========================================================================== selectors


def rescore_job_active(*, run_set: RunSet) -> Job | None:
    """The upload's rescoring job that is queued or running, if any."""
    return (
        Job.objects.filter(
            kind=RESCORE_KIND,
            params__run_set_id=run_set.pk,
            status__in=[JobStatus.QUEUED, JobStatus.RUNNING],
        )
        .order_by("-id")
        .first()
    )


def run_task_checkpoints(*, run: AgentRun) -> dict[str, dict[str, Any]]:
    """The checkpoints of the run's item as its runs are scored against them, by id."""
    task = item_task(run.item, _reference(run.item))
    return {
        str(cp.get("id")): cp
        for cp in (task.get("process_evaluation") or {}).get("checkpoints") or []
        if isinstance(cp, dict)
    }
