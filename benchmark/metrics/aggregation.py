"""Label aggregation beyond the consensus rule: one label per item from many people's judgments,
with each annotator's estimated reliability (pure Python; crowd-kit, pandas and statsmodels are
imported inside the functions that use them).

Input is a flat list of judgments ``(item, annotator, label)``, as in ``agreement``; labels are
any hashable values (a caller turns dicts and lists into strings first). The methods are
crowd-kit's own (Toloka's ``crowdkit.aggregation``), called, never re-implemented here:

* ``majority``: ``MajorityVote``; an item's posterior is the share of its judgments per label,
  an annotator's reliability the share of their judgments that equal the majority label;
* ``dawid-skene``: ``DawidSkene`` (Dawid and Skene, 1979): EM over one confusion matrix per
  annotator; posterior per item, and per annotator the confusion matrix ``P(says j | truth i)``
  and the reliability ``sum_i prior(i) * P(says i | truth i)`` (the expected share of correct
  judgments under the estimated label prior);
* ``glad``: ``GLAD`` (Whitehill et al., 2009): per annotator an expertise ``alpha`` (unbounded;
  larger is better, negative is adversarial), per item a difficulty ``1/beta``; posterior per item;
* ``mace``: ``MACE`` (Hovy et al., 2013): per annotator the probability of not spamming
  (competence, 0..1); posterior per item; the best of ``MACE_RESTARTS`` random starts.

Gold answers (``gold={item: label}``) give each annotator's **gold accuracy**: correct judgments on
gold items over their judgments on gold items, with a 95 % Wilson score interval
(``statsmodels.stats.proportion.proportion_confint(method="wilson")``).

Ties (several labels with the same top posterior) go to the label that sorts first, so a result
does not depend on the order of the rows; crowd-kit's own tie-breaking is random for majority vote.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

__all__ = [
    "METHODS",
    "METHOD_NAMES",
    "RELIABILITY_NAMES",
    "Aggregation",
    "Method",
    "Row",
    "aggregate",
    "gold_accuracy",
    "wilson_interval",
]

Row = tuple[Hashable, Hashable, Any]  # (item or (item, unit), annotator, label)
Method = Literal["majority", "dawid-skene", "glad", "mace"]
METHODS: tuple[str, ...] = get_args(Method)

METHOD_NAMES: dict[str, str] = {
    "majority": "Majority vote",
    "dawid-skene": "Dawid–Skene",
    "glad": "GLAD",
    "mace": "MACE",
}

# What each method calls an annotator's reliability, for reports and the docs.
RELIABILITY_NAMES: dict[str, str] = {
    "majority": "agreement with the majority",
    "dawid-skene": "expected accuracy (Dawid–Skene)",
    "glad": "expertise α (GLAD)",
    "mace": "competence (MACE)",
}


@dataclass
class ItemLabel:
    item: Hashable
    label: Any
    posterior: dict[Any, float] | None  # label -> probability; None where the method has none
    judgments: int

    @property
    def confidence(self) -> float | None:
        """The posterior of the chosen label."""
        return None if self.posterior is None else self.posterior.get(self.label)


@dataclass
class Annotator:
    name: Hashable
    judgments: int
    reliability: float | None
    confusion: dict[Any, dict[Any, float]] | None = None  # truth -> said -> probability
    gold: dict[str, Any] | None = None


@dataclass
class Aggregation:
    method: str
    labels: list[Any]  # every label seen, sorted
    items: list[ItemLabel] = field(default_factory=list)
    annotators: list[Annotator] = field(default_factory=list)

    def label_of(self) -> dict[Hashable, Any]:
        return {i.item: i.label for i in self.items}


def _sort_key(value: Any) -> tuple[str, Any]:
    return (type(value).__name__, value)


def _ordered(values: Iterable[Any]) -> list[Any]:
    try:
        return sorted(set(values))
    except TypeError:
        return sorted(set(values), key=_sort_key)


def wilson_interval(correct: int, total: int, confidence: float = 0.95) -> tuple[float, float]:
    from statsmodels.stats.proportion import proportion_confint

    low, high = proportion_confint(correct, total, alpha=1 - confidence, method="wilson")
    return float(low), float(high)


def gold_accuracy(
    rows: Iterable[tuple[Hashable, Hashable, Any]], gold: Mapping[Hashable, Any]
) -> dict[Hashable, dict[str, Any]]:
    """Per annotator: judgments on gold items, how many equal the gold answer, the share and its
    95 % Wilson interval. Annotators with no judgment on a gold item are left out."""
    counts: dict[Hashable, list[int]] = {}
    for item, annotator, label in rows:
        if item not in gold:
            continue
        tally = counts.setdefault(annotator, [0, 0])
        tally[0] += label == gold[item]
        tally[1] += 1
    out = {}
    for annotator, (correct, total) in counts.items():
        low, high = wilson_interval(correct, total)
        out[annotator] = {
            "correct": correct,
            "total": total,
            "accuracy": correct / total,
            "interval": [low, high],
        }
    return out


def _frame(rows: list[tuple[Hashable, Hashable, Any]]) -> Any:
    import pandas as pd

    return pd.DataFrame(rows, columns=["task", "worker", "label"])


def _posteriors(probas: Any, labels: list[Any]) -> dict[Hashable, dict[Any, float]]:
    out = {}
    for task, row in probas.iterrows():
        out[task] = {label: float(row.get(label, 0.0)) for label in labels}
    return out


def _pick(posterior: Mapping[Any, float], labels: list[Any]) -> Any:
    best = max(posterior.values())
    return next(label for label in labels if posterior[label] == best)


#: MACE's random restarts: crowd-kit's default is 10, each about as slow as a whole Dawid-Skene
#: fit; three keep the best of three starts at a third of the time.
MACE_RESTARTS = 3


def model_for(method: str, seed: int = 0) -> Any:
    """The crowd-kit aggregator ``aggregate`` fits for ``method``, with its settings."""
    from crowdkit import aggregation as ck  # lazy: pandas and crowd-kit, ~1.5 s

    if method == "majority":
        return ck.MajorityVote()
    if method == "dawid-skene":
        return ck.DawidSkene(n_iter=100)
    if method == "glad":
        return ck.GLAD()
    return ck.MACE(n_restarts=MACE_RESTARTS, random_state=seed)


def _fit(method: str, df: Any, seed: int) -> Any:
    import warnings

    with warnings.catch_warnings():
        # crowd-kit 1.4 calls pandas' inplace= methods, deprecated in pandas 3 (Pandas4Warning, a
        # DeprecationWarning): a warning per EM step, thousands per fit, which only slow it down.
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", FutureWarning)
        return model_for(method, seed).fit(df)


def _reliability(
    method: str, model: Any, workers: list[Hashable], labels: list[Any]
) -> dict[Hashable, tuple[float, dict[Any, dict[Any, float]] | None]]:
    if method == "majority":
        return {w: (float(model.skills_[w]), None) for w in workers}
    if method == "glad":
        return {w: (float(model.alphas_[w]), None) for w in workers}
    if method == "mace":
        # spamming_[:, 1] is the probability of *not* spamming; MACE keeps no worker index: its
        # rows follow the order in which the frame first names each worker (``workers``' order).
        return {w: (float(model.spamming_[i, 1]), None) for i, w in enumerate(workers)}
    # Dawid-Skene: errors_ rows are (worker, said), columns the true label; each column of a
    # worker's block sums to one: P(said | truth).
    errors, priors = model.errors_, model.priors_
    out: dict[Hashable, tuple[float, dict[Any, dict[Any, float]] | None]] = {}
    for w in workers:
        block = errors.loc[w]
        confusion = {
            truth: {said: float(block.at[said, truth]) for said in labels if said in block.index}
            for truth in labels
            if truth in block.columns
        }
        accuracy = float(sum(float(priors[t]) * confusion[t].get(t, 0.0) for t in confusion))
        out[w] = (accuracy, confusion)
    return out


def aggregate(
    rows: Iterable[tuple[Hashable, Hashable, Any]],
    method: str = "dawid-skene",
    *,
    gold: Mapping[Hashable, Any] | None = None,
    seed: int = 0,
) -> Aggregation:
    """One label per item by ``method``; see the module's docstring. Raises ``ValueError`` on an
    unknown method, no judgments, a missing label, or one annotator judging an item twice."""
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    data = list(rows)
    if not data:
        raise ValueError("no judgments to aggregate")
    seen: set[tuple[Hashable, Hashable]] = set()
    for item, annotator, label in data:
        if label is None:
            raise ValueError(f"item {item!r}: {annotator!r} gave no label")
        if (item, annotator) in seen:
            raise ValueError(f"item {item!r}: {annotator!r} judged it more than once")
        seen.add((item, annotator))
    labels = _ordered(label for _, _, label in data)
    df = _frame(data)
    model = _fit(method, df, seed)
    workers = list(dict.fromkeys(annotator for _, annotator, _ in data))
    posteriors = _posteriors(model.probas_, labels)
    per_item = Counter(item for item, _, _ in data)
    result = Aggregation(method=method, labels=labels)
    for item in dict.fromkeys(item for item, _, _ in data):
        posterior = posteriors[item]
        result.items.append(
            ItemLabel(
                item=item,
                label=_pick(posterior, labels),
                posterior=posterior,
                judgments=per_item[item],
            )
        )
    reliability = _reliability(method, model, workers, labels)
    per_annotator = Counter(annotator for _, annotator, _ in data)
    golds = gold_accuracy(data, gold) if gold else {}
    for w in workers:
        value, confusion = reliability[w]
        result.annotators.append(
            Annotator(
                name=w,
                judgments=per_annotator[w],
                reliability=value,
                confusion=confusion,
                gold=golds.get(w),
            )
        )
    return result


# =========================================================================== judgments files


def _key(row: Mapping[str, Any], where: str) -> Hashable:
    item = row.get("item")
    if not isinstance(item, str | int) or isinstance(item, bool) or item == "":
        raise ValueError(f"{where}: 'item' must be an item's id (text or a number)")
    unit = row.get("unit")
    if unit in (None, ""):
        return item
    if not isinstance(unit, str):
        raise ValueError(f"{where}: 'unit' must be text")
    return (item, unit)


def label_text(value: Any) -> Hashable:
    """A judgment's value as a label: objects and lists as their JSON text (keys sorted), so
    equal values are one label; other values as they are."""
    if isinstance(value, dict | list):
        import json

        return json.dumps(value, sort_keys=True, ensure_ascii=False)
    return value  # type: ignore[no-any-return]


def _objects(
    lines: Iterable[str | bytes], name: str, expected: str
) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(where, object)`` for each non-blank line of a JSONL file; ValueError naming the line
    of one that is not a JSON object."""
    import json

    for number, line in enumerate(lines, start=1):
        text = line.decode("utf-8", "replace") if isinstance(line, bytes) else line
        if not text.strip():
            continue
        where = f"{name} line {number}"
        try:
            row = json.loads(text)
        except ValueError as exc:
            raise ValueError(f"{where}: not JSON ({exc.args[0]})") from None
        if not isinstance(row, dict):
            raise ValueError(f"{where}: expected {expected}")
        yield where, row


def read_judgments(
    lines: Iterable[str | bytes], *, name: str = "judgments"
) -> list[tuple[Hashable, Hashable, Any]]:
    """Rows ``(item or (item, unit), annotator, label)`` from a judgments JSONL file (the columns
    of the app's judgments export: ``item``, optional ``unit``, ``annotator``, ``value``; other
    columns ignored). Raises ``ValueError`` naming the line of the first bad row."""
    rows: list[Row] = []
    for where, row in _objects(lines, name, "an object with item, annotator and value"):
        annotator = row.get("annotator")
        if not isinstance(annotator, str | int) or isinstance(annotator, bool) or annotator == "":
            raise ValueError(f"{where}: 'annotator' must name who judged")
        if row.get("value") is None:
            raise ValueError(f"{where}: no 'value'")
        rows.append((_key(row, where), annotator, label_text(row["value"])))
    return rows


def read_gold(lines: Iterable[str | bytes], *, name: str = "gold") -> dict[Hashable, Any]:
    """``{item or (item, unit): answer}`` from a gold JSONL file: ``item``, optional ``unit``,
    and the answer that counts as ``value`` (or ``label``)."""
    gold: dict[Hashable, Any] = {}
    for where, row in _objects(lines, name, "an object with item and value"):
        answer = row.get("value", row.get("label"))
        if answer is None:
            raise ValueError(f"{where}: no 'value' (the answer that counts)")
        key = _key(row, where)
        if key in gold:
            raise ValueError(f"{where}: item {row['item']!r} has a gold answer already")
        gold[key] = label_text(answer)
    return gold
