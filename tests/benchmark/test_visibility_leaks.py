"""What a user may see, applied by the selectors: a blind verifier reads no answer, reference
or drafting conversation of an item they verify (defect 2), through pages or the API; and the
small leaks of defect 14 (upload "duplicate", image counts of a foreign project, a repeated
judgment answered 201)."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from rest_framework.test import APIClient

from annotation.judgment_tasks.models import JudgmentTask
from benchmark import selectors as item_selectors
from benchmark import visibility
from benchmark.images import services as image_services
from benchmark.llm import selectors as llm_selectors
from benchmark.models import Job, JobStatus
from tests.annotation.test_blind_answer_edits import _answer
from tests.annotation.test_blind_answer_edits import world as world  # noqa: F401 - fixture
from tests.factories import (
    ImageFactory,
    ItemFactory,
    MembershipFactory,
    ModelCallFactory,
    ProjectFactory,
    UserFactory,
    png_bytes,
)

pytestmark = pytest.mark.django_db

SECRET = "Pack order"


def _api(user: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def drafting(world: dict[str, Any]) -> dict[str, Any]:  # noqa: F811
    """The author's drafting conversation about item 21: a model call and its job, both
    holding the answer."""
    item, author = world["item"], world["u"]["author"]
    job = Job.objects.create(
        kind="model_call",
        project=world["project"],
        created_by=author,
        status=JobStatus.FAILED,
        params={"project_id": item.project_id, "item_id": item.pk, "prompt": f"Is it {SECRET}?"},
        result={"answer": f"Yes, the sign says {SECRET}."},
    )
    call = ModelCallFactory(
        project=world["project"],
        item=item,
        job=job,
        purpose="drafting:1:describe",
        prompt=f"Is it {SECRET}?",
        answer=f"Yes, the sign says {SECRET}.",
        created_by=author,
    )
    return {**world, "job": job, "call": call}


# --------------------------------------------------------------------------- defect 2


def test_a_blind_verifier_cannot_read_the_drafting_conversation(
    drafting: dict[str, Any],
) -> None:
    item, job, c = drafting["item"], drafting["job"], drafting["c"]
    verifier = c["annotator1"]
    page = reverse("benchmark:item_model", args=[item.project_id, item.pk])
    response = verifier.get(page)
    assert response.status_code == 403
    assert "blind verifiers" in response.content.decode()
    assert SECRET not in response.content.decode()
    # The job page (the one poll view of every job) does not show the call.
    response = verifier.get(reverse("benchmark:job_detail", args=[job.pk]))
    assert response.status_code in (403, 404)
    assert SECRET not in response.content.decode()
    assert verifier.post(reverse("benchmark:job_retry", args=[job.pk])).status_code in (403, 404)
    assert not llm_selectors.model_call_list(user=drafting["u"]["annotator1"]).exists()
    # The API's job list leaves the job out, and the job itself is refused.
    api = _api(drafting["u"]["annotator1"])
    assert job.pk not in [j["id"] for j in api.get("/api/jobs/").json()["results"]]
    assert api.get(f"/api/jobs/{job.pk}/").status_code in (403, 404)
    # A reviewer reads it all; so does the verifier once they have answered.
    assert SECRET in c["reviewer"].get(page).content.decode()
    _answer(drafting, "annotator1", "Shipping")
    assert verifier.get(page).status_code == 200
    response = verifier.get(reverse("benchmark:job_detail", args=[job.pk]))
    assert response.status_code == 200 and SECRET in response.content.decode()


def test_the_api_gives_a_blind_verifier_no_answer_and_no_reference(
    world: dict[str, Any],  # noqa: F811
) -> None:
    item, verifier = world["item"], world["u"]["annotator1"]
    api = _api(verifier)
    data = api.get(f"/api/items/{item.pk}/").json()
    assert (data["expected_answer"], data["accepted_variants"], data["raw"]) == ("", [], None)
    assert data["answer_hidden"] is True
    assert api.get(f"/api/trajectories/?item={item.pk}").json()["count"] == 0
    reviewer = _api(world["u"]["reviewer"])
    assert reviewer.get(f"/api/items/{item.pk}/").json()["expected_answer"] == SECRET
    assert reviewer.get(f"/api/trajectories/?item={item.pk}").json()["count"] == 1


def test_list_rows_of_a_hidden_item_load_no_answer_later(
    world: dict[str, Any],  # noqa: F811
    django_assert_num_queries: Any,
) -> None:
    """The list selector defers the answer columns; a hidden row reads them empty without a
    query (no deferred load can fetch them), before its flag is decided for the page (it
    reads as hidden until then) and after."""
    verifier = world["u"]["annotator1"]
    with visibility.decisions_remembered():  # one request: the rules' first question once
        (row,) = item_selectors.item_list_rows(user=verifier, project=world["project"])
        with django_assert_num_queries(0):
            assert (row.expected_answer, row.accepted_variants, row.raw) == ("", [], "")
        with django_assert_num_queries(2):  # could a task hide anything? which of these?
            item_selectors.item_rows_flag(user=verifier, rows=[row])
    assert row.answer_hidden is True
    with django_assert_num_queries(0):
        assert (row.expected_answer, row.accepted_variants, row.raw) == ("", [], "")


# --------------------------------------------------------------------------- defect 14


def test_an_upload_is_not_a_duplicate_because_another_project_holds_it(
    project: Any, other_project: Any, users: dict[str, Any]
) -> None:
    data = png_bytes(7)
    image_services.image_upload_each(
        project=other_project,
        user=users["outsider"],
        files=[SimpleUploadedFile("theirs.png", data)],
    )
    [mine] = image_services.image_upload_each(
        project=project, user=users["annotator"], files=[SimpleUploadedFile("mine.png", data)]
    )
    assert mine.image is not None and not mine.duplicate
    [again] = image_services.image_upload_each(
        project=project, user=users["annotator"], files=[SimpleUploadedFile("again.png", data)]
    )
    assert again.duplicate


def test_images_of_a_foreign_project_are_not_counted(
    project: Any, other_project: Any, users: dict[str, Any]
) -> None:
    ImageFactory(projects=[project, other_project])  # shared with a foreign project
    ImageFactory(projects=[project])
    api = _api(users["annotator"])
    assert api.get(f"/api/images/?project={project.pk}").json()["count"] == 2
    response = api.get(f"/api/images/?project={other_project.pk}")
    assert response.status_code == 404
    assert "count" not in response.json()


def test_a_repeated_judgment_answers_200_and_says_it_was_already_recorded(db: None) -> None:
    project = ProjectFactory(name="repeat")
    ItemFactory(project=project, external_id="x0")
    task = JudgmentTask.objects.create(
        project=project, name="t", question="ok?", scheme="binary", overlap=2, consensus="unanimous"
    )
    user = UserFactory(username="a")
    MembershipFactory(project=project, user=user, role="annotator")
    api = _api(user)
    base = f"/api/judgment-tasks/{task.pk}"
    lease = api.post(f"{base}/next/").json()
    first = api.post(f"{base}/judgments/", {"item": lease["item"], "value": 1}, format="json")
    assert first.status_code == 201
    again = api.post(f"{base}/judgments/", {"item": lease["item"], "value": 0}, format="json")
    assert again.status_code == 200
    body = again.json()
    assert body["already_recorded"] is True and "already" in body["detail"]
    assert (body["id"], body["value"]) == (first.json()["id"], 1)
