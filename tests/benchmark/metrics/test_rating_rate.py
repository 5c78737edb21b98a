"""Agreement rates on the 0-2 rating scale (ATP-Bench §6): mean rating / 2 per group, with a
seeded bootstrap over units, and per rater. Pure: no database."""

from __future__ import annotations

import pytest

from benchmark.metrics.rating_rate import rating_rates


def test_agreement_rate_is_mean_rating_over_two() -> None:
    rows = [("u1", "a", "chief", 2), ("u2", "a", "chief", 2), ("u3", "b", "chief", 1)]
    rows.append(("u4", "b", "chief", 0))
    figures = rating_rates(rows, groups=["precision", "chief"], n_resamples=200)
    precision, chief = figures["groups"]
    assert precision["rate"] is None and precision["n_units"] == 0
    assert chief["rate"] == 62.5 and chief["n_units"] == 4 and chief["n_ratings"] == 4
    assert chief["raters"] == {"a": {"rate": 100.0, "n": 2}, "b": {"rate": 25.0, "n": 2}}
    low, high = chief["ci"]["low"], chief["ci"]["high"]
    assert 0 <= low < 62.5 < high <= 100
    again = rating_rates(rows, groups=["precision", "chief"], n_resamples=200)
    assert again["groups"][1]["ci"] == chief["ci"]  # seeded
    with pytest.raises(ValueError, match="not on the scale"):
        rating_rates([("u", "a", "chief", 3)])


def test_the_bootstrap_resamples_units_with_all_their_ratings() -> None:
    # One unit rated 2 by everyone and one rated 0 by everyone: every resample is one of
    # 0 %, 50 % or 100 %, never a mix within a unit.
    rows = [("u1", r, "g", 2) for r in "abc"] + [("u2", r, "g", 0) for r in "abc"]
    figures = rating_rates(rows, n_resamples=300)
    assert figures["groups"][0]["rate"] == 50.0
    assert figures["groups"][0]["ci"]["low"] == 0.0 and figures["groups"][0]["ci"]["high"] == 100.0
    one = rating_rates([("u1", "a", "g", 1), ("u1", "b", "g", 2)], n_resamples=50)
    assert one["groups"][0]["rate"] == 75.0
    assert (one["groups"][0]["ci"]["low"], one["groups"][0]["ci"]["high"]) == (75.0, 75.0)
