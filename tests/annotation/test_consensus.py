from annotation.judgment_tasks.consensus import Rule, Verdict, decide, normalize_answer


def accept_one(v: object) -> bool:
    return v == 1


def test_pending_until_all_judgments_are_in() -> None:
    out = decide(Rule.UNANIMOUS, [1, 1], needed=3, accept=accept_one)
    assert out.verdict is Verdict.PENDING


def test_all_required_accepts_only_when_everyone_gives_the_value() -> None:
    assert (
        decide(Rule.ALL_REQUIRED, [1, 1, 1], needed=3, accept=accept_one, required=1).verdict
        is Verdict.ACCEPTED
    )
    assert (
        decide(Rule.ALL_REQUIRED, [0, 0, 0], needed=3, accept=accept_one, required=1).verdict
        is Verdict.REJECTED
    )
    split = decide(Rule.ALL_REQUIRED, [1, 1, 0], needed=3, accept=accept_one, required=1)
    assert split.verdict is Verdict.DISPUTED
    assert "1" in split.reason and "0" in split.reason


def test_majority_and_unanimous() -> None:
    keep = lambda v: v == "keep"  # noqa: E731
    assert (
        decide(Rule.MAJORITY, ["keep", "keep", "remove"], needed=3, accept=keep).verdict
        is Verdict.ACCEPTED
    )
    assert (
        decide(Rule.MAJORITY, ["remove", "remove", "keep"], needed=3, accept=keep).verdict
        is Verdict.REJECTED
    )
    assert decide(Rule.MAJORITY, ["a", "b"], needed=2, accept=keep).verdict is Verdict.DISPUTED
    assert (
        decide(Rule.UNANIMOUS, ["keep", "keep", "remove"], needed=3, accept=keep).verdict
        is Verdict.DISPUTED
    )
    assert decide(Rule.UNANIMOUS, ["keep"] * 3, needed=3, accept=keep).value == "keep"


def test_author_plus_two_compares_normalized_answers() -> None:
    out = decide(
        Rule.AUTHOR_PLUS_TWO, ["Cu", " cu. "], needed=2, accept=accept_one, author_value="CU"
    )
    assert out.verdict is Verdict.ACCEPTED
    out = decide(Rule.AUTHOR_PLUS_TWO, ["Cu", "Zn"], needed=2, accept=accept_one, author_value="Cu")
    assert out.verdict is Verdict.DISPUTED


def test_normalize_answer_keeps_decimals() -> None:
    assert normalize_answer(" 1,284.50! ") == "1 284.50"
    assert normalize_answer("Café.") == "cafe"


def test_median_rule_takes_the_median_per_field_once_all_are_in() -> None:
    assert decide(Rule.MEDIAN, [4, 2], needed=3, accept=accept_one).verdict is Verdict.PENDING
    out = decide(Rule.MEDIAN, [4, 2, 5], needed=3, accept=accept_one)
    assert (out.verdict, out.value) == (Verdict.ACCEPTED, 4)
    assert out.reason == "median of 3 ratings"
    assert decide(Rule.MEDIAN, [4, 1], needed=2, accept=accept_one).value == 2.5
    triples = [
        {"inappr": 0, "mi": 2, "fs": 4},
        {"inappr": 3, "mi": 0, "fs": 5},
        {"inappr": 1, "mi": 1, "fs": 1},
    ]
    assert decide(Rule.MEDIAN, triples, needed=3, accept=accept_one).value == {
        "inappr": 1,
        "mi": 1,
        "fs": 4,
    }


def test_median_rule_refuses_text() -> None:
    import pytest

    with pytest.raises(ValueError, match="numeric"):
        decide(Rule.MEDIAN, ["a", "b"], needed=2, accept=accept_one)
