"""The agreement figures of a judgment task as the pages read them: computed once per state
of the task's judgments and outcomes and kept in Django's cache (``settings.CACHES``), the
annotator pairs sorted and paged, and one pair's confusion matrix on demand.

The cache key holds a fingerprint of what the figures are computed from, read in two small
aggregate queries: the number of judgments and the largest judgment id (judgments are only
ever added or deleted, never edited), the number of outcomes and their latest ``updated_at``
(every outcome write saves it), and the task's scale. A new judgment or a changed outcome
gives a new key, so the next request computes afresh; old entries expire on their own.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import orjson
from django.core.cache import cache
from django.core.paginator import Page, Paginator
from django.db.models import Count, Max

from annotation.judging.models import Judgment, JudgmentTask, Outcome
from benchmark.exceptions import NotFound
from benchmark.jobs import selectors as job_selectors
from benchmark.models import Job
from benchmark.typing import AnyUser
from review.agreement import services as agreement_services

CACHE_SECONDS = 24 * 3600
PAIRS_PER_PAGE = 25


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


def _fingerprint(task: JudgmentTask) -> tuple[int, str]:
    """(number of judgments, the cache key of the task's current figures)."""
    judged = Judgment.objects.filter(task=task).aggregate(n=Count("id"), last=Max("id"))
    settled = Outcome.objects.filter(task=task).aggregate(n=Count("id"), last=Max("updated_at"))
    scale = orjson.dumps(
        [task.scheme, task.unit_kind, task.label_values], option=orjson.OPT_NON_STR_KEYS
    )
    last = settled["last"].isoformat() if settled["last"] else "-"
    state = f"{judged['n']}:{judged['last']}:{settled['n']}:{last}:".encode() + scale
    digest = hashlib.blake2b(state, digest_size=12).hexdigest()
    return judged["n"], f"agreement:v1:task{task.pk}:{digest}"


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
    *, user: AnyUser, task: JudgmentTask
) -> tuple[int, bool, Job | None, dict[str, Any] | None, str]:
    """(judgments, computed inline?, the task's latest agreement job, the report without
    confusion matrices, the cache key of the matrices)."""
    n, key = _fingerprint(task)
    inline = n <= agreement_services.INLINE_LIMIT
    job = None
    if not inline:
        job = (
            job_selectors.job_list(
                user=user, project=task.project, kind=agreement_services.AGREEMENT_KIND
            )
            .filter(params__task_id=task.pk)
            .first()
        )
        if job is None or job.status != "succeeded":
            return n, inline, job, None, ""
        key = f"{key}:job{job.pk}"
    summary = cache.get(key)
    if summary is None:
        full = agreement_services.agreement_compute(task=task) if inline else dict(job.result or {})  # type: ignore[union-attr]
        summary, confusions = _split(full)
        cache.set_many({key: summary, key + ":confusion": confusions}, CACHE_SECONDS)
    return n, inline, job, summary, key + ":confusion"


def agreement_figures(*, user: AnyUser, task: JudgmentTask) -> AgreementFigures:
    """The task's figures for the page (the caller has checked that ``user`` reviews it)."""
    n, inline, job, report, _ = _report_parts(user=user, task=task)
    figures = AgreementFigures(n_judgments=n, inline=inline, report=report, job=job)
    if report is not None:
        pairs = report.get("pairs", [])
        figures.pairs = [p for p in pairs if p.get("n_items")]
        figures.n_pairs_apart = len(pairs) - len(figures.pairs)
    return figures


def pairs_page(pairs: list[dict[str, Any]], *, sort: str, page: Any) -> Page:
    """One page of the pairs in the order named by ``sort`` (unknown: the default)."""
    order = PAIR_SORTS.get(sort, PAIR_SORTS[DEFAULT_SORT])[1]
    return Paginator(sorted(pairs, key=order), PAIRS_PER_PAGE).get_page(page)


def agreement_pair(*, user: AnyUser, task: JudgmentTask, a: str, b: str) -> dict[str, Any]:
    """One pair's figures with its confusion matrix (rows: ``rater_a``), in either order of
    the two names. Unknown names, or no figures yet: NotFound."""
    _, _, _, report, confusion_key = _report_parts(user=user, task=task)
    if report is None:
        raise NotFound("there are no agreement figures for this task yet")
    for pair in report.get("pairs", []):
        if {str(pair["rater_a"]), str(pair["rater_b"])} == {a, b} and a != b:
            confusions = cache.get(confusion_key)
            if confusions is None:  # evicted meanwhile: compute again
                cache.delete(confusion_key.removesuffix(":confusion"))
                _, _, _, report, confusion_key = _report_parts(user=user, task=task)
                confusions = cache.get(confusion_key) or {}
            confusion = confusions.get(pair_key(pair["rater_a"], pair["rater_b"])) or {}
            return {**pair, "confusion": confusion}
    raise NotFound(f"no pair of annotators {a!r} and {b!r} in this task's figures")


def agreement_report(*, user: AnyUser, task: JudgmentTask) -> dict[str, Any]:
    """The whole report, confusion matrices included (the API's answer), computed on the spot
    whatever the task's size, from the cache when the judgments and outcomes are unchanged
    (the caller has checked that ``user`` reviews the task)."""
    _, key = _fingerprint(task)
    parts = cache.get_many([key, key + ":confusion"])
    if len(parts) < 2:
        full = agreement_services.agreement_compute(task=task)
        summary, confusions = _split(full)
        cache.set_many({key: summary, key + ":confusion": confusions}, CACHE_SECONDS)
        return full
    summary, confusions = parts[key], parts[key + ":confusion"]
    pairs = [
        {**p, "confusion": confusions.get(pair_key(p["rater_a"], p["rater_b"])) or {}}
        for p in summary.get("pairs", [])
    ]
    return {**summary, "pairs": pairs}
