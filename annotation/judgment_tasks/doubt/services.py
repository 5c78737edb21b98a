"""Routing by doubt (issue 26): keeping each item's doubt per task (:class:`ItemDoubt`) and each
annotator's reliability (:class:`AnnotatorReliability`) up to date, for the queue of a task that
serves items by doubt (``JudgmentTask.serve_by_doubt``; the ORDER BY of
``annotation.judgment_tasks.services._candidate`` joins :class:`ItemDoubt`).

The doubt of an item is ``benchmark.metrics.doubt.doubt`` of its evidence:

* the people's judgments: their votes per label, each weighted by the annotator's cached
  reliability (1 where none is known), or the Dawid-Skene posterior of the leading label where
  the whole task was aggregated (:func:`task_doubt_recompute`, with at least
  ``DS_MIN_JUDGMENTS`` judgments from at least two annotators, on a scale of labels);
* outside signals from the registered doubt sources (:func:`doubt_source_register`): a model
  judge's value (it disagrees when it differs from the people's leading label) and the share of
  the models under test that got the item wrong against its reference (review registers both).

When it is kept up to date:

* after every judgment of a task that routes by doubt is submitted or changed, and after its
  outcome is recomputed (:func:`item_doubt_update`, called by ``outcome_recompute``): the item's
  votes are read again, its outside signals kept from its row (a few statements, no
  aggregation);
* the whole task (:func:`task_doubt_recompute`): Dawid-Skene over all its judgments, the
  annotators' reliabilities, every source, every item. Run by the "Recompute doubt" button of
  the agreement page (a Job, :func:`doubt_recompute_start`), ``manage.py recompute_doubt``, when
  routing is turned on, and when a judge run or an evaluation of the project finishes
  (:func:`project_doubt_recompute`). Gold items and aggregation results join here as they land.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils.module_loading import import_string

from annotation.judgment_tasks.doubt.models import AnnotatorReliability, ItemDoubt
from annotation.judgment_tasks.models import Judgment, JudgmentTask, Scheme, TaskItem, TaskUnit
from benchmark import permissions
from benchmark.exceptions import NotFound
from benchmark.metrics.aggregation import label_text
from benchmark.metrics.doubt import Evidence, doubt
from benchmark.models import Item, ItemStatus, Job, Project
from benchmark.typing import User

log = logging.getLogger(__name__)

#: The job kind of "Recompute doubt" (registered in ``annotation.apps``).
DOUBT_KIND = "doubt_recompute"
#: Dawid-Skene runs over a task's judgments from this many on (and two annotators).
DS_MIN_JUDGMENTS = 20
#: An annotator's reliability is estimated from this many of their judgments on (fewer: unknown,
#: and the reliability gate does not apply to them).
RELIABILITY_MIN_JUDGMENTS = 10
#: The schemes whose values are labels (Dawid-Skene and the judge's disagreement apply).
LABEL_SCHEMES = (Scheme.BINARY, Scheme.NOMINAL, Scheme.ORDINAL)

Key = tuple[int, str]  # (item id, unit key or "")


# =========================================================================== sources

#: Dotted paths of ``source(task) -> {unit key: {"judge": value} | {"models_wrong": share}}``;
#: the unit key is the unit for tasks with units, else the item id as text.
_SOURCES: list[str] = []


def doubt_source_register(path: str) -> None:
    """Add an outside signal (review registers the model judges and the evaluations: annotation
    may not import them)."""
    if path not in _SOURCES:
        _SOURCES.append(path)


def _source_signals(task: JudgmentTask) -> dict[str, dict[str, Any]]:
    merged: dict[str, dict[str, Any]] = {}
    for path in _SOURCES:
        source: Callable[[JudgmentTask], dict[str, dict[str, Any]]] = import_string(path)
        for key, values in source(task).items():
            merged.setdefault(str(key), {}).update(values)
    return merged


def unit_key(item_id: int, unit: str) -> str:
    """The key the sources use: the unit, or the item id as text for item-level tasks."""
    return unit or str(item_id)


# =========================================================================== reliability


@dataclass(frozen=True)
class Reliability:
    score: float
    source: str  # "gold" or "dawid-skene"
    judgments: int


def gold_accuracy_of(task: JudgmentTask) -> dict[int, tuple[float, int]]:
    """``{user id: (gold accuracy, gold judgments)}`` on the task's current gold items
    (``annotation.judgment_tasks.gold.gold_tallies``, the count behind the gold accuracy
    reviewers see), for annotators with at least the task's ``gold_min_judgments`` gold
    judgments: THE place where gold accuracy plugs into routing, where it outranks the
    Dawid-Skene estimate."""
    from annotation.judgment_tasks.gold import gold_tallies

    least = max(1, task.gold_min_judgments or 1)
    return {
        user_id: (correct / total, total)
        for (_, user_id), (correct, total, _) in gold_tallies(tasks=[task]).items()
        if total >= least
    }


def annotator_reliabilities(
    *, task: JudgmentTask, rows: list[tuple[Key, int, Hashable]] | None = None
) -> dict[int, Reliability]:
    """Each annotator's reliability on the task, 0..1, from ONE definition: their gold accuracy
    (:func:`gold_accuracy_of`) where they judged gold items, else the Dawid-Skene estimate of
    their expected accuracy from the task's judgments (``benchmark.metrics.aggregation``), for
    annotators with at least ``RELIABILITY_MIN_JUDGMENTS`` judgments on a task with enough
    judgments on a scale of labels. Others: unknown (left out). ``rows``: the task's judgments
    as ``((item, unit), user id, label)``, read when not given."""
    out: dict[int, Reliability] = {}
    rows = _task_rows(task) if rows is None else rows
    estimate = _dawid_skene(task, rows)
    if estimate is not None:
        per_user = Counter(user for _, user, _ in rows)
        for annotator in estimate.annotators:
            n = per_user[annotator.name]
            if annotator.reliability is not None and n >= RELIABILITY_MIN_JUDGMENTS:
                out[int(annotator.name)] = Reliability(  # type: ignore[call-overload]
                    float(annotator.reliability), "dawid-skene", n
                )
    for user_id, (accuracy, n) in gold_accuracy_of(task).items():
        out[user_id] = Reliability(accuracy, "gold", n)
    return out


def annotator_reliability(*, task: JudgmentTask, user: Any) -> float | None:
    """One annotator's reliability on the task as last computed (:func:`annotator_reliabilities`,
    cached with the task's doubt); None: unknown."""
    return (
        AnnotatorReliability.objects.filter(task=task, user=user)
        .values_list("score", flat=True)
        .first()
    )


# =========================================================================== evidence


def n_labels(task: JudgmentTask) -> int:
    """The number of labels of the task's scale (numbers and texts: as many as the overlap)."""
    if task.scheme in LABEL_SCHEMES:
        return max(2, len(task.label_values))
    return max(2, task.overlap)


def prior(task: JudgmentTask) -> float:
    """The doubt of an item nobody has judged and no signal speaks of (the queue's
    ``COALESCE``)."""
    return doubt(Evidence(votes={}, n_labels=n_labels(task)))


def _label(value: Any) -> Hashable:
    return label_text(value)


def _same(a: Any, b: Any) -> bool:
    return a == b or str(a) == str(b)


def _judgment_rows(task: JudgmentTask, where: Q) -> list[tuple[Key, int, Hashable]]:
    rows = Judgment.objects.filter(where, task=task).values_list(
        "item_id", "unit", "user_id", "value"
    )
    return [((item, unit), user, _label(value)) for item, unit, user, value in rows.iterator(2000)]


def _task_rows(task: JudgmentTask) -> list[tuple[Key, int, Hashable]]:
    return _judgment_rows(task, Q())


def _dawid_skene(task: JudgmentTask, rows: list[tuple[Key, int, Hashable]]) -> Any:
    """The task's judgments aggregated by Dawid-Skene, where there are enough (else None)."""
    if task.scheme not in LABEL_SCHEMES or len(rows) < DS_MIN_JUDGMENTS:
        return None
    if len({user for _, user, _ in rows}) < 2:
        return None
    from benchmark.metrics.aggregation import aggregate  # lazy: pandas and crowd-kit

    # Keyed by text (a frame's column of tuples would not stay one column).
    keyed = [(unit_key(*key), user, label) for key, user, label in rows]
    return aggregate(keyed, "dawid-skene")


def _evaluate(
    task: JudgmentTask,
    votes: dict[Hashable, float],
    count: int,
    *,
    posterior: dict[Any, float] | None,
    outside: dict[str, Any],
) -> tuple[float, dict[str, Any]]:
    """(doubt, the signals as the page shows them) of one item."""
    lead: Hashable | None = None
    share: float | None = None
    if posterior:
        lead = max(posterior, key=lambda label: (posterior[label], str(label)))
        share = float(posterior[lead])
    elif votes:
        lead = max(votes, key=lambda label: (votes[label], str(label)))
        share = votes[lead] / (sum(votes.values()) or 1)
    judge = outside.get("judge")
    judge_disagrees = judge is not None and lead is not None and not _same(judge, lead)
    models_wrong = outside.get("models_wrong")
    evidence = Evidence(
        votes=votes,
        n_labels=n_labels(task),
        posterior=float(posterior[lead]) if posterior and lead is not None else None,
        judge_disagrees=judge_disagrees,
        models_wrong=float(models_wrong or 0.0),
    )
    signals = {
        "votes": {str(label): round(w, 4) for label, w in votes.items()},
        "lead": lead,
        "share": None if share is None else round(share, 4),
        "posterior": evidence.posterior is not None,
        "judge": judge,
        "judge_name": outside.get("judge_name"),
        "judge_disagrees": judge_disagrees,
        "models_wrong": models_wrong,
        "models": outside.get("models"),
    }
    return doubt(evidence), signals


def _outside(signals: dict[str, Any]) -> dict[str, Any]:
    """The outside signals kept in a row's ``signals``."""
    return {
        k: signals[k] for k in ("judge", "judge_name", "models_wrong", "models") if k in signals
    }


def _store(task: JudgmentTask, rows: Iterable[ItemDoubt]) -> None:
    ItemDoubt.objects.bulk_create(
        list(rows),
        batch_size=1000,
        update_conflicts=True,
        unique_fields=["task", "item", "unit"],
        update_fields=["score", "position", "judgments", "signals", "updated_at"],
    )


def doubt_rows_fill(*, task: JudgmentTask, item_ids: Iterable[int] | None = None) -> int:
    """Give every item (or unit) the task may serve a doubt row, the task's prior doubt and the
    item's (unit's) position, where it has none: the queue of a task that serves items by
    doubt walks these rows (``annotation.judgment_tasks.doubt.queue``). One statement; ``item_ids``: only
    those items (added to the project, listed or given units). Nothing for a task that does
    not serve by doubt. Answers how many rows were written."""
    ids = None if item_ids is None else list(item_ids)
    if not task.serve_by_doubt or ids == []:
        return 0
    from django.db import connection
    from django.utils import timezone

    from annotation.judgment_tasks.doubt.queue import fill_sql

    q = connection.ops.quote_name
    tables = {
        name: q(model._meta.db_table)
        for name, model in (
            ("doubt", ItemDoubt), ("item", Item), ("unit", TaskUnit), ("listed", TaskItem),
            ("task", JudgmentTask),
        )
    }  # fmt: skip
    sql, params = fill_sql(
        task_id=task.pk,
        statuses=(
            [ItemStatus.DRAFT]
            if task.updates_item_status
            else [v for v in ItemStatus.values if v != ItemStatus.DISCARDED]
        ),
        units=task.has_units,
        listed=task.items_listed,
        prior=prior(task),
        item_ids=ids,
        tables=tables,
        now=timezone.now(),
    )
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(sql, params)
        return max(cursor.rowcount, 0)


def doubt_rows_drop_prior(*, task: JudgmentTask) -> None:
    """Routing turned off: delete the task's rows that only hold the prior
    (:func:`doubt_rows_fill`'s, nothing computed yet); computed doubts stay."""
    with transaction.atomic():
        ItemDoubt.objects.filter(task=task, judgments=0, signals={}).delete()


def project_doubt_rows_fill(*, project_id: int, item_ids: Iterable[int]) -> None:
    """:func:`doubt_rows_fill` of items just added to a project, for each of its tasks that
    serves items by doubt (one statement when none does)."""
    ids = list(item_ids)
    if not ids:
        return
    for task in JudgmentTask.objects.filter(project_id=project_id, serve_by_doubt=True):
        doubt_rows_fill(task=task, item_ids=ids)


def _analyze() -> None:
    """PostgreSQL: fresh statistics of the doubts after a whole task was written, so the
    queue's join plans by them (a plan made without statistics can scan the table once per
    item) instead of waiting for autovacuum."""
    from django.db import connection

    if connection.vendor == "postgresql" and not connection.in_atomic_block:
        with connection.cursor() as cursor:
            cursor.execute(f"ANALYZE {connection.ops.quote_name(ItemDoubt._meta.db_table)}")


# =========================================================================== updates


def item_doubt_update(*, task: JudgmentTask, item_id: int, unit: str = "") -> float:
    """Score one item (or unit) again from its judgments, after one was submitted or changed
    or its outcome recomputed: votes weighted by the annotators' cached reliabilities, its
    outside signals kept from its row. Four statements; answers the new doubt."""
    with transaction.atomic():
        rows = list(
            Judgment.objects.filter(task=task, item_id=item_id, unit=unit).values_list(
                "user_id", "value"
            )
        )
        weights = dict(
            AnnotatorReliability.objects.filter(
                task=task, user_id__in=[user for user, _ in rows]
            ).values_list("user_id", "score")
        )
        votes: dict[Hashable, float] = {}
        for user, value in rows:
            label = _label(value)
            votes[label] = votes.get(label, 0.0) + float(weights.get(user, 1.0))
        before = (
            ItemDoubt.objects.filter(task=task, item_id=item_id, unit=unit)
            .values_list("signals", "position")
            .first()
        )
        if before is None:  # no row yet (routing was off): the position of the item or unit
            positions = (
                TaskUnit.objects.filter(task=task, item_id=item_id, key=unit)
                if unit
                else Item.objects.filter(pk=item_id)
            )
            before = ({}, positions.values_list("position", flat=True).first() or 0)
        score, signals = _evaluate(
            task, votes, len(rows), posterior=None, outside=_outside(before[0] or {})
        )
        _store(
            task,
            [
                ItemDoubt(
                    task=task,
                    item_id=item_id,
                    unit=unit,
                    score=score,
                    position=before[1],
                    judgments=len(rows),
                    signals=signals,
                )
            ],
        )
    return score


def _task_keys(task: JudgmentTask) -> dict[Key, int]:
    """The items (or units) the task's queue may serve, with their positions: every unit; the
    project's items that are not discarded (only listed ones, only drafts, as the queue takes
    them; :func:`doubt_rows_fill` takes the same)."""
    if task.has_units:
        rows = TaskUnit.objects.filter(task=task).values_list("item_id", "key", "position")
        return {(item, key): position for item, key, position in rows}
    items = Item.objects.filter(project_id=task.project_id).exclude(status=ItemStatus.DISCARDED)
    if task.items_listed:
        items = items.filter(pk__in=TaskItem.objects.filter(task=task).values("item_id"))
    if task.updates_item_status:
        items = items.filter(status=ItemStatus.DRAFT)
    return {(pk, ""): position for pk, position in items.values_list("pk", "position")}


def task_doubt_recompute(
    *, task: JudgmentTask, progress: Callable[..., None] | None = None
) -> dict[str, Any]:
    """Recompute the whole task: the annotators' reliabilities (:func:`annotator_reliabilities`,
    cached), the Dawid-Skene posteriors (where there are enough judgments), every outside
    signal, and the doubt of every item it may serve and every item it has judgments of.
    Answers a summary (items, judgments, whether Dawid-Skene ran, annotators below the
    threshold)."""
    rows = _task_rows(task)
    if progress:
        progress(progress=0, message="aggregating the judgments")
    estimate = _dawid_skene(task, rows)
    reliabilities = annotator_reliabilities(task=task, rows=rows)
    posteriors: dict[Any, dict[Any, float]] = {}
    if estimate is not None:
        posteriors = {
            str(entry.item): entry.posterior for entry in estimate.items if entry.posterior
        }
    outside = _source_signals(task)
    votes: dict[Key, dict[Hashable, float]] = {}
    counts: Counter[Key] = Counter()
    for key, user, label in rows:
        weight = reliabilities[user].score if user in reliabilities else 1.0
        bucket = votes.setdefault(key, {})
        bucket[label] = bucket.get(label, 0.0) + weight
        counts[key] += 1
    positions = _task_keys(task)
    missing = {item for item, unit in votes if (item, unit) not in positions}
    if missing:  # judged, though the queue no longer serves it
        at = dict(Item.objects.filter(pk__in=missing).values_list("pk", "position"))
        positions.update({k: at.get(k[0], 0) for k in votes if k not in positions})
    keys = list(positions)
    if progress:
        progress(progress=0, total=len(keys), message="scoring the items")
    doubts = []
    for item_id, unit in keys:
        score, signals = _evaluate(
            task,
            votes.get((item_id, unit), {}),
            counts[(item_id, unit)],
            posterior=posteriors.get(unit_key(item_id, unit)),
            outside=outside.get(unit_key(item_id, unit), {}),
        )
        doubts.append(
            ItemDoubt(
                task=task,
                item_id=item_id,
                unit=unit,
                score=score,
                position=positions[(item_id, unit)],
                judgments=counts[(item_id, unit)],
                signals=signals,
            )
        )
    with transaction.atomic():
        AnnotatorReliability.objects.filter(task=task).exclude(
            user_id__in=list(reliabilities)
        ).delete()
        AnnotatorReliability.objects.bulk_create(
            [
                AnnotatorReliability(
                    task=task, user_id=user, score=r.score, source=r.source, judgments=r.judgments
                )
                for user, r in reliabilities.items()
            ],
            update_conflicts=True,
            unique_fields=["task", "user"],
            update_fields=["score", "source", "judgments", "updated_at"],
        )
        _store(task, doubts)
    _analyze()
    if progress:
        progress(progress=len(keys), total=len(keys), message="done")
    threshold = task.reliability_threshold
    return {
        "task": task.pk,
        "items": len(keys),
        "judgments": len(rows),
        "dawid_skene": estimate is not None,
        "annotators": len(reliabilities),
        "below_threshold": sorted(u for u, r in reliabilities.items() if r.score < threshold),
    }


def project_doubt_recompute(*, project: Project) -> None:
    """Recompute every task of the project that serves items by doubt (after a judge run or an
    evaluation finished). Routing is advice: a failure is logged, never the caller's failure."""
    for task in JudgmentTask.objects.filter(project=project, serve_by_doubt=True, active=True):
        try:
            task_doubt_recompute(task=task)
        except Exception:  # noqa: BLE001
            log.exception("recomputing the doubt of task %s failed", task.pk)


def doubt_recompute_start(*, task: JudgmentTask, user: User | None) -> Job:
    """Recompute the task's doubt as a job (reviewers and admins; ``user`` None: the system,
    when routing is turned on)."""
    from benchmark.jobs import services as job_services

    if user is not None:
        permissions.require(user=user, project=task.project, action="manage_studies")
    return job_services.job_start(
        kind=DOUBT_KIND, user=user, project=task.project, params={"task_id": task.pk}
    )


def doubt_recompute_job(*, job: Job, progress: Callable[..., None]) -> dict[str, Any]:
    """The runner of "Recompute doubt": :func:`task_doubt_recompute` of the job's task."""
    task = JudgmentTask.objects.filter(pk=job.params.get("task_id")).first()
    if task is None:
        raise NotFound("the judgment task was deleted; nothing to recompute")
    return task_doubt_recompute(task=task, progress=progress)
