"""Who may read a job (defect 3): every kind of job against every role, through every reader
(the job page, its polled fragment, the API's job and job list). The kind says which project
action a reader needs (``benchmark.jobs.kinds``); one selector applies it everywhere."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from benchmark.jobs import selectors as job_selectors
from benchmark.models import Job, JobStatus, Project, Role
from tests.conftest import ROLES
from tests.factories import ItemFactory, JobFactory, MembershipFactory, UserFactory

pytestmark = pytest.mark.django_db

SECRET = "figures only reviewers may read"

# Expected for admin, reviewer, annotator, outsider (admin of another project).
ADMINS = (True, False, False, False)
REVIEWERS = (True, True, False, False)
MEMBERS = (True, True, True, False)

KINDS: dict[str, tuple[bool, ...]] = {
    "import": ADMINS,
    "score_answers": REVIEWERS,
    "score_runs": REVIEWERS,
    "rescore_runs": REVIEWERS,
    "agreement": REVIEWERS,
    "model_call": MEMBERS,
}


def make_job(project: Project, kind: str, **extra: Any) -> Job:
    """A failed job of ``kind`` (its card shows the error, which stands for its result)."""
    params: dict[str, Any] = {"project_id": project.pk, "run_set_id": 1, "task_id": 1}
    if kind == "model_call":
        params["item_id"] = ItemFactory(project=project).pk
    return JobFactory(
        kind=kind,
        project=project,
        status=JobStatus.FAILED,
        error=SECRET,
        params=params,
        **extra,
    )


def readers(client: Client, job: Job) -> dict[str, int]:
    poll = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": f"job-{job.pk}"}
    listed = client.get("/api/jobs/")
    return {
        "page": client.get(f"/jobs/{job.pk}/").status_code,
        "poll": client.get(f"/jobs/{job.pk}/", **poll).status_code,
        "api": client.get(f"/api/jobs/{job.pk}/").status_code,
        "api list": (
            200
            if listed.status_code == 200
            and job.pk in [row["id"] for row in listed.json()["results"]]
            else 404
        ),
    }


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("role", ROLES)
def test_every_kind_against_every_role(
    project: Project, users: dict[str, Any], clients: dict[str, Client], kind: str, role: str
) -> None:
    # Started by someone else with no role, so only the kind's action decides.
    job = make_job(project, kind, created_by=UserFactory())
    got = readers(clients[role], job)
    if role == "anonymous":
        assert got["page"] == got["poll"] == 302
        # the API asks for credentials (401 with WWW-Authenticate), and lists nothing
        assert got["api"] == 401 and got["api list"] == 404
        return
    may_read = KINDS[kind][ROLES.index(role)]
    if may_read:
        expected = {"page": 200, "poll": 286, "api": 200, "api list": 200}
    elif role == "outsider":
        expected = {"page": 404, "poll": 404, "api": 404, "api list": 404}
    else:  # a member whose role does not show this kind of job
        expected = {"page": 403, "poll": 403, "api": 403, "api list": 404}
    assert got == expected, (kind, role)
    if not may_read:
        body = clients[role].get(f"/api/jobs/{job.pk}/").content.decode()
        assert SECRET not in body
    assert (job in job_selectors.job_list(user=users[role])) is may_read


def test_the_member_who_started_an_import_sees_it(
    project: Project, users: dict[str, Any], client_for: Any
) -> None:
    """An import is for admins and for whoever started it (an admin then, maybe not now)."""
    starter = UserFactory()
    MembershipFactory(project=project, user=starter, role=Role.ANNOTATOR)
    job = make_job(project, "import", created_by=starter)
    client = client_for(starter)
    assert client.get(f"/jobs/{job.pk}/").status_code == 200
    assert client.get(f"/api/jobs/{job.pk}/").status_code == 200
    # Starting a scoring job does not show it to a member whose role cannot read it.
    scoring = make_job(project, "score_runs", created_by=starter)
    assert client.get(f"/jobs/{scoring.pk}/").status_code == 403


def test_a_model_call_is_visible_to_whoever_may_view_its_item(
    project: Project, users: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hook for the blind rule: model-call jobs follow the item selector."""
    from benchmark import selectors as project_selectors

    job = make_job(project, "model_call", created_by=users["admin"])
    item_id = job.params["item_id"]
    assert job in job_selectors.job_list(user=users["annotator"])
    hide = project_selectors.item_list

    def hidden_item(**kwargs: Any) -> Any:
        return hide(**kwargs).exclude(pk=item_id)

    monkeypatch.setattr(project_selectors, "item_list", hidden_item)
    assert job not in job_selectors.job_list(user=users["annotator"])
