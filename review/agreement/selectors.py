"""The agreement figures of a judgment task as the pages read them: kept in Django's cache
(``settings.CACHES``), the annotator pairs sorted and paged, and one pair's confusion matrix on
demand.

What the figures are computed from is fingerprinted in two small aggregate queries: the number
of judgments and the largest judgment id (judgments are only ever added or deleted, never
edited), the number of outcomes and their latest ``updated_at`` (every outcome write saves it),
and the task's scale. The task's latest figures are kept under one key per task with that
fingerprint and when they were computed. While many annotators judge, the fingerprint changes
with every judgment; recomputing on each change would keep the CPU busy with figures nobody has
read yet, so the page shows the latest figures while they are at most ``STALE_SECONDS`` old
("as of HH:MM:SS", with a link that forces a recomputation, at most once per
``REFRESH_SECONDS`` per reviewer), and computes afresh when they are older, or when a reviewer
has decided an outcome since (rare, and the reviewer expects to see it counted). Unchanged
inputs always show the cached figures as current; the API always answers current figures.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import orjson
from django.core.cache import cache
from django.core.paginator import Page, Paginator
from django.db.models import Count, Max, Q

from annotation.judgment_tasks.models import Judgment, JudgmentTask, Outcome
from benchmark.exceptions import DomainError, NotFound
from benchmark.jobs import selectors as job_selectors
from benchmark.models import Item, Job
from benchmark.typing import AnyUser
from review.agreement import services as agreement_services

CACHE_SECONDS = 24 * 3600
PAIRS_PER_PAGE = 25
#: Figures at most this old are shown (with their time) instead of recomputing them.
STALE_SECONDS = 30
#: One reviewer may force a recomputation of one task's figures once in this many seconds.
REFRESH_SECONDS = 5
#: How long a recomputation may hold the task's "computing" mark (others show the old
#: figures meanwhile instead of computing the same thing at once).
COMPUTING_SECONDS = 60


def _now() -> float:
    """Seconds since the epoch (tests move it)."""
    return time.time()


def _lowest_first(key: str) -> Any:
    """Sort key: the smallest value first, pairs without the figure last."""

    def sort_key(pair: dict[str, Any]) -> tuple[bool, float, str, str]:
        value = pair[key]
        if isinstance(value, dict):
            value = value.get("value")
        return (value is None, value or 0.0, str(pair["rater_a"]), str(pair["rater_b"]))

    return sort_key


#: The pair table's orders: name -> (label, sort key).
PAIR_SORTS: dict[str, tuple[str, Any]] = {
    "agreement": ("lowest agreement", _lowest_first("percent_agreement")),
    "kappa": ("lowest kappa", _lowest_first("cohen_kappa")),
    "shared": ("fewest shared items", _lowest_first("n_items")),
    "rater": ("annotator", lambda p: (str(p["rater_a"]), str(p["rater_b"]))),
}
DEFAULT_SORT = "agreement"


@dataclass
class AgreementFigures:
    """What the agreement page shows: the report (None until there is one), where it came
    from, and the judgments it counts."""

    n_judgments: int
    inline: bool
    report: dict[str, Any] | None
    job: Job | None = None
    #: The pairs that share at least one item, without their confusion matrices.
    pairs: list[dict[str, Any]] = field(default_factory=list)
    #: Pairs of annotators with no item in common (left out of the table).
    n_pairs_apart: int = 0
    #: When the figures shown were computed (None: from a job, or none yet).
    computed_at: datetime | None = None
    #: Judgments or outcomes changed since (the figures are at most STALE_SECONDS old).
    stale: bool = False
    #: The judgments the figures count (``n_judgments`` is the number now).
    n_counted: int = 0
    #: A forced recomputation was asked for too soon after the last one and not done.
    refresh_refused: bool = False


def _fingerprint(task: JudgmentTask) -> tuple[int, str, str]:
    """(number of judgments, the cache key of the task's current figures, the state of the
    reviewers' decisions: figures from before a reviewer's decision are not shown as a
    little stale, they are recomputed)."""
    judged = Judgment.objects.filter(task=task).aggregate(n=Count("id"), last=Max("id"))
    by_reviewer = Q(decided_by__isnull=False)
    settled = Outcome.objects.filter(task=task).aggregate(
        n=Count("id"),
        last=Max("updated_at"),
        decided=Count("id", filter=by_reviewer),
        decided_last=Max("decided_at", filter=by_reviewer),
    )
    scale = orjson.dumps(
        [task.scheme, task.unit_kind, task.label_values], option=orjson.OPT_NON_STR_KEYS
    )
    last = settled["last"].isoformat() if settled["last"] else "-"
    state = f"{judged['n']}:{judged['last']}:{settled['n']}:{last}:".encode() + scale
    digest = hashlib.blake2b(state, digest_size=12).hexdigest()
    decided_last = settled["decided_last"].isoformat() if settled["decided_last"] else "-"
    decided = f"{settled['decided']}:{decided_last}"
    return judged["n"], f"agreement:v2:task{task.pk}:{digest}", decided


def _latest_key(task: JudgmentTask) -> str:
    """The key of the task's latest computed figures: ``{"key": fingerprint key, "decided":
    state of the reviewers' decisions, "at": seconds since the epoch, "n": judgments counted,
    "summary": report without matrices}``;
    their confusion matrices are under ``key + ":confusion"``."""
    return f"agreement:v2:task{task.pk}:latest"


def _store(
    task: JudgmentTask, key: str, decided: str, n: int, full: dict[str, Any]
) -> dict[str, Any]:
    """Keep freshly computed figures as the task's latest; answers the latest entry."""
    summary, confusions = _split(full)
    entry = {"key": key, "decided": decided, "at": _now(), "n": n, "summary": summary}
    cache.set_many({_latest_key(task): entry, key + ":confusion": confusions}, CACHE_SECONDS)
    return entry


def refresh_allowed(*, user: AnyUser, task: JudgmentTask) -> bool:
    """Whether ``user`` may force a recomputation of the task's figures now (once per
    ``REFRESH_SECONDS``); asking counts as using it."""
    return bool(cache.add(f"agreement:refresh:task{task.pk}:user{user.pk}", 1, REFRESH_SECONDS))


def _latest(
    task: JudgmentTask, key: str, decided: str, n: int, *, refresh: bool
) -> tuple[dict[str, Any], bool]:
    """(the latest entry of an inline task, stale?): the cached one when it has the current
    fingerprint ``key``; else, unless ``refresh`` or a reviewer decided an outcome since, the
    cached one while it is at most ``STALE_SECONDS`` old or while another request is
    recomputing it; else computed now."""
    entry = cache.get(_latest_key(task))
    if entry is not None and entry["key"] == key:
        return entry, False
    computing = f"agreement:computing:task{task.pk}"
    if (
        entry is not None
        and not refresh
        and entry["decided"] == decided
        and (
            _now() - entry["at"] <= STALE_SECONDS or not cache.add(computing, 1, COMPUTING_SECONDS)
        )
    ):
        return entry, True
    try:
        full = agreement_services.agreement_compute(task=task)
        return _store(task, key, decided, n, full), False
    finally:
        cache.delete(computing)


def _split(report: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The report with its pairs stripped of their confusion matrices (what the page needs on
    every request), and the matrices by pair key."""
    pairs, confusions = [], {}
    for pair in report.get("pairs", []):
        slim = {k: v for k, v in pair.items() if k != "confusion"}
        pairs.append(slim)
        confusions[pair_key(pair["rater_a"], pair["rater_b"])] = pair.get("confusion") or {}
    return {**report, "pairs": pairs}, confusions


def pair_key(a: Any, b: Any) -> str:
    return f"{a}\x00{b}"


def _report_parts(
    *, user: AnyUser, task: JudgmentTask, refresh: bool = False
) -> tuple[AgreementFigures, str]:
    """(the figures without confusion matrices and without the pair table, the cache key of
    the matrices; "" when there is no report)."""
    n, key, decided = _fingerprint(task)
    inline = n <= agreement_services.INLINE_LIMIT
    figures = AgreementFigures(n_judgments=n, inline=inline, report=None)
    if inline:
        entry, figures.stale = _latest(task, key, decided, n, refresh=refresh)
        figures.report = entry["summary"]
        figures.n_counted = entry["n"]
        figures.computed_at = datetime.fromtimestamp(entry["at"], tz=UTC)
        return figures, entry["key"] + ":confusion"
    figures.job = job = (
        job_selectors.job_list(
            user=user, project=task.project, kind=agreement_services.AGREEMENT_KIND
        )
        .filter(params__task_id=task.pk)
        .first()
    )
    if job is None or job.status != "succeeded":
        return figures, ""
    key = f"{key}:job{job.pk}"
    summary = cache.get(key)
    if summary is None:
        summary, confusions = _split(dict(job.result or {}))
        cache.set_many({key: summary, key + ":confusion": confusions}, CACHE_SECONDS)
    figures.report, figures.n_counted = summary, n
    return figures, key + ":confusion"


def agreement_figures(
    *, user: AnyUser, task: JudgmentTask, refresh: bool = False
) -> AgreementFigures:
    """The task's figures for the page (the caller has checked that ``user`` reviews it):
    the latest, at most ``STALE_SECONDS`` old; ``refresh``: current ones, computed now if
    need be, unless this user forced a recomputation less than ``REFRESH_SECONDS`` ago."""
    refused = refresh and not refresh_allowed(user=user, task=task)
    figures, _ = _report_parts(user=user, task=task, refresh=refresh and not refused)
    figures.refresh_refused = refused and figures.stale
    if figures.report is not None:
        pairs = figures.report.get("pairs", [])
        figures.pairs = [p for p in pairs if p.get("n_items")]
        figures.n_pairs_apart = len(pairs) - len(figures.pairs)
    return figures


def pairs_page(pairs: list[dict[str, Any]], *, sort: str, page: Any) -> Page:
    """One page of the pairs in the order named by ``sort`` (unknown: the default)."""
    order = PAIR_SORTS.get(sort, PAIR_SORTS[DEFAULT_SORT])[1]
    return Paginator(sorted(pairs, key=order), PAIRS_PER_PAGE).get_page(page)


def agreement_pair(*, user: AnyUser, task: JudgmentTask, a: str, b: str) -> dict[str, Any]:
    """One pair's figures with its confusion matrix (rows: ``rater_a``), in either order of
    the two names, from the same figures the page shows. Unknown names, or no figures yet:
    NotFound."""
    figures, confusion_key = _report_parts(user=user, task=task)
    if figures.report is None:
        raise NotFound("there are no agreement figures for this task yet")
    for pair in figures.report.get("pairs", []):
        if {str(pair["rater_a"]), str(pair["rater_b"])} == {a, b} and a != b:
            confusions = cache.get(confusion_key)
            if confusions is None:  # evicted meanwhile: compute again
                figures, confusion_key = _report_parts(user=user, task=task, refresh=True)
                confusions = cache.get(confusion_key) or {}
            confusion = confusions.get(pair_key(pair["rater_a"], pair["rater_b"])) or {}
            return {**pair, "confusion": confusion}
    raise NotFound(f"no pair of annotators {a!r} and {b!r} in this task's figures")


def agreement_report(*, user: AnyUser, task: JudgmentTask) -> dict[str, Any]:
    """The whole report, confusion matrices included (the API's answer): current figures,
    computed on the spot whatever the task's size, from the cache when the judgments and
    outcomes are unchanged (the caller has checked that ``user`` reviews the task)."""
    n, key, decided = _fingerprint(task)
    entry = cache.get(_latest_key(task))
    confusions = cache.get(key + ":confusion") if entry and entry["key"] == key else None
    if entry is None or confusions is None:
        full = agreement_services.agreement_compute(task=task)
        _store(task, key, decided, n, full)
        return full
    pairs = [
        {**p, "confusion": confusions.get(pair_key(p["rater_a"], p["rater_b"])) or {}}
        for p in entry["summary"].get("pairs", [])
    ]
    return {**entry["summary"], "pairs": pairs}


# =========================================================================== label aggregation

#: Beyond this many judgments the page does not aggregate on the spot (``manage.py aggregate``).
AGGREGATION_LIMIT = agreement_services.INLINE_LIMIT
#: The methods the page runs on the spot. crowd-kit's GLAD and MACE run scipy's optimiser over
#: pandas frames at every EM step: seconds even for a few hundred judgments, so they are left to
#: ``manage.py aggregate`` (docs/reference/aggregation.md).
PAGE_METHODS = ("dawid-skene", "majority")
#: The least certain items listed on the page.
UNCERTAIN_SHOWN = 25


@dataclass
class AggregatedItem:
    """One item (or unit) as the aggregation page lists it."""

    item_id: int
    unit: str
    external_id: str
    label: Any
    confidence: float | None
    judgments: int
    consensus: Any = None  # the settled outcome's value, where there is one


@dataclass
class TaskAggregation:
    method: str
    reliability_name: str
    labels: list[Any]
    n_items: int
    n_judgments: int
    annotators: list[Any]  # benchmark.metrics.aggregation.Annotator, best first
    uncertain: list[AggregatedItem]  # least confident first
    differs: list[AggregatedItem]  # aggregated label != the consensus rule's outcome
    n_settled: int


def _comparable(value: Any) -> Any:
    return orjson.dumps(value).decode() if isinstance(value, list | dict) else value


def task_aggregation(*, user: AnyUser, task: JudgmentTask, method: str) -> TaskAggregation:
    """The task's judgments aggregated by ``method`` (``benchmark.metrics.aggregation``), and the
    items where that label differs from the consensus rule's settled outcome. The caller has
    checked that ``user`` may see the task's agreement figures (``task_for_review``).
    Raises ``DomainError`` for an unknown method, no judgments or too many for the page."""
    from benchmark.metrics import aggregation  # lazy: pandas and crowd-kit

    if method in aggregation.METHODS and method not in PAGE_METHODS:
        raise DomainError(
            f"{aggregation.METHOD_NAMES[method]} takes too long to run on a page; run "
            f"`python manage.py aggregate --method {method}` for this task instead."
        )
    if method not in PAGE_METHODS:
        raise DomainError(f"Unknown method {method!r}: choose one of {', '.join(PAGE_METHODS)}.")
    rows, final, _ = agreement_services.task_rows(task)
    if not rows:
        raise DomainError("No judgments yet: nothing to aggregate.")
    if len(rows) > AGGREGATION_LIMIT:
        raise DomainError(
            f"{len(rows):,} judgments are more than this page aggregates "
            f"({AGGREGATION_LIMIT:,}); run `python manage.py aggregate` instead."
        )
    try:
        result = aggregation.aggregate(rows, method)
    except ValueError as exc:
        raise DomainError(str(exc)) from None
    item_ids = {key[0] if isinstance(key, tuple) else key for key, _, _ in rows}
    external = dict(Item.objects.filter(pk__in=item_ids).values_list("pk", "external_id"))
    listed = []
    for entry in result.items:
        item_id, unit = entry.item if isinstance(entry.item, tuple) else (entry.item, "")
        consensus = final.get(entry.item)
        listed.append(
            AggregatedItem(
                item_id=item_id,
                unit=unit,
                external_id=external.get(item_id, str(item_id)),
                label=entry.label,
                confidence=entry.confidence,
                judgments=entry.judgments,
                consensus=_comparable(consensus) if consensus is not None else None,
            )
        )
    differs = [i for i in listed if i.consensus is not None and i.consensus != i.label]
    uncertain = sorted(
        (i for i in listed if i.confidence is not None),
        key=lambda i: (i.confidence, i.external_id, i.unit),
    )[:UNCERTAIN_SHOWN]
    return TaskAggregation(
        method=method,
        reliability_name=aggregation.RELIABILITY_NAMES[method],
        labels=result.labels,
        n_items=len(result.items),
        n_judgments=len(rows),
        annotators=sorted(result.annotators, key=lambda a: (-(a.reliability or 0.0), str(a.name))),
        uncertain=uncertain,
        differs=differs,
        n_settled=sum(1 for i in listed if i.consensus is not None),
    )
