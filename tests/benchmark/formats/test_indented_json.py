"""``indented_json`` writes exactly what ``json.dumps(value, ensure_ascii=False, indent=2)``
writes (an agent run's files are stored and keyed by their bytes), whichever encoder it uses."""

from __future__ import annotations

import json
import math

from hypothesis import given
from hypothesis import strategies as st

from benchmark.formats._jsonio import indented_json, plain_json


def _json(value: object) -> bytes:
    return json.dumps(value, ensure_ascii=False, indent=2).encode("utf-8")


KEYS = st.text(max_size=8) | st.integers(-5, 5) | st.booleans()
LEAVES = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12)
)
VALUES = st.recursive(
    LEAVES,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(KEYS, inner, max_size=4)
    ),
    max_leaves=20,
)


@given(VALUES)
def test_indented_json_gives_json_s_bytes(value: object) -> None:
    assert indented_json(value) == _json(value)


def test_indented_json_on_an_agent_run_s_files_and_the_values_json_writes_apart() -> None:
    run = {
        "task_id": "t1",
        "events": [{"tool_name": "crop", "arguments": {"bbox_2d": [0.1, 0.25, 1, 0.9]}}, {}],
        "empty": [[], {}],
        "text": 'é "quoted" \\ back\nline\ttab \x00\x1f\x7f \u2028 😀',
        "usage": {"api_calls": 6, "total_tokens": 10**18},
    }
    assert plain_json(run)
    assert indented_json(run) == _json(run)
    # What orjson writes otherwise, or not at all: json writes them.
    for value in (
        {"small": 1e-05},
        {"big": 1e16},
        [math.nan, math.inf],
        {1: "int key", None: "null key"},
        [2**64],
    ):
        assert indented_json(value) == _json(value)
