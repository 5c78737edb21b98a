"""Making a release (the only writer of ``Release`` rows) and checking a release folder.

A release folder holds ``data/`` (the benchmark's own format, written by the existing export,
with its images), ``provenance.jsonl`` (how each item was verified), ``README.md`` (a dataset
card with the Hugging Face YAML header), ``stats/`` (the paper's statistics tables, ``benchmark.datastats``)
and ``manifest.json`` (counts and every other file with its size and sha256). With ``parquet``
it also holds ``parquet/train-<i>-of-<n>.parquet`` (``benchmark.formats.hf_parquet``): the same
items as typed Parquet with their images inside, which ``datasets.load_dataset("parquet", ...)``
loads and the card's ``configs`` points the Hugging Face Hub at."""

from __future__ import annotations

import hashlib
import importlib.metadata
import shutil
import tempfile
import tomllib
import zlib
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from django.conf import settings
from django.core.files.storage import default_storage
from django.db import IntegrityError, models, transaction
from django.db.models import Count

from annotation.backward_drafting.models import DraftingSession
from annotation.judgment_tasks.models import Judgment, Outcome
from annotation.model_drafts.models import ModelDraft
from annotation.plan_editor.models import PlanVersion
from annotation.tag_review.models import ResponseVersion, TagDecision
from annotation.trajectories.models import TrajectoryVersion
from benchmark import permissions
from benchmark.datasets.interop import interop_hook
from benchmark.datasets.services import RELEASE_DATA_DIR, RELEASE_MANIFEST, dataset_export
from benchmark.evaluation.record_files import CALLS_DIR, CALLS_FILE, RECORDS_DIR, RECORDS_FILE
from benchmark.exceptions import Conflict, ValidationFailed
from benchmark.formats import FormatError, ItemRecord, get_format
from benchmark.jobs.kinds import Progress
from benchmark.jobs.services import job_start
from benchmark.models import (
    Item,
    ItemStatus,
    ItemStatusChange,
    ItemVersion,
    Job,
    Plan,
    Project,
    Response,
    Trajectory,
)
from benchmark.storage import (
    local_tree,
    storage_delete_prefix,
    storage_files,
    storage_is_local,
    storage_put_tree,
)
from benchmark.typing import User
from review import job_names
from review.adjudication.models import Decision
from review.releases.models import Release

MANIFEST = RELEASE_MANIFEST
#: Releases live in the default storage under releases/<project id>/<number>/.
RELEASES_AREA = "releases"
PROVENANCE = "provenance.jsonl"
DATA_DIR = RELEASE_DATA_DIR
PARQUET_DIR = "parquet"

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
#: The top-level fields of a record: the Item fields, then what ``item_records`` adds.
RECORD_KEYS = (*RECORD_FIELDS, "responses", "plans", "trajectories")
#: Hex digits of each field's fingerprint (the CRC-32 of its canonical JSON: half the time
#: of a sha256 over many small values) in ``Release.field_fingerprints``: enough to tell
#: which fields of an item that changed differ (whether it changed at all is decided by the
#: full ``record_fingerprint``), small enough for 10,000s of items in one JSON value.
FIELD_HASH_LEN = 8


# --------------------------------------------------------------------------- records


#: The one named subset a release can be limited to: m&m's tool-balanced subset (§3.2–3.3).
BALANCED = "balanced"
#: The default largest share of any tool in it (the balance page's default, 15%).
DEFAULT_BALANCE_CAP = 0.15


def _items_of(
    project: Project, status: str | None, only: list[str] | None = None
) -> models.QuerySet[Item]:
    items = Item.objects.filter(project=project)
    if status:
        items = items.filter(status=status)
    if only is not None:
        items = items.filter(external_id__in=only)
    return items.order_by("position", "id")


def _check_subset(project: Project, status: str | None, subset: str | None, cap: float) -> None:
    if not subset:
        return
    if subset != BALANCED:
        raise ValidationFailed(f"subset: unknown {subset!r}; the one subset is {BALANCED!r}")
    if not project.benchmark.offers.balanced_subset:
        raise ValidationFailed(
            f"subset: the tool-balanced subset is m&m's; project {project.name!r} is "
            f"{project.benchmark.label}, so release it without a subset"
        )
    if status != ItemStatus.VERIFIED:
        raise ValidationFailed(
            "subset: the tool-balanced subset is chosen from the verified items; "
            "choose status verified"
        )
    if not 0 < cap <= 1:
        raise ValidationFailed("cap: the largest share of any tool is between 0 and 100%")


def _subset_ids(project: Project, subset: str | None, cap: float, seed: int) -> list[str] | None:
    """The external ids of the subset's items (None: no subset), as the balance page
    chooses them (``review.plan_scoring.services.project_balanced_subset``)."""
    if not subset:
        return None
    from review.plan_scoring.services import project_balanced_subset

    chosen, _ = project_balanced_subset(project=project, cap=cap, seed=seed)
    return [str(i) for i in chosen.ids]


def _filter_of(status: str | None, subset: str | None, cap: float, seed: int) -> dict[str, Any]:
    """What ``Release.filter`` and the manifest record."""
    if not subset:
        return {"status": status}
    return {"status": status, "subset": subset, "cap": cap, "seed": seed}


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
        # Model answers are kept apart from the ground truth by their origin.
        responses = _attached(Response, ids, "key", "text", "origin")
        plans = _attached(Plan, ids, "key", "steps", "is_alternative")
        trajectories = _attached(Trajectory, ids, "key", "steps", "checkpoints")
        for row in rows:
            pk = row.pop("id")
            row["responses"] = responses.pop(pk, [])
            row["plans"] = plans.pop(pk, [])
            row["trajectories"] = trajectories.pop(pk, [])
            yield pk, row
        if len(rows) < RELEASE_CHUNK:
            return


def _attached(model: Any, ids: Any, *fields: str) -> dict[int, list[dict[str, Any]]]:
    """{item id: [{field: value}, ...]} of the items' responses, plans or trajectories, in
    their order."""
    return _by_item(
        model.objects.filter(item_id__in=ids)
        .order_by("item_id", "position", "id")
        .values("item_id", *fields)
    )


def record_fingerprint(record: dict[str, Any]) -> str:
    """The sha256 of the record's canonical JSON: equal exactly when the content is."""
    return hashlib.sha256(orjson.dumps(record, option=orjson.OPT_SORT_KEYS)).hexdigest()


def item_fingerprint(*, item: Item) -> str:
    return record_fingerprint(item_record(item=item))


def item_record(*, item: Item) -> dict[str, Any]:
    """The item's record as a release holds it (its current state)."""
    return dict(item_records(Item.objects.filter(pk=item.pk)))[item.pk]


def record_field_fingerprints(record: dict[str, Any]) -> str:
    """The record's top-level fields' short fingerprints, concatenated in ``RECORD_KEYS``
    order (a missing field hashes as null)."""
    dumps, crc32, sort = orjson.dumps, zlib.crc32, orjson.OPT_SORT_KEYS
    return "".join(f"{crc32(dumps(record.get(key), option=sort)):08x}" for key in RECORD_KEYS)


def record_field_prints(record: dict[str, Any]) -> dict[str, str]:
    """{field: short fingerprint} of the record, as ``field_prints`` reads them back."""
    joined, n = record_field_fingerprints(record), FIELD_HASH_LEN
    return {name: joined[i * n : (i + 1) * n] for i, name in enumerate(RECORD_KEYS)}


def field_fingerprints_of(pairs: Iterable[tuple[int, dict[str, Any]]]) -> dict[str, Any]:
    """``Release.field_fingerprints`` for (item id, record) pairs."""
    return {
        "fields": list(RECORD_KEYS),
        "items": {str(pk): record_field_fingerprints(record) for pk, record in pairs},
    }


def field_prints(stored: dict[str, Any], pk: int) -> dict[str, str] | None:
    """{field: fingerprint} of item ``pk`` in a release's ``field_fingerprints``, or None
    when the release did not record them (made before they were) or lacks the item."""
    joined = (stored or {}).get("items", {}).get(str(pk))
    if joined is None:
        return None
    n = FIELD_HASH_LEN
    return {name: joined[i * n : (i + 1) * n] for i, name in enumerate(stored.get("fields", []))}


def fields_changed(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """The fields whose fingerprints differ (or that only one side has), in record order."""
    order = {name: i for i, name in enumerate(RECORD_KEYS)}
    names = sorted(before.keys() | after.keys(), key=lambda k: (order.get(k, len(order)), k))
    return [name for name in names if before.get(name) != after.get(name)]


def _release_stats(
    project: Project, items: list[dict[str, Any]], *, subset_of: list[int] | None = None
) -> list[Any]:
    """The statistics tables of the benchmark's paper for these records
    (``benchmark.datastats``), tools grouped by their category in the project's toolset.
    ``subset_of`` (the released items' ids) says the records are m&m's tool-balanced subset:
    Table 2 then counts the project's raw and verified items too, and its other rows the
    released (verified & balanced) ones."""

    if subset_of is not None:
        released = set(subset_of)
        items = [{**r, "subset": True} for r in items] + [
            {"status": status}  # counted as raw / verified only: no plans, not in the subset
            for pk, status in Item.objects.filter(project=project).values_list("pk", "status")
            if pk not in released
        ]

    tool_kinds = {
        name: category
        for name, category in project.toolset.tools.values_list("name", "category")
        if category
    }
    return list(project.benchmark.stats(items, tool_kinds=tool_kinds))


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


def _readme(
    project: Project,
    name: str,
    count: int,
    counts: dict[str, Any],
    tables: list[Any],
    parquet: Any = None,
    tool_records: int = 0,
    model_calls: int = 0,
) -> str:
    from benchmark.formats.hf_parquet import card_header, card_section, yaml_lines

    header = [
        "---",
        f"pretty_name: {orjson.dumps(f'{project.name} {name}').decode()}",
        "license: other  # to fill in by the project's admin",
        "task_categories:",
        *(f"- {c}" for c in project.benchmark.task_categories),
        "size_categories:",
        f"- {_size_category(count)}",
        *(yaml_lines(card_header(parquet, base=PARQUET_DIR)) if parquet is not None else []),
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
        *(
            [
                f"- `{PARQUET_DIR}/`: the same items as Parquet with their images inside"
                " (see *Parquet* below)."
            ]
            if parquet is not None
            else []
        ),
        *(
            [
                f"- `{RECORDS_DIR}/`: the {tool_records} tool records of these items (every call"
                " an evaluation made to a retrieval provider or an external tool: request,"
                " response, files), so a model re-run on the items meets the same web."
            ]
            if tool_records
            else []
        ),
        *(
            [
                f"- `{CALLS_DIR}/`: the {model_calls} model calls the project's evaluations made"
                " on these items (messages with images as hashes, answers, tool calls), so"
                " `python manage.py evaluate --replay` in a project made from this release"
                " gives the same results with no model server."
            ]
            if model_calls
            else []
        ),
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
    if parquet is not None:
        body += card_section(parquet, base=PARQUET_DIR)
    for table in tables:
        body += [f"## {table.name}", "", table.to_markdown(), ""]
    return "\n".join(header + body)


def _write_parquet(project: Project, root: Path, count: int) -> Any:
    """The release's items, read back from ``data/`` as written, as Parquet under
    ``parquet/``. Returns the ``hf_parquet.ParquetResult``."""
    from benchmark.formats.hf_parquet import write_parquet

    fmt = get_format(project.data_format)
    data = root / DATA_DIR
    try:
        items = [r for r in fmt.read(data) if isinstance(r, ItemRecord)] if count else []
    except FormatError as exc:  # the export wrote something its reader cannot read back
        raise ValidationFailed(f"parquet: reading back {DATA_DIR}/ failed: {exc}") from exc
    if len(items) != count:
        raise ValidationFailed(
            f"parquet: {DATA_DIR}/ reads back as {len(items)} items, the release has {count}"
        )
    return write_parquet(
        project.data_format, items, data_root=fmt.dataset_root(data), out_dir=root / PARQUET_DIR
    )


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


def _release_root(project: Project, number: int, out_dir: Path | str | None) -> tuple[Path, str]:
    """The empty local folder to write release ``number`` into, and the storage prefix to
    upload it to ("" when the folder is where it stays). ``out_dir`` is a folder of the
    caller's; else the default storage: MEDIA_ROOT/releases/<project>/<n>/ on local disk
    (the row keeps that absolute folder, as before), or a temporary folder uploaded to
    releases/<project>/<n>/ on object storage (the row keeps the prefix)."""
    prefix = f"{RELEASES_AREA}/{project.pk}/{number}"
    if not out_dir and not storage_is_local():
        if storage_files(prefix):
            if Release.objects.filter(path=prefix).exists():
                raise ValidationFailed(f"folder: {prefix} is not empty")
            storage_delete_prefix(prefix)  # left by a release that failed half-way
        return Path(tempfile.mkdtemp(prefix="benchwright-release-")), prefix
    root = Path(out_dir) if out_dir else Path(default_storage.path(prefix))
    if root.exists() and any(root.iterdir()):
        if out_dir or Release.objects.filter(path=str(root)).exists():
            raise ValidationFailed(f"folder: {root} is not empty")
        shutil.rmtree(root)  # left by a release that failed half-way: no row claims it
    root.mkdir(parents=True, exist_ok=True)
    return root, ""


def release_create(
    *,
    project: Project,
    user: Any,
    name: str,
    status: str | None = ItemStatus.VERIFIED,
    named: bool = False,
    out_dir: Path | str | None = None,
    subset: str | None = None,
    cap: float = DEFAULT_BALANCE_CAP,
    seed: int = 0,
    parquet: bool = False,
) -> Release:
    """Write a frozen release of the project's items with ``status`` (None: all items) and
    record it. ``subset="balanced"`` (m&m's projects, verified items) releases exactly the
    tool-balanced subset the balance page chooses with ``cap`` and ``seed``; with ``parquet``
    the release is also written as Parquet in the Hugging Face ``datasets`` layout. Raises
    ValidationFailed (bad name, status or subset, folder not empty), Conflict (the name is
    taken), Forbidden (the user's role may not release)."""
    if user is not None:
        permissions.require(user=user, project=project, action="release")
    if status and status not in ItemStatus.values:
        raise ValidationFailed(
            f"status: unknown {status!r}; choose one of {', '.join(ItemStatus.values)}"
        )
    _check_subset(project, status, subset, cap)
    name = _check_name(project, name)
    only = _subset_ids(project, subset, cap, seed)
    number = (
        Release.objects.filter(project=project).aggregate(m=models.Max("number"))["m"] or 0
    ) + 1
    root, stored_as = _release_root(project, number, out_dir)
    try:
        return _release_write(
            project=project,
            user=user,
            name=name,
            number=number,
            status=status or None,
            named=named,
            root=root,
            only=only,
            filter_used=_filter_of(status or None, subset, cap, seed),
            parquet=parquet,
            stored_as=stored_as,
        )
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)  # nothing half-written stays behind
        if stored_as:
            storage_delete_prefix(stored_as)
        raise
    finally:
        if stored_as:
            shutil.rmtree(root, ignore_errors=True)  # uploaded: the local copy goes


def _release_write(
    *,
    project: Project,
    user: Any,
    name: str,
    number: int,
    status: str | None,
    named: bool,
    root: Path,
    only: list[str] | None = None,
    filter_used: dict[str, Any] | None = None,
    parquet: bool = False,
    stored_as: str = "",
) -> Release:
    """Write the release into the local folder ``root`` and record it; with ``stored_as``
    (a storage prefix) the folder is uploaded there, inside the row's transaction, and the
    row keeps the prefix as its path."""
    items = _items_of(project, status, only)
    records: list[dict[str, Any]] = []
    fingerprints: list[list[Any]] = []
    for pk, record in item_records(items):
        records.append(record)
        fingerprints.append([pk, record_fingerprint(record)])
    # The statistics need every record at once; then the records go, before the export and
    # the provenance (which stream a chunk at a time) run.
    counts = _manifest_counts(records)
    tables = _release_stats(
        project, records, subset_of=None if only is None else [pk for pk, _ in fingerprints]
    )
    field_fingerprints = field_fingerprints_of(
        zip((pk for pk, _ in fingerprints), records, strict=True)
    )
    del records
    written = _Written(root)
    for table in tables:
        written.write_bytes(root / "stats" / f"{table.name}.csv", table.to_csv().encode())
        written.write_bytes(root / "stats" / f"{table.name}.md", table.to_markdown().encode())
    count = len(fingerprints)
    dataset_export(project=project, out=root / DATA_DIR, item_ids=[pk for pk, _ in fingerprints])
    (root / DATA_DIR).mkdir(exist_ok=True)
    # The items' tool records (review.evaluation registers the writer: it imports releases).
    written_records = interop_hook("release.tool_records_write")(
        project_id=project.pk, item_ids=[pk for pk, _ in fingerprints], root=root
    )
    # The model calls the items' evaluations made (the cache a replay answers from).
    written_calls: int = interop_hook("release.model_calls_write")(
        project_id=project.pk, item_ids=[pk for pk, _ in fingerprints], root=root
    )
    written.write_lines(
        root / PROVENANCE,
        (orjson.dumps(row) + b"\n" for row in _provenance_rows(items, named=named)),
    )
    parquet_written = _write_parquet(project, root, count) if parquet else None
    written.write_bytes(
        root / "README.md",
        _readme(
            project,
            name,
            count,
            counts,
            tables,
            parquet_written,
            written_records.records,
            written_calls,
        ).encode(),
    )
    filter_used = filter_used or {"status": status}
    release = Release(
        project=project,
        name=name,
        number=number,
        created_by=user if getattr(user, "pk", None) else None,
        filter=filter_used,
        item_count=count,
        parquet=parquet_written is not None,
        path=stored_as or str(root),
        fingerprints=fingerprints,
        field_fingerprints=field_fingerprints,
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
            "tool_records": {
                "records": written_records.records,
                "files": written_records.files,
            },
            "model_calls": {"calls": written_calls},
            "parquet": None
            if parquet_written is None
            else {
                "files": [str(p.relative_to(root)) for p in parquet_written.files],
                "rows": parquet_written.rows,
                "json_text_columns": parquet_written.json_fallbacks,
                "missing_images": len(parquet_written.missing_images),
            },
            "files": [written.entry(p) for p in _listed_files(root)],
        }
        (root / MANIFEST).write_bytes(orjson.dumps(release.manifest, option=orjson.OPT_INDENT_2))
        if stored_as:
            storage_put_tree(root, stored_as)
        release.save(update_fields=["manifest"])
    return release


@contextmanager
def release_folder(*, release: Release) -> Iterator[Path]:
    """A local folder holding the release's files for the duration of the block: its own
    folder when it was written to a local folder, else a download from the storage."""
    if Path(release.path).is_absolute():
        yield Path(release.path)
        return
    with local_tree(release.path) as root:
        yield root


def release_check(*, release: Release) -> VerifyResult:
    """``release_verify`` on the release's files, wherever they are stored."""
    with release_folder(release=release) as root:
        return release_verify(path=root)


# --------------------------------------------------------------------------- as a job

RELEASE_KIND = job_names.RELEASE_KIND
#: Releases of at least this many items are written by a job (the page polls it); smaller
#: ones in the request.
RELEASE_JOB_MIN_ITEMS = 500


def release_item_count(*, project: Project, status: str | None) -> int:
    """How many items the release would hold (the verified ones when ``subset``: an upper
    bound, the subset is chosen when the release is written)."""
    return _items_of(project, status or None).count()


def release_start(
    *,
    project: Project,
    user: User,
    name: str,
    status: str | None,
    named: bool = False,
    subset: str | None = None,
    cap: float = DEFAULT_BALANCE_CAP,
    seed: int = 0,
    parquet: bool = False,
) -> Job:
    """Check the request now (so the form names what is wrong) and write the release as a
    "release" job through the job pipeline."""
    permissions.require(user=user, project=project, action="release")
    if status and status not in ItemStatus.values:
        raise ValidationFailed(f"status: unknown {status!r}")
    _check_subset(project, status, subset, cap)
    name = _check_name(project, name)
    params: dict[str, Any] = {
        "project_id": project.pk,
        "name": name,
        "status": status,
        "named": named,
        "parquet": parquet,
    }
    if subset:
        params.update(subset=subset, cap=cap, seed=seed)
    return job_start(
        kind=RELEASE_KIND,
        user=user,
        project=project,
        params=params,
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
            subset=job.params.get("subset"),
            cap=float(job.params.get("cap", DEFAULT_BALANCE_CAP)),
            seed=int(job.params.get("seed", 0)),
            parquet=bool(job.params.get("parquet")),
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
    _verify_parquet(root, manifest, present, result)
    _verify_tool_records(root, manifest, present, result)
    _verify_model_calls(root, manifest, present, result)
    if sum(counts.get("status", {}).values()) != counts.get("items"):
        result.problems.append(f"{MANIFEST}: the counts per status do not add up to the item count")
    return result


def _verify_parquet(
    root: Path, manifest: dict[str, Any], present: set[str], result: VerifyResult
) -> None:
    """The Parquet files (when the release has them) hold one row per item: their footers'
    row counts add up to the manifest's item count."""
    files = (manifest.get("parquet") or {}).get("files") or []
    if not files or not all(rel in present for rel in files):
        return  # none written, or a missing file already named
    import pyarrow
    import pyarrow.parquet as pq

    rows = 0
    for rel in files:
        try:
            rows += pq.read_metadata(root / rel).num_rows
        except (OSError, pyarrow.ArrowException) as exc:
            result.problems.append(f"{rel}: not readable as Parquet ({exc})")
            return
    items = manifest.get("counts", {}).get("items")
    if rows != items:
        result.problems.append(f"{PARQUET_DIR}/: {rows} rows, manifest says {items} items")


def _verify_tool_records(
    root: Path, manifest: dict[str, Any], present: set[str], result: VerifyResult
) -> None:
    """The tool records file holds as many records as the manifest says (releases made
    before records travelled with them say nothing, and are not checked)."""
    listed = manifest.get("tool_records")
    rel = f"{RECORDS_DIR}/{RECORDS_FILE}"
    if not isinstance(listed, dict) or (rel not in present and not listed.get("records")):
        return
    if rel not in present:
        return  # named as missing above
    with (root / rel).open("rb") as fh:
        lines = sum(1 for line in fh if line.strip())
    if lines != listed.get("records"):
        result.problems.append(f"{rel}: {lines} records, manifest says {listed.get('records')}")


def _verify_model_calls(
    root: Path, manifest: dict[str, Any], present: set[str], result: VerifyResult
) -> None:
    """The model calls file holds as many calls as the manifest says (releases made before
    model calls travelled with them say nothing, and are not checked)."""
    listed = manifest.get("model_calls")
    rel = f"{CALLS_DIR}/{CALLS_FILE}"
    if not isinstance(listed, dict) or rel not in present:
        return
    with (root / rel).open("rb") as fh:
        lines = sum(1 for line in fh if line.strip())
    if lines != listed.get("calls"):
        result.problems.append(f"{rel}: {lines} calls, manifest says {listed.get('calls')}")
