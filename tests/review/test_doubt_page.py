"""Routing by doubt on the agreement page (issue 26): the items most in doubt with the signals
behind each, the annotators' reliability against the gate, "Recompute doubt" as a job; and
``manage.py recompute_doubt``."""

from __future__ import annotations

import json
from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from annotation.judgment_tasks.doubt.models import ItemDoubt
from annotation.judgment_tasks.doubt.services import DOUBT_KIND
from benchmark.models import Job
from tests.factories import (
    AnnotatorReliabilityFactory,
    ItemDoubtFactory,
    ItemFactory,
    JudgmentFactory,
    JudgmentTaskFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db


def _doubts(task: Any, n: int) -> None:
    for k in range(n):
        item = ItemFactory(project=task.project, external_id=f"d{k:03d}", position=k)
        signals = {"votes": {"1": 1.0, "0": 1.0}, "lead": 1, "share": 0.5, "posterior": False}
        if k == 2:
            signals |= {"judge": 0, "judge_disagrees": True, "models_wrong": 0.5, "models": 2}
        ItemDoubtFactory(task=task, item=item, score=round(k / (n + 1), 4), signals=signals)


def _page(client: Any, task: Any) -> Any:
    return client.get(reverse("review:agreement", args=[task.pk]))


def test_the_page_lists_the_25_most_in_doubt_with_their_signals(project, clients) -> None:  # type: ignore[no-untyped-def]
    task = JudgmentTaskFactory(project=project, serve_by_doubt=True)
    _doubts(task, 30)
    shaky = UserFactory(username="shaky")
    AnnotatorReliabilityFactory(task=task, user=shaky, score=0.4)
    page = _page(clients["reviewer"], task)
    assert page.status_code == 200
    html = page.content.decode()
    assert "serves items by doubt" in html and "The 25 most in doubt of 30 scored" in html
    rows = html.split('id="doubt-table"')[1].split("</table>")[0]
    assert rows.index('data-item="d029"') < rows.index('data-item="d010"')
    assert 'data-item="d004"' not in rows  # the 26th and below are not listed
    assert "disagrees" not in rows  # d002 is not among the top 25
    assert 'data-annotator="shaky"' in html and "below 0.70" in html


def test_the_page_shows_why_an_item_is_served_first(project, clients) -> None:  # type: ignore[no-untyped-def]
    task = JudgmentTaskFactory(project=project)
    _doubts(task, 8)
    html = _page(clients["admin"], task).content.decode()
    assert "serves items in position order" in html
    row = html.split('data-item="d002"')[1].split("</tr>")[0]
    assert "disagrees" in row and "50 % of 2" in row


def test_the_page_before_any_doubt_says_so(project, clients) -> None:  # type: ignore[no-untyped-def]
    task = JudgmentTaskFactory(project=project, serve_by_doubt=True)
    html = _page(clients["reviewer"], task).content.decode()
    assert 'id="doubt-empty"' in html and "counts 1.00" in html


def test_the_pages_queries_do_not_grow_with_the_doubts(  # type: ignore[no-untyped-def]
    project, clients, django_assert_max_num_queries
) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    task = JudgmentTaskFactory(project=project, serve_by_doubt=True)
    _doubts(task, 5)
    AnnotatorReliabilityFactory(task=task)
    with CaptureQueriesContext(connection) as few:
        assert _page(clients["reviewer"], task).status_code == 200
    _doubts_more = [ItemFactory(project=project, external_id=f"m{k}") for k in range(40)]
    for item in _doubts_more:
        ItemDoubtFactory(task=task, item=item, score=0.9)
    AnnotatorReliabilityFactory(task=task)
    with django_assert_max_num_queries(len(few)):
        assert _page(clients["reviewer"], task).status_code == 200


def test_recompute_doubt_starts_a_job_for_reviewers_only(project, clients) -> None:  # type: ignore[no-untyped-def]
    task = JudgmentTaskFactory(project=project, serve_by_doubt=True)
    url = reverse("annotation:doubt_recompute", args=[task.pk])
    assert clients["annotator"].post(url).status_code == 403
    assert clients["outsider"].post(url).status_code == 404
    assert clients["reviewer"].get(url).status_code == 405
    assert not Job.objects.filter(kind=DOUBT_KIND).exists()
    response = clients["reviewer"].post(url)
    assert response.status_code == 302
    assert response["Location"].endswith(
        reverse("review:agreement", args=[task.pk]) + "#items-by-doubt"
    )
    job = Job.objects.get(kind=DOUBT_KIND)
    assert job.params == {"task_id": task.pk}
    page = _page(clients["reviewer"], task).content.decode()
    assert f'id="job-{job.pk}"' in page or f"/jobs/{job.pk}/" in page


def test_the_recompute_job_scores_every_item(project) -> None:  # type: ignore[no-untyped-def]
    from benchmark.jobs.services import job_create, job_run

    task = JudgmentTaskFactory(project=project, serve_by_doubt=True, overlap=2)
    items = [ItemFactory(project=project, external_id=f"j{k}", position=k) for k in range(3)]
    a, b = UserFactory(), UserFactory()
    JudgmentFactory(task=task, item=items[0], user=a, value=1)
    JudgmentFactory(task=task, item=items[0], user=b, value=0)
    JudgmentFactory(task=task, item=items[1], user=a, value=1)
    job = job_create(kind=DOUBT_KIND, project=project, params={"task_id": task.pk})
    job_run(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == "succeeded", job.error
    assert job.result["items"] == 3 and job.result["judgments"] == 3
    scores = dict(ItemDoubt.objects.filter(task=task).values_list("item__external_id", "score"))
    assert scores["j2"] == 1.0 and scores["j0"] == 1.0 and scores["j1"] == pytest.approx(2 / 3)


def test_the_command_recomputes_and_prints_the_top(project) -> None:  # type: ignore[no-untyped-def]
    task = JudgmentTaskFactory(project=project, name="valid", serve_by_doubt=True)
    items = [ItemFactory(project=project, external_id=f"c{k}", position=k) for k in range(3)]
    JudgmentFactory(task=task, item=items[0], value=1)
    out = StringIO()
    call_command("recompute_doubt", "--project", project.name, "--top", "2", stdout=out)
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert lines[0]["summary"]["name"] == "valid" and lines[0]["summary"]["items"] == 3
    assert [row["item"] for row in lines[1:]] == ["c1", "c2"]
    assert lines[1]["doubt"] == 1.0
    with pytest.raises(CommandError, match="no judgment task named 'nope'"):
        call_command("recompute_doubt", "--project", project.name, "--task", "nope")
    task.serve_by_doubt = False
    task.save()
    with pytest.raises(CommandError, match="name one with --task"):
        call_command("recompute_doubt", "--project", project.name)
    with pytest.raises(CommandError, match="no project named"):
        call_command("recompute_doubt", "--project", "nowhere")
