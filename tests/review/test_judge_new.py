"""A new judge is one spec registered (docs/howto/new-judge.md, issue 23): a toy judge defined
here, with no template, partial, migration or edit anywhere else, is offered on the "Judge
answers" page, runs end to end through the one judge runner against the fake model server
(started from the page, its job run), answers from the cache on a second run, and its run's
page shows its figures and each answer's scores. Its template is editable on the judge
settings page, and ``makemigrations`` finds nothing to do."""

from __future__ import annotations

import io
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from benchmark.judge_prompts import Call, JudgeOutputError, Judgment, Template, build_call
from benchmark.judge_prompts.base import output_text
from benchmark.models import DataFormat, JobStatus, Project, Role
from review.judges import services as judge_services
from review.judges.models import JudgeRun
from review.judges.specs import ANSWERS, Column, JudgeSpec, judge_register, judge_unregister
from tests.factories import ItemFactory, JudgeRunFactory, MembershipFactory, ProjectFactory
from tests.judge_server import GARBAGE, ScriptedServer, jsonl
from tests.llm_server import point_at

pytestmark = pytest.mark.django_db

HX = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "judge-start"}

TOY_TEMPLATE = Template(
    id="toy.length",
    description="Toy judge: is the answer long enough",
    system="You are the Toy judge. Reply LONG or SHORT and nothing else.",
    user="Answer:\n{answer}",
)


def parse_toy(raw: str) -> bool:
    word = output_text(raw)
    if word not in ("LONG", "SHORT"):
        raise JudgeOutputError(f"expected LONG or SHORT, got {word[:40]!r}")
    return word == "LONG"


class ToyJudge(JudgeSpec):
    """One call per answer; per model the share of answers judged long."""

    name = "toy-length"
    label = "Toy length judge"
    rates = ANSWERS
    formats = (DataFormat.ATP, DataFormat.LLMI)
    templates = (TOY_TEMPLATE,)
    columns = (Column("long", "Judged long", "%"),)

    def parsers(self, subject: Any) -> Mapping[str, Any]:
        return {"toy": parse_toy}

    def first_call_count(self, subject: Any) -> int:
        return 1

    def first_calls(
        self, subject: Any, model: str, templates: Mapping[str, Template]
    ) -> list[Call]:
        template = templates[TOY_TEMPLATE.id]
        return [build_call(template, model, "toy", {"answer": subject.text})]

    def scores(
        self, subject: Any, judgments: Mapping[str, Judgment[Any]], run: JudgeRun
    ) -> tuple[Any, dict[str, Any]]:
        judgment = judgments.get("toy")
        value = judgment.value if judgment is not None else None
        return value, {"long": value}

    def figures(self, values: Sequence[Any]) -> dict[str, Any]:
        kept = [v for v in values if v is not None]
        return {
            "long": 100 * sum(kept) / len(kept) if kept else None,
            "n": len(kept),
            "excluded": len(values) - len(kept),
        }


@pytest.fixture
def toy() -> Iterator[ToyJudge]:
    spec = judge_register(ToyJudge())
    try:
        yield spec
    finally:
        judge_unregister(spec.name)


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    s = ScriptedServer().start()
    try:
        yield s
    finally:
        s.stop()


def script(system: str, user: str, model: str) -> str:
    """Long answers are LONG, short ones SHORT; "alpha 3" gets output that never parses."""
    if "alpha 3" in user:
        return GARBAGE
    return "LONG" if "long" in user else "SHORT"


@pytest.fixture
def toy_project(server: ScriptedServer, users: dict[str, Any]) -> Project:
    project = ProjectFactory(name="Toy judged")
    for role in (Role.ADMIN, Role.REVIEWER, Role.ANNOTATOR):
        MembershipFactory(project=project, user=users[str(role)], role=role)
    point_at(project, server)
    for n in (1, 2, 3):
        ItemFactory(project=project, external_id=f"q{n}", query=f"Question {n}")
    judge_services.answers_import(
        project=project,
        files=[
            (
                "alpha.jsonl",
                jsonl(
                    [
                        {"id": "q1", "response": "alpha 1 is a long answer"},
                        {"id": "q2", "response": "alpha 2 short"},
                        {"id": "q3", "response": "alpha 3 garbage"},
                    ]
                ),
            ),
            (
                "beta.jsonl",
                jsonl([{"id": f"q{n}", "response": f"beta {n} short"} for n in (1, 2, 3)]),
            ),
        ],
    )
    return project


def text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def figure(html: str, model: str, name: str) -> str:
    row = re.search(rf'<tr data-model="{re.escape(model)}">.*?</tr>', html, re.S)
    assert row, model
    cell = re.search(rf'data-figure="{re.escape(name)}">(.*?)</td>', row.group(0), re.S)
    assert cell, name
    return text(cell.group(1)).strip()


def test_a_toy_judge_runs_end_to_end_from_its_spec_alone(
    toy: ToyJudge,
    toy_project: Project,
    server: ScriptedServer,
    clients: dict[str, Client],
    django_capture_on_commit_callbacks: Any,
) -> None:
    project = toy_project
    server.script = script
    client = clients["reviewer"]
    runs_page = reverse("review:judge_runs", args=[project.pk])
    page = client.get(runs_page).content.decode()
    assert 'value="toy-length"' in page and "Toy length judge" in page

    with django_capture_on_commit_callbacks(execute=True):
        started = client.post(runs_page, {"judge": "toy-length", "workers": 2}, **HX)
    assert started.status_code == 200, text(started.content.decode())
    run = JudgeRun.objects.get(project=project, judge="toy-length")
    assert run.templates == {TOY_TEMPLATE.id: TOY_TEMPLATE.version}
    assert run.job is not None
    run.job.refresh_from_db()
    assert run.job.status == JobStatus.SUCCEEDED, run.job.error
    summary = run.job.result["summary"]
    assert summary["models"] == {
        "alpha": {"long": 50.0, "n": 2, "excluded": 1},
        "beta": {"long": 0.0, "n": 3, "excluded": 0},
    }
    assert summary["excluded"] == 1
    # Six answers, "alpha 3" asked twice (its output never parses).
    assert summary["calls"]["made"] == 6 and server.count == 7
    assert run.calls.count() == 6 and run.calls.filter(ok=False).count() == 1

    html = client.get(reverse("review:judge_run", args=[run.pk])).content.decode()
    assert f"Judge run #{run.pk}: Toy length judge" in html
    assert figure(html, "alpha", "long") == "50.00%"
    assert figure(html, "beta", "long") == "0.00%"
    assert figure(html, "alpha", "excluded") == "1"
    assert html.count('data-score="long"') == 6
    assert "1 answer excluded from the figures" in text(html)
    assert "expected LONG or SHORT" in html  # the failed call's reason and raw output

    # A second run makes no call: every answer comes from the first run's stored calls (the
    # unparseable one too: it was answered, twice).
    again, job = judge_services.judge_run_create(project=project, user=None, judge="toy-length")
    job = judge_services.judge_run_execute(job=job)
    assert job.status == JobStatus.SUCCEEDED, job.error
    assert job.result["summary"]["calls"]["cached"] == 6 and server.count == 7
    assert job.result["summary"]["models"] == summary["models"]


def test_a_toy_judge_needs_no_migration_and_its_template_is_editable(
    toy: ToyJudge, toy_project: Project, clients: dict[str, Client]
) -> None:
    project = toy_project
    out = io.StringIO()
    call_command("makemigrations", "review", "--check", "--dry-run", stdout=out)
    assert "No changes detected" in out.getvalue()
    page = clients["reviewer"].get(reverse("review:judge_settings", args=[project.pk]))
    html = page.content.decode()
    assert 'data-judge="toy-length"' in html and TOY_TEMPLATE.id in html


def test_a_judge_not_registered_is_refused_with_the_judges_there_are(
    toy_project: Project,
) -> None:
    project = toy_project
    from benchmark.exceptions import ValidationFailed

    with pytest.raises(ValidationFailed, match="unknown judge 'toy-length'; choose one of"):
        judge_services.judge_run_create(project=project, user=None, judge="toy-length")


def test_a_run_of_a_judge_no_longer_installed_is_listed_and_its_page_is_404(
    toy_project: Project, clients: dict[str, Client]
) -> None:
    project = toy_project
    run = JudgeRunFactory(project=project, judge="gone-judge")
    runs = clients["reviewer"].get(reverse("review:judge_runs", args=[project.pk]))
    assert runs.status_code == 200 and f'data-run="{run.pk}"' in runs.content.decode()
    page = clients["reviewer"].get(reverse("review:judge_run", args=[run.pk]))
    assert page.status_code == 404
    compare = clients["reviewer"].get(
        reverse("review:judge_compare", args=[project.pk]), {"a": f"run:{run.pk}", "b": "f1"}
    )
    assert compare.status_code == 400
    assert "Unknown judge &#x27;gone-judge&#x27;" in compare.content.decode()


def test_a_project_whose_judges_run_elsewhere_says_where(
    users: dict[str, Any], clients: dict[str, Client]
) -> None:
    """Agentic-MME's S and V judges rate run checkpoints while runs are scored: its judge page
    offers no judge run and says where they run."""
    project = ProjectFactory(name="Trajectories", kind="trajectory", data_format="agentic-mme")
    MembershipFactory(project=project, user=users["reviewer"], role=Role.REVIEWER)
    page = clients["reviewer"].get(reverse("review:judge_runs", args=[project.pk]))
    html = text(page.content.decode())
    assert page.status_code == 200
    assert "No judge run applies to a project in the Agentic-MME format." in html
    assert "The Agentic-MME S judge (search checkpoints) runs when the runs" in html
    assert "The Agentic-MME V judge (visual checkpoints) runs when the runs" in html
    started = clients["reviewer"].post(
        reverse("review:judge_runs", args=[project.pk]), {"judge": "llmi-rubric", "workers": 1}
    )
    assert started.status_code == 400
    assert "no model judge runs over this project" in started.content.decode()
