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
import zipfile
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.db.models import Count, Prefetch, QuerySet
from django.shortcuts import get_object_or_404
from django.utils.text import get_valid_filename

from benchmark import permissions
from benchmark import services as benchmark_services
from benchmark.exceptions import Conflict, PermissionDenied, ValidationFailed
from benchmark.metrics import agentic_mme as mme
from benchmark.models import Image, Item, Job, JobStatus, Project, ProjectKind, Trajectory
from benchmark.typing import AnyUser, User
from review.models import AgentRun, FailureLabel, RunSet, VisualVerdict

EVENTS_FILE = "tool_use_list.json"
ANSWER_FILE = "model_answer.txt"
META_FILE = "run_meta.json"
TOOL_IMAGES_DIR = "tool_images"
MAX_DEPTH = 4
SCORE_KIND = "score_runs"
RESCORE_KIND = "rescore_runs"
MAX_RUN_IMAGES = 200

# =========================================================================== run folders (pure)


@dataclass
class RunFolder:
    """One run folder, read and checked."""

    path: Path
    name: str
    """The folder relative to the upload (or RUNS_DIR), in POSIX form."""
    task_id: str
    model: str
    events: list[dict[str, Any]]
    events_raw: str
    answer: str
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def effective_tool_calls(self) -> int | None:
        value = self.meta.get("effective_tool_calls")
        return None if value is None else int(value)

    def agent_run(self, *, with_files: bool = True) -> mme.AgentRun:
        return mme.AgentRun(
            tuple(self.events),
            self.answer,
            self.path if with_files else None,
            self.effective_tool_calls,
            self.name,
        )


def _natural(path: Path) -> tuple[Any, ...]:
    return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", path.as_posix()))


def is_run_folder(path: Path) -> bool:
    return any((path / name).is_file() for name in (EVENTS_FILE, ANSWER_FILE, META_FILE))


def find_run_folders(root: Path) -> list[Path]:
    """Run folders under ``root`` (``root`` itself when it is one), up to MAX_DEPTH levels
    down, in natural order. A run folder's own subfolders (``tool_images/``) are not searched."""
    if is_run_folder(root):
        return [root]
    found: list[Path] = []

    def walk(folder: Path, depth: int) -> None:
        try:
            children = sorted((p for p in folder.iterdir() if p.is_dir()), key=_natural)
        except OSError as exc:
            raise ValidationFailed(f"cannot list folder {folder} ({exc.strerror or exc})") from None
        for child in children:
            if child.name.startswith(("__MACOSX", ".")):
                continue
            if is_run_folder(child):
                found.append(child)
            elif depth < MAX_DEPTH:
                walk(child, depth + 1)

    walk(root, 1)
    return found


def _where(name: str, file: str) -> str:
    return f"run folder {name!r}, file {file}"


def _read_text(path: Path, name: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ValidationFailed(f"{_where(name, path.name)}: not UTF-8 text") from None
    except OSError as exc:
        raise ValidationFailed(
            f"{_where(name, path.name)}: cannot be read ({exc.strerror or exc})"
        ) from None


def _read_json(path: Path, name: str) -> tuple[str, Any]:
    text = _read_text(path, name)
    try:
        return text, json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValidationFailed(
            f"{_where(name, path.name)}: not valid JSON ({exc.msg} at line {exc.lineno} "
            f"column {exc.colno})"
        ) from None


def read_run_folder(path: Path, root: Path) -> RunFolder:
    """Read and check one run folder; ValidationFailed names the folder and the file."""
    rel = path.relative_to(root).as_posix() if path != root else path.name
    name = rel if rel not in ("", ".") else path.name
    for required in (EVENTS_FILE, ANSWER_FILE):
        if not (path / required).is_file():
            raise ValidationFailed(f"run folder {name!r}: {required} is missing")
    events_raw, events = _read_json(path / EVENTS_FILE, name)
    if not isinstance(events, list):
        raise ValidationFailed(
            f"{_where(name, EVENTS_FILE)}: expected a JSON list of tool events, "
            f"found {type(events).__name__}"
        )
    for i, event in enumerate(events):
        if not isinstance(event, dict):
            raise ValidationFailed(f"{_where(name, EVENTS_FILE)}: event {i} is not a JSON object")
        for key in ("arguments", "output"):
            if event.get(key) is not None and not isinstance(event[key], dict | str):
                raise ValidationFailed(
                    f"{_where(name, EVENTS_FILE)}: event {i}: {key!r} must be an object"
                )
    answer = _read_text(path / ANSWER_FILE, name).strip()
    meta: dict[str, Any] = {}
    if (path / META_FILE).is_file():
        _, value = _read_json(path / META_FILE, name)
        if not isinstance(value, dict):
            raise ValidationFailed(f"{_where(name, META_FILE)}: expected a JSON object")
        meta = value
        effective = meta.get("effective_tool_calls")
        if effective is not None and (
            isinstance(effective, bool) or not isinstance(effective, int) or effective < 0
        ):
            raise ValidationFailed(
                f"{_where(name, META_FILE)}: effective_tool_calls must be a whole number >= 0"
            )
    task_id = ""
    if isinstance(meta.get("task_id"), str | int) and str(meta["task_id"]).strip():
        task_id = str(meta["task_id"]).strip()
    elif isinstance(meta.get("task_file"), str) and meta["task_file"].strip():
        task_id = PurePosixPath(meta["task_file"].replace("\\", "/")).stem
    else:
        task_id = path.name
    model = str(meta.get("model") or "").strip()
    return RunFolder(path, name, task_id, model, events, events_raw, answer, meta)


def read_run_folders(root: Path, progress: Callable[[int], None] | None = None) -> list[RunFolder]:
    if not root.is_dir():
        raise ValidationFailed(f"{root} is not a folder")
    folders = find_run_folders(root)
    if not folders:
        raise ValidationFailed(
            f"no run folders found in {root.name or root} (a run folder holds "
            f"{EVENTS_FILE} and {ANSWER_FILE})"
        )
    runs = []
    for n, folder in enumerate(folders, start=1):
        runs.append(read_run_folder(folder, root))
        if progress is not None:
            progress(n)
    return runs


def read_tasks(tasks_dir: Path) -> dict[str, tuple[Path, dict[str, Any]]]:
    """Task configs by ``task_id`` (and by file stem, when it differs) from a folder of
    ``*.json`` task files, or from a dataset folder holding ``json/``."""
    if not tasks_dir.is_dir():
        raise ValidationFailed(f"{tasks_dir} is not a folder")
    files = sorted(p for p in tasks_dir.iterdir() if p.is_file() and p.suffix == ".json")
    if not files and (tasks_dir / "json").is_dir():
        return read_tasks(tasks_dir / "json")
    if not files:
        raise ValidationFailed(f"no task JSON files in {tasks_dir}")
    out: dict[str, tuple[Path, dict[str, Any]]] = {}
    stems: dict[str, tuple[Path, dict[str, Any]]] = {}
    for file in files:
        try:
            task = json.loads(file.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise ValidationFailed(
                f"{file}: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
            ) from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ValidationFailed(f"{file}: cannot be read ({exc})") from None
        if not isinstance(task, dict):
            raise ValidationFailed(f"{file}: expected a JSON object (one task)")
        task_id = task.get("task_id")
        if not isinstance(task_id, str | int) or not str(task_id).strip():
            raise ValidationFailed(f"{file}: task_id is missing")
        task_id = str(task_id).strip()
        if task_id in out:
            raise ValidationFailed(f"{file}: task_id {task_id!r} is also in {out[task_id][0]}")
        for key, where in (("meta", dict), ("process_evaluation", dict), ("golden_answer", dict)):
            if task.get(key) is not None and not isinstance(task[key], where):
                raise ValidationFailed(f"{file}: {key} must be a JSON object")
        out[task_id] = (file, task)
        stems[file.stem] = (file, task)
    for stem, entry in stems.items():
        out.setdefault(stem, entry)
    return out


def task_variants(task: Mapping[str, Any]) -> list[str]:
    """Accepted answer variants as Benchwright's task files hold them."""
    variants = (task.get("golden_answer") or {}).get("accepted_variants") or []
    return [str(v) for v in variants] if isinstance(variants, list) else [str(variants)]


# =========================================================================== scoring (pure)


def apply_visual_verdicts(score: mme.RunScore, verdicts: Mapping[str, bool]) -> mme.RunScore:
    """Put people's answers in place of the proxy for the visual checks they answered, and
    recompute V, V_true, the undetermined count, base and PQS as ``score_run`` does."""
    if not verdicts:
        return score
    for res in score.checkpoints:
        if res.kind != "visual" or not res.has_visual_check or res.id not in verdicts:
            continue
        res.detail["proxy"] = res.detail.get("visual")
        res.detail["visual"] = {"method": "person", "passed": bool(verdicts[res.id])}
        res.visual_passed = bool(verdicts[res.id])
        res.passed = (not res.has_tool_check or bool(res.tool_passed)) and res.visual_passed
    visual = [r for r in score.checkpoints if r.kind == "visual"]
    visual_checked = [r for r in visual if r.has_visual_check]
    score.V = sum(r.passed for r in visual) / len(visual) if visual else None
    score.V_true = (
        sum(r.visual_passed is True for r in visual_checked) / len(visual_checked)
        if visual_checked
        else None
    )
    score.undetermined = sum(1 for r in visual_checked if r.visual_passed is None) + sum(
        1 for r in score.checkpoints if r.kind == "search" and r.detail.get("undetermined")
    )
    valid = [x for x in (score.S, score.V) if x is not None]
    score.base = sum(valid) / len(valid) if valid else 0.0
    score.pqs = score.base * (1.0 - score.penalty)
    return score


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


def score_to_dict(score: mme.RunScore) -> dict[str, Any]:
    out = score.to_dict()
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
    *, item: Item, run: mme.AgentRun, verdicts: Mapping[str, bool] | None = None
) -> mme.RunScore:
    task = item_task(item, _reference(item))
    score = mme.score_run(task, run, accepted=list(item.accepted_variants or []))
    return apply_visual_verdicts(score, verdicts or {})


# =========================================================================== services: upload


def _require_review(user: AnyUser, project: Project) -> User:
    permissions.require(user=user, project=project, action="review")
    if not isinstance(user, User):
        raise PermissionDenied("log in to score runs")
    return user


UPLOAD_AREA = "runs-upload"


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
    with their relative ``paths``) under MEDIA_ROOT/runs-upload/<job>/ and enqueue the scoring
    job after commit. Nothing is stored for the runs until the job has checked all of them."""
    from review.run_tasks import runs_score_task  # the task module imports this one

    reviewer = _require_review(user, project)
    if project.kind != ProjectKind.TRAJECTORY:
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
    with transaction.atomic():
        job = benchmark_services.job_create(
            kind=SCORE_KIND,
            user=reviewer,
            project=project,
            params={"project_id": project.pk, "name": label, "filename": label},
        )
        root = benchmark_services.upload_folder(UPLOAD_AREA, job.pk)
        sources: list[list[str]] = []
        try:
            root.mkdir(parents=True, exist_ok=False)
            if zips:
                stems: set[str] = set()
                for upload in zips:
                    stem = get_valid_filename(Path(upload.name or "upload").stem) or "upload"
                    while stem in stems:
                        stem = f"{stem}-{len(stems) + 1}"
                    stems.add(stem)
                    target = root / stem
                    target.mkdir()
                    upload.seek(0)
                    if not zipfile.is_zipfile(upload):
                        raise ValidationFailed(f"{upload.name} is not a readable zip archive")
                    upload.seek(0)
                    try:
                        inner = benchmark_services.zip_extract(upload, target, max_bytes)
                    except ValidationFailed as exc:
                        raise ValidationFailed(f"{upload.name}: {exc.message}") from None
                    sources.append([stem if len(zips) > 1 else "", str(inner)])
            else:
                for upload, rel in zip(files, paths, strict=True):
                    target = root.joinpath(*_safe_relative(rel).parts)
                    if target.exists():
                        raise ValidationFailed(f"the upload holds {rel!r} twice")
                    target.parent.mkdir(parents=True, exist_ok=True)
                    benchmark_services.upload_write(upload, target)
                sources.append(["", str(root)])
        except BaseException:
            shutil.rmtree(root, ignore_errors=True)
            raise
        job.params = {**job.params, "path": str(root), "sources": sources}
        job.message = "queued"
        job.save(update_fields=["params", "message"])
        transaction.on_commit(lambda: runs_score_task.delay(job.pk))
    return job


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
    items = _items_with_reference(project, (f.task_id for f in folders))
    unknown = [f for f in folders if f.task_id not in items]
    if unknown:
        shown = "; ".join(f"{f.name!r} (task {f.task_id!r})" for f in unknown[:5])
        more = f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""
        raise ValidationFailed(
            f"{len(unknown)} run folder{'s' if len(unknown) != 1 else ''} name a task that is "
            f"not an item of {project.name!r}: {shown}{more}"
        )
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
        score = run_score(item=item, run=run)
        # Only files inside the run folder: a logged absolute path must not reach other files.
        inside = folder.path.resolve()
        images = [p for p in run.produced_images() if p.resolve().is_relative_to(inside)]
        if len(images) > MAX_RUN_IMAGES:
            raise ValidationFailed(
                f"run folder {folder.name!r}: {len(images)} images; the limit is {MAX_RUN_IMAGES}"
            )
        prepared.append(_Prepared(folder, item, model, score, images))
        tick(progress=n)
    tick(progress=0, message="storing images")
    with transaction.atomic():
        run_set = RunSet.objects.create(
            project=project,
            name=label[:200],
            filename=str(job.params.get("filename") or "")[:255],
            job=job,
            created_by=job.created_by,
        )
        rows = []
        for position, p in enumerate(prepared):
            stored = []
            for i, path in enumerate(p.images):
                try:
                    data = path.read_bytes()
                except OSError as exc:
                    raise ValidationFailed(
                        f"{_where(p.folder.name, path.name)}: cannot be read ({exc})"
                    ) from None
                try:
                    image = benchmark_services.image_store(
                        data=data, name=path.name, project=project
                    )
                except ValidationFailed as exc:
                    raise ValidationFailed(
                        f"{_where(p.folder.name, path.name)}: {exc.message}"
                    ) from None
                stored.append({"sha256": image.sha256, "name": path.name, "position": i})
            rows.append(
                AgentRun(
                    run_set=run_set,
                    item=p.item,
                    folder=p.folder.name[:500],
                    model_name=p.model,
                    events=p.folder.events,
                    events_raw=p.folder.events_raw,
                    final_answer=p.folder.answer,
                    meta=p.folder.meta,
                    images=stored,
                    score=score_to_dict(p.score),
                    level=p.score.level,
                    acc=p.score.acc,
                    position=position,
                )
            )
        AgentRun.objects.bulk_create(rows, batch_size=500)
    return run_set


def run_upload_cleanup(*, job: Job) -> None:
    benchmark_services.upload_folder_remove(folder=job.params.get("path"), area=UPLOAD_AREA)


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


def run_rescore(*, run: AgentRun) -> AgentRun:
    """Score a stored run again against its item's current task (answer, variants, reference
    trajectory) with the newest person's verdict per visual checkpoint."""
    verdicts = {cid: v.passed for cid, v in _latest_verdicts(run).items()}
    with _stored_run_dir(run) as run_dir:
        agent = mme.AgentRun(
            tuple(run.events),
            run.final_answer,
            run_dir,
            run.meta.get("effective_tool_calls") if isinstance(run.meta, dict) else None,
            run.folder,
        )
        score = run_score(item=run.item, run=agent, verdicts=verdicts)
    run.score = score_to_dict(score)
    run.level = score.level
    run.acc = score.acc
    run.save(update_fields=["score", "level", "acc"])
    return run


def run_set_rescore_start(*, run_set: RunSet, user: AnyUser) -> Job:
    """Enqueue a job that scores every run of the upload again against its item's current
    reference (after an item was edited). People's visual verdicts and failure labels stay and
    count as before. Conflict while a rescore of the same upload is queued or running."""
    from review.run_tasks import run_set_rescore_task  # the task module imports this one

    reviewer = _require_review(user, run_set.project)
    benchmark_services.jobs_sweep()  # a rescore whose worker died does not block a new one
    with transaction.atomic():
        RunSet.objects.select_for_update().filter(pk=run_set.pk).first()
        busy = rescore_job_active(run_set=run_set)
        if busy is not None:
            raise Conflict(f"this upload is being rescored already (job #{busy.pk})")
        job = benchmark_services.job_create(
            kind=RESCORE_KIND,
            user=reviewer,
            project=run_set.project,
            total=run_set.runs.count(),
            params={"run_set_id": run_set.pk, "name": run_set.name},
        )
        job.message = "queued"
        job.save(update_fields=["message"])
        transaction.on_commit(lambda: run_set_rescore_task.delay(job.pk))
    return job


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
    tick(progress=0, total=len(ids), message="rescoring")
    changed = acc_changed = 0
    for n, (pk, item_id) in enumerate(ids, start=1):
        with transaction.atomic():
            run = AgentRun.objects.select_for_update().filter(pk=pk).first()
            if run is not None:
                run.item = items[item_id]
                before = (run.score, run.acc)
                run_rescore(run=run)
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
        run_rescore(run=locked)
    run.score, run.acc, run.level = locked.score, locked.acc, locked.level
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
    if not user.is_authenticated:
        return Job.objects.none()
    return (
        Job.objects.filter(project=project, kind=SCORE_KIND, run_set__isnull=True)
        .filter(project__memberships__user=user.pk)
        .order_by("-created_at", "-id")
    )


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
    return {
        "models": models,
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
    agent = mme.AgentRun(
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
                "proxy": (res.detail.get("proxy") or res.detail.get("visual") or {}) if res else {},
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
