"""The "Score model answers" page of interleaved projects: upload, figures, bad files,
permissions and bounded queries."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from annotation.tag_review.models import ResponseVersion
from benchmark.models import ItemStatus, Job, JobStatus, Project
from review.answers import services as review_answers
from tests.factories import ItemFactory, ProjectFactory, ResponseFactory

pytestmark = pytest.mark.django_db


def tag(name: str, params: dict[str, Any]) -> str:
    return (
        "<tool>" + json.dumps({"tool_name": name, "description": "d", "params": params}) + "</tool>"
    )


REF = tag("Reference", {"img_index": 0})
SEARCH = tag("Search", {"query": "q"})
DIFFUSION = tag("Diffusion", {"prompt": "p"})
BROKEN = '<tool>{"tool_name": "Diffusion", "description": "x", "params": {"prompt": "p"},}</tool>'


@pytest.fixture
def world(project: Project, users: dict[str, Any]) -> dict[str, Any]:
    """Three verified items with ground truth, one draft item with ground truth."""
    items = {}
    for n, (status, gt) in enumerate(
        [
            (ItemStatus.VERIFIED, f"{REF}\n\n{DIFFUSION}"),  # atp_1: {reference, diffusion}
            (ItemStatus.VERIFIED, "old text"),  # atp_2: replaced by a saved version below
            (ItemStatus.VERIFIED, REF),  # atp_3: {reference}
            (ItemStatus.DRAFT, SEARCH),  # atp_4: not verified, so no ground truth
        ],
        start=1,
    ):
        item = ItemFactory(project=project, external_id=f"atp_{n}", status=status)
        response = ResponseFactory(item=item, key="gt", text=gt)
        items[item.external_id] = item
        if n == 2:
            ResponseVersion.objects.create(response=response, number=1, text="old text")
            ResponseVersion.objects.create(response=response, number=2, text=SEARCH)
    return {"project": project, "items": items}


def url(project: Project) -> str:
    return reverse("review:score_answers", args=[project.pk])


def upload(name: str, rows: list[dict[str, Any]]) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, "\n".join(json.dumps(r) for r in rows).encode())


GPT_ROWS = [
    {"trace_id": "atp_1", "answer": f"A.\n\n{REF}\n\nB.\n\n{SEARCH}"},  # P .5 R .5 F1 .5
    {"trace_id": "atp_2", "answer": f"A.\n\n{SEARCH}\n\n{BROKEN}"},  # P 1 R 1 F1 1
    {"trace_id": "atp_3", "answer": "No tools."},  # 0 0 0
    {"trace_id": "atp_4", "answer": SEARCH},  # adoption only
    {"trace_id": "atp_999", "answer": REF},  # unknown item
]


def figure(html: str, model: str, name: str) -> str:
    row = re.search(rf'<tr[^>]*data-model="{re.escape(model)}".*?</tr>', html, re.S)
    assert row, model
    cell = re.search(rf'data-figure="{name}">(.*?)</td>', row.group(0), re.S)
    assert cell, name
    return re.sub(r"<[^>]+>", "", cell.group(1)).strip()


def test_upload_shows_figures_per_model(world: dict[str, Any], clients: dict[str, Client]) -> None:
    project = world["project"]
    claude = [{"trace_id": "atp_1", "answer": f"{REF}\n\n{DIFFUSION}"}]
    page = clients["reviewer"].post(
        url(project),
        {"answers": [upload("gpt-4o.jsonl", GPT_ROWS), upload("claude.jsonl", claude)]},
    )
    assert page.status_code == 200
    html = page.content.decode()
    result = page.context["result"]
    assert sorted(result["models"]) == ["claude", "gpt-4o"]
    gpt = result["models"]["gpt-4o"]
    assert gpt["n_answers"] == 4
    # 6 calls: atp_1 2, atp_2 2 (one broken), atp_4 1 ... and atp_3 none
    assert (gpt["n_calls"], gpt["n_well_formed"]) == (5, 4)
    assert figure(html, "gpt-4o", "format") == "80.00"
    assert figure(html, "gpt-4o", "precision") == "50.00"  # (.5 + 1 + 0) / 3
    assert figure(html, "gpt-4o", "recall") == "50.00"
    assert figure(html, "gpt-4o", "f1") == "50.00"
    assert figure(html, "claude", "f1") == "100.00"
    assert claude_missing(result) == 2  # atp_2 and atp_3 unanswered by claude
    assert gpt["adoption"]["search"] == 75.0  # atp_1, atp_2, atp_4 of 4
    assert gpt["calls_per_answer"]["histogram"] == {"0": 1, "1": 1, "2": 2}
    # the saved version of atp_2's ground truth is the reference, not the imported text
    assert result["ground_truth"]["n_items"] == 3
    assert "1 answer names no item of this project" in " ".join(html.split())
    assert "atp_999" in html
    assert 'class="table bars calls-histogram"' in html
    assert "How each figure is computed" in html


def claude_missing(result: dict[str, Any]) -> int:
    return int(result["models"]["claude"]["tool_set"]["n_missing"])


def test_only_verified_limits_every_figure(
    world: dict[str, Any], clients: dict[str, Client]
) -> None:
    page = clients["admin"].post(
        url(world["project"]), {"answers": [upload("m.jsonl", GPT_ROWS)], "only_verified": "on"}
    )
    result = page.context["result"]
    assert result["models"]["m"]["n_answers"] == 3
    assert result["n_unknown"] == 2  # atp_4 (draft) and atp_999
    assert result["models"]["m"]["tool_set"]["f1"] == 50.0


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            b'{"trace_id": "atp_1", "answer": "x"}\n{"trace_id": "atp_2", "answer": \n',
            "bad.jsonl: line 2: not valid JSON",
        ),
        (
            b'[{"trace_id": "atp_1", "text": "x"}]',
            "bad.jsonl, field &#x27;answer&#x27;: record 1 (line 1): no answer text",
        ),
        (
            b'{"trace_id": "atp_1", "answer": "x"}\n{"trace_id": "atp_1", "answer": "y"}\n',
            "bad.jsonl, line 2: model &#x27;bad&#x27; answers item atp_1 a second time (first in bad.jsonl, line 1)",
        ),
    ],
)
def test_a_bad_file_gets_a_clear_message(
    world: dict[str, Any], clients: dict[str, Client], content: bytes, message: str
) -> None:
    page = clients["reviewer"].post(
        url(world["project"]), {"answers": SimpleUploadedFile("bad.jsonl", content)}
    )
    assert page.status_code == 200
    assert page.context["result"] is None
    assert message in page.content.decode()


def test_no_file_is_a_form_error(world: dict[str, Any], clients: dict[str, Client]) -> None:
    page = clients["reviewer"].post(url(world["project"]), {})
    assert page.status_code == 200
    assert "choose at least one answer file" in page.content.decode()


def test_upload_size_is_bounded(
    world: dict[str, Any], clients: dict[str, Client], settings: Any
) -> None:
    settings.BENCHWRIGHT_MAX_UPLOAD_BYTES = 100
    page = clients["reviewer"].post(url(world["project"]), {"answers": upload("m.jsonl", GPT_ROWS)})
    assert page.context["result"] is None and page.context["job"] is None
    assert "the page scores up to 0 MB at a time" in page.content.decode()
    assert not Job.objects.exists()


def test_htmx_post_returns_the_panel_only(
    world: dict[str, Any], clients: dict[str, Client]
) -> None:
    page = clients["reviewer"].post(
        url(world["project"]),
        {"answers": upload("m.jsonl", GPT_ROWS)},
        HTTP_HX_REQUEST="true",
        HTTP_HX_TARGET="score-panel",
    )
    html = page.content.decode()
    assert html.lstrip().startswith('<div id="score-panel">')
    assert "<html" not in html
    assert 'id="model-table"' in html
    assert page["Vary"] and "HX-Request" in page["Vary"]


def test_llmi_project_shows_r_rule(
    db: None, users: dict[str, Any], clients: dict[str, Client]
) -> None:
    project = users["admin"].memberships.get().project
    project.tag_syntax = "llmi"
    project.data_format = "llmi"
    project.save()
    ItemFactory(
        project=project,
        external_id="train_sample#1",
        source_file="train_sample.json",
        constraints={"image_num": 2},
    )
    ItemFactory(
        project=project,
        external_id="train_sample#2",
        source_file="train_sample.json",
        constraints={"image_num": -1},
    )
    diffusion = (
        "<imgen>{'source': 'diffusion', 'description': 'd', 'params': {'prompt': 'p'}}</imgen>"
    )
    rows = [
        {"input_file": "train_sample.json", "sample_index": 1, "answer": diffusion * 3},  # 0.7
        {"input_file": "train_sample.json", "sample_index": 2, "answer": "text only"},  # 1
    ]
    page = clients["reviewer"].post(url(project), {"answers": upload("qwen.json", rows)})
    html = page.content.decode()
    assert figure(html, "qwen", "r_rule") == "0.850"
    assert page.context["result"]["models"]["qwen"]["adoption"]["diffusion"] == 50.0


def test_other_project_kinds_get_a_message(users: dict[str, Any], client_for: Any) -> None:
    plans = ProjectFactory(kind="plan", data_format="mms")
    admin = users["admin"]
    plans.memberships.create(user=admin, role="admin")
    page = client_for(admin).get(url(plans))
    assert page.status_code == 200
    assert "Only interleaved projects" in page.content.decode()
    assert 'id="score-answers-form"' not in page.content.decode()


@pytest.mark.parametrize(("role", "status"), [("annotator", 403), ("outsider", 404)])
def test_post_is_refused_without_the_role(
    world: dict[str, Any], clients: dict[str, Client], role: str, status: int
) -> None:
    page = clients[role].post(url(world["project"]), {"answers": upload("m.jsonl", GPT_ROWS)})
    assert page.status_code == status


def test_project_page_links_to_scoring_for_reviewers(
    world: dict[str, Any], clients: dict[str, Client]
) -> None:
    detail = reverse("benchmark:project_detail", args=[world["project"].pk])
    assert url(world["project"]) in clients["reviewer"].get(detail).content.decode()
    assert url(world["project"]) not in clients["annotator"].get(detail).content.decode()


def test_queries_do_not_grow_with_answers_or_items(
    world: dict[str, Any], clients: dict[str, Client], django_assert_max_num_queries: Any
) -> None:
    project = world["project"]
    for n in range(5, 60):
        item = ItemFactory(project=project, external_id=f"atp_{n}", status=ItemStatus.VERIFIED)
        ResponseFactory(item=item, key="gt", text=REF)
    rows = [{"trace_id": f"atp_{n}", "answer": f"{REF}\n\n{SEARCH}"} for n in range(1, 60)]
    with django_assert_max_num_queries(10):
        page = clients["reviewer"].post(url(project), {"answers": upload("m.jsonl", rows)})
    assert page.context["result"]["models"]["m"]["n_answers"] == 59


# --------------------------------------------------------------------------- large uploads: a job


def post_as_job(
    client: Client, project: Project, capture: Any, files: list[SimpleUploadedFile], **extra: Any
) -> Any:
    """POST answers above the inline size: the scoring job runs eagerly after commit."""
    with capture(execute=True):
        return client.post(url(project), {"answers": files}, **extra)


@pytest.fixture
def small_inline(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every upload of these tests counts as large."""
    monkeypatch.setattr(review_answers, "INLINE_BYTES", 10)


def test_a_large_upload_is_scored_by_a_job_with_the_same_figures(
    world: dict[str, Any],
    clients: dict[str, Client],
    django_capture_on_commit_callbacks: Any,
    settings: Any,
    small_inline: None,
) -> None:
    project = world["project"]
    reviewer = clients["reviewer"]
    claude = [
        {"trace_id": "atp_1", "answer": REF},
        {"trace_id": "atp_3", "answer": f"{REF}\n\n{REF}"},
    ]
    inline = review_answers.answers_score(
        project=project,
        records=review_answers.read_uploads(
            [("gpt.jsonl", upload("gpt.jsonl", GPT_ROWS).read()),
             ("claude.jsonl", upload("claude.jsonl", claude).read())]
        ),
    )  # fmt: skip
    page = post_as_job(
        reviewer,
        project,
        django_capture_on_commit_callbacks,
        [upload("gpt.jsonl", GPT_ROWS), upload("claude.jsonl", claude)],
    )
    job = Job.objects.get(kind="score_answers")
    assert page.status_code == 302 and page["Location"] == f"/jobs/{job.pk}/"
    assert job.status == JobStatus.SUCCEEDED, job.error
    assert (job.progress, job.total) == (7, 7)
    assert not (settings.MEDIA_ROOT / "answers-upload" / str(job.pk)).exists()  # files removed
    html = reviewer.get(page["Location"]).content.decode()
    # The same figures, in the same order, as the page shows for a small upload.
    assert figure(html, "gpt", "precision") == "50.00"
    assert figure(html, "gpt", "f1") == "50.00"
    assert figure(html, "claude", "recall") == "75.00"
    shown = reviewer.get(page["Location"]).context
    assert shown["result"]["models"] == json.loads(json.dumps(inline["models"]))
    assert list(shown["result"]["models"]) == ["claude", "gpt"]
    assert [b["model"] for b in shown["blocks"]] == ["claude", "gpt", "all models"]
    tools = list(shown["result"]["models"]["gpt"]["per_tool"])
    assert tools == list(inline["models"]["gpt"]["per_tool"])
    hist = list(shown["result"]["overall"]["calls_per_answer"]["histogram"])
    assert hist == list(inline["overall"]["calls_per_answer"]["histogram"])


def test_the_htmx_upload_polls_a_progress_bar_then_shows_the_figures(
    world: dict[str, Any],
    clients: dict[str, Client],
    django_capture_on_commit_callbacks: Any,
    small_inline: None,
) -> None:
    project = world["project"]
    reviewer = clients["reviewer"]
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        page = reviewer.post(
            url(project),
            {"answers": [upload("m.jsonl", GPT_ROWS)]},
            HTTP_HX_REQUEST="true",
            HTTP_HX_TARGET="score-panel",
        )
    job = Job.objects.get(kind="score_answers")
    html = page.content.decode()
    assert html.lstrip().startswith('<div id="score-panel">')
    assert f'id="job-{job.pk}"' in html and 'hx-trigger="every 1s"' in html
    assert 'role="progressbar"' in html and 'id="model-table"' not in html
    poll = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": f"job-{job.pk}"}
    running = reviewer.get(f"/jobs/{job.pk}/", **poll)
    assert running.status_code == 200 and "queued" in running.content.decode()
    for callback in callbacks:
        callback()
    done = reviewer.get(f"/jobs/{job.pk}/", **poll)
    html = done.content.decode()
    assert done.status_code == 286  # stop polling
    assert html.lstrip().startswith(f'<div id="job-{job.pk}"')
    assert 'id="model-table"' in html and figure(html, "m", "f1") == "50.00"
    assert "hx-trigger" not in html


def test_a_bad_large_file_fails_the_job_with_the_place(
    world: dict[str, Any],
    clients: dict[str, Client],
    django_capture_on_commit_callbacks: Any,
    small_inline: None,
) -> None:
    bad = SimpleUploadedFile("bad.jsonl", b'{"trace_id": "atp_1", "answer": "x"}\n{"trace_id": \n')
    page = post_as_job(
        clients["reviewer"], world["project"], django_capture_on_commit_callbacks, [bad]
    )
    job = Job.objects.get(kind="score_answers")
    assert job.status == JobStatus.FAILED and job.error.startswith(
        "bad.jsonl: line 2: not valid JSON"
    )
    html = clients["reviewer"].get(page["Location"]).content.decode()
    assert "The answers were not scored." in html and "bad.jsonl: line 2: not valid JSON" in html
    assert 'id="model-table"' not in html


def test_answer_scoring_jobs_are_for_reviewers_of_the_project(
    world: dict[str, Any],
    clients: dict[str, Client],
    django_capture_on_commit_callbacks: Any,
    small_inline: None,
) -> None:
    page = post_as_job(
        clients["admin"], world["project"], django_capture_on_commit_callbacks,
        [upload("m.jsonl", GPT_ROWS)],
    )  # fmt: skip
    where = page["Location"]
    assert clients["reviewer"].get(where).status_code == 200
    assert clients["annotator"].get(where).status_code == 403
    assert clients["outsider"].get(where).status_code == 404
    assert clients["anonymous"].get(where).status_code == 302
    # The one job page shows each kind only to its readers: imports are for admins.
    other = Job.objects.create(kind="import", project=world["project"])
    assert clients["reviewer"].get(f"/jobs/{other.pk}/").status_code == 403


def test_the_job_page_takes_a_bounded_number_of_queries(
    world: dict[str, Any],
    clients: dict[str, Client],
    django_capture_on_commit_callbacks: Any,
    django_assert_max_num_queries: Any,
    small_inline: None,
) -> None:
    page = post_as_job(
        clients["reviewer"], world["project"], django_capture_on_commit_callbacks,
        [upload("m.jsonl", GPT_ROWS)],
    )  # fmt: skip
    with django_assert_max_num_queries(8):
        assert clients["reviewer"].get(page["Location"]).status_code == 200
