from collections import Counter

import pytest

from benchmark.plans.subsets import BalancedSubset, balanced_subset


def _items() -> list[tuple[int, list[str]]]:
    items = [(i, ["image generation"]) for i in range(10)]
    items += [(100 + i, ["text generation", "image captioning"]) for i in range(3)]
    items += [(200, ["object detection", "image crop"])]
    return items


def test_no_tool_exceeds_the_cap_and_the_result_is_reproducible() -> None:
    result = balanced_subset(_items(), cap=0.4, seed=3)
    assert result.met
    shares = BalancedSubset.shares(result.after)
    assert max(shares.values()) <= 0.4
    assert result.before["image generation"] == 10
    # recount from the chosen ids: the reported distribution is the truth
    chosen = Counter(t for i, tools in _items() if i in set(result.ids) for t in tools)
    assert dict(sorted(chosen.items())) == result.after
    assert balanced_subset(_items(), cap=0.4, seed=3).ids == result.ids
    assert set(result.ids) | set(result.removed) == {i for i, _ in _items()}


def test_seed_changes_which_items_go_but_not_how_many() -> None:
    a = balanced_subset(_items(), cap=0.4, seed=1)
    b = balanced_subset(_items(), cap=0.4, seed=2)
    assert len(a.ids) == len(b.ids)
    assert a.ids != b.ids


def test_a_cap_that_cannot_be_met_says_so() -> None:
    items = [(i, ["a", "a", "b"]) for i in range(4)]
    result = balanced_subset(items, cap=0.5, seed=0)
    assert not result.met
    assert len(result.ids) == 1


def test_bad_cap_is_refused() -> None:
    with pytest.raises(ValueError):
        balanced_subset(_items(), cap=0)
