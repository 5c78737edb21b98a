"""The "Ask the model" page, the polled model-call fragment and the Retry button."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django_htmx.http import HTMX_STOP_POLLING

from benchmark.models import Item, Job, JobStatus, ModelCall, Project
from tests.factories import ImageFactory, ItemFactory, image_ref
from tests.llm_server import MODEL, FakeModelServer, point_at

pytestmark = pytest.mark.django_db

HX_PANEL = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "model-panel"}


def hx_job(job: Job) -> dict[str, str]:
    return {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": f"job-{job.pk}"}


@pytest.fixture
def item(project: Project) -> Item:
    images = [ImageFactory(projects=[project]) for _ in range(2)]
    return ItemFactory(
        project=project, image_refs=[image_ref(img, position=n) for n, img in enumerate(images)]
    )


def page(project: Project, item: Item) -> str:
    return f"/projects/{project.pk}/llm/items/{item.pk}/"


def test_without_a_model_the_page_says_how_to_configure_one(
    project: Project, item: Item, clients: dict[str, Client], model_server: FakeModelServer
) -> None:
    response = clients["annotator"].get(page(project, item))
    assert response.status_code == 200
    html = response.content.decode()
    assert "No model is configured" in html
    assert "BENCHWRIGHT_MODEL_BASE_URL" in html and "api_key_env" in html
    assert "ask-model-form" not in html
    # Posting anyway re-renders the hint; nothing is started.
    response = clients["annotator"].post(page(project, item), {"prompt": "q"}, **HX_PANEL)
    assert response.status_code == 200
    assert "No model is configured" in response.content.decode()
    assert not Job.objects.exists()


def test_the_form_offers_the_item_images(
    project: Project, item: Item, clients: dict[str, Client], model_server: FakeModelServer
) -> None:
    point_at(project, model_server)
    html = clients["annotator"].get(page(project, item)).content.decode()
    assert "ask-model-form" in html and MODEL in html
    for ref in item.image_refs:
        assert f'value="{ref["sha256"]}"' in html


def test_posting_starts_a_job_and_the_polled_fragment_shows_the_answer(
    project: Project,
    item: Item,
    clients: dict[str, Client],
    model_server: FakeModelServer,
    django_capture_on_commit_callbacks: Any,
) -> None:
    point_at(project, model_server)
    sha = item.image_refs[1]["sha256"]
    with django_capture_on_commit_callbacks(execute=True):
        response = clients["annotator"].post(
            page(project, item), {"prompt": "Count the apples", "images": [sha]}, **HX_PANEL
        )
    assert response.status_code == 200
    job = Job.objects.get(kind="model_call")
    assert job.params["images"] == [sha] and job.params["item_id"] == item.pk
    assert f'id="job-{job.pk}"' in response.content.decode()
    (req,) = model_server.requests
    assert len(req.image_urls) == 1 and req.image_urls[0].startswith("data:image/png;base64,")

    polled = clients["annotator"].get(f"/jobs/{job.pk}/", **hx_job(job))
    assert polled.status_code == HTMX_STOP_POLLING
    assert polled["HX-Trigger"] == "model-call-done"
    html = polled.content.decode()
    assert "The chart shows 42 apples." in html and "17 prompt + 7 completion tokens" in html
    assert "<html" not in html  # the fragment only

    history = clients["reviewer"].get(page(project, item)).content.decode()
    assert "Count the apples" in history and "The chart shows 42 apples." in history


def test_a_running_job_keeps_polling(project: Project, clients: dict[str, Client]) -> None:
    job = Job.objects.create(kind="model_call", project=project, status=JobStatus.RUNNING, total=1)
    response = clients["admin"].get(f"/jobs/{job.pk}/", **hx_job(job))
    assert response.status_code == 200
    assert 'hx-trigger="every 1s"' in response.content.decode()


def test_without_javascript_posting_redirects_to_the_job_page(
    project: Project,
    item: Item,
    clients: dict[str, Client],
    model_server: FakeModelServer,
    django_capture_on_commit_callbacks: Any,
) -> None:
    point_at(project, model_server)
    with django_capture_on_commit_callbacks(execute=True):
        response = clients["admin"].post(page(project, item), {"prompt": "q"})
    job = Job.objects.get(kind="model_call")
    assert response.status_code == 302
    assert response["Location"] == f"/jobs/{job.pk}/"
    full = clients["admin"].get(response["Location"])
    assert full.status_code == 200 and "The chart shows 42 apples." in full.content.decode()


def test_an_empty_prompt_is_refused_in_the_form(
    project: Project, item: Item, clients: dict[str, Client], model_server: FakeModelServer
) -> None:
    point_at(project, model_server)
    response = clients["admin"].post(page(project, item), {"prompt": " "}, **HX_PANEL)
    assert response.status_code == 200
    assert "Write a prompt for the model." in response.content.decode()
    assert not Job.objects.exists()


def test_a_failed_call_shows_the_error_and_retry_starts_a_new_job(
    project: Project,
    item: Item,
    clients: dict[str, Client],
    model_server: FakeModelServer,
    django_capture_on_commit_callbacks: Any,
) -> None:
    point_at(project, model_server, max_retries=0)
    model_server.fail_next(503)
    with django_capture_on_commit_callbacks(execute=True):
        clients["annotator"].post(page(project, item), {"prompt": "q"}, **HX_PANEL)
    failed = Job.objects.get(kind="model_call")
    html = clients["annotator"].get(f"/jobs/{failed.pk}/", **hx_job(failed)).content
    assert b"The model call failed." in html and b"answered 503" in html
    assert f"/llm/jobs/{failed.pk}/retry/".encode() in html and b"Retry" in html

    with django_capture_on_commit_callbacks(execute=True):
        response = clients["annotator"].post(f"/llm/jobs/{failed.pk}/retry/", **hx_job(failed))
    assert response.status_code == 200
    new = Job.objects.exclude(pk=failed.pk).get()
    assert new.status == JobStatus.SUCCEEDED
    assert f'id="job-{new.pk}"' in response.content.decode()
    assert ModelCall.objects.filter(item=item).count() == 2
    # Retrying a job that did not fail is refused.
    assert clients["annotator"].post(f"/llm/jobs/{new.pk}/retry/").status_code == 409


def test_outsiders_see_nothing(
    project: Project,
    item: Item,
    clients: dict[str, Client],
    model_server: FakeModelServer,
    django_capture_on_commit_callbacks: Any,
) -> None:
    point_at(project, model_server)
    with django_capture_on_commit_callbacks(execute=True):
        clients["admin"].post(page(project, item), {"prompt": "q"})
    job = Job.objects.get(kind="model_call")
    outsider = clients["outsider"]
    assert outsider.get(page(project, item)).status_code == 404
    assert outsider.post(page(project, item), {"prompt": "q"}).status_code == 404
    assert outsider.get(f"/jobs/{job.pk}/").status_code == 404
    assert outsider.post(f"/llm/jobs/{job.pk}/retry/").status_code == 404
    assert Job.objects.count() == 1


def test_the_page_query_count_does_not_grow_with_history(
    project: Project,
    item: Item,
    clients: dict[str, Client],
    model_server: FakeModelServer,
    users: dict[str, Any],
    django_assert_max_num_queries: Any,
) -> None:
    point_at(project, model_server)
    for n in range(20):
        ModelCall.objects.create(
            request_key=f"{n:064x}",
            project=project,
            item=item,
            purpose="ask",
            model=MODEL,
            prompt=f"prompt {n}",
            answer="a",
            created_by=users["admin"],
        )
    with django_assert_max_num_queries(12):
        response = clients["admin"].get(page(project, item))
    assert response.content.decode().count('class="model-call"') == 20
