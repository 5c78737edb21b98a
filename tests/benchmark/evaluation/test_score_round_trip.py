"""What the ATP-Bench and LLM-I protocols write is scored by ``manage.py score_responses``
with the figures their own summaries give (the demo datasets, imported as a user would)."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from benchmark.datasets import services
from benchmark.evaluation.base import EvalItem, EvalSettings, Outcome, ToolLayer
from benchmark.kinds.base import resolve
from benchmark.models import Item, ItemStatus, Project, Toolset
from tests.benchmark.evaluation.scripted import ScriptedChat

pytestmark = pytest.mark.django_db

DEMO = Path(__file__).resolve().parents[3] / "review" / "demo"


def make_project(name: str, kind: str) -> Project:
    return Project.objects.create(
        name=name,
        kind="interleaved",
        tag_syntax=kind,
        data_format=kind,
        toolset=Toolset.objects.create(name=f"{name} tools"),
    )


def eval_item(item: Item, folder: Path) -> EvalItem:
    record = item.raw_record
    names = [
        entry if isinstance(entry, str) else entry["image"] for entry in record.get("images") or []
    ]
    if isinstance(record.get("image_query"), str):
        names.append(record["image_query"])
    return EvalItem(
        id=item.external_id,
        record=record,
        images={n: (folder / n).read_bytes() for n in names},
    )


def score(project: str, path: str) -> dict[str, Any]:
    out = StringIO()
    call_command("score_responses", "--project", project, path, stdout=out)
    return json.loads(out.getvalue())


def evaluate(project: Project, folder: Path, answer: Any) -> list[Outcome]:
    protocol = resolve(project.benchmark.evaluation)
    outcomes = []
    for item in Item.objects.filter(project=project).order_by("position"):
        it = eval_item(item, folder)
        chat = ScriptedChat(lambda messages, it=it: answer(it))
        truth = it.record if item.status == ItemStatus.VERIFIED else None
        outcomes.append(
            protocol.run_item(
                it, settings=EvalSettings(), chat=chat, tools=ToolLayer(), truth=truth
            )
        )
    return outcomes


def test_atp_answers_written_by_the_protocol_score_the_same_with_the_command(
    tmp_path: Path,
) -> None:
    project = make_project("ATP demo", "atp")
    services.dataset_import(project=project, path=DEMO / "atp")
    Item.objects.filter(project=project).update(status=ItemStatus.VERIFIED)
    protocol = resolve(project.benchmark.evaluation)

    def answer(it: EvalItem) -> str:
        # a model that keeps the ground truth's first half and breaks one call in another
        gt = it.record["gt"]
        half = gt[: len(gt) // 2]
        return half if it.id.endswith(("1", "3")) else gt.replace('"}}</tool>', '"},}</tool>', 1)

    outcomes = evaluate(project, DEMO / "atp", answer)
    summary = protocol.summarize(outcomes)
    (path,) = protocol.write_outputs(outcomes, str(tmp_path), model="pilot-model")

    figures = score(project.name, path)["models"]["pilot-model"]
    assert summary["n_answered"] == figures["n_answers"] == 8
    assert summary["n_scored"] == figures["tool_set"]["n_queries"] == 8
    for key in ("precision", "recall", "f1"):
        assert summary[key] == pytest.approx(figures["tool_set"][key])
    for tool in ("reference", "diffusion", "search", "code", "edit"):
        assert summary[f"adoption_{tool}"] == pytest.approx(figures["adoption"][tool])
    assert summary["format_correctness"] == pytest.approx(figures["format_correctness"])
    assert summary["calls_per_answer"] == pytest.approx(figures["calls_per_answer"]["mean"])
    assert 0 < summary["f1"] < 100  # the scripted model is neither perfect nor hopeless


def test_llmi_answers_written_by_the_protocol_score_the_same_with_the_command(
    tmp_path: Path,
) -> None:
    project = make_project("LLM-I demo", "llmi")
    services.dataset_import(project=project, path=DEMO / "llmi")
    protocol = resolve(project.benchmark.evaluation)
    diff = "<imgen>{'source': 'diffusion', 'description': 'd', 'params': {'prompt': 'p'}}</imgen>"

    def answer(it: EvalItem) -> str:
        # two images for every prompt: right for some constraints, wrong for others
        return f"Intro.\n{diff}\nMore.\n{diff}"

    outcomes = evaluate(project, DEMO / "llmi", answer)
    summary = protocol.summarize(outcomes)
    (path,) = protocol.write_outputs(outcomes, str(tmp_path), model="Qwen3-4B")

    figures = score(project.name, path)["models"]["Qwen3-4B"]
    assert (
        summary["n_answered"]
        == figures["n_answers"]
        == Item.objects.filter(project=project).count()
    )
    assert summary["n_constrained"] == figures["r_rule"]["n_answers"] > 0
    assert summary["r_rule"] == pytest.approx(figures["r_rule"]["mean"])
    assert summary["image_num"] == pytest.approx(
        100 * figures["r_rule"]["n_full"] / figures["r_rule"]["n_answers"]
    )
    assert 0 < summary["r_rule"] < 1
    assert summary["adoption_diffusion"] == pytest.approx(figures["adoption"]["diffusion"])
    assert summary["tool_acc"] == 100.0
