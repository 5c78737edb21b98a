"""Model calls as release files (benchmark.evaluation.record_files, pure): written and read
back unchanged, key order of the messages kept, every bad line named by line and field, and no
input raising anything but FormatError."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmark.evaluation.record_files import (
    CALLS_DIR,
    CALLS_FILE,
    CallRecord,
    calls_read,
    calls_write,
)
from benchmark.formats import FormatError

IMAGE = "sha256:" + "ab" * 32


def _calls() -> list[CallRecord]:
    return [
        CallRecord(
            item="t1", endpoint="http://127.0.0.1:9/v1", model="fake-vl-7b",
            messages=[{"role": "user", "content": [{"type": "text", "text": "look"},
                      {"type": "image_url", "image_url": {"url": IMAGE}}]}],
            tools=[{"type": "function", "function": {"name": "crop"}}], params={"seed": 1},
            answer="", answer_model="fake-vl-7b-0401",
            tool_calls=[{"id": "c1", "name": "crop", "arguments": "{\"bbox_2d\": [1, 2]}"}],
            prompt_tokens=10, completion_tokens=None, latency_ms=12,
        ),
        CallRecord(
            item="t2", endpoint="http://127.0.0.1:9/v1", model="fake-vl-7b",
            messages=[{"role": "user", "content": "q"}, {"role": "tool", "content": "{\"z\": 1}"}],
            tools=[], params={}, answer="<answer>4</answer>",
        ),
    ]  # fmt: skip


def test_calls_are_read_back_as_written(tmp_path: Path) -> None:
    calls = _calls()
    assert calls_write(tmp_path, calls) == 2
    assert [c for _, c in calls_read(tmp_path)] == calls
    line = (tmp_path / CALLS_DIR / CALLS_FILE).read_text().splitlines()[0]
    # Images stay references by hash; the message's keys keep their order.
    assert IMAGE in line and line.index('"role"') < line.index('"content"')


def test_no_calls_write_nothing_and_read_nothing(tmp_path: Path) -> None:
    assert calls_write(tmp_path, []) == 0
    assert not (tmp_path / CALLS_DIR).exists()
    assert list(calls_read(tmp_path)) == []


def _line(**changes: Any) -> str:
    value = {"item": "t1", "endpoint": "http://x/v1", "model": "m",
             "messages": [{"role": "user", "content": "q"}], "answer": "a"}  # fmt: skip
    value.update(changes)
    return json.dumps(value)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("not json", "line 1: not valid JSON"),
        ("[1]", "line 1: expected a JSON object"),
        (_line(item=""), "line 1, field 'item': expected a non-empty string"),
        (_line(model=3), "line 1, field 'model': expected a non-empty string"),
        (_line(messages="hi"), "line 1, field 'messages': expected a list of objects"),
        (_line(messages=[]), "line 1, field 'messages': expected a list of objects"),
        (_line(tool_calls=[1]), "line 1, field 'tool_calls': expected a list of objects"),
        (_line(params=[1]), "line 1, field 'params': expected an object"),
        (_line(answer=5), "line 1, field 'answer': expected a string"),
        (_line(prompt_tokens=-1), "line 1, field 'prompt_tokens': expected a whole number"),
        (_line(latency_ms=True), "line 1, field 'latency_ms': expected a whole number"),
    ],
)
def test_a_bad_line_is_named_by_line_and_field(tmp_path: Path, line: str, message: str) -> None:
    (tmp_path / CALLS_DIR).mkdir()
    (tmp_path / CALLS_DIR / CALLS_FILE).write_text(line + "\n")
    with pytest.raises(FormatError) as caught:
        list(calls_read(tmp_path))
    assert message in str(caught.value) and f"{CALLS_DIR}/{CALLS_FILE}" in str(caught.value)


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.sampled_from(["item", "endpoint", "model", "messages", "tools",
                                        "params", "answer", "tool_calls", "prompt_tokens",
                                        "latency_ms"]), _json))  # fmt: skip
def test_no_line_raises_anything_but_a_format_error(value: dict[str, Any]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / CALLS_DIR).mkdir()
        (root / CALLS_DIR / CALLS_FILE).write_text(json.dumps(value) + "\n")
        try:
            calls = [c for _, c in calls_read(root)]
        except FormatError:
            return
        # What reads back writes back to the same calls.
        other = root / "again"
        calls_write(other, calls)
        assert [c for _, c in calls_read(other)] == calls
