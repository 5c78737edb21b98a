"""Reads that cannot be saved (issue 23): what a selector returns for a user who may not see
an item's answer (a blind verifier) or an answer's model (a blind rater) is built with public
QuerySet API only (deferred columns, annotations), never carries the secret, and raises if
saved; the rules' first question is remembered for one request, never across requests, so a
change made by ``update()`` or ``bulk_create`` (which send no signal) is seen by the next."""

from __future__ import annotations

import pickle
from typing import Any

import pytest
from django.urls import reverse

from annotation.judgment_tasks import selectors as judging_selectors
from annotation.judgment_tasks import services as judging_services
from annotation.judgment_tasks.models import JudgmentTask
from benchmark import selectors as item_selectors
from benchmark import visibility
from benchmark.models import Item, Response
from benchmark.reads import WithheldRead
from tests.annotation.test_blind_answer_edits import world as world  # noqa: F401 - fixture
from tests.factories import ItemFactory, MembershipFactory, ProjectFactory, UserFactory
from tests.review.test_human_eval_blindness import MODELS, World

pytestmark = pytest.mark.django_db

SECRET = "Pack order"


def _reads_of_the_hidden_item(world: dict[str, Any]) -> list[Item]:  # noqa: F811
    verifier, project, item = world["u"]["annotator1"], world["project"], world["item"]
    (listed,) = item_selectors.item_list(user=verifier, project=project)
    (row,) = item_selectors.item_list_rows(user=verifier, project=project)
    return [
        item_selectors.item_get(user=verifier, project=project, pk=item.pk),
        item_selectors.item_get_for_write(user=verifier, project=project, pk=item.pk),
        listed,
        row,
    ]


def test_a_hidden_answer_read_never_carries_the_answer_and_cannot_be_saved(
    world: dict[str, Any],  # noqa: F811
    django_assert_num_queries: Any,
) -> None:
    for read in _reads_of_the_hidden_item(world):
        assert read.answer_hidden is not False  # type: ignore[attr-defined]
        assert SECRET.encode() not in pickle.dumps(read)
        with django_assert_num_queries(0):
            assert (read.expected_answer, read.accepted_variants, read.raw) == ("", [], "")
        read.query = "A changed query"
        with pytest.raises(WithheldRead, match="may not see expected_answer"):
            read.save()
        read.refresh_from_db()  # reloads what the user may see, never the answer
        assert read.query != "A changed query" and read.expected_answer == ""
        assert SECRET.encode() not in pickle.dumps(read)
    stored = Item.objects.get(pk=world["item"].pk)
    assert (stored.expected_answer, stored.query) == (SECRET, world["item"].query)


def test_a_visible_read_loads_its_answer_without_a_query_and_saves(
    world: dict[str, Any],  # noqa: F811
    django_assert_num_queries: Any,
) -> None:
    reviewer, project = world["u"]["reviewer"], world["project"]
    (listed,) = item_selectors.item_list(user=reviewer, project=project)
    with django_assert_num_queries(0):
        assert (listed.answer_hidden, listed.expected_answer) == (False, SECRET)
    # a blind verifier's read of an item they wrote (an author does not verify their own)
    verifier = world["u"]["annotator1"]
    own = Item.objects.create(
        project=project, external_id="own", expected_answer="Mine", provenance="user:annotator1"
    )
    (read,) = item_selectors.item_list(user=verifier, project=project).filter(pk=own.pk)
    with django_assert_num_queries(0):
        assert (read.answer_hidden, read.expected_answer) == (False, "Mine")
    read.query = "Changed by a service"
    read.save()
    assert Item.objects.get(pk=own.pk).query == "Changed by a service"


def test_a_masked_answer_of_a_blind_rater_cannot_be_saved() -> None:
    w = World()
    w.task()
    answer = w.answers[MODELS[0]][0]
    (read,) = item_selectors.response_list(user=w.rater, item=answer.item).filter(pk=answer.pk)
    assert read.identity_hidden  # type: ignore[attr-defined]
    assert (read.model_name, read.key, read.source_file, read.raw, read.extra) == (
        "hidden",
        f"answer-{answer.pk}",
        "",
        "",
        {},
    )
    assert MODELS[0].encode() not in pickle.dumps(read)
    with pytest.raises(WithheldRead):
        read.save()
    assert Response.objects.get(pk=answer.pk).model_name == MODELS[0]


def test_a_change_made_by_update_is_seen_by_the_next_read_of_the_same_user(
    world: dict[str, Any],  # noqa: F811
) -> None:
    """The same user object asks again (a Celery task, a shell): ``update()`` sends no signal,
    and nothing remembered outlives the unit of work that asked."""
    verifier, project, item = world["u"]["annotator1"], world["project"], world["item"]

    def hidden() -> bool:
        read = item_selectors.item_get(user=verifier, project=project, pk=item.pk)
        return bool(read.answer_hidden)  # type: ignore[attr-defined]

    assert hidden()
    JudgmentTask.objects.filter(project=project).update(active=False)
    assert not hidden()  # "no task could hide anything from this user"
    # a blind task again, by update() and then by bulk_create (neither sends a signal): a
    # remembered "nothing hidden" would let the answer through
    JudgmentTask.objects.filter(project=project).update(active=True)
    assert hidden()
    JudgmentTask.objects.filter(project=project).update(active=False)
    assert not hidden()
    task = JudgmentTask.objects.get(project=project)
    task.pk, task.name, task.active = None, "Solve blind again", True
    JudgmentTask.objects.bulk_create([task])
    assert hidden()


def test_the_next_request_sees_a_change_made_meanwhile_by_bulk_create(
    world: dict[str, Any],  # noqa: F811
) -> None:
    verifier, project, item = world["u"]["annotator1"], world["project"], world["item"]
    page = reverse("benchmark:item_detail", args=[project.pk, item.pk])
    client = world["c"]["annotator1"]
    assert 'id="answer-hidden"' in client.get(page).content.decode()
    JudgmentTask.objects.filter(project=project).update(active=False)
    assert 'id="answer-hidden"' not in client.get(page).content.decode()
    task = JudgmentTask.objects.get(project=project)
    task.pk, task.name, task.active = None, "Solve blind again", True
    JudgmentTask.objects.bulk_create([task])
    assert 'id="answer-hidden"' in client.get(page).content.decode()
    assert SECRET not in client.get(page).content.decode()
    assert verifier.is_authenticated


def test_the_rules_are_asked_once_per_request(
    world: dict[str, Any],  # noqa: F811
    django_assert_num_queries: Any,
) -> None:
    """Within one request (one remembered block) the rule's first question is asked once,
    however many lists the page reads."""
    verifier, project = world["u"]["annotator1"], world["project"]
    with visibility.decisions_remembered():
        list(item_selectors.item_list(user=verifier, project=project))
        with django_assert_num_queries(1):  # the list itself, not the rule's question
            list(item_selectors.item_list(user=verifier, project=project))


def test_a_relabel_decided_by_a_submit_saves_the_row_not_the_submitters_read(db: None) -> None:
    """The judge page submits with an item read as hidden (it shows nothing of it); a
    relabel the judgments decide is saved on the row read again under a lock."""
    project = ProjectFactory(name="relabel", data_format="atp")
    item = ItemFactory(project=project, external_id="r1", category="Old", expected_answer="Kept")
    task = JudgmentTask.objects.create(
        project=project,
        name="t",
        question="ok?",
        scheme="binary",
        overlap=1,
        consensus="unanimous",
        relabel_fields=["category"],
    )
    user = UserFactory(username="relabeller")
    MembershipFactory(project=project, user=user, role="annotator")
    lease = judging_services.assignment_next_for_user(task=task, user=user)
    assert lease is not None and lease.item_id == item.pk
    read = judging_selectors.task_item_for_submit(user=user, task=task, pk=item.pk)
    judging_services.judgment_submit(
        task=task, item=read, user=user, value=1, relabel={"category": "New"}
    )
    stored = Item.objects.get(pk=item.pk)
    assert (stored.category, stored.expected_answer) == ("New", "Kept")
    assert read.category == "New"
