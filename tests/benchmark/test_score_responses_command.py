"""manage.py score_responses: figures per model on the shared sample data, worked out by hand."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation.tag_review.models import ResponseVersion
from benchmark.datasets import services
from benchmark.models import Item, ItemStatus, Project, Response, Toolset
from tests.shared_data import SHARED_DATA, needs_data

pytestmark = pytest.mark.django_db

DATA = SHARED_DATA
needs_atp = needs_data("atp")


def tag(name: str, params: dict[str, Any]) -> str:
    return (
        "<tool>" + json.dumps({"tool_name": name, "description": "d", "params": params}) + "</tool>"
    )


REF = tag("Reference", {"img_index": 0})
EDIT = tag("Edit", {"img_index": 0, "prompt": "circle it"})
BROKEN = '<tool>{"tool_name": "Diffusion", "description": "x", "params": {"prompt": "p"},}</tool>'


def run(*args: Any) -> dict[str, Any]:
    out = StringIO()
    call_command("score_responses", *[str(a) for a in args], stdout=out)
    return json.loads(out.getvalue())


def make_project(name: str, syntax: str) -> Project:
    return Project.objects.create(
        name=name,
        kind="interleaved",
        tag_syntax=syntax,
        data_format=syntax,
        toolset=Toolset.objects.create(name=f"{name} tools"),
    )


def approx(value: float) -> Any:
    return pytest.approx(value, abs=1e-9)


@pytest.fixture
def atp(tmp_path: Path, settings: Any) -> Project:
    """The ATP-Bench sample rows; five verified, atp_0012's ground truth edited to Edit only."""
    settings.MEDIA_ROOT = tmp_path / "media"
    project = make_project("ATP sample", "atp")
    services.dataset_import(project=project, path=DATA / "atp")
    verified = ["atp_0001", "atp_0004", "atp_0006", "atp_0011", "atp_0012"]
    Item.objects.filter(project=project, external_id__in=verified).update(
        status=ItemStatus.VERIFIED
    )
    gt = Response.objects.get(item__project=project, item__external_id="atp_0012")
    ResponseVersion.objects.create(response=gt, number=1, text=gt.text)
    ResponseVersion.objects.create(response=gt, number=2, text=f"Fixed.\n\n{EDIT}")
    return project


@needs_atp
def test_atp_figures_worked_out_by_hand(atp: Project, tmp_path: Path) -> None:
    rows = {
        json.loads(line)["trace_id"]: json.loads(line)
        for line in (DATA / "atp" / "data.jsonl").open()
    }
    answers = [
        # gt {code, reference} (3 calls): P 1, R 1, F1 1
        {"trace_id": "atp_0001", "answer": rows["atp_0001"]["gt"]},
        # gt {reference, search}; pred {reference, diffusion} (2 calls): P .5, R .5, F1 .5
        {"trace_id": "atp_0004", "answer": f"{REF}\n\n{tag('Diffusion', {'prompt': 'p'})}"},
        # gt {reference}: its malformed Edit names no tool; pred {reference, edit}: P .5, R 1
        {"trace_id": "atp_0006", "answer": f"{REF}\n\n{EDIT}"},
        # gt {reference, search}; no answer: 0, 0, 0
        {"trace_id": "atp_0011", "answer": None},
        # the saved version {edit} is the ground truth, not the imported {code, edit}: 1, 1, 1
        {"trace_id": "atp_0012", "answer": EDIT},
        # draft item: adoption and format only; one of its two calls is malformed
        {"trace_id": "atp_0002", "answer": f"{tag('Search', {'query': 'q'})}\n\n{BROKEN}"},
        {"trace_id": "atp_9999", "answer": REF},
    ]
    gpt = tmp_path / "gpt-4o.jsonl"
    gpt.write_text("".join(json.dumps(a) + "\n" for a in answers))
    claude = tmp_path / "other.json"
    claude.write_text(json.dumps([{"model": "claude", **answers[0]}]))

    result = run("--project", "ATP sample", gpt, claude)

    m = result["models"]["gpt-4o"]
    assert m["n_answers"] == 6
    assert (m["n_calls"], m["n_well_formed"]) == (10, 9)
    assert m["format_correctness"] == approx(90.0)
    assert m["calls_per_answer"]["histogram"] == {"0": 1, "1": 1, "2": 3, "3": 1}
    assert m["calls_per_answer"]["mean"] == approx(10 / 6)
    assert m["adoption"] == {
        "reference": approx(50.0),
        "diffusion": approx(100 / 6),
        "search": approx(100 / 6),
        "code": approx(100 / 6),
        "edit": approx(100 / 3),
    }
    assert m["tool_set"]["n_queries"] == 5
    assert m["tool_set"]["n_missing"] == 0
    assert m["tool_set"]["precision"] == approx(60.0)  # (1 + .5 + .5 + 0 + 1) / 5
    assert m["tool_set"]["recall"] == approx(70.0)  # (1 + .5 + 1 + 0 + 1) / 5
    assert m["tool_set"]["f1"] == approx(100 * (1 + 0.5 + 2 / 3 + 0 + 1) / 5)
    edit = m["per_tool"]["edit"]  # model: 0006, 0012; ground truth: 0012
    assert (edit["precision"], edit["recall"]) == (50.0, 100.0)
    assert m["r_rule"]["n_answers"] == 0

    c = result["models"]["claude"]
    assert c["tool_set"]["f1"] == 100.0 and c["tool_set"]["n_missing"] == 4
    assert result["overall"]["n_answers"] == 7 and result["overall"]["n_models"] == 2
    assert result["overall"]["tool_set"]["n_missing"] == 4

    gt = result["ground_truth"]
    assert gt["n_items"] == 5
    assert (gt["n_calls"], gt["n_well_formed"]) == (3 + 2 + 4 + 2 + 1, 11)
    assert (result["n_read"], result["n_scored"], result["n_unknown"]) == (8, 7, 1)
    assert result["unknown_ids"] == ["atp_9999"]


@needs_atp
def test_only_verified(atp: Project, tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    path.write_text(
        json.dumps({"trace_id": "atp_0001", "answer": REF})
        + "\n"
        + json.dumps({"trace_id": "atp_0002", "answer": REF})
        + "\n"
    )
    result = run("--project", "ATP sample", "--only-verified", path)
    assert result["models"]["m"]["n_answers"] == 1
    assert result["unknown_ids"] == ["atp_0002"]


@needs_atp
def test_llmi_sample_answers(tmp_path: Path, settings: Any) -> None:
    settings.MEDIA_ROOT = tmp_path / "media"
    project = make_project("LLM-I sample", "llmi")
    services.dataset_import(project=project, path=DATA / "llmi" / "text_only.json")
    services.dataset_import(project=project, path=DATA / "llmi" / "mm_input.json")
    # LLMI-Bench rows carry no image-number constraint; give four of them one
    for external_id, image_num in [
        ("text_only#3", 4),  # 5 search images: 1 - 0.3 = 0.7
        ("text_only#4", 3),  # the edit of image 3 fails: 2 of 3
        ("mm_input#1", 3),  # 1 input; edit 0, edit 1 (the first generated image), diffusion: 1
        ("mm_input#4", 2),  # 2 inputs; edit 0, edit 2 (= tag 0): 1
    ]:
        Item.objects.filter(project=project, external_id=external_id).update(
            constraints={"image_num": image_num}
        )

    result = run("--project", "LLM-I sample", DATA / "llmi" / "answers.json")

    assert list(result["models"]) == ["answers"]
    m = result["models"]["answers"]
    assert m["n_answers"] == 10
    # calls per answer 2, 3, 5, 3, 3 | 3, 2, 3, 2, 1
    assert m["calls_per_answer"]["histogram"] == {"0": 0, "1": 1, "2": 3, "3": 5, "4": 0, "5": 1}
    assert m["calls_per_answer"]["mean"] == approx(2.7)
    # not well-formed: text_only #2's diffusion without description, mm #3's unclosed tag
    assert (m["n_calls"], m["n_well_formed"]) == (27, 25)
    assert m["format_correctness"] == approx(2500 / 27)
    assert m["adoption"] == {
        "search": approx(20.0),
        "diffusion": approx(30.0),  # mm #3's unclosed diffusion names no tool
        "code": approx(50.0),
        "edit": approx(60.0),
    }
    assert m["tool_set"]["n_queries"] == 0 and m["tool_set"]["f1"] is None  # no ground truth
    assert m["r_rule"]["n_answers"] == 4
    assert m["r_rule"]["mean"] == approx((0.7 + 2 / 3 + 1 + 1) / 4)
    assert m["r_rule"]["n_full"] == 2
    assert result["n_unknown"] == 0


def test_unknown_project_fails_with_a_message(db: None, tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    path.write_text('{"trace_id": "a", "answer": "x"}\n')
    make_project("Real one", "atp")
    with pytest.raises(CommandError, match="no project named 'Nope' \\(projects: Real one\\)"):
        run("--project", "Nope", path)


def test_bad_input_fails_with_file_line_and_field(db: None, tmp_path: Path) -> None:
    make_project("P", "atp")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"trace_id": "a", "answer": "x"}\n{"trace_id": "b", "answer": 3}\n')
    with pytest.raises(CommandError, match="bad.jsonl, field 'answer': line 2: must be a string"):
        run("--project", "P", bad)
    with pytest.raises(CommandError, match="no such file or folder"):
        run("--project", "P", tmp_path / "missing.json")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(CommandError, match="no .json or .jsonl files"):
        run("--project", "P", empty)


def test_plan_projects_are_refused(db: None, tmp_path: Path) -> None:
    Project.objects.create(
        name="Plans", kind="plan", data_format="mms", toolset=Toolset.objects.create(name="t")
    )
    path = tmp_path / "m.jsonl"
    path.write_text('{"id": "a", "answer": "x"}\n')
    with pytest.raises(CommandError, match="only interleaved projects"):
        run("--project", "Plans", path)


def test_a_folder_of_answer_files(db: None, tmp_path: Path) -> None:
    project = make_project("P", "atp")
    Item.objects.create(project=project, external_id="a", query="q")
    folder = tmp_path / "runs"
    folder.mkdir()
    (folder / "m1.jsonl").write_text(json.dumps({"id": "a", "answer": REF}) + "\n")
    (folder / "m2.json").write_text(json.dumps([{"id": "a", "answer": ""}]))
    (folder / "notes.txt").write_text("ignored")
    result = run("--project", "P", folder)
    assert sorted(result["models"]) == ["m1", "m2"]
    assert result["models"]["m1"]["adoption"]["reference"] == 100.0
