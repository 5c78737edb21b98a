"""Making a release (the only writer of ``Release`` rows) and checking a release folder.

A release folder holds ``data/`` (the benchmark's own format, written by the existing export,
with its images), ``provenance.jsonl`` (how each item was verified), ``README.md`` (a dataset
card with the Hugging Face YAML header), ``stats/`` (the paper's statistics tables, ``benchmark.datastats``)
and ``manifest.json`` (counts and every other file with its size and sha256)."""

from __future__ import annotations

import hashlib
import importlib.metadata
import shutil
import tomllib
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from django.conf import settings
from django.db import IntegrityError, models, transaction
from django.db.models import Count

from annotation.drafting.models import DraftingSession
from annotation.judging.models import Judgment, Outcome
from annotation.model_drafts.models import ModelDraft
from annotation.plan_editor.models import PlanVersion
from annotation.tag_review.models import ResponseVersion, TagDecision
from annotation.trajectories.models import TrajectoryVersion
from benchmark import permissions
from benchmark.datasets.services import dataset_export
from benchmark.exceptions import Conflict, ValidationFailed
from benchmark.items.models import ItemVersion
from benchmark.jobs.kinds import Progress
from benchmark.jobs.services import job_start
from benchmark.models import (
    Item,
    ItemStatus,
    ItemStatusChange,
    Job,
    Plan,
    Project,
    Response,
    Trajectory,
)
from benchmark.typing import User
from review.adjudication.models import Decision
from review.releases.models import Release

MANIFEST = "manifest.json"
PROVENANCE = "provenance.jsonl"
DATA_DIR = "data"

#: The Item fields a release's records (and fingerprints, and statistics) hold.
RECORD_FIELDS = (
    "external_id",
    "query",
    "category",
    "intent",
    "documents",
    "image_refs",
    "rubric",
    "constraints",
    "level",
    "domain",
    "match_type",
    "status",
    "expected_answer",
    "accepted_variants",
)


# --------------------------------------------------------------------------- records


def _items_of(project: Project, status: str | None) -> models.QuerySet[Item]:
    items = Item.objects.filter(project=project)
    if status:
        items = items.filter(status=status)
    return items.order_by("position", "id")


#: Items read (records, provenance) per round of queries: memory stays bounded by a chunk,
#: the number of queries by the number of chunks (never one per item).
RELEASE_CHUNK = 1000


def _windows() -> Iterator[tuple[int, int]]:
    """(start, stop) of each chunk of the items in item order; the caller stops when a chunk
    comes back short."""
    start = 0
    while True:
        yield start, start + RELEASE_CHUNK
        start += RELEASE_CHUNK


def _chunk_ids(items: models.QuerySet[Item], start: int, stop: int) -> models.QuerySet[Any]:
    """The ids of one chunk of the items, as a subquery: no list of a thousand parameters
    for Django to prepare and the database to parse, in each of the chunk's queries."""
    return items.values("id")[start:stop]


def item_records(items: models.QuerySet[Item]) -> Iterator[tuple[int, dict[str, Any]]]:
    """(item id, record) in item order: the item's fields with its responses, plans and
    trajectories, in the shape ``benchmark.datastats.tables_for`` reads. Read a chunk of
    items at a time: a fixed number of queries per chunk, whatever the items hold."""
    for start, stop in _windows():
        rows = list(items.values("id", *RECORD_FIELDS)[start:stop])
        if not rows:
            return
        ids = _chunk_ids(items, start, stop)
        responses = defaultdict(list)
        for item_id, key, text, origin in (
            Response.objects.filter(item_id__in=ids)
            .order_by("item_id", "position", "id")
            .values_list("item_id", "key", "text", "origin")
        ):
            # Model answers are kept apart from the ground truth by their origin.
            responses[item_id].append({"key": key, "text": text, "origin": origin})
        plans = defaultdict(list)
        for item_id, key, steps, alt in (
            Plan.objects.filter(item_id__in=ids)
            .order_by("item_id", "position", "id")
            .values_list("item_id", "key", "steps", "is_alternative")
        ):
            plans[item_id].append({"key": key, "steps": steps, "is_alternative": alt})
        trajectories = defaultdict(list)
        for item_id, key, steps, checkpoints in (
            Trajectory.objects.filter(item_id__in=ids)
            .order_by("item_id", "position", "id")
            .values_list("item_id", "key", "steps", "checkpoints")
        ):
            trajectories[item_id].append({"key": key, "steps": steps, "checkpoints": checkpoints})
        for row in rows:
            pk = row.pop("id")
            row["responses"] = responses.pop(pk, [])
            row["plans"] = plans.pop(pk, [])
            row["trajectories"] = trajectories.pop(pk, [])
            yield pk, row
        if len(rows) < RELEASE_CHUNK:
            return


def record_fingerprint(record: dict[str, Any]) -> str:
    """The sha256 of the record's canonical JSON: equal exactly when the content is."""
    return hashlib.sha256(orjson.dumps(record, option=orjson.OPT_SORT_KEYS)).hexdigest()


def item_fingerprint(*, item: Item) -> str:
    records = dict(item_records(Item.objects.filter(pk=item.pk)))
    return record_fingerprint(records[item.pk])


def _release_stats(project: Project, items: list[dict[str, Any]]) -> list[Any]:
    """The statistics tables of the benchmark's paper for these records
    (``benchmark.datastats``), tools grouped by their category in the project's toolset."""
    from benchmark.datastats import tables_for

    tool_kinds = {
        name: category
        for name, category in project.toolset.tools.values_list("name", "category")
        if category
    }
    return list(tables_for(project.data_format, items, tool_kinds=tool_kinds))


# --------------------------------------------------------------------------- provenance


class _Pseudonyms:
    """Stable names for people within one release: "annotator-1", ... in order of first
    appearance, or usernames when ``named``."""

    def __init__(self, prefix: str, *, named: bool, usernames: dict[int, str]) -> None:
        self.prefix, self.named, self.usernames = prefix, named, usernames
        self.seen: dict[int, str] = {}

    def __call__(self, user_id: int | None) -> str | None:
        if user_id is None:
            return None
        if self.named:
            return self.usernames.get(user_id, str(user_id))
        if user_id not in self.seen:
            self.seen[user_id] = f"{self.prefix}-{len(self.seen) + 1}"
        return self.seen[user_id]


def _by_item(rows: Iterable[Any]) -> dict[int, list[dict[str, Any]]]:
    grouped: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        grouped[row.pop("item_id")].append(row)
    return grouped


def _counts(qs: models.QuerySet[Any], item_field: str) -> dict[int, int]:
    return dict(qs.values_list(item_field).annotate(n=Count("pk")).values_list(item_field, "n"))


def _iso(value: Any) -> str | None:
    return value.isoformat() if value is not None else None


def _provenance_rows(items: models.QuerySet[Item], *, named: bool) -> Iterator[dict[str, Any]]:
    from django.contrib.auth import get_user_model

    usernames = dict(get_user_model().objects.values_list("pk", "username"))
    annotator = _Pseudonyms("annotator", named=named, usernames=usernames)
    reviewer = _Pseudonyms("reviewer", named=named, usernames=usernames)
    for start, stop in _windows():
        heads = list(items.values_list("pk", "external_id", "provenance")[start:stop])
        if not heads:
            return
        ids = _chunk_ids(items, start, stop)
        yield from _provenance_chunk(heads, ids, annotator=annotator, reviewer=reviewer)
        if len(heads) < RELEASE_CHUNK:
            return


def _provenance_chunk(
    heads: list[tuple[int, str, str]],
    ids: models.QuerySet[Any],
    *,
    annotator: _Pseudonyms,
    reviewer: _Pseudonyms,
) -> Iterator[dict[str, Any]]:
    """The provenance rows of the items ``heads`` (pk, external id, provenance; in that order)
    whose ids ``ids`` selects: one query per kind of row."""
    history = _by_item(
        ItemStatusChange.objects.filter(item_id__in=ids)
        .order_by("item_id", "created_at", "id")
        .values("item_id", "from_status", "to_status", "changed_by", "rule", "reason", "created_at")
    )
    judgments = _by_item(
        Judgment.objects.filter(item_id__in=ids)
        .order_by("item_id", "task__name", "created_at", "id")
        .values("item_id", "task__name", "unit", "user", "value", "reason", "created_at")
    )
    outcomes = _by_item(
        Outcome.objects.filter(item_id__in=ids)
        .order_by("item_id", "task__name", "unit")
        .values(
            "item_id", "task__name", "task__consensus", "unit", "verdict", "value", "decided_by"
        )
    )
    decisions = _by_item(
        Decision.objects.filter(item_id__in=ids)
        .order_by("item_id", "created_at", "id")
        .values("item_id", "task__name", "reviewer", "verdict", "value", "reason", "created_at")
    )
    drafting = _by_item(
        DraftingSession.objects.filter(item_id__in=ids)
        .order_by("item_id", "created_at", "id")
        .values("item_id", "model", "created_by")
    )
    model_drafts = _by_item(
        ModelDraft.objects.filter(item_id__in=ids)
        .order_by("item_id", "created_at", "id")
        .values("item_id", "kind", "status", "model", "created_by")
    )
    tag_decisions = _counts(
        TagDecision.objects.filter(version__response__item_id__in=ids), "version__response__item"
    )
    response_versions = _counts(
        ResponseVersion.objects.filter(response__item_id__in=ids), "response__item"
    )
    trajectory_versions = _counts(TrajectoryVersion.objects.filter(item_id__in=ids), "item")
    plan_versions = _counts(PlanVersion.objects.filter(item_id__in=ids), "item")
    item_versions = _counts(ItemVersion.objects.filter(item_id__in=ids), "item")
    for pk, external_id, provenance in heads:
        yield {
            "id": external_id,
            "provenance": provenance or "imported",
            "status_history": [
                {
                    "from": h["from_status"],
                    "to": h["to_status"],
                    "by": reviewer(h["changed_by"]),
                    "rule": h["rule"],
                    "reason": h["reason"],
                    "at": _iso(h["created_at"]),
                }
                for h in history.get(pk, [])
            ],
            "judgments": [
                {
                    "task": j["task__name"],
                    "unit": j["unit"],
                    "annotator": annotator(j["user"]),
                    "value": j["value"],
                    "reason": j["reason"],
                    "at": _iso(j["created_at"]),
                }
                for j in judgments.get(pk, [])
            ],
            "outcomes": [
                {
                    "task": o["task__name"],
                    "unit": o["unit"],
                    "verdict": o["verdict"],
                    "rule": o["task__consensus"],
                    "value": o["value"],
                    "decided_by": reviewer(o["decided_by"]),
                }
                for o in outcomes.get(pk, [])
            ],
            "reviewer_decisions": [
                {
                    "task": d["task__name"],
                    "reviewer": reviewer(d["reviewer"]),
                    "verdict": d["verdict"],
                    "value": d["value"],
                    "reason": d["reason"],
                    "at": _iso(d["created_at"]),
                }
                for d in decisions.get(pk, [])
            ],
            "drafting": [
                {"kind": "backward drafting", "model": d["model"], "by": annotator(d["created_by"])}
                for d in drafting.get(pk, [])
            ]
            + [
                {
                    "kind": f"model draft ({d['kind']})",
                    "model": d["model"],
                    "status": d["status"],
                    "by": annotator(d["created_by"]),
                }
                for d in model_drafts.get(pk, [])
            ],
            "counts": {
                "tag_decisions": tag_decisions.get(pk, 0),
                "response_versions": response_versions.get(pk, 0),
                "trajectory_versions": trajectory_versions.get(pk, 0),
                "plan_versions": plan_versions.get(pk, 0),
                "item_versions": item_versions.get(pk, 0),
            },
        }


# --------------------------------------------------------------------------- files


def benchwright_version() -> str:
    try:
        return importlib.metadata.version("benchwright")
    except importlib.metadata.PackageNotFoundError:
        pyproject = Path(settings.BASE_DIR) / "pyproject.toml"
        try:
            return str(tomllib.loads(pyproject.read_text())["project"]["version"])
        except (OSError, KeyError, tomllib.TOMLDecodeError):
            return "unknown"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _listed_files(root: Path) -> list[Path]:
    return sorted(
        p for p in root.rglob("*") if p.is_file() and p.relative_to(root) != Path(MANIFEST)
    )


def _size_category(n: int) -> str:
    for limit, label in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K")):
        if n < limit:
            return label
    return "100K<n<1M"


_TASK_CATEGORIES = {
    "atp": ["visual-question-answering", "text-generation"],
    "mms": ["text-generation"],
    "agentic_mme": ["visual-question-answering"],
    "llmi": ["text-generation"],
}


def _readme(
    project: Project, name: str, count: int, counts: dict[str, Any], tables: list[Any]
) -> str:
    header = [
        "---",
        f"pretty_name: {orjson.dumps(f'{project.name} {name}').decode()}",
        "license: other  # to fill in by the project's admin",
        "task_categories:",
        *(f"- {c}" for c in _TASK_CATEGORIES.get(project.data_format, ["text-generation"])),
        "size_categories:",
        f"- {_size_category(count)}",
        "---",
        "",
    ]
    body = [
        f"# {project.name}: {name}",
        "",
        project.description or "A benchmark built with Benchwright.",
        "",
        "## Contents",
        "",
        f"- `{DATA_DIR}/`: {count} items in the benchmark's own format ({project.data_format}),"
        " with the images they refer to.",
        f"- `{PROVENANCE}`: per item, how it was verified (status history, judgments with"
        " pseudonymised annotators, outcomes and their rule, reviewer decisions, version counts).",
        f"- `{MANIFEST}`: counts and every file with its size and sha256"
        " (`python manage.py release_verify DIR` checks them).",
        "",
        "## Items by status",
        "",
        *(f"- {status}: {n}" for status, n in counts["status"].items()),
        "",
        "## Licence",
        "",
        "To be filled in by the project's admin.",
        "",
    ]
    for table in tables:
        body += [f"## {table.name}", "", table.to_markdown(), ""]
    return "\n".join(header + body)


def _manifest_counts(records: list[dict[str, Any]]) -> dict[str, Any]:
    def tally(key: str) -> dict[str, int]:
        counter = Counter("" if r[key] is None else str(r[key]) for r in records)
        return dict(sorted(counter.items()))

    return {
        "items": len(records),
        "status": tally("status"),
        "category": tally("category"),
        "level": tally("level"),
    }


class _Written:
    """The size and sha256 of the files a release writes itself, taken as they are written
    (the manifest need not read them back)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.sums: dict[str, tuple[int, str]] = {}

    def write_bytes(self, path: Path, data: bytes) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        self.sums[str(path.relative_to(self.root))] = (len(data), hashlib.sha256(data).hexdigest())

    def write_lines(self, path: Path, lines: Iterable[bytes]) -> None:
        """Write ``lines`` as they come, a buffer's worth at a time."""
        digest, size = hashlib.sha256(), 0
        buffer: list[bytes] = []
        held = 0
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("wb") as fh:
            for line in lines:
                buffer.append(line)
                held += len(line)
                if held >= 1 << 20:
                    block = b"".join(buffer)
                    fh.write(block)
                    digest.update(block)
                    size += len(block)
                    buffer, held = [], 0
            block = b"".join(buffer)
            fh.write(block)
            digest.update(block)
            size += len(block)
        self.sums[str(path.relative_to(self.root))] = (size, digest.hexdigest())

    def entry(self, path: Path) -> dict[str, Any]:
        rel = str(path.relative_to(self.root))
        size, sha = self.sums.get(rel) or (path.stat().st_size, _sha256(path))
        return {"path": rel, "size": size, "sha256": sha}


# --------------------------------------------------------------------------- create


def _check_name(project: Project, name: str) -> str:
    name = (name or "").strip()
    if not name:
        raise ValidationFailed("name: give the release a name")
    if len(name) > 200:
        raise ValidationFailed("name: at most 200 characters")
    if Release.objects.filter(project=project, name=name).exists():
        raise Conflict(f"name: the project already has a release named {name!r}")
    return name


def release_create(
    *,
    project: Project,
    user: Any,
    name: str,
    status: str | None = ItemStatus.VERIFIED,
    named: bool = False,
    out_dir: Path | str | None = None,
) -> Release:
    """Write a frozen release of the project's items with ``status`` (None: all items) and
    record it. Raises ValidationFailed (bad name or status, folder not empty), Conflict (the
    name is taken), Forbidden (the user's role may not release)."""
    if user is not None:
        permissions.require(user=user, project=project, action="review")
    if status and status not in ItemStatus.values:
        raise ValidationFailed(
            f"status: unknown {status!r}; choose one of {', '.join(ItemStatus.values)}"
        )
    name = _check_name(project, name)
    number = (
        Release.objects.filter(project=project).aggregate(m=models.Max("number"))["m"] or 0
    ) + 1
    root = (
        Path(out_dir)
        if out_dir
        else Path(settings.MEDIA_ROOT) / "releases" / str(project.pk) / str(number)
    )
    if root.exists() and any(root.iterdir()):
        if out_dir or Release.objects.filter(path=str(root)).exists():
            raise ValidationFailed(f"folder: {root} is not empty")
        shutil.rmtree(root)  # left by a release that failed half-way: no row claims it
    root.mkdir(parents=True, exist_ok=True)
    try:
        return _release_write(
            project=project,
            user=user,
            name=name,
            number=number,
            status=status or None,
            named=named,
            root=root,
        )
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)  # nothing half-written stays behind
        raise


def _release_write(
    *,
    project: Project,
    user: Any,
    name: str,
    number: int,
    status: str | None,
    named: bool,
    root: Path,
) -> Release:
    items = _items_of(project, status)
    records: list[dict[str, Any]] = []
    fingerprints: list[list[Any]] = []
    for pk, record in item_records(items):
        records.append(record)
        fingerprints.append([pk, record_fingerprint(record)])
    # The statistics need every record at once; then the records go, before the export and
    # the provenance (which stream a chunk at a time) run.
    counts = _manifest_counts(records)
    tables = _release_stats(project, records)
    del records
    written = _Written(root)
    for table in tables:
        written.write_bytes(root / "stats" / f"{table.name}.csv", table.to_csv().encode())
        written.write_bytes(root / "stats" / f"{table.name}.md", table.to_markdown().encode())
    count = len(fingerprints)
    written.write_bytes(root / "README.md", _readme(project, name, count, counts, tables).encode())
    dataset_export(project=project, out=root / DATA_DIR, item_ids=[pk for pk, _ in fingerprints])
    (root / DATA_DIR).mkdir(exist_ok=True)
    written.write_lines(
        root / PROVENANCE,
        (orjson.dumps(row) + b"\n" for row in _provenance_rows(items, named=named)),
    )
    filter_used = {"status": status}
    release = Release(
        project=project,
        name=name,
        number=number,
        created_by=user if getattr(user, "pk", None) else None,
        filter=filter_used,
        item_count=count,
        path=str(root),
        fingerprints=fingerprints,
    )
    with transaction.atomic():
        try:
            with transaction.atomic():
                release.save()  # created_at is set here; the manifest carries it
        except IntegrityError as exc:  # a concurrent release took the name or the number
            raise Conflict("name: another release was made at the same time; try again") from exc
        release.manifest = {
            "release": name,
            "version": release.label,
            "project": project.name,
            "data_format": project.data_format,
            "created_by": getattr(user, "username", None),
            "created_at": release.created_at.isoformat(),
            "benchwright_version": benchwright_version(),
            "filter": filter_used,
            "provenance_named": named,
            "counts": counts,
            "files": [written.entry(p) for p in _listed_files(root)],
        }
        (root / MANIFEST).write_bytes(orjson.dumps(release.manifest, option=orjson.OPT_INDENT_2))
        release.save(update_fields=["manifest"])
    return release


# --------------------------------------------------------------------------- as a job

RELEASE_KIND = "release"
#: Releases of at least this many items are written by a job (the page polls it); smaller
#: ones in the request.
RELEASE_JOB_MIN_ITEMS = 500


def release_item_count(*, project: Project, status: str | None) -> int:
    return _items_of(project, status or None).count()


def release_start(
    *, project: Project, user: User, name: str, status: str | None, named: bool = False
) -> Job:
    """Check the request now (so the form names what is wrong) and write the release as a
    "release" job through the job pipeline."""
    permissions.require(user=user, project=project, action="review")
    if status and status not in ItemStatus.values:
        raise ValidationFailed(f"status: unknown {status!r}")
    name = _check_name(project, name)
    return job_start(
        kind=RELEASE_KIND,
        user=user,
        project=project,
        params={"project_id": project.pk, "name": name, "status": status, "named": named},
        total=release_item_count(project=project, status=status),
    )


def release_create_job(*, job: Job, progress: Progress) -> dict[str, Any]:
    """The release kind's runner. Running it again after it succeeded finds the release by
    name and writes nothing (idempotent)."""
    project = Project.objects.get(pk=job.params["project_id"])
    done = Release.objects.filter(project=project, name=job.params["name"]).first()
    if done is None:
        progress(progress=0, message="writing the release")
        done = release_create(
            project=project,
            user=job.created_by,
            name=job.params["name"],
            status=job.params.get("status"),
            named=bool(job.params.get("named")),
        )
    progress(progress=done.item_count, total=done.item_count, message="written")
    return {"release_id": done.pk, "project_id": project.pk, "number": done.number}


# --------------------------------------------------------------------------- verify


@dataclass
class VerifyResult:
    problems: list[str] = field(default_factory=list)
    files: int = 0

    @property
    def ok(self) -> bool:
        return not self.problems


def release_verify(*, path: Path | str) -> VerifyResult:
    """Recompute every checksum listed in the folder's manifest.json and the counts. Problems
    are listed in file order, the first one first."""
    root = Path(path)
    result = VerifyResult()
    try:
        manifest = orjson.loads((root / MANIFEST).read_bytes())
    except (OSError, orjson.JSONDecodeError) as exc:
        result.problems.append(f"{MANIFEST}: missing or unreadable ({exc})")
        return result
    listed = {f["path"]: f for f in manifest.get("files", [])}
    present = {str(p.relative_to(root)) for p in _listed_files(root)}
    for rel in sorted(listed.keys() | present):
        entry = listed.get(rel)
        if entry is None:
            result.problems.append(f"{rel}: extra file, not in the manifest")
            continue
        file = root / rel
        if rel not in present:
            result.problems.append(f"{rel}: missing")
            continue
        result.files += 1
        if file.stat().st_size != entry["size"]:
            result.problems.append(
                f"{rel}: size {file.stat().st_size}, manifest says {entry['size']}"
            )
        elif _sha256(file) != entry["sha256"]:
            result.problems.append(f"{rel}: sha256 differs from the manifest")
    counts = manifest.get("counts", {})
    if PROVENANCE in present:
        with (root / PROVENANCE).open("rb") as fh:
            lines = sum(1 for line in fh if line.strip())
        if lines != counts.get("items"):
            result.problems.append(
                f"{PROVENANCE}: {lines} items, manifest says {counts.get('items')}"
            )
    if sum(counts.get("status", {}).values()) != counts.get("items"):
        result.problems.append(f"{MANIFEST}: the counts per status do not add up to the item count")
    return result
