"""``manage.py render_answers``: one standalone HTML file per answer and index.json with each
call's status and produced image; --model; imported answer files; bad input."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from benchmark.models import Origin, Project
from benchmark.rendering import SandboxCodeRunner
from review.answer_rendering import services
from review.answer_rendering.models import RenderedAnswer
from tests.factories import ImageFactory, ItemFactory, ResponseFactory, image_ref
from tests.image_server import fake_run_code, png_for

pytestmark = pytest.mark.django_db

CODE = "import matplotlib.pyplot as plt\nplt.bar([1], [2])\nplt.show()"


def atp(tool: str, **params: Any) -> str:
    return (
        "<tool>" + json.dumps({"tool_name": tool, "description": "d", "params": params}) + "</tool>"
    )


@pytest.fixture(autouse=True)
def sandbox(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(services, "code_runner", lambda: SandboxCodeRunner(fake_run_code))


@pytest.fixture
def answers(project: Project) -> dict[str, Any]:
    doc = ImageFactory(projects=[project])
    item = ItemFactory(project=project, external_id="q/1", image_refs=[image_ref(doc, position=0)])
    text = "\n\n".join(
        [
            "Intro.",
            atp("Reference", img_index=0),
            atp("Code", code=CODE),
            atp("Search", query="owl"),
            '<tool>{"tool_name": "Reference", "params": {</tool>',
        ]
    )
    for model in ("alpha", "beta/2"):
        ResponseFactory(
            item=item, origin=Origin.MODEL, model_name=model, key=f"model:{model}", text=text
        )
    return {"doc": doc, "item": item}


def test_writes_one_file_per_answer_and_an_index(
    project: Project, answers: dict[str, Any], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    call_command("render_answers", str(out), project=project.name)
    index = json.loads((out / "index.json").read_text())
    assert index["project"] == project.name and index["providers"] == {"code": "sandbox"}
    assert sorted(a["file"] for a in index["answers"]) == ["q-1__alpha.html", "q-1__beta-2.html"]
    code_sha = hashlib.sha256(png_for("code:" + CODE)).hexdigest()
    for entry in index["answers"]:
        assert [c["status"] for c in entry["calls"]] == [
            "rendered",
            "rendered",
            "placeholder",
            "failed",
        ]
        assert [c["image"] for c in entry["calls"]] == [answers["doc"].sha256, code_sha, None, None]
        assert [c["tool"] for c in entry["calls"]][:3] == ["reference", "code", "search"]
        assert entry["calls"][3]["reason"] == "malformed"
        html = (out / entry["file"]).read_text()
        assert html.count('<img src="data:image/png;base64,') == 2
        assert "Search not executed" in html and "owl" in html
        assert "<script" not in html
    assert sorted(p.name for p in out.iterdir()) == [
        "index.json",
        "q-1__alpha.html",
        "q-1__beta-2.html",
    ]


def test_model_filter_and_a_second_run_from_the_cache(
    project: Project, answers: dict[str, Any], tmp_path: Path, capsys: Any
) -> None:
    call_command("render_answers", str(tmp_path / "a"), project=project.name, models=["alpha"])
    index = json.loads((tmp_path / "a" / "index.json").read_text())
    assert [a["model"] for a in index["answers"]] == ["alpha"]
    call_command("render_answers", str(tmp_path / "b"), project=project.name, models=["alpha"])
    assert "0 rendered anew, 1 unchanged" in capsys.readouterr().err
    assert RenderedAnswer.objects.count() == 1
    assert (tmp_path / "a" / "q-1__alpha.html").read_text().split("<h1>")[1] == (
        tmp_path / "b" / "q-1__alpha.html"
    ).read_text().split("<h1>")[1]


def test_imports_answer_files_first(
    project: Project, answers: dict[str, Any], tmp_path: Path
) -> None:
    file = tmp_path / "gamma.jsonl"
    file.write_text(
        json.dumps({"id": "q/1", "model": "gamma", "answer": atp("Reference", img_index=0)})
    )
    call_command("render_answers", str(tmp_path / "out"), project=project.name, answers=[file])
    index = json.loads((tmp_path / "out" / "index.json").read_text())
    assert [a["model"] for a in index["answers"]] == ["gamma"]


def test_bad_input_exits_with_a_message(
    project: Project, answers: dict[str, Any], tmp_path: Path
) -> None:
    with pytest.raises(CommandError, match="no project named 'nope'"):
        call_command("render_answers", str(tmp_path), project="nope")
    with pytest.raises(CommandError, match="no model answers of zeta"):
        call_command("render_answers", str(tmp_path), project=project.name, models=["zeta"])
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    with pytest.raises(CommandError, match="is not a folder"):
        call_command("render_answers", str(a_file), project=project.name)


def test_readme_order_answers_then_out_dir_and_repeated_options(
    project: Project, answers: dict[str, Any], tmp_path: Path
) -> None:
    """The order docs/reference/commands.md prints, ``--answers FILE OUT_DIR``: each --answers
    (and --model) takes one value and may be repeated, so OUT_DIR is not taken for an answer
    file (issue 22, item 14)."""
    files = []
    for model in ("gamma", "delta"):
        file = tmp_path / f"{model}.jsonl"
        file.write_text(json.dumps({"id": "q/1", "model": model, "answer": "Plain text."}))
        files.append(str(file))
    out = tmp_path / "out"
    call_command(
        "render_answers",
        "--project",
        project.name,
        "--model",
        "gamma",
        "--model",
        "delta",
        "--answers",
        files[0],
        "--answers",
        files[1],
        str(out),
    )
    index = json.loads((out / "index.json").read_text())
    assert sorted(a["model"] for a in index["answers"]) == ["delta", "gamma"]
