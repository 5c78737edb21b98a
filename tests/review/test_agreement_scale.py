"""The agreement page at many annotators (issue 14): the overall figures and a paged table of
pairs, each pair's confusion matrix on demand, the figures cached and, while judgments come
in, shown up to STALE_SECONDS old (a reviewer may force current ones)."""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from annotation.judgment_tasks.models import Assignment, Judgment, JudgmentTask, Outcome
from annotation.judgment_tasks.services import judgment_submit
from benchmark.models import Project
from review.agreement import selectors as agreement_selectors
from review.agreement import services as agreement_services
from tests.factories import (
    AssignmentFactory,
    ItemFactory,
    JudgmentFactory,
    JudgmentTaskFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db

LABELS = ["wrong", "weak", "partial", "good", "correct"]
HX = {"HTTP_HX_REQUEST": "true"}


def _task(project: Project, annotators: int, items: int, overlap: int = 5) -> JudgmentTask:
    """A nominal task on 5 labels: ``items`` items, each judged by ``overlap`` of
    ``annotators`` annotators (seeded)."""
    task = JudgmentTaskFactory(
        project=project,
        scheme="nominal",
        overlap=overlap,
        consensus="majority",
        labels=[{"value": v, "label": v.title(), "accept": v == "correct"} for v in LABELS],
    )
    people = [UserFactory(username=f"t{task.pk}-rater{n:02d}") for n in range(annotators)]
    rng = random.Random(annotators)
    now = timezone.now()
    assignments, judgments = [], []
    for _ in range(items):
        item = ItemFactory(project=project)
        truth = rng.choice(LABELS)
        for user in rng.sample(people, overlap):
            a = Assignment(
                task=task, item=item, user=user, status="submitted", leased_at=now,
                expires_at=now, submitted_at=now,
            )  # fmt: skip
            assignments.append(a)
            value = truth if rng.random() < 0.7 else rng.choice(LABELS)
            judgments.append(Judgment(task=task, item=item, user=user, assignment=a, value=value))
    Assignment.objects.bulk_create(assignments)
    for j in judgments:
        j.assignment_id = j.assignment.pk
    Judgment.objects.bulk_create(judgments)
    return task


def _get(client: Any, task: JudgmentTask, query: str = "", **headers: str) -> Any:
    with CaptureQueriesContext(connection) as queries:
        response = client.get(reverse("review:agreement", args=[task.pk]) + query, **headers)
    assert response.status_code == 200, response.content[:500]
    response.queries = len(queries.captured_queries)
    return response


def _pair_rows(html: str) -> list[str]:
    table = html.split('id="pair-table"', 1)[1].split("</table>", 1)[0]
    return re.findall(r"<tr>\s*<td>([^<]+)</td>", table)


def test_queries_and_size_do_not_grow_with_annotators(project, users, clients) -> None:
    small = _task(project, annotators=10, items=30)
    large = _task(project, annotators=50, items=150)  # 750 judgments, 1,225 pairs
    rev = clients["reviewer"]
    computed = [_get(rev, small), _get(rev, large)]
    cached = [_get(rev, small), _get(rev, large)]
    assert computed[0].queries == computed[1].queries
    assert cached[0].queries == cached[1].queries
    assert cached[1].queries <= computed[1].queries
    html = cached[1].content.decode()
    # Summary figures and the table of the first 25 pairs; no confusion matrix on the page.
    assert "Krippendorff" in html and "Fleiss" in html
    assert len(_pair_rows(html)) == 25
    assert "<svg" not in html.split('id="agreement-pairs"', 1)[1]
    assert len(cached[1].content) < 200_000, len(cached[1].content)


def test_pairs_are_paged_and_sorted(project, users, clients) -> None:
    task = _task(project, annotators=50, items=150)
    rev = clients["reviewer"]
    page = _get(rev, task).content.decode()
    n_pairs = int(re.search(r'data-pairs="(\d+)"', page).group(1))
    assert n_pairs > 50
    # Paging links carry both href and hx-get; the htmx request gets the table alone.
    assert re.search(r'href="\?page=2" hx-get="\?page=2" hx-target="#agreement-pairs"', page)
    second = _get(rev, task, "?page=2", HTTP_HX_TARGET="agreement-pairs", **HX)
    fragment = second.content.decode()
    assert "<html" not in fragment and fragment.lstrip().startswith('<section class="card')
    first_rows, second_rows = _pair_rows(page), _pair_rows(fragment)
    assert len(second_rows) == 25 and not set(first_rows) & set(second_rows)
    # Every pair sharing an item appears once across the pages.
    seen = []
    for number in range(1, (n_pairs + 24) // 25 + 1):
        seen += _pair_rows(_get(rev, task, f"?page={number}").content.decode())
    assert len(seen) == len(set(seen)) == n_pairs

    def shared(html: str) -> list[int]:
        table = html.split('id="pair-table"', 1)[1]
        return [int(n) for n in re.findall(r'</td>\s*<td class="num">(\d+)</td>', table)]

    fewest = shared(_get(rev, task, "?sort=shared").content.decode())
    assert fewest == sorted(fewest) and fewest[0] == 1
    by_agreement = re.findall(
        r'<td class="num">(\d+)</td>\s*<td class="num">([\d.]+)</td>',
        _get(rev, task, "?sort=agreement").content.decode(),
    )
    values = [float(v) for _, v in by_agreement]
    assert values == sorted(values) and len(values) == 25
    # An unknown order or page falls back instead of failing.
    assert len(_pair_rows(_get(rev, task, "?sort=nonsense&page=999").content.decode())) > 0


def test_pair_fragment_on_demand(project, users, clients) -> None:
    task = _task(project, annotators=6, items=12, overlap=3)
    rev = clients["reviewer"]
    page = _get(rev, task).content.decode()
    link = re.search(r'class="pair-link" href="([^"]+)" hx-get="([^"]+)"', page)
    assert link and link.group(1) == link.group(2)
    url = link.group(1).replace("&amp;", "&")
    fragment = rev.get(url, **HX)
    assert fragment.status_code == 200
    body = fragment.content.decode()
    assert "<svg" in body and "<html" not in body and "Confusion matrix" in body
    assert "in common" in body
    # Without htmx the same URL is a whole page (the link works without JavaScript).
    whole = rev.get(url)
    assert whole.status_code == 200 and "<html" in whole.content.decode()
    # The two names in either order; one name twice or an unknown pair is not found.
    a, b = re.search(r"\?a=([^&]+)&b=(.+)$", url).groups()
    base = reverse("review:agreement_pair", args=[task.pk])
    assert rev.get(f"{base}?a={b}&b={a}", **HX).status_code == 200
    assert rev.get(f"{base}?a={a}&b={a}", **HX).status_code == 404
    assert rev.get(f"{base}?a={a}&b=nobody", **HX).status_code == 404
    # Same access as the page: annotators are refused, other projects' people not found.
    assert clients["annotator"].get(url, **HX).status_code == 403
    assert clients["outsider"].get(url, **HX).status_code == 404
    assert clients["anonymous"].get(url, **HX).status_code == 302
    assert clients["admin"].get(url, **HX).status_code == 200


@contextmanager
def _watched(*, clock: float) -> Iterator[tuple[mock.MagicMock, list[float]]]:
    """agreement_compute with its calls counted, and the selectors' clock set to ``clock``
    (the test moves it through the list it is given)."""
    now = [clock]
    with (
        mock.patch.object(
            agreement_services, "agreement_compute", wraps=agreement_services.agreement_compute
        ) as compute,
        mock.patch.object(agreement_selectors, "_now", side_effect=lambda: now[0]),
    ):
        yield compute, now


def test_figures_are_cached_and_at_most_a_little_stale(project, users, clients) -> None:
    task = _task(project, annotators=4, items=6, overlap=2)
    rev = clients["reviewer"]
    with _watched(clock=1_000_000.0) as (compute, clock):
        first = _get(rev, task)
        again = _get(rev, task)
        assert compute.call_count == 1
        assert again.context["report"] == first.context["report"]
        assert again.context["report"]["n_judgments"] == 12
        assert not again.context["figures"].stale
        assert 'id="agreement-refresh"' not in again.content.decode()
        # A new judgment: within STALE_SECONDS the page shows the figures it has, saying how
        # old they are and what they count, with a link that forces a recomputation.
        newcomer = UserFactory(username="newcomer")
        item = Judgment.objects.filter(task=task).first().item
        AssignmentFactory(task=task, item=item, user=newcomer)
        judgment_submit(task=task, item=item, user=newcomer, value="correct")
        clock[0] += agreement_selectors.STALE_SECONDS
        stale = _get(rev, task)
        assert compute.call_count == 1
        figures = stale.context["figures"]
        assert figures.stale and figures.n_counted == 12 and figures.n_judgments == 13
        html = stale.content.decode()
        assert "13 judgments" in html and "counting 12 judgments" in html
        assert 'href="?refresh=1" id="agreement-refresh"' in html
        assert "newcomer" not in html
        # Forced: current figures at once.
        refreshed = _get(rev, task, "?refresh=1")
        assert compute.call_count == 2
        assert refreshed.context["report"]["n_judgments"] == 13
        assert not refreshed.context["figures"].stale
        assert "newcomer" in refreshed.content.decode()
        # Forcing again at once is refused (rate-limited per reviewer) when it would compute.
        JudgmentFactory(task=task, item=item, user=UserFactory(username="imported"), value="weak")
        refused = _get(rev, task, "?refresh=1")
        assert compute.call_count == 2
        assert refused.context["figures"].refresh_refused
        assert "try again in a few seconds" in refused.content.decode()
        # ... but another reviewer (the admin) may force it.
        assert _get(clients["admin"], task, "?refresh=1").context["report"]["n_judgments"] == 14
        assert compute.call_count == 3
        # Once the latest figures are older than STALE_SECONDS, the next request recomputes.
        third = UserFactory(username="third")
        JudgmentFactory(task=task, item=item, user=third, value="good")
        clock[0] += agreement_selectors.STALE_SECONDS
        assert _get(rev, task).context["figures"].stale
        assert compute.call_count == 3
        clock[0] += 1
        late = _get(rev, task)
        assert compute.call_count == 4
        assert late.context["report"]["n_judgments"] == 15 and not late.context["figures"].stale
        # The pair fragment reads the same cached figures.
        other = Judgment.objects.filter(task=task, item=item).exclude(user=newcomer).first()
        url = reverse("review:agreement_pair", args=[task.pk])
        pair = rev.get(f"{url}?a=newcomer&b={other.user.username}", **HX)
        assert pair.status_code == 200 and "in common" in pair.content.decode()
        assert compute.call_count == 4


def test_stale_figures_are_shown_while_another_request_recomputes(project, users, clients) -> None:
    """Past STALE_SECONDS, one request recomputes; others meanwhile show the old figures
    instead of computing the same thing at once."""
    task = _task(project, annotators=4, items=6, overlap=2)
    rev = clients["reviewer"]
    with _watched(clock=2_000_000.0) as (compute, clock):
        _get(rev, task)
        item = Judgment.objects.filter(task=task).first().item
        JudgmentFactory(task=task, item=item, user=UserFactory(username="late"), value="weak")
        clock[0] += agreement_selectors.STALE_SECONDS + 1
        cache.add(f"agreement:computing:task{task.pk}", 1, 60)  # another request computing
        assert _get(rev, task).context["figures"].stale
        assert compute.call_count == 1
        cache.delete(f"agreement:computing:task{task.pk}")
        assert not _get(rev, task).context["figures"].stale
        assert compute.call_count == 2


def test_api_answers_the_same_report_from_the_cache(project, users, clients) -> None:
    task = _task(project, annotators=4, items=6, overlap=2)
    url = f"/api/judgment-tasks/{task.pk}/agreement/"
    with mock.patch.object(
        agreement_services, "agreement_compute", wraps=agreement_services.agreement_compute
    ) as compute:
        first = clients["reviewer"].get(url).json()
        again = clients["reviewer"].get(url).json()
        assert compute.call_count == 1
    assert again == first
    assert first["pairs"] and all(p["confusion"]["matrix"] for p in first["pairs"])
    assert clients["annotator"].get(url).status_code == 403


def test_a_reviewers_decision_is_counted_at_once(project, users, clients) -> None:
    """Judgments coming in may leave the figures a little stale; a reviewer's decision on an
    outcome does not (rare, and the reviewer expects to see it counted)."""
    task = _task(project, annotators=4, items=6, overlap=2)
    rev = clients["reviewer"]
    with mock.patch.object(
        agreement_services, "agreement_compute", wraps=agreement_services.agreement_compute
    ) as compute:
        _get(rev, task)
        item = Judgment.objects.filter(task=task).first().item
        JudgmentFactory(task=task, item=item, user=UserFactory(username="late"), value="weak")
        assert _get(rev, task).context["figures"].stale
        assert compute.call_count == 1
        Outcome.objects.update_or_create(
            task=task,
            item=item,
            unit="",
            defaults={
                "verdict": "accepted",
                "value": "weak",
                "decided_by": users["reviewer"],
                "decided_at": timezone.now(),
            },
        )
        decided = _get(rev, task)
        assert not decided.context["figures"].stale
        assert compute.call_count == 2
        assert decided.context["report"]["n_judgments"] == 13
