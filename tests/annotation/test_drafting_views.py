"""The drafting pages against the fake model server (Celery eager, in-process): starting a
session shows the model's description, asking about a crop, marking, drafting, failures with a
retry, scoping to the user's projects, and a query count that does not grow with the calls."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from annotation.backward_drafting.models import DraftingCrop, DraftingMark, DraftingSession
from annotation.backward_drafting.services import item_draft_token
from benchmark.models import Item, Job, ModelCall, Project, ProjectKind, Trajectory
from tests.factories import (
    DraftingMarkFactory,
    DraftingSessionFactory,
    ImageFactory,
    ItemFactory,
    ModelCallFactory,
    ProjectFactory,
    image_ref,
    png_bytes,
)
from tests.llm_server import MODEL, FakeModelServer, point_at

pytestmark = pytest.mark.django_db


@pytest.fixture
def project(db: None) -> Project:
    return ProjectFactory(
        name="Agentic sample", kind=ProjectKind.TRAJECTORY, data_format="agentic-mme"
    )


@pytest.fixture
def item(project: Project) -> Item:
    image = ImageFactory(projects=[project], data=png_bytes(3, size=(200, 100)))
    return ItemFactory(
        project=project,
        query="Imported question?",
        modality="image",
        image_refs=[image_ref(image, position=0, role="input")],
    )


@pytest.fixture
def source(item: Item) -> str:
    return item.image_refs[0]["sha256"]


def hx(target: str) -> dict[str, str]:
    return {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": target}


def list_url(item: Item) -> str:
    return f"/projects/{item.project_id}/backward-drafting/items/{item.pk}/"


def session_url(session: DraftingSession) -> str:
    return f"{list_url(session.item)}{session.pk}/"


def recipe(sha: str, bbox: list[int]) -> str:
    return json.dumps(
        {"version": 1, "source_sha256": sha, "steps": [{"op": "crop", "params": {"bbox_2d": bbox}}]}
    )


def start(client: Client, item: Item, source: str, capture: Any) -> DraftingSession:
    with capture(execute=True):
        response = client.post(
            list_url(item), {"source": source, "prompt": "Describe everything."}, **hx("x")
        )
    session = DraftingSession.objects.get()
    assert response.status_code == 200
    assert response["HX-Redirect"] == session_url(session)
    return session


# --------------------------------------------------------------------------- no model


def test_without_a_model_the_pages_say_how_to_configure_one(
    item: Item, source: str, clients: dict[str, Client], model_server: FakeModelServer
) -> None:
    html = clients["annotator"].get(list_url(item)).content.decode()
    assert "No model is configured" in html and "BENCHWRIGHT_MODEL_BASE_URL" in html
    assert "drafting-start-form" not in html
    response = clients["annotator"].post(list_url(item), {"source": source, "prompt": "x"})
    assert response.status_code == 200 and "No model is configured" in response.content.decode()
    assert not DraftingSession.objects.exists() and not Job.objects.exists()

    # A session made while a model was configured still opens; its buttons say what to do.
    session = DraftingSessionFactory(item=item, source_sha256=source)
    html = clients["annotator"].get(session_url(session)).content.decode()
    assert "No model is configured" in html and "api_key_env" in html
    assert "drafting-describe-form" not in html and "drafting-crop-form" not in html
    response = clients["annotator"].post(f"{session_url(session)}describe/", {"prompt": "x"})
    assert "No model is configured" in response.content.decode()
    assert not Job.objects.exists()


# --------------------------------------------------------------------------- the flow


def test_a_session_shows_the_description_then_the_crop_answer_then_marks_and_draft(
    item: Item,
    source: str,
    clients: dict[str, Client],
    users: dict[str, Any],
    model_server: FakeModelServer,
    django_capture_on_commit_callbacks: Any,
) -> None:
    point_at(item.project, model_server)
    annotator = clients["annotator"]
    html = annotator.get(list_url(item)).content.decode()
    assert "drafting-start-form" in html and MODEL in html and f'value="{source}"' in html

    model_server.answer = "A quiet street with a lamp post; no sign is legible."
    session = start(annotator, item, source, django_capture_on_commit_callbacks)
    page = annotator.get(session_url(session)).content.decode()
    assert "A quiet street with a lamp post; no sign is legible." in page
    assert "Description 1 (raw image)" in page and "drafting-mark-form" in page
    assert f"/images/{source}/thumb/" in page  # the image sent is shown with the call

    # Step 2: the crop, derived and sent to the same model.
    model_server.answer = "The blue sign reads WILLOW ST."
    with django_capture_on_commit_callbacks(execute=True):
        response = annotator.post(
            f"{session_url(session)}crop/",
            {
                "crop-ground_truth": "The sign on the lamp post reads WILLOW ST",
                "crop-recipe": recipe(source, [500, 0, 1000, 500]),
                "crop-box_px": "[100, 0, 200, 50]",
                "crop-prompt": "What does the sign say?",
            },
            **hx("drafting-crop"),
        )
    assert response.status_code == 200 and response["HX-Trigger"] == "drafting-changed"
    fragment = response.content.decode()
    assert 'id="drafting-crop"' in fragment and "<html" not in fragment
    crop = DraftingCrop.objects.get()
    job = Job.objects.get(params__purpose=session.purpose("crop"))
    assert f'id="job-{job.pk}"' in fragment  # the polled job card, queued at render time
    polled = annotator.get(f"/jobs/{job.pk}/", **hx(f"job-{job.pk}"))
    assert "The blue sign reads WILLOW ST." in polled.content.decode()
    calls = annotator.get(session_url(session), **hx("drafting-calls")).content.decode()
    assert calls.count("data-drafting-call=") == 2
    assert f"/images/{crop.image_sha256}/thumb/" in calls and "crop 1" in calls
    assert "The sign on the lamp post reads WILLOW ST" in calls

    # Step 3: marks.
    describe, asked = ModelCall.objects.order_by("created_at", "id")
    response = annotator.post(
        f"{session_url(session)}calls/{describe.pk}/mark/",
        {"perceives": "no", "verdict": "unsure"},
        **hx(f"drafting-call-{describe.pk}"),
    )
    assert response.status_code == 200 and response["HX-Trigger"] == "drafting-marked"
    assert "Marked by annotator-user" in response.content.decode()
    annotator.post(
        f"{session_url(session)}calls/{asked.pk}/mark/",
        {"perceives": "yes", "verdict": "correct"},
        **hx(f"drafting-call-{asked.pk}"),
    )
    status = annotator.get(session_url(session), **hx("drafting-status")).content.decode()
    assert 'data-validated="true"' in status
    assert DraftingMark.objects.filter(marked_by=users["annotator"]).count() == 2

    # Step 4: the draft, written to the item with a V checkpoint.
    response = annotator.post(
        f"{session_url(session)}draft/",
        {
            "query": "What street name is written on the small blue sign?",
            "expected_answer": "Willow St",
            "match_type": "contains",
            "base": item_draft_token(item),
            "add_checkpoint": "on",
            "cp_question": "What does the blue sign say?",
            "cp_answer": "WILLOW ST",
        },
        **hx("drafting-draft"),
    )
    assert response.status_code == 200
    assert "Saved to the item" in response.content.decode()
    item.refresh_from_db()
    assert item.query == "What street name is written on the small blue sign?"
    assert item.provenance == f"drafted by annotator-user with {MODEL}"
    reference = Trajectory.objects.get(item=item, key="reference")
    assert reference.checkpoints[0]["code_check"]["bbox_2d"] == [500, 0, 1000, 500]
    detail = annotator.get(f"/projects/{item.project_id}/items/{item.pk}/").content.decode()
    assert "What street name is written on the small blue sign?" in detail
    assert list_url(item) in detail  # the item page links to drafting


def test_a_refused_crop_keeps_the_box_and_says_why(
    item: Item,
    source: str,
    clients: dict[str, Client],
    model_server: FakeModelServer,
    django_capture_on_commit_callbacks: Any,
) -> None:
    point_at(item.project, model_server)
    session = start(clients["annotator"], item, source, django_capture_on_commit_callbacks)
    response = clients["annotator"].post(
        f"{session_url(session)}crop/",
        {
            "crop-ground_truth": "",
            "crop-recipe": recipe(source, [100, 100, 400, 400]),
            "crop-prompt": "Read it.",
        },
        **hx("drafting-crop"),
    )
    html = response.content.decode()
    assert response.status_code == 200
    assert "Write down the detail the model missed." in html
    assert "[100, 100, 400, 400]" in html or "100,100,400,400" in html.replace(" ", "")
    response = clients["annotator"].post(
        f"{session_url(session)}crop/",
        {"crop-ground_truth": "WILLOW", "crop-recipe": "", "crop-prompt": "Read it."},
        **hx("drafting-crop"),
    )
    assert "draw a box on the image" in response.content.decode()
    assert not DraftingCrop.objects.exists() and Job.objects.count() == 1


def test_a_mark_without_choices_says_what_is_missing(
    item: Item,
    source: str,
    clients: dict[str, Client],
    model_server: FakeModelServer,
    django_capture_on_commit_callbacks: Any,
) -> None:
    point_at(item.project, model_server)
    session = start(clients["annotator"], item, source, django_capture_on_commit_callbacks)
    call = ModelCall.objects.get()
    response = clients["annotator"].post(
        f"{session_url(session)}calls/{call.pk}/mark/", {}, **hx(f"drafting-call-{call.pk}")
    )
    html = response.content.decode()
    assert response.status_code == 200
    assert "Say whether the model perceives the detail." in html
    assert not DraftingMark.objects.exists()


def test_a_stale_draft_answers_409_with_both_versions(
    item: Item, source: str, clients: dict[str, Client], users: dict[str, Any]
) -> None:
    session = DraftingSessionFactory(item=item, source_sha256=source)
    stale = item_draft_token(item)
    Item.objects.filter(pk=item.pk).update(query="Someone else's question?")
    response = clients["annotator"].post(
        f"{session_url(session)}draft/",
        {"query": "My question?", "expected_answer": "mine", "base": stale},
        **hx("drafting-draft"),
    )
    assert response.status_code == 409
    html = response.content.decode()
    assert "Someone else saved this item meanwhile" in html
    assert "Someone else&#x27;s question?" in html and "My question?" in html
    item.refresh_from_db()
    assert item.query == "Someone else's question?"
    # Saving again from the conflict form (it carries the new token) goes through.
    fresh = item_draft_token(item)
    assert f'value="{fresh}"' in html
    response = clients["annotator"].post(
        f"{session_url(session)}draft/",
        {"query": "My question?", "expected_answer": "mine", "base": fresh},
    )
    assert response.status_code == 302
    item.refresh_from_db()
    assert item.query == "My question?"


def test_a_failed_call_shows_the_error_and_its_retry_joins_the_session(
    item: Item,
    source: str,
    clients: dict[str, Client],
    model_server: FakeModelServer,
    django_capture_on_commit_callbacks: Any,
) -> None:
    point_at(item.project, model_server, max_retries=0)
    model_server.fail_next(503)
    session = start(clients["annotator"], item, source, django_capture_on_commit_callbacks)
    failed = Job.objects.get()
    html = clients["annotator"].get(session_url(session)).content.decode()
    assert "The model call failed." in html and f"/llm/jobs/{failed.pk}/retry/" in html
    with django_capture_on_commit_callbacks(execute=True):
        clients["annotator"].post(f"/llm/jobs/{failed.pk}/retry/", **hx(f"job-{failed.pk}"))
    html = clients["annotator"].get(session_url(session)).content.decode()
    assert html.count("data-drafting-call=") == 2  # the failure and the retried answer
    assert model_server.answer in html and "drafting-call-error" in html


def test_without_javascript_each_step_redirects_back_to_the_session(
    item: Item,
    source: str,
    clients: dict[str, Client],
    model_server: FakeModelServer,
    django_capture_on_commit_callbacks: Any,
) -> None:
    point_at(item.project, model_server)
    with django_capture_on_commit_callbacks(execute=True):
        response = clients["reviewer"].post(list_url(item), {"source": source, "prompt": "Hi"})
    session = DraftingSession.objects.get()
    assert response.status_code == 302 and response["Location"] == session_url(session)
    with django_capture_on_commit_callbacks(execute=True):
        response = clients["reviewer"].post(f"{session_url(session)}describe/", {"prompt": "Again"})
    assert response.status_code == 302
    assert ModelCall.objects.filter(purpose=session.purpose("describe")).count() == 2


# --------------------------------------------------------------------------- scoping


def test_other_projects_and_non_trajectory_projects_answer_404(
    item: Item, source: str, clients: dict[str, Client], users: dict[str, Any]
) -> None:
    session = DraftingSessionFactory(item=item, source_sha256=source)
    # The outsider's own trajectory project: its item path does not reach our session.
    theirs = ProjectFactory(kind=ProjectKind.TRAJECTORY, data_format="agentic-mme")
    theirs.memberships.create(user=users["outsider"], role="admin")
    their_item = ItemFactory(project=theirs)
    outsider = clients["outsider"]
    assert outsider.get(session_url(session)).status_code == 404
    assert outsider.get(f"{list_url(their_item)}{session.pk}/").status_code == 404
    assert outsider.post(f"{list_url(their_item)}{session.pk}/draft/").status_code == 404
    # A member of both projects: a session is reached only through its own item.
    theirs.memberships.create(user=users["annotator"], role="annotator")
    annotator = clients["annotator"]
    assert annotator.get(f"{list_url(their_item)}{session.pk}/").status_code == 404
    call = ModelCallFactory(project=theirs, item=their_item, purpose=session.purpose("describe"))
    mark = f"{session_url(session)}calls/{call.pk}/mark/"
    assert annotator.post(mark, {"perceives": "no", "verdict": "unsure"}).status_code == 404
    # Drafting is for trajectory projects only.
    atp = ItemFactory(project=ProjectFactory())
    atp.project.memberships.create(user=users["annotator"], role="annotator")
    assert annotator.get(list_url(atp)).status_code == 404
    assert not DraftingMark.objects.exists()


# --------------------------------------------------------------------------- queries


def _session_with_calls(item: Item, source: str, users: dict[str, Any], n: int) -> Any:
    session = DraftingSessionFactory(item=item, source_sha256=source, created_by=users["admin"])
    crop_image = ImageFactory(projects=[item.project])
    DraftingCrop.objects.create(
        session=session,
        number=1,
        image_sha256=crop_image.sha256,
        recipe={"version": 1, "source_sha256": source, "steps": []},
        ground_truth="WILLOW",
        created_by=users["admin"],
    )
    for k in range(n):
        step = "describe" if k % 2 == 0 else "crop"
        call = ModelCallFactory(
            project=item.project,
            item=item,
            purpose=session.purpose(step),
            image_sha256s=[source if step == "describe" else crop_image.sha256],
            created_by=users["admin"],
        )
        DraftingMarkFactory(session=session, call=call, marked_by=users["annotator"])
    Job.objects.create(
        kind="model_call",
        project=item.project,
        created_by=users["admin"],
        params={"purpose": session.purpose("describe"), "prompt": "Describe."},
    )
    return session


def test_the_session_page_query_count_does_not_grow_with_its_calls(
    item: Item,
    source: str,
    project: Project,
    clients: dict[str, Client],
    users: dict[str, Any],
    model_server: FakeModelServer,
    django_assert_max_num_queries: Any,
) -> None:
    point_at(project, model_server)
    counts = []
    for n in (2, 20):
        session = _session_with_calls(item, source, users, n)
        with CaptureQueriesContext(connection) as queries:
            response = clients["admin"].get(session_url(session))
        assert response.status_code == 200
        assert response.content.decode().count("data-drafting-call=") == n
        counts.append(len(queries))
    assert counts[0] == counts[1], counts
    with django_assert_max_num_queries(15):
        clients["admin"].get(session_url(session))
