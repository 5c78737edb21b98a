"""Blind verification services: the default task, answers compared the way the benchmark
scores, divergence to joint review, revising the answer, discarding, the audit checklist and
who may see the answer before solving. On the Agentic-MME sample tasks."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.db import transaction
from django.utils import timezone

from annotation.judgment_tasks import solving
from annotation.judgment_tasks.models import Judgment, JudgmentTask, Outcome
from annotation.judgment_tasks.services import (
    _lease,
    assignment_next_for_user,
    judgment_submit,
    judgment_task_ensure_defaults,
)
from annotation.verification import checklist
from annotation.verification import selectors as verification_selectors
from annotation.verification import services as verification
from annotation.verification.models import TrajectoryAudit
from benchmark import selectors as item_selectors
from benchmark import visibility
from benchmark.datasets import services as benchmark_services
from benchmark.exceptions import Conflict, Forbidden, ValidationFailed
from benchmark.models import Item, ItemStatus, Project, Role, Toolset
from review.adjudication import selectors as adjudication_selectors
from review.adjudication import services as adjudication
from review.adjudication.models import Decision
from review.adjudication.services import outcome_decide
from tests.factories import MembershipFactory, ProjectFactory, UserFactory
from tests.shared_data import SHARED_DATA, needs_data

pytestmark = pytest.mark.django_db

SAMPLES = SHARED_DATA / "agentic-mme"
needs_samples = needs_data("agentic-mme")


def agentic_project(name: str = "Agentic") -> Project:
    toolset = Toolset.objects.create(name=f"{name}-tools")
    project = ProjectFactory(
        name=name, kind="trajectory", tag_syntax="", data_format="agentic-mme", toolset=toolset
    )
    benchmark_services.dataset_import(project=project, path=SAMPLES)
    return project


@pytest.fixture
def world() -> dict[str, Any]:
    if not SAMPLES.is_dir():
        pytest.skip("shared Agentic-MME samples not found")
    project = agentic_project()
    (task,) = judgment_task_ensure_defaults(project=project)
    people = {}
    for name, role in [
        ("v1", Role.ANNOTATOR),
        ("v2", Role.ANNOTATOR),
        ("v3", Role.ANNOTATOR),
        ("author", Role.ANNOTATOR),
        ("rev", Role.REVIEWER),
    ]:
        people[name] = UserFactory(username=name)
        MembershipFactory(project=project, user=people[name], role=role)
    items = {i.external_id: i for i in Item.objects.filter(project=project)}
    return {"project": project, "task": task, "items": items, "u": people}


def answer_directly(task: JudgmentTask, user: Any, item: Item, answer: str) -> Judgment:
    """Lease ``item`` to ``user`` without going through the queue order, then answer. The lease
    is taken in a transaction, as the queue takes it (a browser test runs outside one)."""
    with transaction.atomic():
        _lease(task=task, user=user, item_id=item.pk, now=timezone.now())
    return judgment_submit(task=task, item=item, user=user, value=answer)


# --------------------------------------------------------------------------- the default task


@needs_samples
def test_trajectory_projects_get_the_solve_blind_task(world: dict[str, Any]) -> None:
    task = world["task"]
    assert task.name == "Solve blind"
    assert (task.scheme, task.consensus, task.overlap) == ("text", "author_plus_two", 2)
    assert task.updates_item_status and not task.author_may_judge
    assert solving.is_solve_task(task)
    # Idempotent: asking again adds nothing.
    assert judgment_task_ensure_defaults(project=world["project"]) == [task]
    assert JudgmentTask.objects.filter(project=world["project"]).count() == 1


def test_interleaved_projects_do_not_get_it(db: None) -> None:
    project = ProjectFactory()
    tasks = judgment_task_ensure_defaults(project=project)
    assert [t.name for t in tasks] == ["Query verification"]
    assert not solving.is_solve_task(tasks[0])


# --------------------------------------------------------------------------- comparing answers


@needs_samples
@pytest.mark.parametrize(
    ("task_id", "answer", "matches"),
    [
        ("0001", "Willow St", True),
        ("0001", "WILLOW ST", True),  # contains: case-insensitive
        ("0001", "Elm St", False),
        ("0002", "1284.5", True),  # numeric, tolerance 0.01 from the task file
        ("0002", "1284.51", True),
        ("0002", "1284.6", False),
        ("0002", "1,284.50", False),  # as released: the whole answer must be a number
        ("0003", "317", True),  # exact
        ("0003", " 317 ", True),  # stripped
        ("0003", "317.", False),
        ("0006", "Cu", True),
        ("0006", "cu", False),  # exact is case-sensitive, as the benchmark scores
        ("0006", "<answer>Cu</answer>", True),  # the answer tag is read as the scorer does
    ],
)
def test_answers_are_compared_as_the_benchmark_scores(
    world: dict[str, Any], task_id: str, answer: str, matches: bool
) -> None:
    assert solving.answer_matches_item(world["items"][task_id], answer) is matches


@needs_samples
def test_accepted_variants_count(world: dict[str, Any]) -> None:
    item = world["items"]["0006"]
    assert not solving.answer_matches_item(item, "Copper")
    item.accepted_variants = ["Copper"]
    assert solving.answer_matches_item(item, "Copper")


def test_an_item_without_an_answer_matches_nothing(db: None) -> None:
    item = Item(expected_answer="  ", match_type="contains")
    assert not solving.answer_matches_item(item, "anything")


# --------------------------------------------------------------------------- consensus


@needs_samples
def test_two_matching_verifiers_verify_the_item(world: dict[str, Any]) -> None:
    task, item, u = world["task"], world["items"]["0002"], world["u"]
    answer_directly(task, u["v1"], item, "1284.50")
    outcome = Outcome.objects.get(task=task, item=item)
    assert outcome.verdict == "pending"
    answer_directly(task, u["v2"], item, "1284.5")
    outcome.refresh_from_db()
    item.refresh_from_db()
    assert outcome.verdict == "accepted", outcome.reason
    assert outcome.reason == "2 verifiers match the author"
    assert item.status == ItemStatus.VERIFIED


@needs_samples
def test_a_divergent_answer_sends_the_item_to_joint_review(world: dict[str, Any]) -> None:
    task, item, u = world["task"], world["items"]["0005"], world["u"]
    answer_directly(task, u["v1"], item, "130")
    answer_directly(task, u["v2"], item, "131")
    outcome = Outcome.objects.get(task=task, item=item)
    item.refresh_from_db()
    assert outcome.verdict == "disputed"
    assert outcome.reason == "1 of 2 verifiers match the author's answer"
    assert item.status == ItemStatus.IN_REVIEW
    (row,) = adjudication_selectors.joint_review_queue(user=u["rev"], task=task)
    assert row.item == item
    assert [(a.judgment.user.username, a.judgment.value, a.matches) for a in row.answers] == [
        ("v1", "130", True),
        ("v2", "131", False),
    ]
    # Once in review the item is not offered to another verifier.
    assert assignment_next_for_user(task=task, user=u["v3"]).item_id != item.pk
    with pytest.raises(Forbidden):
        adjudication_selectors.joint_review_queue(user=u["v1"], task=task)


@needs_samples
@pytest.mark.parametrize(
    "provenance", ["user:author", "user:author model:gpt-4o-mini", "drafted by author with m"]
)
def test_the_author_never_verifies_their_own_item(world: dict[str, Any], provenance: str) -> None:
    task, u = world["task"], world["u"]
    mine = world["items"]["0001"]
    # Drafted by "author"; someone whose name starts the same is not the author.
    Item.objects.filter(pk=mine.pk).update(provenance=provenance)
    Item.objects.filter(pk=world["items"]["0002"].pk).update(provenance="user:authority")
    offered = set()
    while (lease := assignment_next_for_user(task=task, user=u["author"])) is not None:
        offered.add(lease.item_id)
        judgment_submit(task=task, item=lease.item, user=u["author"], value="x")
    assert mine.pk not in offered
    assert len(offered) == 5
    # A task that allows it offers the author their own item.
    task.author_may_judge = True
    task.save()
    assert assignment_next_for_user(task=task, user=u["author"]).item_id == mine.pk


def test_author_username_reads_provenance() -> None:
    assert solving.author_username(Item(provenance="user:ann")) == "ann"
    assert solving.author_username(Item(provenance="user:ann model:x")) == "ann"
    assert solving.author_username(Item(provenance="drafted by ann with gpt-4o")) == "ann"
    assert solving.author_username(Item(provenance="imported:agentic-mme")) == ""
    assert solving.author_username(Item(provenance="user:")) == ""


# --------------------------------------------------------------------------- joint review


@pytest.fixture
def disputed(world: dict[str, Any]) -> dict[str, Any]:
    task, item, u = world["task"], world["items"]["0006"], world["u"]
    answer_directly(task, u["v1"], item, "Cu")
    answer_directly(task, u["v2"], item, "Copper")
    item.refresh_from_db()
    assert item.status == ItemStatus.IN_REVIEW
    return {**world, "item": item}


@needs_samples
def test_revising_the_variants_verifies_the_item(disputed: dict[str, Any]) -> None:
    task, item, rev = disputed["task"], disputed["item"], disputed["u"]["rev"]
    outcome = adjudication.answer_revise(
        task=task,
        item=item,
        reviewer=rev,
        expected_answer="Cu",
        accepted_variants=["Copper", " ", "Copper", "Cu"],
        match_type="exact",
        reason="The element's name is as good as its symbol.",
        base_updated_at=item.updated_at,
    )
    item.refresh_from_db()
    assert outcome.verdict == "accepted"
    assert item.status == ItemStatus.VERIFIED
    assert item.accepted_variants == ["Copper"]  # blank, repeated and the answer itself dropped
    decision = Decision.objects.get(task=task, item=item)
    assert decision.verdict == "revised"
    assert decision.reviewer == rev
    assert decision.value["from"]["accepted_variants"] == []
    assert decision.value["to"]["accepted_variants"] == ["Copper"]
    assert not adjudication_selectors.joint_review_queue(user=rev, task=task)


@needs_samples
def test_a_revision_that_still_diverges_keeps_the_item_in_review(
    disputed: dict[str, Any],
) -> None:
    task, item, rev = disputed["task"], disputed["item"], disputed["u"]["rev"]
    outcome = adjudication.answer_revise(
        task=task,
        item=item,
        reviewer=rev,
        expected_answer="Cu",
        accepted_variants=["copper"],
        match_type="exact",  # "Copper" still does not match "copper" exactly
    )
    item.refresh_from_db()
    assert outcome.verdict == "disputed"
    assert item.status == ItemStatus.IN_REVIEW
    assert item.accepted_variants == ["copper"]
    # With "contains" (case-insensitive) both answers match.
    outcome = adjudication.answer_revise(
        task=task,
        item=item,
        reviewer=rev,
        expected_answer="Cu",
        accepted_variants=["copper"],
        match_type="contains",
    )
    assert outcome.verdict == "accepted"


@needs_samples
def test_a_stale_revision_is_refused_and_writes_nothing(disputed: dict[str, Any]) -> None:
    task, item, rev = disputed["task"], disputed["item"], disputed["u"]["rev"]
    opened_at = item.updated_at
    Item.objects.filter(pk=item.pk).update(
        accepted_variants=["copper"], updated_at=opened_at + timedelta(seconds=5)
    )
    with pytest.raises(Conflict, match="changed by someone else"):
        adjudication.answer_revise(
            task=task,
            item=item,
            reviewer=rev,
            expected_answer="Copper",
            accepted_variants=[],
            match_type="exact",
            base_updated_at=opened_at,
        )
    item.refresh_from_db()
    assert item.expected_answer == "Cu"
    assert item.accepted_variants == ["copper"]
    assert not Decision.objects.exists()


@needs_samples
@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"expected_answer": "  "}, ValidationFailed, "expected answer: give"),
        ({"match_type": "fuzzy"}, ValidationFailed, "match type: choose one of"),
        ({"match_type": "numeric"}, ValidationFailed, "is not a number"),
        ({"tolerance": -1.0}, ValidationFailed, "tolerance"),
    ],
)
def test_revision_input_is_checked(
    disputed: dict[str, Any], kwargs: dict[str, Any], error: type, message: str
) -> None:
    args = {
        "task": disputed["task"],
        "item": disputed["item"],
        "reviewer": disputed["u"]["rev"],
        "expected_answer": "Cu",
        "accepted_variants": [],
        "match_type": "exact",
    }
    with pytest.raises(error, match=message):
        adjudication.answer_revise(**{**args, **kwargs})
    assert not Decision.objects.exists()


@needs_samples
def test_only_reviewers_revise_and_only_items_in_review(disputed: dict[str, Any]) -> None:
    task, item, u = disputed["task"], disputed["item"], disputed["u"]
    args = {"expected_answer": "Cu", "accepted_variants": ["Copper"], "match_type": "exact"}
    with pytest.raises(Forbidden):
        adjudication.answer_revise(task=task, item=item, reviewer=u["v1"], **args)
    settled = disputed["items"]["0001"]
    with pytest.raises(Conflict, match="not in joint review"):
        adjudication.answer_revise(task=task, item=settled, reviewer=u["rev"], **args)


@needs_samples
def test_unresolved_items_are_discarded_with_the_reason(disputed: dict[str, Any]) -> None:
    task, item, rev = disputed["task"], disputed["item"], disputed["u"]["rev"]
    with pytest.raises(ValidationFailed, match="say why"):
        outcome_decide(task=task, item=item, reviewer=rev, verdict="discarded", reason=" ")
    outcome_decide(
        task=task, item=item, reviewer=rev, verdict="discarded", reason="Label is ambiguous."
    )
    item.refresh_from_db()
    assert item.status == ItemStatus.DISCARDED
    assert item.discard_reason == "Label is ambiguous."


# --------------------------------------------------------------------------- the checklist


def test_checklist_per_step_kind() -> None:
    assert checklist.checks_for({"axis": "V", "visual_check": {"question": "?"}}) == [
        "intent",
        "tool",
        "checkpoint",
    ]
    assert checklist.checks_for({"axis": "S", "search_check": {"keywords": ["a"]}}) == [
        "intent",
        "tool",
        "checkpoint",
        "url",
    ]
    assert checklist.checks_for({"axis": "V", "tools": ["crop"]}) == ["intent", "tool"]
    step = {
        "search_check": {"urls": ["https://example.org/a", "ftp://x", "https://example.org/a"]},
        "notes": "see http://example.com/b",
        "reference_urls": ["http://example.com/c"],
    }
    assert checklist.step_urls(step) == ["https://example.org/a", "http://example.com/c"]


def test_audit_units_fall_back_to_steps() -> None:
    units = checklist.audit_steps([], [{"intent": "Crop the sign", "tool": "crop"}, "junk"])
    assert [(u["step"], u["description"]) for u in units] == [("#1", "Crop the sign")]


def ticks(task: JudgmentTask, item: Item, user: Any) -> dict[str, dict[str, bool]]:
    audit = verification_selectors.my_audit(user=user, task=task, item=item)
    assert audit is not None
    return {e["step"]: e["checks"] for e in audit.steps}


@needs_samples
def test_audit_after_answering(world: dict[str, Any]) -> None:
    task, item, u = world["task"], world["items"]["0005"], world["u"]
    steps = {
        "C1": {"checks": {"intent": True, "tool": True, "checkpoint": True}},
        "C4": {"checks": {"intent": True, "url": False}, "comment": "No URL recorded."},
    }
    with pytest.raises(Forbidden, match="answer the item blind"):
        verification.audit_save(task=task, item=item, user=u["v1"], steps=steps, base_number=0)
    answer_directly(task, u["v1"], item, "130")
    audit = verification.audit_save(task=task, item=item, user=u["v1"], steps=steps, base_number=0)
    assert audit.number == 1
    saved = ticks(task, item, u["v1"])
    # Every step of the reference is recorded; what was not ticked is not confirmed.
    assert list(saved) == ["C1", "C2", "C3", "C4", "C5"]
    assert saved["C1"] == {"intent": True, "tool": True, "checkpoint": True}
    assert saved["C2"] == {"intent": False, "tool": False, "checkpoint": False}
    assert saved["C4"] == {"intent": True, "tool": False, "checkpoint": False, "url": False}
    assert audit.steps[3]["comment"] == "No URL recorded."
    assert audit.steps[3]["description"].startswith("Search for the year")
    # A second save is a new version on top of the first; the old one is kept.
    steps["C2"] = {"checks": {"intent": True, "tool": True, "checkpoint": True}}
    verification.audit_save(task=task, item=item, user=u["v1"], steps=steps, base_number=1)
    assert ticks(task, item, u["v1"])["C2"]["tool"] is True
    assert TrajectoryAudit.objects.filter(item=item, user=u["v1"]).count() == 2
    # A save based on an old version is refused.
    with pytest.raises(Conflict, match="version 2"):
        verification.audit_save(task=task, item=item, user=u["v1"], steps={}, base_number=1)
    assert TrajectoryAudit.objects.filter(item=item, user=u["v1"]).count() == 2


@needs_samples
@pytest.mark.parametrize(
    ("steps", "message"),
    [
        ({"C9": {"checks": {}}}, "no step called C9"),
        ({"C1": {"checks": {"url": True}}}, "step C1: no check called url"),
        ({"C1": {"checks": {"bogus": True}}}, "step C1: no check called bogus"),
        ({"C1": {"checks": ["intent"]}}, "step C1: checks must be an object"),
        ({"C1": {"checks": {}, "comment": "x" * 2001}}, "step C1: the comment is longer"),
    ],
)
def test_audit_input_is_checked(world: dict[str, Any], steps: Any, message: str) -> None:
    task, item, u = world["task"], world["items"]["0005"], world["u"]
    answer_directly(task, u["v1"], item, "130")
    with pytest.raises(ValidationFailed, match=message):
        verification.audit_save(task=task, item=item, user=u["v1"], steps=steps, base_number=0)
    assert not TrajectoryAudit.objects.exists()


@needs_samples
def test_reviewers_see_ticks_per_step_across_verifiers(world: dict[str, Any]) -> None:
    task, item, u = world["task"], world["items"]["0001"], world["u"]
    for name, ok in (("v1", True), ("v2", False)):
        answer_directly(task, u[name], item, "Willow St")
        verification.audit_save(
            task=task,
            item=item,
            user=u[name],
            steps={"C1": {"checks": {"intent": True, "tool": ok, "checkpoint": True}}},
            base_number=0,
        )
    reference = solving.reference_trajectory(item)
    assert reference is not None
    units = checklist.audit_steps(reference.checkpoints)
    table = verification_selectors.audit_table(
        units, verification_selectors.latest_audits(task=task, item=item)
    )
    c1 = table[0]
    assert c1["step"] == "C1"
    tool = next(r for r in c1["rows"] if r["name"] == "tool")
    assert [(who.username, tick) for who, tick in tool["ticks"]] == [("v1", True), ("v2", False)]
    assert (tool["ok"], tool["n"], tool["doubt"]) == (1, 2, True)
    assert c1["doubt"] is True
    overview = verification_selectors.audit_overview(user=u["rev"], task=task)
    assert overview[0]["item"] == item
    # v2 left 1 check of C1 and all 3 of C2 unticked; v1 all 3 of C2.
    assert overview[0]["unconfirmed"] == 7
    assert overview[0]["verdict"] == "accepted"


# --------------------------------------------------------------------------- blindness


@needs_samples
def test_who_may_see_the_answer_before_solving(world: dict[str, Any]) -> None:
    task, u, items = world["task"], world["u"], world["items"]
    item = items["0003"]
    Item.objects.filter(pk=items["0004"].pk).update(provenance="user:v1")
    everything = list(Item.objects.filter(project=world["project"]))
    hidden = visibility.hidden_item_ids(user=u["v1"], items=everything)
    # All drafts except v1's own item (v1 is its author and may not verify it).
    assert hidden == {i.pk for i in everything} - {items["0004"].pk}
    assert visibility.hidden_item_ids(user=u["rev"], items=everything) == set()
    answer_directly(task, u["v1"], item, "317")
    assert item.pk not in visibility.hidden_item_ids(user=u["v1"], items=everything)
    assert item.pk in visibility.hidden_item_ids(user=u["v2"], items=everything)
    answer_directly(task, u["v2"], item, "317")  # verified: settled for everyone
    assert item.pk not in visibility.hidden_item_ids(user=u["v3"], items=everything)
    # A closed task hides nothing.
    task.active = False
    task.save()
    assert visibility.hidden_item_ids(user=u["v3"], items=everything) == set()


@needs_samples
def test_hidden_ids_answer_as_the_rules_do_as_the_database_changes(
    world: dict[str, Any],
) -> None:
    """hidden_item_ids answers what the rules' queryset answers, for any list of ids (one,
    several, repeated), and again after a judgment changes what is hidden."""
    task, u, items = world["task"], world["u"], world["items"]
    everything = [i.pk for i in Item.objects.filter(project=world["project"]).order_by("pk")]

    def by_rules(user: Any, ids: list[int]) -> set[int]:
        rows = visibility.hidden_items(user=user).filter(pk__in=ids)
        return set(rows.values_list("pk", flat=True))

    shapes = [everything, everything[:1], everything[-1:], [*everything[:2], everything[0]]]
    assert len(everything) > 2
    for user in (u["v1"], u["v2"], u["rev"]):
        for ids in shapes:
            assert visibility.hidden_item_ids(user=user, items=ids) == by_rules(user, ids)
    answer_directly(task, u["v1"], items["0003"], "317")
    assert items["0003"].pk not in visibility.hidden_item_ids(user=u["v1"], items=everything)
    assert items["0003"].pk in visibility.hidden_item_ids(user=u["v2"], items=everything)
    for user in (u["v1"], u["v2"]):
        assert visibility.hidden_item_ids(user=user, items=everything) == by_rules(user, everything)


@needs_samples
def test_a_hidden_answer_is_not_loaded(world: dict[str, Any]) -> None:
    """The item selector reads a hidden item's answer as empty, from the database (nothing is
    blanked in memory, and nothing loads it later); the stored answer is untouched."""
    item = world["items"]["0003"]
    project, v1, rev = world["project"], world["u"]["v1"], world["u"]["rev"]
    hidden = item_selectors.item_get(user=v1, project=project, pk=item.pk)
    assert hidden.answer_hidden
    assert (hidden.expected_answer, hidden.accepted_variants, hidden.raw) == ("", [], "")
    assert hidden.get_deferred_fields() == set()  # nothing left to load on access
    shown = item_selectors.item_get(user=rev, project=project, pk=item.pk)
    assert not shown.answer_hidden and shown.expected_answer == "317"
    assert Item.objects.get(pk=item.pk).expected_answer == "317"


@needs_samples
def test_a_revised_tolerance_is_kept_where_the_task_file_has_it(
    world: dict[str, Any], tmp_path: Path
) -> None:
    task, item, u = world["task"], world["items"]["0002"], world["u"]
    answer_directly(task, u["v1"], item, "1284.50")
    answer_directly(task, u["v2"], item, "1284.00")  # off by 0.5: tolerance 0.01 is too tight
    outcome = adjudication.answer_revise(
        task=task,
        item=item,
        reviewer=u["rev"],
        expected_answer="1284.50",
        accepted_variants=[],
        match_type="numeric",
        tolerance=0.5,
    )
    item.refresh_from_db()
    assert outcome.verdict == "accepted"
    assert item.raw_record["golden_answer"]["tolerance"] == 0.5
    assert solving.golden_answer(item)["tolerance"] == 0.5
    # The export writes it into the task file.
    benchmark_services.dataset_export(project=world["project"], out=tmp_path / "out")
    exported = json.loads((tmp_path / "out" / "json" / "0002.json").read_text())
    assert exported["golden_answer"]["tolerance"] == 0.5
    assert exported["golden_answer"]["value"] == "1284.50"
