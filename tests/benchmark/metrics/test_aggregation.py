"""Label aggregation (issue 26): each method's labels, posteriors and reliabilities equal what
crowd-kit itself gives on the same judgments; Dawid-Skene's reliability is the expected accuracy
under its estimated prior; gold accuracy and its Wilson interval are hand-checked; bad input
raises ValueError naming the row."""

from __future__ import annotations

import random

import pandas as pd
import pytest
from crowdkit import aggregation as ck

from benchmark.metrics.aggregation import (
    METHODS,
    aggregate,
    gold_accuracy,
    model_for,
    read_gold,
    read_judgments,
    wilson_interval,
)

LABELS = ["no", "partly", "yes"]


def simulated(
    skills: list[float], items: int = 60, seed: int = 3
) -> tuple[list[tuple[str, str, str]], dict[str, str]]:
    """Judgments of annotators who say the truth with probability ``skill`` and a uniformly
    random other label otherwise; every annotator judges every item."""
    rng = random.Random(seed)
    truth = {f"i{n:03d}": rng.choice(LABELS) for n in range(items)}
    rows = []
    for item, label in truth.items():
        for a, skill in enumerate(skills):
            said = label if rng.random() < skill else rng.choice([x for x in LABELS if x != label])
            rows.append((item, f"a{a}", said))
    return rows, truth


def frame(rows: list[tuple[str, str, str]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["task", "worker", "label"])


def untied(probas: pd.DataFrame) -> list[str]:
    """The items whose top posterior is unique (crowd-kit breaks ties its own way)."""
    top = probas.max(axis=1)
    return [t for t in probas.index if (probas.loc[t] == top[t]).sum() == 1]


@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::FutureWarning")
@pytest.mark.parametrize("method", METHODS)
def test_labels_and_posteriors_equal_crowd_kit(method: str) -> None:
    # GLAD and MACE are slow in crowd-kit (pandas inside scipy's optimiser): few items for them.
    items = 30 if method in ("majority", "dawid-skene") else 10
    rows, _ = simulated([0.9, 0.75, 0.6, 0.45, 0.4], items=items)
    ours = aggregate(rows, method)
    theirs = model_for(method).fit(frame(rows))
    by_item = {i.item: i for i in ours.items}
    assert set(by_item) == set(theirs.probas_.index)
    for item in untied(theirs.probas_):
        assert by_item[item].label == theirs.labels_[item]
        for label in ours.labels:
            assert by_item[item].posterior[label] == pytest.approx(
                float(theirs.probas_.loc[item].get(label, 0.0))
            )
    assert all(i.judgments == 5 for i in ours.items)


@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::FutureWarning")
def test_reliabilities_are_the_librarys_estimates() -> None:
    rows, _ = simulated([0.9, 0.7, 0.5, 0.35], items=30)
    df = frame(rows)
    names = ["a0", "a1", "a2", "a3"]

    mv = ck.MajorityVote().fit(df)
    assert isinstance(model_for("mace"), ck.MACE) and isinstance(model_for("glad"), ck.GLAD)
    ours = {a.name: a.reliability for a in aggregate(rows, "majority").annotators}
    assert ours == pytest.approx({n: float(mv.skills_[n]) for n in names})

    few = [row for row in rows if row[0] < "i010"]  # GLAD and MACE are slow: 10 items
    glad = model_for("glad").fit(frame(few))
    ours = {a.name: a.reliability for a in aggregate(few, "glad").annotators}
    assert ours == pytest.approx({n: float(glad.alphas_[n]) for n in names})

    mace = model_for("mace").fit(frame(few))  # rows of spamming_: workers in order of appearance
    ours = {a.name: a.reliability for a in aggregate(few, "mace").annotators}
    assert ours == pytest.approx({n: float(mace.spamming_[i, 1]) for i, n in enumerate(names)})

    ds = ck.DawidSkene(n_iter=100).fit(df)
    assert isinstance(model_for("dawid-skene"), ck.DawidSkene)
    result = aggregate(rows, "dawid-skene")
    for a in result.annotators:
        block = ds.errors_.loc[a.name]
        assert a.confusion is not None
        for truth in LABELS:
            for said in LABELS:
                assert a.confusion[truth][said] == pytest.approx(float(block.at[said, truth]))
            assert sum(a.confusion[truth].values()) == pytest.approx(1.0)
        expected = sum(float(ds.priors_[t]) * float(block.at[t, t]) for t in LABELS)
        assert a.reliability == pytest.approx(expected)


def test_dawid_skene_ranks_annotators_by_their_true_skill_and_beats_majority() -> None:
    skills = [0.95, 0.8, 0.55, 0.4, 0.35]
    rows, truth = simulated(skills, items=200, seed=11)
    ds = aggregate(rows, "dawid-skene")
    ranked = [a.name for a in sorted(ds.annotators, key=lambda a: -(a.reliability or 0))]
    assert ranked == ["a0", "a1", "a2", "a3", "a4"]
    by_skill = {a.name: a.reliability for a in ds.annotators}
    assert by_skill["a0"] == pytest.approx(0.95, abs=0.06)

    def correct(result) -> int:  # type: ignore[no-untyped-def]
        return sum(i.label == truth[i.item] for i in result.items)

    assert correct(ds) > correct(aggregate(rows, "majority"))


def test_majority_posterior_is_the_share_of_votes_and_ties_go_to_the_first_label() -> None:
    rows = [
        ("q1", "ann", "yes"), ("q1", "bob", "yes"), ("q1", "cat", "no"),
        ("q2", "ann", "no"), ("q2", "bob", "yes"),
    ]  # fmt: skip
    result = aggregate(rows, "majority")
    q1, q2 = result.items
    assert (q1.label, q1.posterior, q1.confidence) == (
        "yes",
        {"no": pytest.approx(1 / 3), "yes": pytest.approx(2 / 3)},
        pytest.approx(2 / 3),
    )
    assert q2.label == "no"  # a tie: the label that sorts first, whatever the rows' order
    assert aggregate(list(reversed(rows)), "majority").label_of()["q2"] == "no"
    # ann agrees with the majority on q1 and (by the tie) q2; cat on neither of hers.
    skills = {a.name: a.reliability for a in result.annotators}
    assert skills["cat"] == 0.0


def test_units_and_number_labels() -> None:
    rows = [(("i1", "fs"), "ann", 2), (("i1", "fs"), "bob", 2), (("i1", "sr"), "ann", 0)]
    result = aggregate(rows, "dawid-skene")
    assert result.labels == [0, 2]
    assert result.label_of() == {("i1", "fs"): 2, ("i1", "sr"): 0}


def test_gold_accuracy_with_a_wilson_interval() -> None:
    rows = [(f"g{n}", "ann", "yes" if n < 8 else "no") for n in range(10)]
    rows += [("g0", "bob", "no"), ("other", "bob", "yes")]
    gold = {f"g{n}": "yes" for n in range(10)}
    figures = gold_accuracy(rows, gold)
    assert figures["ann"]["correct"] == 8 and figures["ann"]["total"] == 10
    assert figures["ann"]["accuracy"] == 0.8
    # Wilson score interval for 8/10 at 95 %: (0.4902, 0.9433)
    low, high = figures["ann"]["interval"]
    assert (round(low, 4), round(high, 4)) == (0.4902, 0.9433)
    assert figures["bob"] == {
        "correct": 0, "total": 1, "accuracy": 0.0, "interval": list(wilson_interval(0, 1)),
    }  # fmt: skip
    result = aggregate(rows, "majority", gold=gold)
    assert {a.name: a.gold["total"] for a in result.annotators if a.gold} == {"ann": 10, "bob": 1}


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([], "no judgments"),
        ([("i", "ann", "yes"), ("i", "ann", "no")], "'ann' judged it more than once"),
        ([("i", "ann", None)], "'ann' gave no label"),
    ],
)
def test_bad_rows_raise_value_error(rows, message: str) -> None:  # type: ignore[no-untyped-def]
    for method in METHODS:
        with pytest.raises(ValueError, match=message):
            aggregate(rows, method)
    with pytest.raises(ValueError, match="unknown method 'em'"):
        aggregate([("i", "ann", "yes")], "em")


def test_read_judgments_file_and_its_errors() -> None:
    lines = [
        '{"item": "q1", "annotator": "ann", "value": 1, "comment": "fine"}',
        "",
        '{"item": "q1", "unit": "fs", "annotator": "bob", "value": {"b": 1, "a": 2}}',
    ]
    assert read_judgments(lines) == [("q1", "ann", 1), (("q1", "fs"), "bob", '{"a": 2, "b": 1}')]
    bad = [
        (['{"item": "q1", "annotator": "ann"}'], "judgments line 1: no 'value'"),
        (['{"item": "q1", "value": 1}'], "line 1: 'annotator' must name who judged"),
        (['{"annotator": "a", "value": 1}'], "line 1: 'item' must be"),
        (["", "[1, 2]"], "line 2: expected an object"),
        (["{oops"], "line 1: not JSON"),
    ]
    for lines, message in bad:
        with pytest.raises(ValueError, match=message):
            read_judgments(lines)
    assert read_gold(['{"item": "q1", "value": "yes"}', '{"item": "q2", "label": "no"}']) == {
        "q1": "yes",
        "q2": "no",
    }
    with pytest.raises(ValueError, match="gold line 2: item 'q1' has a gold answer already"):
        read_gold(['{"item": "q1", "value": 1}', '{"item": "q1", "value": 0}'])
