"""manage.py check_response: prints the findings of one answer as JSON."""

from __future__ import annotations

import json
import subprocess
import sys
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from tests.shared_data import SHARED_DATA, needs_data

ROOT = Path(__file__).resolve().parents[2]

REF = '<tool>{"tool_name": "Reference", "description": "Panel", "params": {"img_index": %d}}</tool>'


DATA = SHARED_DATA


def run(tmp_path: Path, text: str, *args: str) -> list[dict[str, Any]]:
    path = tmp_path / "answer.txt"
    path.write_text(text, encoding="utf-8")
    out = StringIO()
    call_command("check_response", *args, str(path), stdout=out)
    return json.loads(out.getvalue())


def test_atp_findings_as_json(tmp_path: Path) -> None:
    text = f"Hold both buttons {REF % 0} for 3 seconds.\n\nLater.\n\n{REF % 7}"
    findings = run(tmp_path, text, "--syntax", "atp", "--images", "4")
    assert [(f["code"], f["tag"]) for f in findings] == [
        ("mid_sentence", 0),
        ("img_index_out_of_range", 1),
    ]
    for finding in findings:
        assert set(finding) == {"code", "message", "start", "end", "tag", "severity"}
        assert 0 <= finding["start"] < finding["end"] <= len(text)


def test_atp_without_images_skips_range_check(tmp_path: Path) -> None:
    assert run(tmp_path, f"Text.\n\n{REF % 7}", "--syntax", "atp") == []


def test_llmi_inputs_and_image_num(tmp_path: Path) -> None:
    tag = "<imgen>{'source': 'edit', 'description': 'd', 'params': {'img_index': %d, 'prompt': 'p'}}</imgen>"
    text = "\n\n".join(["Intro.", tag % 0, tag % 2])
    findings = run(tmp_path, text, "--syntax", "llmi", "--images", "2", "--image-num", "1")
    assert [f["code"] for f in findings] == ["image_count_constraint"]
    assert findings[0]["score"] == pytest.approx(0.7)
    findings = run(tmp_path, text, "--syntax", "llmi", "--image-num", "Inf")
    assert [(f["code"], f["tag"]) for f in findings] == [
        ("img_index_out_of_range", 0),
        ("img_index_out_of_range", 1),
    ]


def test_clean_answer_prints_empty_list(tmp_path: Path) -> None:
    assert run(tmp_path, "Just text.", "--syntax", "llmi") == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--syntax", "llmi", "--image-num", "-5"], "invalid image-number"),
        (["--syntax", "atp", "--image-num", "2"], "llmi only"),
        (["--syntax", "atp", "--images", "-1"], ">= 0"),
    ],
)
def test_bad_arguments(tmp_path: Path, args: list[str], message: str) -> None:
    with pytest.raises(CommandError, match=message):
        run(tmp_path, "x", *args)


def test_missing_file() -> None:
    with pytest.raises(CommandError, match="no such file"):
        call_command("check_response", "--syntax", "atp", "/nonexistent/answer.txt")


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "bad.txt"
    path.write_bytes(b"\xff\xfe<tool>")
    with pytest.raises(CommandError, match="UTF-8"):
        call_command("check_response", "--syntax", "atp", str(path))


@needs_data("atp")
def test_command_line_on_a_sample_answer(tmp_path: Path) -> None:
    rows = {
        row["trace_id"]: row
        for row in map(json.loads, (DATA / "atp" / "data.jsonl").open(encoding="utf-8"))
    }
    path = tmp_path / "atp_0008.txt"
    path.write_text(rows["atp_0008"]["gt"], encoding="utf-8")
    result = subprocess.run(
        [
            sys.executable,
            "manage.py",
            "check_response",
            "--syntax",
            "atp",
            "--images",
            "5",
            str(path),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    findings = json.loads(result.stdout)
    assert [(f["code"], f["tag"]) for f in findings] == [("img_index_out_of_range", 2)]


# --------------------------------------------------------------------------- every sample answer


def _sample_cases() -> list[Any]:
    """One case per sample answer in ../shared/data/atp and ../shared/data/llmi: the answer,
    the command's arguments as the record gives them, and the findings its flaws call for
    (the expectations of tests/benchmark/tags/test_tag_validate.py)."""
    from tests.benchmark.tags.test_tag_validate import ATP_EXPECTED, LLMI_EXPECTED

    if not (DATA / "atp").is_dir():
        return [pytest.param(None, None, None, marks=pytest.mark.skip("no shared sample data"))]
    cases = []
    for row in map(json.loads, (DATA / "atp" / "data.jsonl").open(encoding="utf-8")):
        args = ["--syntax", "atp", "--images", str(len(row["images"]))]
        cases.append(pytest.param(row["gt"], args, ATP_EXPECTED[row["trace_id"]], id=row["trace_id"]))  # fmt: skip
    mm = json.loads((DATA / "llmi" / "mm_input.json").read_text(encoding="utf-8"))
    for answer in json.loads((DATA / "llmi" / "answers.json").read_text(encoding="utf-8")):
        key = (answer["input_file"], answer["sample_index"])
        inputs = len(mm[key[1] - 1]["images"]) if key[0] == "mm_input.json" else 0
        args = ["--syntax", "llmi", "--images", str(inputs)]
        if key == ("text_only.json", 3):  # "Include exactly four images."
            args += ["--image-num", "4"]
        name = f"llmi-{key[0].removesuffix('.json')}-{key[1]}"
        cases.append(pytest.param(answer["answer"], args, LLMI_EXPECTED[key], id=name))
    return cases


@pytest.mark.parametrize(("text", "args", "expected"), _sample_cases())
def test_every_sample_answer_gives_the_findings_its_flaws_call_for(
    tmp_path: Path, text: str, args: list[str], expected: list[tuple[str, int | None]]
) -> None:
    findings = run(tmp_path, text, *args)
    assert [(f["code"], f["tag"]) for f in findings] == expected
    for f in findings:  # each finding points into the answer
        assert 0 <= f["start"] <= f["end"] <= len(text)
