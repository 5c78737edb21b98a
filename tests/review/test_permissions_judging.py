"""The permission matrix of judging and reviewing: every role against every endpoint of the
annotation and review apps (pages and API)."""

from __future__ import annotations

from typing import Any

import pytest
from django.utils.timezone import now

from annotation.judgment_tasks.models import Assignment, Judgment, JudgmentTask
from tests.conftest import ROLES
from tests.factories import (
    AgentRunFactory,
    DiscardProposalFactory,
    DraftingSessionFactory,
    ItemFactory,
    JobFactory,
    MembershipFactory,
    ModelCallFactory,
    ProjectFactory,
    ResponseFactory,
    RunSetFactory,
    TrajectoryFactory,
    TrajectoryVersionFactory,
)

pytestmark = pytest.mark.django_db

# admin reviewer annotator outsider anonymous; "L" = redirect to the login page,
# "R" = redirect elsewhere (a lease handed out, a form done)
MEMBERS = (200, 200, 200, 404, "L")
REVIEWERS = (200, 200, 403, 404, "L")
LEASE = ("R", "R", "R", 404, "L")
API_MEMBERS = (200, 200, 200, 404, 401)
API_REVIEWERS = (200, 200, 403, 404, 401)

TAGS = "/projects/{project}/tag-review/items/{item}/responses/{response}/"
TRAJ = "/projects/{tproject}/trajectories/items/{titem}/"
TRAJ_ATP = "/projects/{project}/trajectories/items/{item}/"
DRAFT = "/projects/{tproject}/backward-drafting/items/{titem}/"
STALE = (409, 409, 409, 404, "L")
# The annotator is a blind verifier of the trajectory item (a judgment of the open solve task):
# saving its trajectory is refused before anything else (defect 1).
STALE_VERIFIER = (409, 409, 403, 404, "L")
BAD = (400, 400, 400, 404, "L")

MATRIX: list[tuple[str, str, str, dict[str, Any], tuple[Any, ...]]] = [
    ("task list", "get", "/projects/{project}/judgment-tasks/", {}, MEMBERS),
    (
        "new task form",
        "get",
        "/projects/{project}/judgment-tasks/new/",
        {},
        (200, 403, 403, 404, "L"),
    ),
    (
        "default tasks",
        "post",
        "/projects/{project}/judgment-tasks/defaults/",
        {},
        ("R", 403, 403, 404, "L"),
    ),
    (
        "edit task form",
        "get",
        "/projects/{project}/judgment-tasks/{task}/edit/",
        {},
        (200, 403, 403, 404, "L"),
    ),
    ("next item", "post", "/judgment-tasks/{task}/next/", {}, LEASE),
    (
        "judge page, not leased",
        "get",
        "/judgment-tasks/{task}/items/{item}/",
        {},
        (200, 200, 403, 404, "L"),
    ),
    ("disputes", "get", "/adjudication/{task}/disputes/", {}, REVIEWERS),
    ("adjudicate", "get", "/adjudication/{task}/items/{item}/", {}, REVIEWERS),
    ("agreement", "get", "/agreement/{task}/", {}, REVIEWERS),
    ("judgments csv", "get", "/agreement/{task}/judgments.csv", {}, REVIEWERS),
    ("balanced subset", "get", "/projects/{project}/plan-scoring/balance/", {}, REVIEWERS),
    ("score plans", "get", "/projects/{project}/plan-scoring/", {}, REVIEWERS),
    ("score answers", "get", "/projects/{project}/answers/", {}, REVIEWERS),
    ("score answers, no file", "post", "/projects/{project}/answers/", {}, REVIEWERS),
    ("score answers job", "get", "/jobs/{ansjob}/", {}, REVIEWERS),
    # Reference-trajectory editor (on an item of a trajectory project with the same members).
    ("trajectory editor", "get", TRAJ, {}, MEMBERS),
    ("trajectory editor fragment", "get", TRAJ, {"HTTP_HX_REQUEST": "true"}, MEMBERS),
    ("trajectory editor re-check", "post", TRAJ, {"data": {"op": "refresh"}}, MEMBERS),
    ("trajectory editor, stale save", "post", TRAJ, {"data": {"op": "save"}}, STALE_VERIFIER),
    ("trajectory editor, bad action", "post", TRAJ, {"data": {"op": "fly"}}, BAD),
    ("trajectory editor, ATP item", "get", TRAJ_ATP, {}, (404, 404, 404, 404, "L")),
    # Its history (version 1 is recorded and the item changed since: version 2 is current).
    ("trajectory history", "get", TRAJ + "versions/", {}, MEMBERS),
    ("trajectory version 1", "get", TRAJ + "versions/1/", {}, MEMBERS),
    ("trajectory version 2, current", "get", TRAJ + "versions/2/", {}, MEMBERS),
    ("trajectory version 9, none", "get", TRAJ + "versions/9/", {}, (404, 404, 404, 404, "L")),
    ("trajectory history, ATP item", "get", TRAJ_ATP + "versions/", {}, (404, 404, 404, 404, "L")),
    ("trajectory revert, stale", "post", TRAJ + "versions/1/revert/", {}, STALE_VERIFIER),
    (
        "trajectory revert, no such version",
        "post",
        TRAJ + "versions/9/revert/",
        {"data": {"base": "2"}},
        (404, 404, 403, 404, "L"),
    ),
    # Backward drafting (no model configured, empty forms: re-rendered with their messages).
    ("drafting sessions", "get", DRAFT, {}, MEMBERS),
    ("drafting start, no model", "post", DRAFT, {}, MEMBERS),
    (
        "drafting, ATP item",
        "get",
        "/projects/{project}/backward-drafting/items/{item}/",
        {},
        (404, 404, 404, 404, "L"),
    ),
    ("drafting session", "get", DRAFT + "{session}/", {}, MEMBERS),
    ("drafting describe, empty", "post", DRAFT + "{session}/describe/", {}, MEMBERS),
    ("drafting crop, empty", "post", DRAFT + "{session}/crop/", {}, MEMBERS),
    ("drafting mark, empty", "post", DRAFT + "{session}/calls/{call}/mark/", {}, MEMBERS),
    ("drafting draft, empty", "post", DRAFT + "{session}/draft/", {}, MEMBERS),
    # Scoring agent runs (a failed run of the trajectory item; a failed scoring job).
    ("agent runs", "get", "/projects/{tproject}/runs/", {}, REVIEWERS),
    ("agent runs, no file", "post", "/projects/{tproject}/runs/", {}, REVIEWERS),
    ("agent runs, ATP project", "get", "/projects/{project}/runs/", {}, REVIEWERS),
    ("run scoring job", "get", "/jobs/{runjob}/", {}, REVIEWERS),
    ("run set results", "get", "/runs/{runset}/", {}, REVIEWERS),
    ("rescore run set", "post", "/runs/{runset}/rescore/", {}, ("R", "R", 403, 404, "L")),
    ("agent run", "get", "/runs/agent-runs/{run}/", {}, REVIEWERS),
    (
        "agent run visual, empty",
        "post",
        "/runs/agent-runs/{run}/visual/",
        {},
        (400, 400, 403, 404, "L"),
    ),
    ("agent run label, empty", "post", "/runs/agent-runs/{run}/label/", {}, REVIEWERS),
    # Blind verification: a solve task on the trajectory item, which the annotator has answered.
    ("solve screen, answered", "get", "/judgment-tasks/{vtask}/items/{titem}/", {}, MEMBERS),
    ("joint review queue", "get", "/adjudication/{vtask}/disputes/", {}, REVIEWERS),
    ("joint review item", "get", "/adjudication/{vtask}/items/{titem}/", {}, REVIEWERS),
    (
        "joint review, empty revision",
        "post",
        "/adjudication/{vtask}/items/{titem}/",
        {"data": {"action": "revise"}},
        REVIEWERS,
    ),
    ("audit checklist", "get", "/verification/{vtask}/items/{titem}/audit/", {}, MEMBERS),
    (
        "audit save, stale",
        "post",
        "/verification/{vtask}/items/{titem}/audit/",
        {"data": {"base": "5"}},
        (403, 403, 409, 404, "L"),
    ),
    ("audits overview", "get", "/verification/{vtask}/audits/", {}, REVIEWERS),
    ("api blind item", "get", "/api/judgment-tasks/{vtask}/items/{titem}/blind/", {}, API_MEMBERS),
    ("api audit", "get", "/api/judgment-tasks/{vtask}/items/{titem}/audit/", {}, API_MEMBERS),
    (
        "api audit, stale",
        "post",
        "/api/judgment-tasks/{vtask}/items/{titem}/audit/",
        {"data": {"base": 3, "steps": {}}, "content_type": "application/json"},
        (403, 403, 409, 404, 401),
    ),
    ("api tasks", "get", "/api/judgment-tasks/", {}, (200, 200, 200, 200, 401)),
    ("api task", "get", "/api/judgment-tasks/{task}/", {}, API_MEMBERS),
    ("api next", "post", "/api/judgment-tasks/{task}/next/", {}, API_MEMBERS),
    ("api judgments", "get", "/api/judgment-tasks/{task}/judgments/", {}, API_MEMBERS),
    ("api agreement", "get", "/api/judgment-tasks/{task}/agreement/", {}, API_REVIEWERS),
    ("tag review", "get", TAGS + "review/", {}, MEMBERS),
    ("tag review edit", "post", TAGS + "review/", {"data": {"base": 1, "op": "keep:0"}}, MEMBERS),
    ("tag discard, no reason", "post", TAGS + "discard/", {}, MEMBERS),
    ("tag versions", "get", TAGS + "versions/", {}, MEMBERS),
    ("tag version 1", "get", TAGS + "versions/1/", {}, MEMBERS),
    ("tag revert to current", "post", TAGS + "versions/1/revert/", {}, MEMBERS),
    ("tag decisions per tool", "get", "/projects/{project}/tag-review/decisions/", {}, MEMBERS),
    (
        "discard proposals",
        "get",
        "/projects/{project}/adjudication/discard-proposals/",
        {},
        REVIEWERS,
    ),
    (
        "discard proposal, no decision",
        "post",
        "/projects/{project}/adjudication/discard-proposals/{proposal}/decide/",
        {},
        (400, 400, 403, 404, "L"),
    ),
]


@pytest.fixture
def world(project: Any, users: dict[str, Any]) -> dict[str, Any]:
    item = ItemFactory(project=project)
    task = JudgmentTask.objects.create(
        project=project, name="t", question="?", scheme="binary", overlap=5, consensus="unanimous"
    )
    response = ResponseFactory(item=item)
    tproject = ProjectFactory(
        name="Trajectory sample", kind="trajectory", data_format="agentic-mme"
    )
    for membership in project.memberships.all():
        MembershipFactory(project=tproject, user=membership.user, role=membership.role)
    titem = ItemFactory(project=tproject, raw="")
    TrajectoryFactory(item=titem, key="reference")
    TrajectoryVersionFactory(item=titem, number=1)
    vtask = JudgmentTask.objects.create(
        project=tproject,
        name="solve",
        question="?",
        scheme="text",
        overlap=2,
        consensus="author_plus_two",
    )
    lease = Assignment.objects.create(
        task=vtask, item=titem, user=users["annotator"], leased_at=now(), expires_at=now()
    )
    Judgment.objects.create(
        task=vtask, item=titem, user=users["annotator"], assignment=lease, value="a"
    )
    session = DraftingSessionFactory(item=titem)
    call = ModelCallFactory(project=tproject, item=titem, purpose=session.purpose("describe"))
    run = AgentRunFactory(run_set=RunSetFactory(project=tproject), item=titem)
    runjob = JobFactory(kind="score_runs", project=tproject, status="failed", error="bad zip")
    ansjob = JobFactory(kind="score_answers", project=project, status="failed", error="bad file")
    proposal = DiscardProposalFactory(item=item, proposed_by=users["annotator"])
    return {
        "proposal": proposal.pk,
        "project": project.pk,
        "task": task.pk,
        "item": item.pk,
        "response": response.pk,
        "tproject": tproject.pk,
        "titem": titem.pk,
        "vtask": vtask.pk,
        "session": session.pk,
        "call": call.pk,
        "run": run.pk,
        "runset": run.run_set_id,
        "runjob": runjob.pk,
        "ansjob": ansjob.pk,
    }


@pytest.mark.parametrize(
    ("name", "method", "path", "extra", "role", "expected"),
    [
        pytest.param(name, method, path, extra, role, statuses[i], id=f"{name}-{role}")
        for name, method, path, extra, statuses in MATRIX
        for i, role in enumerate(ROLES)
    ],
)
def test_permission_matrix(
    name: str,
    method: str,
    path: str,
    extra: dict[str, Any],
    role: str,
    expected: Any,
    world: dict[str, Any],
    clients: dict[str, Any],
) -> None:
    response = getattr(clients[role], method)(path.format(**world), **extra)
    if expected == "L":
        assert response.status_code == 302
        assert response["Location"].startswith("/accounts/login/")
    elif expected == "R":
        assert response.status_code == 302
        assert not response["Location"].startswith("/accounts/login/")
    else:
        assert response.status_code == expected, (name, role, response.content[:300])
