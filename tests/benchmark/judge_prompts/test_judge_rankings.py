import pytest

from benchmark.judge_prompts.rankings import rank_correlation, ranks


def test_rho_on_four_models():
    judge = {"A": 90, "B": 80, "C": 70, "D": 60}
    human = {"A": 4.5, "B": 3.0, "C": 3.5, "D": 1.0, "E": 5.0}  # E only in one source
    result = rank_correlation(judge, human)
    # ranks judge 1,2,3,4; human 1,3,2,4 -> d^2 = 0+1+1+0 = 2; rho = 1 - 6*2/(4*15) = 0.8
    assert result.rho == pytest.approx(0.8)
    assert result.n == 4 and 0 < result.p < 1
    assert result.ranking_b == {"A": 1.0, "C": 2.0, "B": 3.0, "D": 4.0}


def test_direction_and_ties():
    fs = {"A": 90, "B": 80, "C": 70}
    mi = {"A": 0.1, "B": 0.5, "C": 0.9}  # fewer missed images is better
    assert rank_correlation(fs, mi, higher_is_better_b=False).rho == pytest.approx(1.0)
    assert ranks({"A": 1, "B": 1, "C": 0}) == {"A": 1.5, "B": 1.5, "C": 3.0}
    tied = rank_correlation({"A": 3, "B": 3, "C": 1, "D": 0}, {"A": 4, "B": 3, "C": 2, "D": 1})
    assert tied.rho is not None and 0.9 < tied.rho < 1


def test_undefined_cases_say_so():
    few = rank_correlation({"A": 1, "B": 2}, {"A": 1, "B": 2, "C": 3})
    assert few.rho is None and few.p is None and "at least 3" in few.note and few.n == 2
    flat = rank_correlation({"A": 1, "B": 1, "C": 1}, {"A": 1, "B": 2, "C": 3})
    assert flat.rho is None and "equal" in flat.note
