"""Gold items for reviewers (issue 26): marking, gold accuracy and its Wilson interval, the
flag, pausing a queue and sending judgments back; the pages that show them."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from annotation.judgment_tasks import services as judging
from annotation.judgment_tasks.models import (
    GoldItem,
    Judgment,
    JudgmentTask,
    Outcome,
    QueuePause,
    SendBack,
)
from benchmark.exceptions import Conflict, Forbidden, NotFound, ValidationFailed
from benchmark.models import Item, ItemStatus
from review.gold import selectors, services
from tests.factories import (
    AssignmentFactory,
    ItemFactory,
    JudgmentFactory,
    MembershipFactory,
    ProjectFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def w() -> Any:
    project = ProjectFactory(name="gold")
    task = JudgmentTask.objects.create(
        project=project, name="keep", question="Keep?", scheme="binary", overlap=1,
        consensus="majority", gold_rate=20,
    )  # fmt: skip
    people = {}
    for name, role in [("ann", "annotator"), ("bea", "annotator"), ("rev", "reviewer")]:
        people[name] = UserFactory(username=name)
        MembershipFactory(project=project, user=people[name], role=role)
    verified = [
        ItemFactory(project=project, external_id=f"g{i}", status=ItemStatus.VERIFIED)
        for i in range(6)
    ]
    for item in verified:
        Outcome.objects.create(task=task, item=item, verdict="accepted", value=1)
    drafts = [ItemFactory(project=project, external_id=f"d{i}") for i in range(4)]
    return type("W", (), dict(project=project, task=task, verified=verified, drafts=drafts,
                              **people))  # fmt: skip


def _gold_judgment(task: JudgmentTask, item: Item, user: Any, value: Any) -> Judgment:
    assignment = AssignmentFactory(task=task, item=item, user=user, status="submitted", gold=True)
    return Judgment.with_gold.create(
        task=task, item=item, user=user, assignment=assignment, value=value, gold=True
    )


def test_mark_takes_the_accepted_value_keeps_history_and_refuses_what_cannot_be_gold(w) -> None:  # type: ignore[no-untyped-def]
    mark = services.gold_mark(task=w.task, item=w.verified[0], user=w.rev)
    assert mark.value == 1 and mark.created_by == w.rev
    # The same value again: the same mark; another value: a new mark, the old one kept.
    assert services.gold_mark(task=w.task, item=w.verified[0], user=w.rev, value="1") == mark
    new = services.gold_mark(task=w.task, item=w.verified[0], user=w.rev, value="0")
    assert new.value == 0
    assert GoldItem.objects.filter(task=w.task, item=w.verified[0]).count() == 2
    mark.refresh_from_db()
    assert mark.removed_at is not None and mark.removed_by == w.rev
    with pytest.raises(ValidationFailed, match="only verified items"):
        services.gold_mark(task=w.task, item=w.drafts[0], user=w.rev, value=1)
    with pytest.raises(ValidationFailed, match="not one of the task's labels"):
        services.gold_mark(task=w.task, item=w.verified[1], user=w.rev, value="maybe")
    with pytest.raises(Forbidden):
        services.gold_mark(task=w.task, item=w.verified[1], user=w.ann, value=1)
    other = ItemFactory(status=ItemStatus.VERIFIED)
    with pytest.raises(NotFound):
        services.gold_mark(task=w.task, item=other, user=w.rev, value=1)
    services.gold_unmark(task=w.task, item_id=w.verified[0].pk, user=w.rev)
    assert not GoldItem.objects.filter(task=w.task, removed_at__isnull=True).exists()
    assert GoldItem.objects.filter(task=w.task).count() == 2  # nothing deleted
    with pytest.raises(NotFound):
        services.gold_unmark(task=w.task, item_id=w.verified[0].pk, user=w.rev)


def test_accuracy_and_its_wilson_interval_equal_the_hand_computed_ones(w) -> None:  # type: ignore[no-untyped-def]
    for item in w.verified[:5]:
        services.gold_mark(task=w.task, item=item, user=w.rev, value=1)
    # ann: 4 of 5 right; bea: 1 of 4 right (below the threshold, but under the minimum of 5).
    for n, item in enumerate(w.verified[:5]):
        _gold_judgment(w.task, item, w.ann, 1 if n else 0)
    for n, item in enumerate(w.verified[:4]):
        _gold_judgment(w.task, item, w.bea, 1 if n == 0 else 0)
    report = selectors.gold_report(user=w.rev, task=w.task)
    rows = {r.username: r for r in report.rows}
    ann, bea = rows["ann"], rows["bea"]
    assert (ann.correct, ann.total, ann.accuracy) == (4, 5, 0.8)
    # Wilson score interval, z = 1.959964: centre (p + z²/2n) / (1 + z²/n) = 0.66966,
    # half-width z·sqrt(p(1-p)/n + z²/4n²) / (1 + z²/n) = 0.29412.
    assert ann.low == pytest.approx(0.37553, abs=1e-4)
    assert ann.high == pytest.approx(0.96378, abs=1e-4)
    assert not ann.flagged  # 0.8 >= 0.7
    assert (bea.correct, bea.total) == (1, 4) and not bea.flagged  # fewer than 5
    _gold_judgment(w.task, w.verified[4], w.bea, 0)
    bea = {r.username: r for r in selectors.gold_report(user=w.rev, task=w.task).rows}["bea"]
    assert bea.flagged and report.n_gold == 5
    # Annotators see nothing of it.
    assert selectors.gold_report(user=w.ann, task=w.task).rows == []
    assert not selectors.gold_items(user=w.ann, task=w.task).exists()


def test_pause_and_resume(w) -> None:  # type: ignore[no-untyped-def]
    services.queue_pause(task=w.task, user=w.rev, annotator_id=w.ann.pk, reason="gold 0.40")
    with pytest.raises(Conflict, match="paused already"):
        services.queue_pause(task=w.task, user=w.rev, annotator_id=w.ann.pk)
    with pytest.raises(Forbidden, match="paused by a reviewer"):
        judging.assignment_next_for_user(task=w.task, user=w.ann)
    assert judging.assignment_next_for_user(task=w.task, user=w.bea) is not None
    services.queue_resume(task=w.task, user=w.rev, annotator_id=w.ann.pk)
    assert judging.assignment_next_for_user(task=w.task, user=w.ann) is not None
    with pytest.raises(Conflict, match="not paused"):
        services.queue_resume(task=w.task, user=w.rev, annotator_id=w.ann.pk)
    assert QueuePause.objects.filter(task=w.task, user=w.ann).count() == 1  # kept
    with pytest.raises(NotFound):
        services.queue_pause(task=w.task, user=w.rev, annotator_id=UserFactory().pk)


def test_send_back_disputes_the_recent_outcomes_and_keeps_everything(w) -> None:  # type: ignore[no-untyped-def]
    for item in w.drafts:
        JudgmentFactory(task=w.task, item=item, user=w.ann, value=1)
        judging.outcome_recompute(task=w.task, item=item)
    assert Outcome.objects.filter(task=w.task, item__in=w.drafts, verdict="accepted").count() == 4
    gold = _gold_judgment(w.task, w.verified[0], w.ann, 0)  # a gold judgment: not sent back
    sent = services.judgments_send_back(task=w.task, user=w.rev, annotator_id=w.ann.pk, last=2)
    newest = sorted(w.drafts, key=lambda i: -Judgment.objects.get(item=i).pk)[:2]
    assert sorted(sent.item_ids) == sorted(i.pk for i in newest)
    for item in w.drafts:
        outcome = Outcome.objects.get(task=w.task, item=item)
        item.refresh_from_db()
        if item in newest:
            assert outcome.verdict == "disputed" and "sent back for review" in outcome.reason
            assert item.status == ItemStatus.IN_REVIEW
        else:
            assert outcome.verdict == "accepted" and item.status == ItemStatus.VERIFIED
    assert Judgment.with_gold.filter(task=w.task, user=w.ann).count() == 5  # nothing deleted
    assert gold.pk not in sent.judgment_ids and SendBack.objects.count() == 1
    # They wait in the task's dispute queue.
    client = Client()
    client.force_login(w.rev)
    page = client.get(reverse("review:dispute_list", args=[w.task.pk])).content.decode()
    assert all(i.external_id in page for i in newest)
    with pytest.raises(ValidationFailed):
        services.judgments_send_back(task=w.task, user=w.rev, annotator_id=w.ann.pk, last=0)


def test_gold_page_marks_and_pauses_and_team_and_agreement_pages_show_accuracy(
    w, django_assert_max_num_queries
) -> None:  # type: ignore[no-untyped-def]
    client = Client()
    client.force_login(w.rev)
    url = reverse("review:gold", args=[w.task.pk])
    answer = client.post(
        reverse("review:gold_mark", args=[w.task.pk]), {"item": "g0", "value": "1"}
    )
    assert answer.status_code == 302
    bad = client.post(reverse("review:gold_mark", args=[w.task.pk]), {"item": "d0", "value": ""})
    assert bad.status_code == 400 and "only verified items" in bad.content.decode()
    missing = client.post(reverse("review:gold_mark", args=[w.task.pk]), {"item": "nope"})
    assert missing.status_code == 404 and "no item &#x27;nope&#x27;" in missing.content.decode()
    for item in w.verified[1:5]:
        services.gold_mark(task=w.task, item=item, user=w.rev, value=1)
    for item in w.verified[:5]:
        _gold_judgment(w.task, item, w.ann, 0)
    with django_assert_max_num_queries(16):
        page = client.get(url).content.decode()
    assert 'data-gold-item="g0"' in page and "below threshold" in page
    team = reverse("review:team", args=[w.project.pk])
    with django_assert_max_num_queries(30):
        body = client.get(team).content.decode()
    assert 'data-gold-annotator="ann"' in body and "data-gold-flagged" in body
    assert "0.000" in body  # accuracy 0 of 5
    body = client.get(reverse("review:agreement", args=[w.task.pk])).content.decode()
    assert 'data-gold-annotator="ann"' in body
    # Pause from the Team page, back to it; the annotator's "next" says why.
    answer = client.post(
        reverse("review:gold_pause", args=[w.task.pk, w.ann.pk]), {"next": team, "reason": "x"}
    )
    assert answer.status_code == 302 and answer["Location"] == team
    ann = Client()
    ann.force_login(w.ann)
    refused = ann.post(reverse("annotation:task_next", args=[w.task.pk]))
    assert refused.status_code == 403 and "paused by a reviewer" in refused.content.decode()
    again = client.post(reverse("review:gold_pause", args=[w.task.pk, w.ann.pk]))
    assert again.status_code == 409
    # An annotator may not see the gold page; an off-site "next" is not followed.
    assert ann.get(url).status_code == 403
    answer = client.post(
        reverse("review:gold_resume", args=[w.task.pk, w.ann.pk]), {"next": "https://evil.test/"}
    )
    assert answer["Location"] == url


def test_task_settings_take_the_gold_rate_threshold_and_minimum(w) -> None:  # type: ignore[no-untyped-def]
    admin = UserFactory(username="adm")
    MembershipFactory(project=w.project, user=admin, role="admin")
    fields = dict(
        name="keep", question="Keep?", scheme="binary", labels=[], relabel_fields=[], overlap=1,
        consensus="majority", required_value=None, author_may_judge=False, lease_minutes=30,
        active=True, items_listed=False,
    )  # fmt: skip
    task = judging.judgment_task_save(
        project=w.project, user=admin, task=w.task, **fields,
        gold_rate=10, gold_threshold=0.8, gold_min_judgments=3,
    )  # fmt: skip
    task.refresh_from_db()
    assert (task.gold_rate, task.gold_threshold, task.gold_min_judgments) == (10, 0.8, 3)
    with pytest.raises(ValidationFailed, match="gold rate"):
        judging.judgment_task_save(project=w.project, user=admin, task=w.task, gold_rate=60)
    with pytest.raises(ValidationFailed, match="gold threshold"):
        judging.judgment_task_save(
            project=w.project, user=admin, task=JudgmentTask.objects.get(pk=w.task.pk),
            gold_threshold=2,
        )  # fmt: skip
    # The settings form shows the fields, and a form without them keeps the defaults.
    client = Client()
    client.force_login(admin)
    url = reverse("annotation:task_edit", args=[w.project.pk, w.task.pk])
    page = client.get(url).content.decode()
    assert 'name="gold_rate"' in page and 'name="gold_threshold"' in page


def test_a_gold_items_page_tells_reviewers_only(w) -> None:  # type: ignore[no-untyped-def]
    services.gold_mark(task=w.task, item=w.verified[0], user=w.rev, value=1)
    _gold_judgment(w.task, w.verified[0], w.ann, 0)
    w.task.gold_min_judgments = 1
    w.task.save()
    url = reverse("benchmark:item_detail", args=[w.project.pk, w.verified[0].pk])
    reviewer, annotator = Client(), Client()
    reviewer.force_login(w.rev)
    annotator.force_login(w.ann)
    page = reviewer.get(url).content.decode()
    assert "Gold item of task keep" in page and "ann (0.00)" in page
    assert "Gold item" not in annotator.get(url).content.decode()


def test_gold_accuracy_is_routing_by_doubts_reliability(w) -> None:  # type: ignore[no-untyped-def]
    """Routing by doubt's reliability gate reads the gold accuracy reviewers see (4 of 5 right:
    0.8), once an annotator has the task's minimum of gold judgments (bea has 2 of 5: unknown
    from gold)."""
    from annotation.judgment_tasks.doubt.services import annotator_reliabilities, gold_accuracy_of

    for n, item in enumerate(w.verified[:5]):
        services.gold_mark(task=w.task, item=item, user=w.rev, value=1)
        _gold_judgment(w.task, item, w.ann, 1 if n else 0)
    for item in w.verified[:2]:
        _gold_judgment(w.task, item, w.bea, 1)
    assert gold_accuracy_of(w.task) == {w.ann.pk: (0.8, 5)}
    reliabilities = annotator_reliabilities(task=w.task)
    assert reliabilities[w.ann.pk].score == pytest.approx(0.8)
    assert reliabilities[w.ann.pk].source == "gold"
    assert w.bea.pk not in reliabilities or reliabilities[w.bea.pk].source != "gold"
    report = {r.username: r for r in selectors.gold_report(user=w.rev, task=w.task).rows}
    assert (report["ann"].correct, report["ann"].total) == (4, 5)
