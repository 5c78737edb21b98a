"""The judging flow through the web: lease, blind judge page, submit, disputes, adjudication,
agreement dashboard and judgment export."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.urls import reverse

from annotation.judgment_tasks.models import Judgment, JudgmentTask, Outcome
from annotation.judgment_tasks.services import judgment_task_ensure_defaults
from benchmark.models import Item, Toolset
from tests.factories import ItemFactory, MembershipFactory, PlanFactory, ProjectFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def setup(client_for: Any) -> dict[str, Any]:
    toolset = Toolset.objects.create(name="mms-web")
    project = ProjectFactory(
        name="plans", kind="plan", tag_syntax="", data_format="mms", toolset=toolset
    )
    items = [ItemFactory(project=project, external_id=f"p{i}", position=i) for i in range(2)]
    for item in items:
        PlanFactory(
            item=item,
            key="gold",
            steps=[
                {"id": 0, "name": "image captioning", "args": {"image": "a.jpg"}},
                {"id": 1, "name": "text summarization", "args": {"text": "<node-0>.text"}},
            ],
        )
    (task,) = judgment_task_ensure_defaults(project=project)
    people = {}
    for name, role in [
        ("a1", "annotator"),
        ("a2", "annotator"),
        ("a3", "annotator"),
        ("rev", "reviewer"),
    ]:
        user = UserFactory(username=name)
        MembershipFactory(project=project, user=user, role=role)
        people[name] = client_for(user)
    return {"project": project, "task": task, "items": items, "c": people}


def _vote(client: Any, task: JudgmentTask, value: int, comment: str = "") -> Item:
    response = client.post(reverse("annotation:task_next", args=[task.pk]))
    assert response.status_code == 302, response.content[:500]
    page = client.get(response["Location"])
    assert page.status_code == 200
    item = page.context["item"]
    done = client.post(
        response["Location"], {"value": str(value), "comment": comment, "seconds": "3.5"}
    )
    assert done.status_code == 302, done.content.decode()[:2000]
    return item


def test_three_votes_dispute_then_reviewer_resolves(setup: dict[str, Any]) -> None:
    task, c = setup["task"], setup["c"]
    assert (task.overlap, task.consensus, task.required_value) == (3, "all_required", 1)
    first = _vote(c["a1"], task, 1, comment="first-vote-marker")
    # blind: a2's judge page shows no trace of a1's vote (the name as page text, the comment;
    # a bare "a1" could appear inside the random CSRF token)
    r = c["a2"].post(reverse("annotation:task_next", args=[task.pk]))
    page = c["a2"].get(r["Location"])
    assert page.context["judgments"] == []
    html = page.content.decode()
    assert ">a1<" not in html and "first-vote-marker" not in html
    c["a2"].post(r["Location"], {"value": "1"})
    assert _vote(c["a3"], task, 0, comment="step 2 needs the caption, not the image") == first

    outcome = Outcome.objects.get(task=task, item=first)
    assert outcome.verdict == "disputed"
    queue = c["rev"].get(reverse("review:dispute_list", args=[task.pk]))
    assert first.external_id in queue.content.decode()
    before = c["rev"].get(reverse("review:agreement", args=[task.pk])).context["report"]
    assert before["percent_agreement"]["value"] == 0.0

    page = c["rev"].get(reverse("review:adjudicate", args=[task.pk, first.pk]))
    assert {j.user.username for j in page.context["judgments"]} == {"a1", "a2", "a3"}
    assert "step 2 needs the caption" in page.content.decode()
    done = c["rev"].post(
        reverse("review:adjudicate", args=[task.pk, first.pk]),
        {"verdict": "accepted", "reason": "plan is fine"},
    )
    assert done.status_code == 302
    first.refresh_from_db()
    assert first.status == "verified"
    after = c["rev"].get(reverse("review:agreement", args=[task.pk])).context["report"]
    a3 = next(r for r in after["raters"] if r["rater"] == "a3")
    assert a3["agreement_with_final"] == 0.0
    a1 = next(r for r in after["raters"] if r["rater"] == "a1")
    assert a1["agreement_with_final"] == 1.0


def test_annotators_cannot_open_unassigned_items_or_review(setup: dict[str, Any]) -> None:
    task, c, item = setup["task"], setup["c"], setup["items"][0]
    assert c["a1"].get(reverse("annotation:judge", args=[task.pk, item.pk])).status_code == 403
    assert c["a1"].get(reverse("review:dispute_list", args=[task.pk])).status_code == 403
    assert c["a1"].get(reverse("review:agreement", args=[task.pk])).status_code == 403
    assert c["a1"].get(reverse("review:judgments_export", args=[task.pk, "csv"])).status_code == 403
    stranger = UserFactory(username="stranger")
    from django.test import Client

    other = Client()
    other.force_login(stranger)
    assert other.get(reverse("annotation:task_list", args=[setup["project"].pk])).status_code == 404
    assert other.post(reverse("annotation:task_next", args=[task.pk])).status_code == 404


def test_bad_vote_is_shown_on_the_form_and_nothing_is_saved(setup: dict[str, Any]) -> None:
    task, c = setup["task"], setup["c"]
    r = c["a1"].post(reverse("annotation:task_next", args=[task.pk]))
    page = c["a1"].post(r["Location"], {"value": "7"})
    assert page.status_code == 200
    assert "7" in page.content.decode() and "valid choice" in page.content.decode()
    assert Judgment.objects.count() == 0


def test_judge_page_shows_plan_graph_and_findings(setup: dict[str, Any]) -> None:
    task, c = setup["task"], setup["c"]
    r = c["a1"].post(reverse("annotation:task_next", args=[task.pk]))
    html = c["a1"].get(r["Location"]).content.decode()
    assert 'class="plan-graph"' in html
    assert 'id="input-files"' in html and "a.jpg" in html
    assert "unknown_tool" in html  # the toolset is empty here, so both tools are unknown
    assert "<kbd>1</kbd>" in html and "<kbd>0</kbd>" in html


def test_judgment_exports_list_every_judgment(setup: dict[str, Any]) -> None:
    task, c = setup["task"], setup["c"]
    _vote(c["a1"], task, 1, comment='has "quotes", commas')
    _vote(c["a2"], task, 0)
    jsonl = b"".join(
        c["rev"].get(reverse("review:judgments_export", args=[task.pk, "jsonl"])).streaming_content
    )
    rows = [json.loads(line) for line in jsonl.splitlines()]
    assert sorted((r["annotator"], r["value"]) for r in rows) == [("a1", 1), ("a2", 0)]
    csv_text = b"".join(
        c["rev"].get(reverse("review:judgments_export", args=[task.pk, "csv"])).streaming_content
    ).decode()
    assert csv_text.splitlines()[0].startswith("item,annotator,value")
    assert '"has ""quotes"", commas"' in csv_text


def test_large_task_recomputes_agreement_as_a_job(
    setup: dict[str, Any], monkeypatch: pytest.MonkeyPatch, django_capture_on_commit_callbacks: Any
) -> None:
    from benchmark.models import Job
    from review.agreement import services as agreement

    task, c = setup["task"], setup["c"]
    for name in ("a1", "a2"):
        _vote(c[name], task, 1)
    monkeypatch.setattr(agreement, "INLINE_LIMIT", 1)
    url = reverse("review:agreement", args=[task.pk])
    page = c["rev"].get(url)
    assert page.context["report"] is None and "Recompute" in page.content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        assert c["rev"].post(url).status_code == 302
    job = Job.objects.get(kind="agreement")
    assert job.status == "succeeded", job.error
    page = c["rev"].get(url)
    assert page.context["report"]["n_judgments"] == 2
    assert page.context["report"]["percent_agreement"]["value"] == 1.0
