"""The rendering pages (review.answer_rendering): "Render answers" starts a job, a rendered answer's
page (bounded queries whatever the number of calls), its standalone HTML file, the include
for other pages, permissions, and bad input answered with a clear 400/409."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.template.loader import render_to_string
from django.test import Client
from django.urls import reverse

from benchmark.models import Job, JobStatus, Origin, Project, Response
from benchmark.rendering import SandboxCodeRunner
from review.answer_rendering import selectors, services
from review.answer_rendering.models import RenderedAnswer
from tests.factories import ImageFactory, ItemFactory, ResponseFactory, image_ref
from tests.image_server import fake_run_code

pytestmark = pytest.mark.django_db

HX_START = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "render-start"}
CHART = "import matplotlib.pyplot as plt\nplt.plot([3, 1])\nplt.savefig('c.png')"


def atp(tool: str, **params: Any) -> str:
    return (
        "<tool>"
        + json.dumps({"tool_name": tool, "description": f"{tool} figure", "params": params})
        + "</tool>"
    )


@pytest.fixture(autouse=True)
def sandbox(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(services, "code_runner", lambda: SandboxCodeRunner(fake_run_code))


@pytest.fixture
def answers(project: Project, users: dict[str, Any]) -> list[Response]:
    doc = ImageFactory(projects=[project])
    out = []
    for i, model in enumerate(("alpha", "beta")):
        item = ItemFactory(
            project=project, external_id=f"q{i}", image_refs=[image_ref(doc, position=0)]
        )
        text = "\n\n".join(
            [
                "# Title\n\nSome **bold** text <script>alert('x')</script>.",
                atp("Reference", img_index=0),
                atp("Code", code=CHART),
                atp("Diffusion", prompt="a red cube"),
                atp("Reference", img_index=4),
            ]
        )
        out.append(
            ResponseFactory(
                item=item, origin=Origin.MODEL, model_name=model, key=f"model:{model}", text=text
            )
        )
    return out


def rendered(project: Project) -> None:
    job = services.rendering_start(project=project, user=None, enqueue=False)
    assert services.rendering_execute(job=job).status == JobStatus.SUCCEEDED


# --------------------------------------------------------------------------- "Render answers"


def test_render_page_shows_providers_and_starts_a_job(
    project: Project,
    answers: list[Response],
    clients: dict[str, Client],
    django_capture_on_commit_callbacks: Any,
) -> None:
    url = reverse("review:render_answers", args=[project.pk])
    page = clients["reviewer"].get(url)
    assert page.status_code == 200
    html = page.content.decode()
    assert 'data-tool="diffusion"' in html and "not configured" in html
    assert "a labelled placeholder showing the prompt" in html
    assert "alpha (1 answer)" in html
    with django_capture_on_commit_callbacks(execute=True):
        started = clients["reviewer"].post(url, {"models": ["alpha"]}, **HX_START)
    assert started.status_code == 200
    assert 'id="render-started"' in started.content.decode()
    job = Job.objects.get(kind=services.RENDER_KIND)
    assert job.status == JobStatus.SUCCEEDED and job.params["models"] == ["alpha"]
    assert RenderedAnswer.objects.filter(response=answers[0]).exists()
    assert not RenderedAnswer.objects.filter(response=answers[1]).exists()
    later = clients["reviewer"].get(url).content.decode()
    assert reverse("review:rendered_answer", args=[answers[0].pk]) in later
    project_page = clients["reviewer"].get(reverse("benchmark:project_detail", args=[project.pk]))
    assert url in project_page.content.decode()


def test_render_page_answers_bad_input_with_its_reason(
    project: Project, answers: list[Response], clients: dict[str, Client]
) -> None:
    url = reverse("review:render_answers", args=[project.pk])
    bad = clients["reviewer"].post(url, {"models": ["nobody"]}, **HX_START)
    assert bad.status_code == 400
    assert "the project has no model answers of nobody" in bad.content.decode()
    broken = SimpleUploadedFile("answers.jsonl", b'{"id": "q0", "model": "m"}\n')
    bad = clients["reviewer"].post(url, {"answers": [broken]}, **HX_START)
    assert bad.status_code == 400
    assert "answers.jsonl" in bad.content.decode()
    services.rendering_start(project=project, user=None, enqueue=False)  # queued, never run
    busy = clients["reviewer"].post(url, {}, **HX_START)
    assert busy.status_code == 409
    assert "still queued" in busy.content.decode()


def test_render_page_is_for_reviewers(
    project: Project, other_project: Project, clients: dict[str, Client]
) -> None:
    url = reverse("review:render_answers", args=[project.pk])
    assert clients["annotator"].get(url).status_code == 403
    assert clients["outsider"].get(url).status_code == 404
    assert clients["anonymous"].get(url).status_code == 302
    assert clients["admin"].get(url).status_code == 200


# --------------------------------------------------------------------------- a rendered answer


def test_rendered_answer_page_shows_the_document(
    project: Project, answers: list[Response], clients: dict[str, Client]
) -> None:
    rendered(project)
    answer = answers[0]
    answer.refresh_from_db()
    html = (
        clients["reviewer"]
        .get(reverse("review:rendered_answer", args=[answer.pk]))
        .content.decode()
    )
    doc_sha, code_sha = answer.extra["rendered_images"][:2]
    assert f'<img src="/images/{doc_sha}/"' in html
    assert f'<img src="/images/{code_sha}/"' in html
    assert "Diffusion not executed" in html and "a red cube" in html
    assert "Reference · Image index out of range" in html
    assert "<h1>Title</h1>" in html and "<strong>bold</strong>" in html
    assert "<script>alert" not in html and "&lt;script&gt;alert" in html
    assert 'id="rendered-calls"' in html and 'data-status="placeholder"' in html
    assert reverse("review:rendered_answer_download", args=[answer.pk]) in html


def test_rendered_answer_page_queries_do_not_grow_with_the_calls(
    project: Project,
    answers: list[Response],
    clients: dict[str, Client],
    django_assert_max_num_queries: Any,
) -> None:
    big = answers[1]
    big.text = "\n\n".join([big.text] * 10)
    big.save()
    rendered(project)
    client = clients["reviewer"]
    for answer in answers:
        url = reverse("review:rendered_answer", args=[answer.pk])
        # 8: the two hiding rules (answers, models' names) each first ask, in one small
        # query, whether they can hide anything from the user
        with django_assert_max_num_queries(8):
            assert client.get(url).status_code == 200
    assert RenderedAnswer.objects.get(response=big).n_calls == 40


def test_an_answer_not_rendered_yet_can_be_rendered_from_its_page(
    project: Project,
    answers: list[Response],
    clients: dict[str, Client],
    django_capture_on_commit_callbacks: Any,
) -> None:
    url = reverse("review:rendered_answer", args=[answers[1].pk])
    html = clients["reviewer"].get(url).content.decode()
    assert 'id="rendered-none"' in html and "Render this answer" in html
    assert reverse("review:rendered_answer_download", args=[answers[1].pk]) not in html
    download = reverse("review:rendered_answer_download", args=[answers[1].pk])
    assert clients["reviewer"].get(download).status_code == 404
    with django_capture_on_commit_callbacks(execute=True):
        posted = clients["reviewer"].post(
            url, {}, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="render-again"
        )
    assert posted.status_code == 200
    job = Job.objects.get(kind=services.RENDER_KIND)
    assert job.params["response_ids"] == [answers[1].pk] and job.status == JobStatus.SUCCEEDED
    assert not RenderedAnswer.objects.filter(response=answers[0]).exists()
    fragment = (
        clients["reviewer"]
        .get(url, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="rendered-document")
        .content.decode()
    )
    assert fragment.lstrip().startswith('<div id="rendered-document"') and "rd-document" in fragment


def test_a_changed_answer_shows_its_rendering_is_stale(
    project: Project, answers: list[Response], clients: dict[str, Client]
) -> None:
    rendered(project)
    Response.objects.filter(pk=answers[0].pk).update(text="A new text.")
    html = (
        clients["reviewer"]
        .get(reverse("review:rendered_answer", args=[answers[0].pk]))
        .content.decode()
    )
    assert 'id="rendered-stale"' in html
    assert "Code figure" in html  # the rendering shows the text it rendered


def test_standalone_file_inlines_images_and_css(
    project: Project, answers: list[Response], clients: dict[str, Client]
) -> None:
    rendered(project)
    answer = answers[0]
    got = clients["reviewer"].get(reverse("review:rendered_answer_download", args=[answer.pk]))
    assert got.status_code == 200
    assert got["Content-Disposition"] == 'attachment; filename="q0-alpha.html"'
    html = got.content.decode()
    assert html.count('<img src="data:image/png;base64,') == 2
    assert "/images/" not in html
    assert ".rd-card" in html and "<style>" in html
    assert "<script" not in html
    assert "<dt>Model</dt><dd>alpha</dd>" in html


def test_rendered_answer_routes_are_for_reviewers_of_the_project(
    project: Project, answers: list[Response], clients: dict[str, Client]
) -> None:
    rendered(project)
    for name in ("review:rendered_answer", "review:rendered_answer_download"):
        url = reverse(name, args=[answers[0].pk])
        assert clients["annotator"].get(url).status_code == 403
        assert clients["outsider"].get(url).status_code == 404
        assert clients["anonymous"].get(url).status_code == 302
        assert clients["admin"].get(url).status_code == 200
    missing = reverse("review:rendered_answer", args=[999999])
    assert clients["reviewer"].get(missing).status_code == 404


def test_rendered_document_for_other_pages(project: Project, answers: list[Response]) -> None:
    assert selectors.rendered_document(answers[0]) is None
    rendered(project)
    document = selectors.rendered_document(answers[0])
    assert document is not None and document.startswith('<div class="rd-document">')
    assert "alpha" not in document  # the model's name is not part of the document
    html = render_to_string("review/answer_rendering/_document.html", {"document": document})
    assert "css/rendering.css" in html and "data-rendered" in html
    empty = render_to_string("review/answer_rendering/_document.html", {"document": None})
    assert "not been rendered yet" in empty
    assert re.search(r'data-status="rendered"', document)


def test_item_page_links_a_model_answer_to_its_rendering_for_reviewers(
    project: Project, answers: list[Response], clients: dict[str, Client]
) -> None:
    item = answers[0].item
    url = reverse("benchmark:item_detail", args=[project.pk, item.pk])
    link = reverse("review:rendered_answer", args=[answers[0].pk])
    assert link in clients["reviewer"].get(url).content.decode()
    assert link not in clients["annotator"].get(url).content.decode()
