"""Consensus rules: what k judgments of one item add up to. Pure: no Django.

A rule looks at the submitted values (and, for the author rule, the author's reference value)
and answers with an outcome: ``accepted``, ``rejected`` or ``disputed``, plus the agreed value.
"""

from __future__ import annotations

import re
import statistics
import unicodedata
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class Rule(StrEnum):
    UNANIMOUS = "unanimous"  # everyone gives the same value
    MAJORITY = "majority"  # more than half give the same value
    ALL_REQUIRED = "all_required"  # everyone gives the required value (m&m's: all rate 1)
    AUTHOR_PLUS_TWO = "author_plus_two"  # at least two verifiers match the author's answer
    MEDIAN = "median"  # ratings on a scale: the median, per field for several scores


class Verdict(StrEnum):
    PENDING = "pending"
    ACCEPTED = "accepted"
    REJECTED = "rejected"
    DISPUTED = "disputed"


@dataclass(frozen=True)
class Outcome:
    verdict: Verdict
    value: Any = None
    reason: str = ""


def normalize_answer(value: Any) -> str:
    """Lower-case, strip accents, punctuation and surrounding space; collapse inner space."""
    text = unicodedata.normalize("NFKD", str(value)).encode("ascii", "ignore").decode()
    text = re.sub(r"[^\w\s.]", " ", text.lower())
    text = re.sub(r"(?<!\d)\.|\.(?!\d)", " ", text)
    return " ".join(text.split())


def _same(a: Any, b: Any) -> bool:
    return normalize_answer(a) == normalize_answer(b) if isinstance(a, str) else a == b


def decide(
    rule: Rule | str,
    values: Sequence[Any],
    *,
    needed: int,
    accept: Callable[[Any], bool],
    required: Any = None,
    author_value: Any = None,
    matches_author: Callable[[Any], bool] | None = None,
) -> Outcome:
    """Decide an item from its submitted ``values`` once ``needed`` are in.

    ``accept(value)`` says whether an agreed value means the item is kept (e.g. 1, "keep").
    ``matches_author(value)``, for the author rule, says whether a verifier's answer matches
    the author's (e.g. the benchmark's own answer match against the answer and its accepted
    variants); without it, answers are compared by :func:`normalize_answer`.
    """
    rule = Rule(rule)
    if len(values) < needed:
        return Outcome(Verdict.PENDING, reason=f"{len(values)} of {needed} judgments in")
    if rule is Rule.MEDIAN:
        return Outcome(Verdict.ACCEPTED, median_of(values), f"median of {len(values)} ratings")
    if rule is Rule.AUTHOR_PLUS_TWO:
        same = matches_author or (lambda v: _same(v, author_value))
        matches = sum(bool(same(v)) for v in values)
        if matches >= 2 and matches == len(values):
            return Outcome(Verdict.ACCEPTED, author_value, f"{matches} verifiers match the author")
        return Outcome(
            Verdict.DISPUTED,
            reason=f"{matches} of {len(values)} verifiers match the author's answer",
        )
    counts = Counter(_key(v) for v in values)
    top_key, top = counts.most_common(1)[0]
    agreed = next(v for v in values if _key(v) == top_key)
    if rule is Rule.MAJORITY:
        if top * 2 > len(values):
            return _verdict(agreed, accept, f"{top} of {len(values)} agree")
        return Outcome(Verdict.DISPUTED, reason="no majority")
    if top != len(values):
        return Outcome(Verdict.DISPUTED, reason=_split(counts))
    if rule is Rule.ALL_REQUIRED:
        if _key(agreed) == _key(required):
            return Outcome(Verdict.ACCEPTED, agreed, f"all {top} gave {required!r}")
        return Outcome(Verdict.REJECTED, agreed, f"all {top} gave {agreed!r}, not {required!r}")
    return _verdict(agreed, accept, f"all {top} agree")


def median_of(values: Sequence[Any]) -> Any:
    """The median of numeric ratings (the mean of the middle two for an even number), or for
    objects of scores (``{"inappr": 1, "mi": 0, "fs": 4}``) the median of each field over the
    objects that have it. Ratings are numbers, never text: ValueError otherwise."""
    if values and all(isinstance(v, dict) for v in values):
        fields = list(dict.fromkeys(k for v in values for k in v))
        return {f: median_of([v[f] for v in values if f in v]) for f in fields}
    if not values or not all(
        isinstance(v, int | float) and not isinstance(v, bool) for v in values
    ):
        raise ValueError("the median rule needs numeric ratings")
    return statistics.median(values)


def _key(value: Any) -> Any:
    if isinstance(value, str):
        return normalize_answer(value)
    if isinstance(value, list | dict):
        return repr(value)
    return value


def _verdict(value: Any, accept: Callable[[Any], bool], reason: str) -> Outcome:
    return Outcome(Verdict.ACCEPTED if accept(value) else Verdict.REJECTED, value, reason)


def _split(counts: Counter[Any]) -> str:
    return "judgments differ: " + ", ".join(f"{k!r}×{n}" for k, n in counts.most_common())


#: Outcomes a judgment's agreement is measured against (pending, disputed and discarded are
#: not settled).
SETTLED = ("accepted", "rejected")


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, str) or isinstance(b, str):
        return isinstance(a, str) and isinstance(b, str) and a == b
    return bool(a == b)


def value_credit(scheme: str, given: Any, outcome: Any) -> float:
    """How much a judgment's value agrees with the settled outcome's: 1 or 0, or for the
    ``scores`` scheme the share of the outcome's fields given the same score. Free answers
    (``text``) compare by their normalized form, numbers by value (1 equals 1.0)."""
    if scheme == "text":
        return float(normalize_answer(given) == normalize_answer(outcome))
    if scheme == "scores" and isinstance(outcome, dict):
        if not outcome or not isinstance(given, dict):
            return 0.0
        same = sum(1 for k, v in outcome.items() if k in given and _equal(given[k], v))
        return same / len(outcome)
    return float(_equal(given, outcome))


def agreement_credits(
    scheme: str,
    outcomes: dict[tuple[int, str], tuple[str, Any]],
    judgments: Sequence[tuple[int, int, str, Any, float | None]],
) -> dict[float | None, list[int]]:
    """The judgments whose stored credit (``Judgment.agrees``) must change, by their new
    credit: ``outcomes`` maps (item id, unit) to (verdict, value); ``judgments`` are (id, item
    id, unit, value, stored credit). A judgment whose outcome is not settled, or has no value,
    gets None (it is left out of the agreement)."""
    changes: dict[float | None, list[int]] = {}
    for pk, item_id, unit, value, stored in judgments:
        verdict, settled = outcomes.get((item_id, unit), ("", None))
        credit = (
            value_credit(scheme, value, settled)
            if verdict in SETTLED and settled is not None
            else None
        )
        if credit != stored or (credit is None) != (stored is None):
            changes.setdefault(credit, []).append(pk)
    return changes
