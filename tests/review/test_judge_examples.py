"""Corrections become worked examples (issue 26): a judge run's correction cases on a people's
task, adding ticked cases as worked examples (a new template version whose prompt, as the model
server received it, holds them), the held-back run of the new version (never on an example
unit) and the before/after figures, equal to hand-computed ones."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from annotation.judgment_tasks.models import JudgmentTask
from benchmark.exceptions import Conflict, Forbidden, ValidationFailed
from benchmark.judge_prompts import plan_validity
from benchmark.judge_prompts.examples import BEGIN, END, WorkedExample, with_examples
from benchmark.metrics.judge_rater import disagreements, held_back_comparison
from benchmark.models import Item, JobStatus, Project
from review.agreement.judge_examples import selectors, services
from review.agreement.judge_examples.models import ExampleSet, WorkedExampleCase
from review.judges import services as judge_services
from review.judges.models import JudgeRun, JudgeTemplateVersion
from review.judges.run_settings import judge_templates_for
from tests.factories import (
    DecisionFactory,
    ItemFactory,
    JudgmentFactory,
    JudgmentTaskFactory,
    PlanFactory,
    ProjectFactory,
    UserFactory,
)
from tests.llm_server import FakeModelServer, point_at

pytestmark = pytest.mark.django_db

#: People's votes (three annotators) per item: majorities 1, 0, 1, 0, 0, 1.
VOTES = {
    "i1": (1, 1, 1),
    "i2": (0, 0, 1),
    "i3": (1, 1, 0),
    "i4": (0, 0, 0),
    "i5": (0, 1, 0),
    "i6": (1, 1, 1),
}
#: Queries with "awkward" get INVALID from the judge once its prompt has worked examples.
QUERIES = {
    "i1": "Caption the photo",
    "i2": "Count the awkward boats",
    "i3": "Describe the scene",
    "i4": "Find the awkward logo",
    "i5": "Read the awkward sign",
    "i6": "Tell an awkward joke about the image",
}


def reply(body: dict[str, Any]) -> str:
    """The scripted judge: VALID for everything, until its system text has worked examples;
    then INVALID for requests that mention "awkward"."""
    system = next((m["content"] for m in body["messages"] if m["role"] == "system"), "")
    user = [m for m in body["messages"] if m["role"] == "user"][-1]["content"]
    text = user if isinstance(user, str) else " ".join(str(p.get("text", "")) for p in user)
    if BEGIN in system and "awkward" in text:
        return "INVALID\nThe request is odd."
    return "VALID\nThe steps do what was asked."


@pytest.fixture
def server() -> Iterator[FakeModelServer]:
    s = FakeModelServer(respond=reply).start()
    try:
        yield s
    finally:
        s.stop()


@pytest.fixture
def project(db: None) -> Project:
    """An m&m's project (``users`` gives it one member per role)."""
    return ProjectFactory(name="m&m's sample", kind="plan", data_format="mms")


@pytest.fixture
def items(project: Project, server: FakeModelServer) -> dict[str, Item]:
    point_at(project, server)
    out = {}
    for n, (ext, query) in enumerate(QUERIES.items()):
        item = ItemFactory(project=project, external_id=ext, query=query, position=n)
        PlanFactory(item=item, key="gt", steps=[{"id": 0, "name": "image captioning", "args": {}}])
        out[ext] = item
    return out


def run_judge(project: Project, **kw: Any) -> JudgeRun:
    run, job = judge_services.judge_run_create(project=project, user=None, judge="mms-plan", **kw)
    job = judge_services.judge_run_execute(job=job)
    assert job.status == JobStatus.SUCCEEDED, job.error
    return run


@pytest.fixture
def voted(
    project: Project, items: dict[str, Item], users: dict[str, Any]
) -> tuple[JudgmentTask, JudgeRun]:
    task = JudgmentTaskFactory(project=project, name="Plan votes", scheme="binary")
    people = [UserFactory(username=f"voter-{n}") for n in range(3)]
    for ext, votes in VOTES.items():
        for user, value in zip(people, votes, strict=True):
            JudgmentFactory(task=task, item=items[ext], user=user, value=value)
    return task, run_judge(project)


def key_of(run: JudgeRun) -> str:
    return f"judge-run:{run.pk}"


def unit(items: dict[str, Item], ext: str) -> str:
    return str(items[ext].pk)


# --------------------------------------------------------------------------- pure code


def test_with_examples_keeps_the_placeholders_and_replaces_an_earlier_block() -> None:
    template = plan_validity.PLAN_VALIDITY_TEMPLATE
    one = [WorkedExample(unit="7", summary='a {"json"} input', answer="INVALID", reason="r")]
    first = with_examples(template, "\n".join([BEGIN, 'x {"a": 1}', END]))
    assert first.placeholders == template.placeholders
    assert first.system.startswith(template.system) and first.user == template.user
    from benchmark.judge_prompts import render
    from benchmark.judge_prompts.examples import examples_block

    second = with_examples(first, examples_block(one))
    system, _ = render(second, {"query": "q", "plan": "p"})
    assert system.count(BEGIN) == 1 and 'a {"json"} input' in system and "x {" not in system


def test_disagreements_and_the_held_back_comparison_by_hand() -> None:
    rows = [(u, f"p{n}", v) for u, votes in VOTES.items() for n, v in enumerate(votes)]
    before = dict.fromkeys(VOTES, 1)
    found = disagreements(rows, before, "nominal", [0, 1])
    assert [(d["unit"], d["people"], d["judge"], d["votes"]) for d in found] == [
        ("i2", 0, 1, 2),
        ("i4", 0, 1, 3),
        ("i5", 0, 1, 2),
    ]
    after = {"i1": 1, "i2": 0, "i3": 1, "i4": 0, "i5": 0, "i6": 0}
    report = held_back_comparison(
        rows, before, after, "nominal", [0, 1], examples={"i2", "i4"}, bootstrap=50
    )
    # Held back: i1, i3, i5, i6 (people 1, 1, 0, 1); examples i2 and i4 never counted.
    assert report["units"] == ["i1", "i3", "i5", "i6"]
    assert report["n_examples_left_out"] == 2
    b, a = report["before"], report["after"]
    # Before: judge 1, 1, 1, 1. po = 3/4, pe = 1 x 3/4 -> kappa 0; TPR 3/3, FPR 1/1.
    assert b["percent_agreement"] == pytest.approx(0.75)
    assert b["kappa"]["value"] == pytest.approx(0.0)
    assert b["true_positive_rate"]["value"] == 1.0 and b["false_positive_rate"]["value"] == 1.0
    # After: judge 1, 1, 0, 0. po = 3/4, pe = 1/2 x 3/4 + 1/2 x 1/4 = 1/2 -> kappa 1/2.
    assert a["percent_agreement"] == pytest.approx(0.75)
    assert a["kappa"]["value"] == pytest.approx(0.5)
    assert a["true_positive_rate"]["value"] == pytest.approx(2 / 3)
    assert a["false_positive_rate"]["value"] == 0.0
    assert report["difference"] == {"percent_agreement": 0.0, "kappa": pytest.approx(0.5)}
    assert a["kappa"]["interval"] is not None
    # Were the examples counted, the figures would differ: the exclusion is what is tested.
    counted = held_back_comparison(rows, before, after, "nominal", [0, 1], bootstrap=0)
    assert counted["n_units"] == 6 and counted["after"]["percent_agreement"] == pytest.approx(5 / 6)


# --------------------------------------------------------------------------- end to end


def test_correction_cases_list_majority_disagreements_and_reviewer_overrides(
    voted: tuple[JudgmentTask, JudgeRun], items: dict[str, Item], users: dict[str, Any]
) -> None:
    task, run = voted
    cases = selectors.correction_cases(user=users["reviewer"], task=task, key=key_of(run))
    assert [(c.unit, c.source) for c in cases] == [
        (unit(items, e), "majority") for e in ("i2", "i4", "i5")
    ]
    assert cases[0].reason == "2 of 3 annotators gave 0 · no; the judge gave 1 · yes"
    # A reviewer's decision overrides people: i1 decided "no" (judge: yes) becomes a case;
    # i5 decided "yes" (as the judge) is no longer one.
    DecisionFactory(task=task, item=items["i1"], value=0, reason="The plan skips the crop.")
    DecisionFactory(task=task, item=items["i5"], value=1)
    cases = selectors.correction_cases(user=users["reviewer"], task=task, key=key_of(run))
    by_unit = {c.unit: c for c in cases}
    assert set(by_unit) == {unit(items, e) for e in ("i1", "i2", "i4")}
    assert by_unit[unit(items, "i1")].source == "override"
    assert by_unit[unit(items, "i1")].reason == "The plan skips the crop."
    with pytest.raises(Forbidden):
        selectors.correction_cases(user=users["annotator"], task=task, key=key_of(run))


def test_adding_cases_makes_a_new_version_the_judge_receives_and_compares_on_held_back_units(
    voted: tuple[JudgmentTask, JudgeRun],
    items: dict[str, Item],
    users: dict[str, Any],
    server: FakeModelServer,
    project: Project,
) -> None:
    task, run = voted
    reviewer = users["reviewer"]
    chosen = [unit(items, "i2"), unit(items, "i4")]
    example_set = services.judge_examples_add(
        user=reviewer, task=task, key=key_of(run), units=chosen
    )
    # A new version (the built-in text stays the history's start), recorded with the cases.
    version = JudgeTemplateVersion.objects.get(project=project)
    assert version.number == 1 and version.author == reviewer
    assert list(example_set.template_versions.all()) == [version]
    assert sorted(example_set.cases.values_list("unit", flat=True)) == sorted(chosen)
    case = example_set.cases.get(unit=unit(items, "i2"))
    assert case.answer == "INVALID" and case.people == 0 and case.judge_value == 1
    assert "Count the awkward boats" in case.summary
    current = judge_templates_for(project=project, judge="mms-plan")["mms.plan_validity"]
    assert example_set.templates == {"mms.plan_validity": current.version}
    # An example cannot be added twice; a unit people agree on is no correction case.
    with pytest.raises(ValidationFailed, match="worked example already"):
        services.judge_examples_add(user=reviewer, task=task, key=key_of(run), units=chosen[:1])
    with pytest.raises(ValidationFailed, match="not a correction case"):
        services.judge_examples_add(
            user=reviewer, task=task, key=key_of(run), units=[unit(items, "i1")]
        )

    # The held-back set: every unit people judged that the run rated, minus the examples.
    held = selectors.held_back_units(example_set=example_set)
    assert held == sorted(unit(items, e) for e in ("i1", "i3", "i5", "i6"))
    # Putting an example unit in the set is refused.
    with pytest.raises(ValidationFailed, match="held back from every comparison"):
        services.held_back_run_start(
            user=reviewer, example_set=example_set, units=[unit(items, "i1"), chosen[0]]
        )

    server.requests.clear()
    job = services.held_back_run_start(user=reviewer, example_set=example_set)
    with pytest.raises(Conflict, match="still queued"):
        services.held_back_run_start(user=reviewer, example_set=example_set)
    # Enqueued after commit (never, in a test's transaction): run it here.
    job = judge_services.judge_run_execute(job=job)
    assert job.status == JobStatus.SUCCEEDED, job.error
    example_set.refresh_from_db()
    new_run = example_set.held_back_run
    assert new_run is not None and new_run.templates == example_set.templates
    # The model was asked about the four held-back items only, each time with the examples.
    asked = sorted(r.user_content for r in server.requests)
    assert len(asked) == 4
    assert not any("Count the awkward boats" in u or "Find the awkward logo" in u for u in asked)
    for request in server.requests:
        system = next(m["content"] for m in request.messages if m["role"] == "system")
        assert BEGIN in system and "Count the awkward boats" in system
        assert "Correct answer: INVALID" in system and "Find the awkward logo" in system

    report = selectors.held_back_comparison(user=reviewer, example_set=example_set)
    assert report is not None
    assert sorted(report["units"]) == held and report["n_units"] == 4
    assert report["before"]["kappa"]["value"] == pytest.approx(0.0)
    assert report["after"]["kappa"]["value"] == pytest.approx(0.5)
    assert report["before"]["percent_agreement"] == pytest.approx(0.75)
    assert report["after"]["percent_agreement"] == pytest.approx(0.75)
    assert report["after"]["false_positive_rate"]["value"] == 0.0
    assert report["difference"]["kappa"] == pytest.approx(0.5)
    assert not set(report["units"]) & set(chosen)

    # A full run of the new version: its calibration report never counts its own examples;
    # the old version's report counts every unit.
    from review.agreement import judge_sources

    full = run_judge(project)
    assert full.templates == example_set.templates
    new_report = judge_sources.judge_calibration_report(
        user=reviewer, task=task, key=key_of(full), threshold=0.6
    )
    assert new_report["n_examples_left_out"] == 2 and new_report["overall"]["n_units"] == 4
    rater = judge_sources.judge_rater_report(user=reviewer, task=task, key=key_of(full))
    assert rater["n_examples_left_out"] == 2 and rater["majority"]["n_units"] == 4
    old_report = judge_sources.judge_calibration_report(
        user=reviewer, task=task, key=key_of(run), threshold=0.6
    )
    assert old_report["n_examples_left_out"] == 0 and old_report["overall"]["n_units"] == 6


def test_pages_add_examples_and_show_the_comparison(
    voted: tuple[JudgmentTask, JudgeRun],
    items: dict[str, Item],
    clients: dict[str, Client],
    django_assert_max_num_queries: Any,
) -> None:
    task, run = voted
    reviewer = clients["reviewer"]
    page = reviewer.get(reverse("review:agreement", args=[task.pk]), {"judge": key_of(run)})
    assert page.status_code == 200
    body = page.content.decode()
    assert 'id="corrections-table"' in body and "Add as worked examples" in body
    add = reverse("review:judge_examples_add", args=[task.pk])
    # No case ticked: a 400 that says so, nothing created.
    refused = reviewer.post(add, {"key": key_of(run)})
    assert refused.status_code == 400 and b"tick at least one" in refused.content
    assert not ExampleSet.objects.exists()
    assert clients["annotator"].post(add, {"key": key_of(run), "units": ["1"]}).status_code == 403
    done = reviewer.post(add, {"key": key_of(run), "units": [unit(items, "i2"), unit(items, "i4")]})
    example_set = ExampleSet.objects.get()
    assert done.status_code == 302 and done["Location"] == reverse(
        "review:example_set", args=[example_set.pk]
    )
    start = reviewer.post(
        reverse("review:held_back_start", args=[example_set.pk]), {"units": [unit(items, "i2")]}
    )
    assert start.status_code == 400 and b"held back from every comparison" in start.content
    assert (
        reviewer.post(reverse("review:held_back_start", args=[example_set.pk])).status_code == 302
    )
    example_set.refresh_from_db()
    assert example_set.held_back_run is not None and example_set.held_back_run.job is not None
    waiting = reviewer.get(reverse("review:example_set", args=[example_set.pk]))
    assert b'id="held-back-waiting"' in waiting.content
    # The job is enqueued after commit; a test's transaction never commits: run it here.
    judge_services.judge_run_execute(job=example_set.held_back_run.job)
    with django_assert_max_num_queries(12):
        shown = reviewer.get(reverse("review:example_set", args=[example_set.pk]))
    assert shown.status_code == 200
    html = shown.content.decode()
    assert 'id="held-back-table"' in html and 'data-version="difference"' in html
    assert WorkedExampleCase.objects.count() == 2


def test_the_rubric_judge_writes_its_examples_on_its_own_scale(project: Project) -> None:
    from benchmark.models import Origin
    from review.judges.specs import judge_spec
    from tests.factories import ResponseFactory

    item = ItemFactory(
        project=project,
        query="Draw a map of the harbour",
        rubric=[{"key": "r1", "text": "The map shows the lighthouse"}],
    )
    answer = ResponseFactory(item=item, origin=Origin.MODEL, text="Here is the map.")
    spec = judge_spec("llmi-rubric")
    assert spec.worked_example_answer(2) == "score 2 (fully met)"
    summary = spec.worked_example_input(f"response:{answer.pk}:r1", project)
    assert "Draw a map of the harbour" in summary and "The map shows the lighthouse" in summary
    assert spec.worked_example_input("response:999999:r1", project) == "unit response:999999:r1"
    assert judge_spec("mms-plan").worked_example_answer(0) == "INVALID"
