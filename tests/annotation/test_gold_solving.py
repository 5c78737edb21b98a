"""Gold items in blind solving (issue 26): the answer that counts is the item's reference
answer (or the one a reviewer gives), a verifier's blind answer is compared with it by the rule
blind solving compares answers with the reference (``solving.answer_matches``, the benchmark's
final-answer check), the gold item's answer stays hidden until they answered it, and gold
answers never reach outcomes."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from rest_framework.test import APIClient

from annotation.judgment_tasks import gold, services, solving
from annotation.judgment_tasks.models import GoldItem, Judgment, JudgmentTask, Outcome
from annotation.verification import selectors as verification_selectors
from benchmark import visibility
from benchmark.exceptions import ValidationFailed
from benchmark.models import Item, ItemStatus, Project, Toolset
from review.gold import selectors as gold_selectors
from review.gold import services as gold_services
from tests.factories import MembershipFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def world() -> Any:
    toolset = Toolset.objects.create(name="amme-g")
    project = Project.objects.create(
        name="solving", kind="trajectory", data_format="agentic-mme", toolset=toolset
    )
    for i in range(4):
        Item.objects.create(
            project=project, external_id=f"d{i}", position=i, query=f"How many {i}?",
            expected_answer="7", match_type="exact",
        )  # fmt: skip
    v0 = Item.objects.create(
        project=project, external_id="v0", position=10, query="How far?", expected_answer="317",
        match_type="contains", accepted_variants=["three hundred seventeen"],
        status=ItemStatus.VERIFIED,
    )  # fmt: skip
    v1 = Item.objects.create(
        project=project, external_id="v1", position=11, query="How wide?", expected_answer="2.5",
        match_type="numeric", constraints={"tolerance": 0.1}, status=ItemStatus.VERIFIED,
    )  # fmt: skip
    task = JudgmentTask.objects.create(
        project=project, name="Solve blind", question="Solve it", scheme="text", overlap=2,
        consensus="author_plus_two", updates_item_status=True, gold_rate=50,
    )  # fmt: skip
    assert solving.is_solve_task(task)
    for item in (v0, v1):
        Outcome.objects.create(task=task, item=item, verdict="accepted", value=item.expected_answer)
    people = {}
    for name, role in (("ann", "annotator"), ("ben", "annotator"), ("rev", "reviewer")):
        people[name] = UserFactory(username=name)
        MembershipFactory(project=project, user=people[name], role=role)
    return task, people, v0, v1


def test_marking_takes_the_reference_answer_or_the_reviewers(world: Any) -> None:
    task, people, v0, v1 = world
    mark = gold_services.gold_mark(task=task, item=v0, user=people["rev"])
    assert mark.value == solving.golden_answer(v0) == {
        "value": "317", "match_type": "contains", "tolerance": 0.0,
        "accepted_answers": ["three hundred seventeen"],
    }  # fmt: skip
    given = gold_services.gold_mark(task=task, item=v1, user=people["rev"], value=" 2.8 ")
    assert given.value == {
        "value": "2.8",
        "match_type": "numeric",
        "tolerance": 0.1,
        "accepted_answers": [],
    }
    draft = Item.objects.get(project=task.project, external_id="d0")
    with pytest.raises(ValidationFailed, match="only verified items"):
        gold_services.gold_mark(task=task, item=draft, user=people["rev"])
    Item.objects.filter(pk=v0.pk).update(expected_answer="")
    v0.refresh_from_db()
    GoldItem.objects.filter(item=v0).delete()
    with pytest.raises(ValidationFailed, match="has no reference answer"):
        gold_services.gold_mark(task=task, item=v0, user=people["rev"])


def test_blind_answers_are_compared_by_the_solve_rule_and_stay_out_of_outcomes(
    world: Any,
) -> None:
    """Ann answers the gold items "The answer is 317" (right: the reference's ``contains``
    rule, though not the same text) and "2.5" (wrong: the reviewer's 2.8 ± 0.1 counts, not
    the reference's 2.5): gold accuracy 1 of 2."""
    task, people, v0, v1 = world
    gold_services.gold_mark(task=task, item=v0, user=people["rev"])
    gold_services.gold_mark(task=task, item=v1, user=people["rev"], value="2.8")
    everything = list(Item.objects.filter(project=task.project))
    # Before answering, the gold items' answers are hidden from a verifier like drafts'.
    assert {v0.pk, v1.pk} <= visibility.hidden_item_ids(user=people["ann"], items=everything)
    assert visibility.hidden_item_ids(user=people["rev"], items=everything) == set()
    answers = {"v0": "The answer is 317", "v1": "2.5"}
    served = []
    while (lease := services.assignment_next_for_user(task=task, user=people["ann"])) is not None:
        answer = answers.get(lease.item.external_id, "7")
        services.judgment_submit(task=task, item=lease.item, user=people["ann"], value=answer)
        served.append((lease.item.external_id, lease.gold))
    assert sorted(e for e, g in served if g) == ["v0", "v1"] and len(served) == 6
    assert gold.gold_tallies(tasks=[task]) == {(task.pk, people["ann"].pk): (1, 2, "ann")}
    row = gold_selectors.gold_report(user=people["rev"], task=task).rows[0]
    assert (row.correct, row.total) == (1, 2)
    assert (row.low, row.high) == pytest.approx((0.0945, 0.9055), abs=1e-4)  # Wilson, by hand
    # Answered: visible to her now, still hidden from Ben, who has not answered them.
    hidden_ann = visibility.hidden_item_ids(user=people["ann"], items=everything)
    assert not {v0.pk, v1.pk} & hidden_ann
    assert {v0.pk, v1.pk} <= visibility.hidden_item_ids(user=people["ben"], items=everything)
    # Outcomes and item status as they were; her own answer is hers to see (and audit).
    for item in (v0, v1):
        item.refresh_from_db()
        assert item.status == ItemStatus.VERIFIED
        outcome = Outcome.objects.get(task=task, item=item)
        assert (outcome.verdict, outcome.value) == ("accepted", item.expected_answer)
        assert not Judgment.objects.filter(task=task, item=item).exists()
        mine = verification_selectors.my_judgment(user=people["ann"], task=task, item=item)
        assert mine is not None and mine.gold
    # With no gold rate nothing is served as gold, and nothing gold is hidden.
    task.gold_rate = 0
    task.save(update_fields=["gold_rate"])
    assert v0.pk not in visibility.hidden_item_ids(user=people["ben"], items=everything)


def test_the_solve_page_leads_to_the_audit_for_a_gold_item_as_for_any(world: Any) -> None:
    task, people, v0, v1 = world
    gold_services.gold_mark(task=task, item=v0, user=people["rev"])
    gold_services.gold_mark(task=task, item=v1, user=people["rev"])
    client = Client()
    client.force_login(people["ann"])
    statuses: dict[bool, set[tuple[int, int]]] = {True: set(), False: set()}
    while True:
        answer = client.post(reverse("annotation:task_next", args=[task.pk]))
        if answer.status_code != 302 or "/next" in answer["Location"]:
            break
        lease = task.assignments.get(user=people["ann"], status="active")
        page = client.get(answer["Location"])
        done = client.post(answer["Location"], {"answer": "7"})
        audit = client.get(done["Location"]) if done.status_code == 302 else None
        statuses[lease.gold].add((page.status_code, audit.status_code if audit else 0))
        assert "gold" not in page.content.decode().lower()
    assert statuses[True] and statuses[True] == statuses[False] == {(200, 200)}


def test_next_runs_the_same_statements_for_a_gold_item(world: Any) -> None:
    """Ben answers everything first, so Ann's leases of drafts are later verifiers' leases;
    her "next" then runs as many statements for a gold item as for a draft."""
    task, people, v0, v1 = world
    gold_services.gold_mark(task=task, item=v0, user=people["rev"])
    gold_services.gold_mark(task=task, item=v1, user=people["rev"])
    api = APIClient()
    statements: dict[str, dict[bool, set[int]]] = {}
    for name in ("ben", "ann"):
        api.force_authenticate(people[name])
        statements[name] = {True: set(), False: set()}
        while True:
            with CaptureQueriesContext(connection) as ctx:
                answer = api.post(f"/api/judgment-tasks/{task.pk}/next/")
            if answer.status_code == 204:
                break
            lease = task.assignments.get(user=people[name], status="active")
            statements[name][lease.gold].add(len(ctx.captured_queries))
            posted = api.post(
                f"/api/judgment-tasks/{task.pk}/judgments/",
                {"item": answer.json()["item"], "value": "7"},
                format="json",
            )
            assert posted.status_code == 201, posted.content
    ann = statements["ann"]
    assert ann[True] and len(ann[True]) == 1 and ann[True] == ann[False], statements
