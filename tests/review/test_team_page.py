"""The team page (/projects/<id>/team/): per annotator and task the items done, in progress,
the median time and the agreement with the settled outcome, the throughput per day, the
project-wide line; its filters, roles, the empty project and its query count."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from django.template.loader import render_to_string
from django.utils import timezone

from annotation.judgment_tasks.consensus import value_credit
from annotation.judgment_tasks.models import JudgmentTask
from benchmark.models import Project, Role
from review.team import selectors
from review.team.chart import Series, stacked_bars
from tests.factories import (
    AssignmentFactory,
    DatedJudgmentFactory,
    DraftCandidateFactory,
    ItemFactory,
    JudgmentTaskFactory,
    MembershipFactory,
    ModelDraftFactory,
    OutcomeFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db


def url(project: Project, query: str = "") -> str:
    return f"/projects/{project.pk}/team/{query}"


def days_ago(n: int) -> datetime:
    return timezone.now() - timedelta(days=n)


@pytest.fixture
def world(project: Project, users: dict[str, Any]) -> dict[str, Any]:
    """Alice and Bob judge "Keep?" (binary); Carol judges "Label" (nominal) and "Rate"
    (scores); Dave answers "Solve" (text)."""
    people = {name: UserFactory(username=name) for name in ("alice", "bob", "carol", "dave")}
    for user in people.values():
        MembershipFactory(project=project, user=user, role=Role.ANNOTATOR)
    keep = JudgmentTaskFactory(project=project, name="Keep?", consensus="majority")
    label = JudgmentTaskFactory(
        project=project, name="Label", scheme="nominal", consensus="unanimous",
        labels=[{"value": "keep", "accept": True}, {"value": "fix"}],
    )  # fmt: skip
    rate = JudgmentTaskFactory(project=project, name="Rate", scheme="scores", consensus="median")
    solve = JudgmentTaskFactory(project=project, name="Solve", scheme="text", overlap=2)
    items = [ItemFactory(project=project, external_id=f"i{n}") for n in range(1, 8)]
    i1, i2, i3, i4, i5, i6, i7 = items
    # Keep?: i1 accepted 1, i2 accepted 1, i3 pending, i4 rejected 0 by a reviewer.
    OutcomeFactory(task=keep, item=i1, verdict="accepted", value=1)
    OutcomeFactory(task=keep, item=i2, verdict="accepted", value=1)
    OutcomeFactory(task=keep, item=i3, verdict="pending")
    OutcomeFactory(
        task=keep, item=i4, verdict="rejected", value=0, decided_by=users["reviewer"],
        decided_at=timezone.now(),
    )  # fmt: skip
    alice, bob, carol, dave = (people[n] for n in ("alice", "bob", "carol", "dave"))

    def judge(task: JudgmentTask, item: Any, user: Any, value: Any, seconds: float, at: Any):
        return DatedJudgmentFactory(
            task=task, item=item, user=user, value=value, seconds=seconds, at=at
        )

    judge(keep, i1, alice, 1, 10, days_ago(0))  # agrees
    judge(keep, i2, alice, 0, 20, days_ago(0))  # disagrees
    judge(keep, i3, alice, 1, 0, days_ago(3))  # pending: not compared; no time recorded
    judge(keep, i4, alice, 1, 40, days_ago(10))  # the reviewer decided 0: disagrees
    judge(keep, i1, bob, 1, 30, days_ago(1))
    judge(keep, i2, bob, 1, 50, days_ago(40))
    # Bob has one open lease, one expired (not in progress); Alice one open on "Label".
    AssignmentFactory(task=keep, item=i5, user=bob)
    AssignmentFactory(
        task=keep, item=i6, user=bob, leased_at=days_ago(1),
        expires_at=days_ago(1) + timedelta(minutes=30),
    )  # fmt: skip
    AssignmentFactory(task=label, item=i7, user=alice)
    # Label: i1 disputed (not compared), i2 rejected "fix", i3 discarded (not compared).
    OutcomeFactory(task=label, item=i1, verdict="disputed")
    OutcomeFactory(task=label, item=i2, verdict="rejected", value="fix")
    OutcomeFactory(task=label, item=i3, verdict="discarded", reason="broken")
    judge(label, i1, carol, "keep", 12, days_ago(2))
    judge(label, i2, carol, "fix", 14, days_ago(2))
    judge(label, i3, carol, "keep", 16, days_ago(2))
    # Rate: one of the two scores equals the outcome's.
    OutcomeFactory(task=rate, item=i1, verdict="accepted", value={"mi": 1, "fs": 3})
    judge(rate, i1, carol, {"mi": 1, "fs": 4}, 60, days_ago(0))
    # Solve: a free answer, compared normalized.
    OutcomeFactory(task=solve, item=i1, verdict="accepted", value="Paris")
    judge(solve, i1, dave, "  paris ", 25, days_ago(5))
    return {"people": people, "tasks": (keep, label, rate, solve), "items": items}


def report(user: Any, project: Project, **kwargs: Any) -> selectors.TeamReport:
    tasks = selectors.team_tasks(user=user, project=project)
    return selectors.team_report(user=user, project=project, tasks=tasks, **kwargs)


def cell(rep: selectors.TeamReport, username: str, task_name: str) -> selectors.Figures:
    row = next(r for r in rep.rows if r.username == username)
    return next(c.figures for c in row.tasks if c.task.name == task_name)


def test_figures_per_annotator_and_task(project, users, world):
    rep = report(users["reviewer"], project)
    alice = cell(rep, "alice", "Keep?")
    assert (alice.done, alice.in_progress) == (4, 0)
    assert alice.median_seconds == 20  # of 10, 20, 40: the judgment without a time is left out
    assert (alice.compared, alice.agreeing) == (3, 1)
    assert alice.agreement_text == "33.3%"
    bob = cell(rep, "bob", "Keep?")
    assert (bob.done, bob.in_progress, bob.median_seconds) == (2, 1, 40)
    assert bob.agreement == 1.0
    carol_label = cell(rep, "carol", "Label")
    assert (carol_label.done, carol_label.compared, carol_label.agreeing) == (3, 1, 1)
    assert cell(rep, "carol", "Rate").agreement == 0.5
    assert cell(rep, "dave", "Solve").agreement == 1.0
    # Alice's open lease on "Label" gives her a row for that task with nothing done.
    alice_label = cell(rep, "alice", "Label")
    assert (alice_label.done, alice_label.in_progress, alice_label.agreement) == (0, 1, None)
    # Per annotator over all tasks, and the project-wide line.
    alice_row = next(r for r in rep.rows if r.username == "alice")
    assert (alice_row.total.done, alice_row.total.in_progress) == (4, 1)
    carol_row = next(r for r in rep.rows if r.username == "carol")
    assert carol_row.total.median_seconds == 15  # of 12, 14, 16, 60
    assert (carol_row.total.compared, carol_row.total.agreeing) == (2, 1.5)
    t = rep.totals
    assert (t.done, t.in_progress) == (11, 2)
    assert t.median_seconds == 22.5  # of 10 20 40 30 50 12 14 16 60 25
    assert (t.compared, t.agreeing) == (8, 5.5)
    assert rep.active_week == 4  # bob judged yesterday; alice today; carol 2, dave 5 days ago
    assert [r.username for r in rep.rows] == ["alice", "carol", "bob", "dave"]  # most done first


def test_throughput_per_day(project, users, world):
    rep = report(users["reviewer"], project, days=7)
    today = timezone.now().astimezone(UTC).date()
    assert rep.chart.unit == "day"
    per_day: dict[date, int] = {}
    for bar in rep.chart.bars:
        when = date.fromisoformat(bar["title"].rsplit(": ", 1)[0].rsplit(" · ", 1)[1])
        per_day[when] = per_day.get(when, 0) + int(bar["title"].rsplit(": ", 1)[1])
    assert per_day == {
        today: 3,  # alice 2, carol 1
        today - timedelta(days=1): 1,
        today - timedelta(days=2): 3,
        today - timedelta(days=3): 1,
        today - timedelta(days=5): 1,
    }
    alice_today = [b for b in rep.chart.bars if b["title"].startswith("alice · ")]
    assert {b["title"] for b in alice_today} == {
        f"alice · {today}: 2",
        f"alice · {today - timedelta(days=3)}: 1",
    }
    assert [s["label"] for s in rep.chart.legend] == ["carol", "alice", "bob", "dave"]


def test_date_range_and_task_filters(project, users, world):
    keep = world["tasks"][0]
    week = report(users["reviewer"], project, days=7)
    assert cell(week, "alice", "Keep?").done == 3
    assert cell(week, "alice", "Keep?").compared == 2  # i1, i2 (i4 was 10 days ago)
    assert "bob" in {r.username for r in week.rows}
    month = report(users["reviewer"], project, days=30)
    assert cell(month, "alice", "Keep?").done == 4
    assert cell(month, "bob", "Keep?").done == 1  # i2 was 40 days ago
    one = report(users["reviewer"], project, task=keep)
    assert {c.task.name for r in one.rows for c in r.tasks} == {"Keep?"}
    assert [r.username for r in one.rows] == ["alice", "bob"]
    assert one.totals.done == 6
    assert one.active_week == 4  # the project-wide line counts every task


def test_the_page_shows_the_figures_and_filters(project, users, world, clients):
    keep = world["tasks"][0]
    page = clients["reviewer"].get(url(project))
    assert page.status_code == 200
    html = page.content.decode()
    assert 'data-annotator="alice"' in html and "33.3%" in html
    assert "<svg" in html and 'class="series-0"' in html and "style=" not in html
    # Carol judged two tasks: a row for all of them, then one per task
    label, rate = world["tasks"][1], world["tasks"][2]
    carol = re.findall(r'<tr class="team-[a-z]+" data-annotator="carol"[^>]*>.*?</tr>', html)
    assert len(carol) == 3 and "<td>carol</td><td>all tasks</td>" in carol[0]
    tasks = {t.pk: t.name for t in (label, rate)}
    for row in carol[1:]:
        pk = int(re.search(r'data-task="(\d+)"', row).group(1))  # type: ignore[union-attr]
        assert f"<td></td><td>{tasks.pop(pk)}</td>" in row
        assert re.search(r'<td class="num" data-done>\d+</td>', row)
    assert not tasks
    bob = re.search(r'<tr class="team-person" data-annotator="bob">.*?</tr>', html).group(0)  # type: ignore[union-attr]
    assert "<td>bob</td><td>Keep?</td>" in bob and '<td class="num" data-in-progress>1</td>' in bob
    assert "data-model-draft-figures" in html
    filtered = clients["reviewer"].get(url(project, f"?task={keep.pk}&days=7")).content.decode()
    assert re.search(r"<strong data-total-done>4</strong>", filtered)  # alice 3, bob 1
    assert 'data-annotator="carol"' not in filtered
    # htmx asks for the figures alone.
    part = clients["reviewer"].get(
        url(project, "?days=30"), HTTP_HX_REQUEST="true", HTTP_HX_TARGET="team"
    )
    assert part.status_code == 200 and part.content.decode().lstrip().startswith('<div id="team"')
    # A bad filter is named, ignored, and never a 500.
    bad = clients["reviewer"].get(url(project, "?task=999999&days=3"))
    assert bad.status_code == 200
    text = bad.content.decode()
    assert "Some filters were ignored" in text and "task (" in text and "days (" in text
    assert 'data-annotator="carol"' in text


def test_roles(project, users, world, clients):
    for role in ("admin", "reviewer"):
        assert clients[role].get(url(project)).status_code == 200
    assert clients["annotator"].get(url(project)).status_code == 403
    assert clients["outsider"].get(url(project)).status_code == 404
    assert clients["anonymous"].get(url(project)).status_code == 302
    link = f'href="{url(project)}"'
    assert link in clients["reviewer"].get(f"/projects/{project.pk}/").content.decode()
    assert link not in clients["annotator"].get(f"/projects/{project.pk}/").content.decode()


def test_empty_project(project, users, clients):
    page = clients["admin"].get(url(project))
    assert page.status_code == 200
    html = page.content.decode()
    assert "no judgment task yet" in html and "data-no-throughput" in html
    JudgmentTaskFactory(project=project, name="Keep?")
    html = clients["admin"].get(url(project, "?days=7")).content.decode()
    assert "No one has judged in the last 7 days" in html
    assert "<strong data-total-done>0</strong>" in html


def test_figures_follow_new_judgments_and_outcomes(project, users, world):
    """Computed on every request: a new judgment counts at once, and a reviewer's decision
    (a service that writes the outcome, storing each judgment's credit with it) moves the
    agreement."""
    from review.adjudication.services import outcome_decide

    keep = world["tasks"][0]
    i1, i2, i3, *_ = world["items"]
    first = report(users["reviewer"], project)
    assert cell(first, "alice", "Keep?").compared == 3
    DatedJudgmentFactory(task=keep, item=i3, user=world["people"]["carol"], value=1, seconds=5)
    fresh = report(users["reviewer"], project)
    assert cell(fresh, "carol", "Keep?").done == 1
    # A reviewer settles i3 at 1: Alice's and Carol's judgments now agree.
    outcome_decide(task=keep, item=i3, reviewer=users["reviewer"], verdict="accepted", value=1)
    settled = report(users["reviewer"], project)
    assert (cell(settled, "alice", "Keep?").compared, cell(settled, "alice", "Keep?").agreeing) == (
        4,
        2,
    )
    assert (cell(settled, "carol", "Keep?").compared, cell(settled, "carol", "Keep?").agreeing) == (
        1,
        1,
    )
    # Discarded: left out again.
    outcome_decide(
        task=keep, item=i3, reviewer=users["reviewer"], verdict="discarded", reason="broken"
    )
    assert cell(report(users["reviewer"], project), "alice", "Keep?").compared == 3


def test_query_count_does_not_grow_with_annotators(
    project, users, client_for, django_assert_max_num_queries
):
    task = JudgmentTaskFactory(project=project, name="Keep?")
    item = ItemFactory(project=project)
    OutcomeFactory(task=task, item=item, verdict="accepted", value=1)
    client = client_for(users["reviewer"])

    def add(n: int) -> None:
        for _ in range(n):
            person = UserFactory()
            DatedJudgmentFactory(task=task, item=item, user=person, value=1, seconds=3)
            AssignmentFactory(task=task, item=ItemFactory(project=project), user=person)

    add(2)
    with django_assert_max_num_queries(13):
        assert client.get(url(project)).status_code == 200
    add(20)
    with django_assert_max_num_queries(13):
        html = client.get(url(project)).content.decode()
    assert "<strong data-people>22</strong>" in html


def test_value_credit():
    assert value_credit("binary", 1, 1) == 1.0
    assert value_credit("number", 3, 3.0) == 1.0
    assert value_credit("nominal", "keep", "Keep") == 0.0
    assert value_credit("nominal", 1, "1") == 0.0
    assert value_credit("text", "  São  Paulo!", "sao paulo") == 1.0
    assert value_credit("scores", {"a": 1, "b": 2, "c": 0}, {"a": 1, "b": 3}) == 0.5
    assert value_credit("scores", 3, {"a": 1}) == 0.0


def test_chart_weeks_and_svg():
    first, last = date(2026, 1, 1), date(2026, 12, 31)
    chart = stacked_bars(
        first=first,
        last=last,
        series=[Series(label="<b>x</b>", counts={date(2026, 1, 1): 2, date(2026, 1, 2): 3})],
    )
    assert chart.unit == "week" and len(chart.bars) == 1
    assert chart.bars[0]["title"].endswith("week of 2025-12-29: 5")
    svg = render_to_string("review/team/team.html#throughput-chart", {"c": chart})
    assert "<b>" not in svg and "&lt;b&gt;" in svg and "style" not in svg
    (bar,) = chart.bars
    assert (
        f'<rect class="series-0" x="{bar["x"]}" y="{bar["y"]}" width="{bar["w"]}"'
        f' height="{bar["h"]}"><title>&lt;b&gt;x&lt;/b&gt; · week of 2025-12-29: 5</title></rect>'
    ) in svg
    assert 'data-chart-unit="week"' in svg and svg.count('<line class="axis"') == 3


def test_agreement_per_unit(project, users):
    """A task rated unit by unit: each judgment compares with the outcome of its own unit."""
    task = JudgmentTaskFactory(
        project=project, name="Criteria", scheme="ordinal", consensus="median",
        unit_kind="answer-criterion", labels=[{"value": v} for v in (0, 1, 2)],
    )  # fmt: skip
    item = ItemFactory(project=project)
    OutcomeFactory(task=task, item=item, unit="response:7:r1", verdict="accepted", value=2)
    OutcomeFactory(task=task, item=item, unit="response:7:r2", verdict="accepted", value=1.0)
    rater = UserFactory(username="rater")
    for unit, value in (("response:7:r1", 2), ("response:7:r2", 1), ("response:7:r3", 0)):
        DatedJudgmentFactory(
            task=task, item=item, unit=unit, user=rater, value=value, seconds=4,
            assignment__unit=unit,
        )  # fmt: skip
    rep = report(users["reviewer"], project)
    figures = cell(rep, "rater", "Criteria")
    assert (figures.done, figures.compared, figures.agreeing) == (3, 2, 2)


def test_the_page_shows_the_model_in_the_loop_figures(project, users, clients):
    """The team page reports what became of the project's model drafts, per kind."""
    empty = clients["reviewer"].get(url(project)).content.decode()
    assert "data-no-drafting-figures" in empty
    draft = ModelDraftFactory(project=project, created_by=users["annotator"])
    for status in ("kept", "kept", "edited", "rejected"):
        DraftCandidateFactory(
            draft=draft, status=status, decided_by=users["annotator"], decided_at=timezone.now()
        )
    html = clients["reviewer"].get(url(project)).content.decode()
    assert "data-no-drafting-figures" not in html
    row = re.search(r'<tr data-kind="queries">(.*?)</tr>', html, re.S)
    assert row is not None
    assert re.search(r"data-kept>2 ", row.group(1)) and re.search(r"data-rejected>1 ", row.group(1))


def test_medians_are_exact_per_cell_person_and_overall(project, users):
    """The medians read at their ranks in the database equal statistics.median over the same
    times (floats that need all their digits, ties, odd and even counts, zeros left out), for
    every range and for one task."""
    import random
    import statistics

    rng = random.Random(7)
    tasks = [JudgmentTaskFactory(project=project, name=name) for name in ("A", "B", "C")]
    people = [UserFactory(username=f"p{n}") for n in range(4)]
    items = [ItemFactory(project=project) for _ in range(9)]
    made: list[tuple[int, int, float, int]] = []  # task, user, seconds, days ago
    for t in tasks:
        for u in people:
            for item in rng.sample(items, rng.randint(1, 7)):
                seconds = rng.choice([0.0, 5.0, 5.0, 0.1 + 0.2, rng.random() * 100, 1e-9])
                ago = rng.choice([0, 3, 12, 45])
                DatedJudgmentFactory(
                    task=t, item=item, user=u, value=1, seconds=seconds, at=days_ago(ago)
                )
                made.append((t.pk, u.pk, seconds, ago))

    def median(rows: list[tuple[int, int, float, int]]) -> float | None:
        times = [s for _, _, s, _ in rows if s > 0]
        return statistics.median(times) if times else None

    for days, task in ((None, None), (30, None), (7, None), (None, tasks[1]), (7, tasks[2])):
        rep = report(users["reviewer"], project, days=days, task=task)
        rows = [
            r for r in made if (days is None or r[3] < days) and (task is None or r[0] == task.pk)
        ]
        assert rep.totals.median_seconds == median(rows)
        for row in rep.rows:
            mine = [r for r in rows if r[1] == row.user_id]
            assert row.total.median_seconds == median(mine)
            for c in row.tasks:
                assert c.figures.median_seconds == median([r for r in mine if r[0] == c.task.pk])


def test_the_team_page_shows_which_screen_costs_the_most_time_per_item(
    project, users, client_for, django_assert_max_num_queries
):
    """A reviewer sees, per task (judging screen), the seconds per item, slowest first."""
    fast = JudgmentTaskFactory(project=project, name="Keep?")
    slow = JudgmentTaskFactory(project=project, name="Audit steps")
    for seconds in (10, 20, 0):  # 0: no time recorded, left out
        item = ItemFactory(project=project)
        DatedJudgmentFactory(task=fast, item=item, user=UserFactory(), value=1, seconds=seconds)
    for seconds in (90, 150):
        DatedJudgmentFactory(
            task=slow, item=ItemFactory(project=project), user=UserFactory(), value=1,
            seconds=seconds,
        )  # fmt: skip
    client = client_for(users["reviewer"])
    with django_assert_max_num_queries(13):
        html = client.get(url(project)).content.decode()
    section = re.search(r'id="team-screens".*?</section>', html, re.S)
    assert section
    rows = re.findall(r'data-screen-task="(\d+)">(.*?)</tr>', section.group(0), re.S)
    assert [int(pk) for pk, _ in rows] == [slow.pk, fast.pk]  # the slowest first
    by_task = dict(rows)
    assert "120.0 s" in by_task[str(slow.pk)] and "30" in by_task[str(slow.pk)]  # items/hour
    assert "15.0 s" in by_task[str(fast.pk)]
    assert "data-share>89%" in by_task[str(slow.pk)]  # 240 of the 270 seconds
