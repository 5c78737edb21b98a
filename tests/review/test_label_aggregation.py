"""Label aggregation on the agreement page and from the command line (issue 26): Dawid-Skene and
majority vote over a task's judgments, each annotator's reliability and confusion matrix, the
items where the aggregated label differs from the consensus rule listed for a reviewer;
``manage.py aggregate`` for a task or for the app's own judgments export, with gold."""

from __future__ import annotations

import json
import random
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from annotation.judgment_tasks.models import JudgmentTask
from benchmark.metrics.aggregation import aggregate
from benchmark.models import Item, Project
from review.agreement.services import judgments_jsonl
from tests.factories import (
    ItemFactory,
    JudgmentFactory,
    JudgmentTaskFactory,
    OutcomeFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db

HX = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "label-aggregation"}


def _task(project: Project) -> tuple[JudgmentTask, dict[str, int]]:
    """A binary task on 24 items judged by four annotators: ``good1`` and ``good2`` say the
    truth, ``flip`` always says the opposite, ``noisy`` is right on odd items only. Item q00 has a
    reviewer's settled outcome of 0 although the truth (and everyone but flip) says 1."""
    task = JudgmentTaskFactory(project=project, scheme="binary", overlap=4, consensus="majority")
    people = {name: UserFactory(username=name) for name in ("good1", "good2", "flip", "noisy")}
    rng = random.Random(5)
    truth = {}
    for n in range(24):
        item = ItemFactory(project=project, external_id=f"q{n:02d}")
        label = 1 if n == 0 else rng.choice([0, 1])
        truth[item.external_id] = label
        said = {
            "good1": label,
            "good2": label,
            "flip": 1 - label,
            "noisy": label if n % 2 else 1 - label,
        }
        for name, value in said.items():
            JudgmentFactory(task=task, item=item, user=people[name], value=value)
        if n == 0:
            OutcomeFactory(task=task, item=item, verdict="rejected", value=0)
    return task, truth


def _page(client: Any, task: JudgmentTask, query: str = "", **headers: Any) -> Any:
    return client.get(reverse("review:agreement", args=[task.pk]) + query, **headers)


def test_reviewer_aggregates_a_task_by_dawid_skene(project, clients) -> None:  # type: ignore[no-untyped-def]
    task, truth = _task(project)
    page = _page(clients["reviewer"], task, "?method=dawid-skene")
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="aggregation-annotators"' in html
    reliability = {a.name: a.reliability for a in page.context["aggregation"].annotators}
    assert reliability["good1"] > 0.9 and reliability["flip"] < 0.1
    # Best first: the annotators table lists good1/good2 before noisy before flip.
    order = [html.index(f'data-annotator="{n}"') for n in ("good1", "noisy", "flip")]
    assert order == sorted(order)
    # q00: the reviewer's outcome (0) differs from the aggregated label (1): listed, linked.
    differs = page.context["aggregation_differs"]
    assert [(d["external_id"], d["consensus"], d["label"]) for d in differs] == [
        ("q00", "0 · no", "1 · yes")
    ]
    item = Item.objects.get(project=project, external_id="q00")
    assert reverse("annotation:judge", args=[task.pk, item.pk]) in html
    # Every estimated confusion matrix is on the page (rows: truth, columns: what they say).
    assert html.count("data-confusion=") == 4
    assert page.context["aggregation"].n_items == 24


def test_majority_on_the_page_and_the_fragment_alone(project, clients) -> None:  # type: ignore[no-untyped-def]
    task, _ = _task(project)
    fragment = _page(clients["reviewer"], task, "?method=majority", **HX)
    assert fragment.status_code == 200
    html = fragment.content.decode()
    assert html.lstrip().startswith('<section class="card" id="label-aggregation"')
    assert "Pairs of annotators" not in html
    assert "data-confusion=" not in html  # majority vote estimates no confusion matrix
    # Without ?method the page offers the methods and computes nothing.
    plain = _page(clients["reviewer"], task)
    assert plain.context["aggregation"] is None
    assert '<option value="dawid-skene"' in plain.content.decode()


@pytest.mark.parametrize(
    ("method", "message"),
    [
        ("glad", "GLAD takes too long to run on a page; run `python manage.py aggregate"),
        ("em", "Unknown method &#x27;em&#x27;"),
    ],
)
def test_methods_the_page_does_not_run_answer_400_with_why(  # type: ignore[no-untyped-def]
    project, clients, method: str, message: str
) -> None:
    task, _ = _task(project)
    response = _page(clients["reviewer"], task, f"?method={method}", **HX)
    assert response.status_code == 400
    assert message in response.content.decode()


def test_no_judgments_yet(project, clients) -> None:  # type: ignore[no-untyped-def]
    task = JudgmentTaskFactory(project=project)
    response = _page(clients["reviewer"], task, "?method=dawid-skene", **HX)
    assert response.status_code == 400
    assert "No judgments yet" in response.content.decode()


def test_only_reviewers_and_admins(project, clients) -> None:  # type: ignore[no-untyped-def]
    task, _ = _task(project)
    assert _page(clients["admin"], task, "?method=dawid-skene", **HX).status_code == 200
    assert _page(clients["annotator"], task, "?method=dawid-skene", **HX).status_code == 403
    assert _page(clients["outsider"], task, "?method=dawid-skene", **HX).status_code == 404
    assert _page(clients["anonymous"], task, "?method=dawid-skene", **HX).status_code == 302


def test_page_queries_do_not_grow_with_items(  # type: ignore[no-untyped-def]
    project, clients, django_assert_max_num_queries
) -> None:
    task, _ = _task(project)
    with django_assert_max_num_queries(8):
        assert _page(clients["reviewer"], task, "?method=dawid-skene", **HX).status_code == 200


# --------------------------------------------------------------------------- the command


def _run(*args: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    out = StringIO()
    call_command("aggregate", *args, stdout=out)
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    return lines[:-1], lines[-1]["summary"]


def test_command_on_a_task_and_on_its_judgments_export_agree(project, tmp_path: Path) -> None:
    task, truth = _task(project)
    items, summary = _run("--project", project.name, "--task", task.name, "--method", "dawid-skene")
    labels = {i["item"]: i["label"] for i in items}
    assert labels == truth  # Dawid-Skene sees through flip and noisy on these items
    assert {i["item"] for i in items if "consensus" in i} == {"q00"}
    assert summary["differs_from_consensus"] == 1 and summary["settled_by_consensus"] == 1
    assert summary["items"] == 24 and summary["judgments"] == 96
    assert summary["annotators"]["flip"]["reliability"] < 0.1
    assert set(summary["annotators"]["good1"]["confusion"]) == {"0", "1"}
    assert all(0.5 <= i["posterior"] <= 1 for i in items)

    # The app's judgments JSONL export, aggregated outside the app: the same labels.
    export = tmp_path / "judgments.jsonl"
    export.write_bytes(b"".join(judgments_jsonl(task=task)))
    file_items, file_summary = _run("--judgments", str(export), "--method", "dawid-skene")
    assert {i["item"]: i["label"] for i in file_items} == labels
    assert file_summary["annotators"]["noisy"]["reliability"] == pytest.approx(
        summary["annotators"]["noisy"]["reliability"]
    )
    # Majority vote has no posterior.
    majority, _ = _run("--judgments", str(export), "--method", "majority")
    assert all("posterior" not in i for i in majority)


def test_command_gold_accuracy(project, tmp_path: Path) -> None:
    task, truth = _task(project)
    gold = tmp_path / "gold.jsonl"
    gold.write_text(
        "".join(
            json.dumps({"item": f"q{n:02d}", "value": truth[f"q{n:02d}"]}) + "\n" for n in range(10)
        )
    )
    _, summary = _run(
        "--project", project.name, "--task", task.name, "--method", "majority", "--gold", str(gold)
    )
    assert summary["gold_items"] == 10
    assert summary["annotators"]["good1"]["gold"]["accuracy"] == 1.0
    assert summary["annotators"]["flip"]["gold"]["accuracy"] == 0.0
    noisy = summary["annotators"]["noisy"]["gold"]
    assert (noisy["correct"], noisy["total"]) == (5, 10)
    low, high = noisy["interval"]
    assert (round(low, 4), round(high, 4)) == (0.2366, 0.7634)  # Wilson, 5 of 10


def test_command_bad_input_names_what_and_where(project, tmp_path: Path) -> None:
    task, _ = _task(project)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"item": "q1", "annotator": "a", "value": 1}\n{"item": "q1"}\n')
    cases = [
        (["--judgments", str(bad)], f"{bad} line 2: 'annotator' must name who judged"),
        (["--judgments", str(tmp_path / "none.jsonl")], "none.jsonl: no such file"),
        (["--project", project.name, "--task", "nope"], "has no judgment task named 'nope'"),
        (["--project", "nope", "--task", task.name], "no project named 'nope'"),
        (["--judgments", str(bad), "--project", project.name], "not both"),
        ([], "give --judgments FILE, or --project NAME and --task NAME"),
    ]
    for args, message in cases:
        with pytest.raises(CommandError, match=message.replace("(", r"\(")):
            call_command("aggregate", *args, "--method", "majority", stdout=StringIO())
    with pytest.raises(CommandError, match="invalid choice: 'em'"):
        call_command("aggregate", "--judgments", str(bad), "--method", "em", stdout=StringIO())


def test_text_answers_are_compared_as_the_consensus_rule_compares_them(project) -> None:
    task = JudgmentTaskFactory(project=project, scheme="text", overlap=2)
    item = ItemFactory(project=project, external_id="t1")
    for name, value in (("ann", "Paris "), ("bob", "paris")):
        JudgmentFactory(task=task, item=item, user=UserFactory(username=name), value=value)
    items, _ = _run("--project", project.name, "--task", task.name, "--method", "majority")
    assert len(items) == 1 and items[0]["label"] == "paris"
    assert (
        aggregate([("t1", "ann", "paris"), ("t1", "bob", "paris")], "majority").items[0].confidence
        == 1.0
    )
