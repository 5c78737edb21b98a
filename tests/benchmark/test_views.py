"""The web pages: what a person sees, htmx fragments, escaping, images, jobs, query counts."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client

from benchmark.models import Image, ItemStatus, JobStatus, Origin, Project
from tests.factories import (
    ImageFactory,
    ItemFactory,
    JobFactory,
    PlanFactory,
    ProjectFactory,
    ResponseFactory,
    TrajectoryFactory,
    image_ref,
)

pytestmark = pytest.mark.django_db

HX_MAIN = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "main"}
HX_LIST = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "item-list"}


def text_of(response: Any) -> str:
    return response.content.decode()


def cell(html: str, status: str) -> str:
    match = re.search(rf'data-status="{status}">(\d+)<', html)
    assert match, f"no {status} count"
    return match.group(1)


# --------------------------------------------------------------------------- auth


def test_login_page_logs_in_and_logout_needs_post(users: dict[str, Any]) -> None:
    client = Client()
    page = client.get("/accounts/login/")
    assert page.status_code == 200
    assert 'name="password"' in text_of(page)
    response = client.post(
        "/accounts/login/", {"username": "admin-user", "password": "pw-for-tests-1"}
    )
    assert response.status_code == 302
    assert client.get("/").status_code == 200
    assert client.get("/accounts/logout/").status_code == 405
    assert client.post("/accounts/logout/").status_code == 302
    assert client.get("/").status_code == 302


def test_pages_require_login(project: Project) -> None:
    response = Client().get(f"/projects/{project.pk}/")
    assert response.status_code == 302
    assert response["Location"] == f"/accounts/login/?next=/projects/{project.pk}/"


# --------------------------------------------------------------------------- project list


def test_project_list_shows_role_kind_and_counts_per_status(
    project: Project, other_project: Project, clients: dict[str, Client]
) -> None:
    for status, n in [("draft", 3), ("in_review", 2), ("verified", 1)]:
        ItemFactory.create_batch(n, project=project, status=status)
    ItemFactory(project=project, status="discarded", discard_reason="duplicate")
    ItemFactory.create_batch(4, project=other_project)

    html = text_of(clients["reviewer"].get("/"))

    assert project.name in html
    assert other_project.name not in html
    assert "Interleaved answers (tool tags)" in html
    assert "Reviewer" in html
    assert cell(html, "draft") == "3"
    assert cell(html, "in_review") == "2"
    assert cell(html, "verified") == "1"
    assert cell(html, "discarded") == "1"
    assert cell(html, "total") == "7"


def test_project_list_for_a_user_without_projects(client_for: Any) -> None:
    from tests.factories import UserFactory

    html = text_of(client_for(UserFactory()).get("/"))
    assert "not a member of any project" in html


# --------------------------------------------------------------------------- item list


@pytest.fixture
def catalogue(project: Project) -> Project:
    ItemFactory(
        project=project,
        external_id="atp_0001",
        query="Walk me through the LumenCap framework",
        category="Academic",
        intent="Framework",
        level=1,
    )
    ItemFactory(
        project=project,
        external_id="atp_0002",
        query="Which hairstyle suits a round face?",
        category="Lifestyle",
        intent="Hairstyle",
        level=2,
        status=ItemStatus.VERIFIED,
    )
    ItemFactory(
        project=project,
        external_id="atp_0003",
        query="Is this painting authentic?",
        category="Art",
        intent="Authenticity",
        level=3,
        modality="image",
        status=ItemStatus.IN_REVIEW,
    )
    return project


def ids_in(html: str) -> list[str]:
    return re.findall(r'class="mono" href="[^"]+"[^>]*>([^<]+)</a>', html)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("", ["atp_0001", "atp_0002", "atp_0003"]),
        ("status=verified", ["atp_0002"]),
        ("category=Art", ["atp_0003"]),
        ("intent=Framework", ["atp_0001"]),
        ("level=2", ["atp_0002"]),
        ("modality=image", ["atp_0003"]),
        ("q=hairstyle", ["atp_0002"]),
        ("q=0003", ["atp_0003"]),
        ("q=LUMENCAP&category=Academic", ["atp_0001"]),
        ("q=nothing-matches", []),
    ],
)
def test_item_list_filters_and_search(
    catalogue: Project, clients: dict[str, Client], query: str, expected: list[str]
) -> None:
    html = text_of(clients["annotator"].get(f"/projects/{catalogue.pk}/?{query}"))
    assert ids_in(html) == expected


def test_item_list_ignores_an_invalid_filter_and_says_so(
    catalogue: Project, clients: dict[str, Client]
) -> None:
    response = clients["annotator"].get(f"/projects/{catalogue.pk}/?status=bogus&level=9")
    assert response.status_code == 200
    html = text_of(response)
    assert "Some filters were ignored" in html
    assert len(ids_in(html)) == 3


def test_item_list_shows_counts_and_filter_menus_from_the_data(
    catalogue: Project, clients: dict[str, Client]
) -> None:
    html = text_of(clients["annotator"].get(f"/projects/{catalogue.pk}/?status=verified"))
    assert 'id="match-count">1<' in html
    assert "matching the filters" in html
    assert '<option value="Hairstyle"' in html
    assert '<option value="Lifestyle"' in html


def test_item_list_paginates_50_a_page(project: Project, clients: dict[str, Client]) -> None:
    ItemFactory.create_batch(60, project=project)
    first = text_of(clients["admin"].get(f"/projects/{project.pk}/"))
    second = text_of(clients["admin"].get(f"/projects/{project.pk}/?page=2"))
    assert len(ids_in(first)) == 50
    assert len(ids_in(second)) == 10
    assert "Page 1 of 2" in first
    assert 'href="?page=2"' in first


def test_pagination_links_keep_the_filters(project: Project, clients: dict[str, Client]) -> None:
    ItemFactory.create_batch(55, project=project, category="Art")
    html = text_of(clients["admin"].get(f"/projects/{project.pk}/?category=Art"))
    assert 'href="?category=Art&amp;page=2"' in html


def test_import_and_export_links_follow_the_role(
    project: Project, clients: dict[str, Client]
) -> None:
    import_url = f"/projects/{project.pk}/datasets/import/"
    export_url = f"/projects/{project.pk}/datasets/export/"
    admin = text_of(clients["admin"].get(f"/projects/{project.pk}/"))
    reviewer = text_of(clients["reviewer"].get(f"/projects/{project.pk}/"))
    annotator = text_of(clients["annotator"].get(f"/projects/{project.pk}/"))
    assert import_url in admin and export_url in admin
    assert import_url not in reviewer and export_url in reviewer
    assert import_url not in annotator and export_url not in annotator


# --------------------------------------------------------------------------- htmx


def test_htmx_request_gets_only_the_list_fragment(
    catalogue: Project, clients: dict[str, Client]
) -> None:
    response = clients["admin"].get(f"/projects/{catalogue.pk}/?status=verified", **HX_LIST)
    html = text_of(response)
    assert html.lstrip().startswith('<section id="item-list"')
    assert "<html" not in html
    assert 'class="filters' not in html
    assert ids_in(html) == ["atp_0002"]
    assert "HX-Request" in response["Vary"]


def test_htmx_navigation_gets_the_page_content_without_the_layout(
    catalogue: Project, clients: dict[str, Client]
) -> None:
    html = text_of(clients["admin"].get(f"/projects/{catalogue.pk}/", **HX_MAIN))
    assert "<html" not in html
    assert 'class="topbar"' not in html
    assert 'class="filters' in html
    assert 'id="item-list"' in html
    assert f"<title>{catalogue.name} · Benchwright</title>" in html


def test_plain_request_gets_the_full_page(catalogue: Project, clients: dict[str, Client]) -> None:
    html = text_of(clients["admin"].get(f"/projects/{catalogue.pk}/"))
    assert html.startswith("<!doctype html>")
    assert 'class="topbar"' in html
    assert 'id="item-list"' in html
    assert "django_htmx/htmx-2" in html
    assert 'hx-headers=\'{"X-CSRFToken": "' in html


def test_history_restore_gets_the_full_page(catalogue: Project, clients: dict[str, Client]) -> None:
    html = text_of(
        clients["admin"].get(
            f"/projects/{catalogue.pk}/", **HX_MAIN, HTTP_HX_HISTORY_RESTORE_REQUEST="true"
        )
    )
    assert html.startswith("<!doctype html>")


def test_links_work_without_javascript(catalogue: Project, clients: dict[str, Client]) -> None:
    html = text_of(clients["admin"].get(f"/projects/{catalogue.pk}/"))
    for tag in re.findall(r"<a [^>]*hx-get=[^>]*>", html):
        assert " href=" in tag, tag


def test_item_page_fragment_and_full_page(project: Project, clients: dict[str, Client]) -> None:
    item = ItemFactory(project=project)
    url = f"/projects/{project.pk}/items/{item.pk}/"
    fragment = text_of(clients["admin"].get(url, **HX_MAIN))
    page = text_of(clients["admin"].get(url))
    assert "<html" not in fragment and item.query in fragment
    assert "<html" in page and item.query in page


# --------------------------------------------------------------------------- item detail


def test_response_text_is_escaped(project: Project, clients: dict[str, Client]) -> None:
    item = ItemFactory(project=project, query="<b>bold?</b>")
    ResponseFactory(
        item=item,
        text='Hi <script>alert("x")</script> <img src=x onerror=alert(1)>\n'
        '<tool>{"tool_name": "Search", "params": {"query": "<script>alert(2)</script>"}}</tool>',
    )
    html = text_of(clients["annotator"].get(f"/projects/{project.pk}/items/{item.pk}/"))
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in html
    assert "<script>alert" not in html
    assert "<img src=x" not in html
    assert "&lt;b&gt;bold?&lt;/b&gt;" in html
    assert '<mark class="tag tag-tool"' in html
    assert "&lt;script&gt;alert(2)&lt;/script&gt;" in html


def test_tool_tags_are_highlighted(project: Project, clients: dict[str, Client]) -> None:
    item = ItemFactory(project=project)
    ResponseFactory(
        item=item,
        key="gt",
        text='Look:\n<tool>{"tool_name": "Reference", "params": {"img_index": 0}}</tool>\n'
        "then <imgen>{'source': 'diffusion', 'description': 'a cat'}</imgen> and "
        "<imgen>{'source': 'edit', 'params'",
    )
    html = text_of(clients["annotator"].get(f"/projects/{project.pk}/items/{item.pk}/"))
    marks = re.findall(r'<mark class="([^"]+)"', html)
    assert marks == ["tag tag-tool", "tag tag-imgen", "tag tag-imgen tag-unclosed"]
    assert '<span class="tag-name">Reference</span>' in html
    assert '<span class="tag-name">diffusion</span>' in html
    assert "&lt;tool&gt;{&quot;tool_name&quot;: &quot;Reference&quot;" in html
    assert "Ground truth" in html


def test_item_page_shows_fields_documents_and_images_with_their_index(
    project: Project, clients: dict[str, Client]
) -> None:
    images = [ImageFactory(projects=[project]) for _ in range(3)]
    refs = [image_ref(img, position=i) for i, img in enumerate(images[:2])]
    refs.append(image_ref(images[2], position=0, role="query"))
    item = ItemFactory(
        project=project,
        query="What does the figure show?",
        modality="image",
        documents=[
            {"text": "A paper about LumenCap.", "images": [refs[0]["path"], refs[1]["path"]]}
        ],
        image_refs=refs,
        constraints={"max_images": 4},
        expected_answer="A pipeline.",
        accepted_variants=["a pipeline", "the pipeline"],
        rubric=[{"key": "r1", "text": "Mentions the encoder."}],
        domain="Science",
        level=2,
        raw='{"trace_id": "x", "query": "What does the figure show?"}',
    )
    html = text_of(clients["annotator"].get(f"/projects/{project.pk}/items/{item.pk}/"))
    for text in [
        "A paper about LumenCap.",
        "max_images",
        "A pipeline.",
        "the pipeline",
        "Mentions the encoder.",
        "Science",
        "With input images",
        "img_index 0",
        "img_index 1",
        "Item source JSON",
        "&quot;trace_id&quot;: &quot;x&quot;",
    ]:
        assert text in html, text
    for img in images:
        assert f'href="/images/{img.sha256}/" data-lightbox' in html
        assert f'src="/images/{img.sha256}/thumb/"' in html


def test_missing_image_is_shown_as_missing(project: Project, clients: dict[str, Client]) -> None:
    item = ItemFactory(
        project=project,
        image_refs=[{"sha256": None, "role": "document", "path": "images/gone.png", "position": 0}],
    )
    html = text_of(clients["annotator"].get(f"/projects/{project.pk}/items/{item.pk}/"))
    assert "thumb-missing" in html
    assert "images/gone.png" in html


def test_plans_show_steps_node_references_alternatives_and_predictions(
    clients: dict[str, Client], users: dict[str, Any], project: Project
) -> None:
    item = ItemFactory(project=project)
    PlanFactory(item=item, key="gt")
    PlanFactory(
        item=item,
        key="alt0",
        is_alternative=True,
        steps=[{"id": 0, "name": "image captioning", "args": {"image": "17320.jpg"}}],
    )
    PlanFactory(
        item=item,
        key="pred",
        origin=Origin.MODEL,
        model_name="gpt-4o",
        steps=[],
        form="code",
        code="def solve():\n    return {}",
    )
    html = text_of(clients["annotator"].get(f"/projects/{project.pk}/items/{item.pk}/"))
    assert '<code class="tool-name">image editing</code>' in html
    assert '<code class="node-ref">&lt;node-0&gt;.image</code>' in html
    assert "Alternative plan" in html
    assert "Prediction · gpt-4o" in html
    assert "def solve():" in html


def test_trajectories_show_checkpoints_and_runs_with_produced_images(
    project: Project, clients: dict[str, Client]
) -> None:
    item = ItemFactory(project=project)
    TrajectoryFactory(item=item, key="reference")
    produced = ImageFactory(projects=[project])
    TrajectoryFactory(
        item=item,
        key="run",
        origin=Origin.MODEL,
        model_name="agent-x",
        checkpoints=[],
        efficiency={},
        steps=[
            {
                "index": 0,
                "tool_name": "crop",
                "arguments": {"image_index": 0, "bbox_2d": [1, 2, 3, 4]},
                "output": {"ok": "true", "output_path": "tool_images/transformed_image_1.png"},
                "turn": 1,
            }
        ],
        final_answer="WILLOW ST",
        image_refs=[
            {
                "sha256": produced.sha256,
                "role": "artifact",
                "path": "runs/0001/tool_images/transformed_image_1.png",
                "position": 0,
            }
        ],
    )
    html = text_of(clients["annotator"].get(f"/projects/{project.pk}/items/{item.pk}/"))
    assert "Reference trajectory" in html
    assert 'class="axis axis-v"' in html
    assert "769, 403, 850, 452" in html
    assert "What street?" in html and "WILLOW ST" in html
    assert "reference_tool_calls" in html
    assert "Run · agent-x" in html
    assert '<code class="tool-name">crop</code>' in html
    assert f'src="/images/{produced.sha256}/thumb/"' in html


# --------------------------------------------------------------------------- query counts


def test_item_list_query_count_does_not_grow_with_items(
    project: Project, clients: dict[str, Client], django_assert_max_num_queries: Any
) -> None:
    client = clients["annotator"]
    url = f"/projects/{project.pk}/"
    ItemFactory.create_batch(5, project=project)
    # 9: the project's saved filters shown above the list are one query of their own (issue 24).
    with django_assert_max_num_queries(9):
        small = client.get(url)
    ItemFactory.create_batch(55, project=project)
    with django_assert_max_num_queries(9):
        large = client.get(url)
    assert len(ids_in(text_of(small))) == 5
    assert len(ids_in(text_of(large))) == 50


def _rich_item(project: Project, n: int) -> Any:
    images = [ImageFactory(projects=[project]) for _ in range(n)]
    item = ItemFactory(
        project=project,
        image_refs=[image_ref(img, position=i) for i, img in enumerate(images)],
    )
    for i in range(n):
        ResponseFactory(item=item, key=f"r{i}")
        PlanFactory(item=item, key=f"p{i}")
        TrajectoryFactory(item=item, key=f"t{i}")
    return item


def test_item_detail_query_count_does_not_grow_with_attachments(
    project: Project, clients: dict[str, Client], django_assert_max_num_queries: Any
) -> None:
    client = clients["annotator"]
    small = _rich_item(project, 2)
    large = _rich_item(project, 20)
    # 11: each hiding rule (answers, models' names) first asks in one small query whether it
    # can hide anything from the user, and adds no subquery when it cannot
    with django_assert_max_num_queries(11):
        client.get(f"/projects/{project.pk}/items/{small.pk}/")
    with django_assert_max_num_queries(11):
        response = client.get(f"/projects/{project.pk}/items/{large.pk}/")
    assert text_of(response).count("/thumb/") == 20


# --------------------------------------------------------------------------- images


def test_image_views_serve_the_bytes_and_thumbnail(
    project: Project, clients: dict[str, Client]
) -> None:
    image = ImageFactory(projects=[project])
    response = clients["annotator"].get(f"/images/{image.sha256}/")
    assert response.status_code == 200
    assert response["Content-Type"] == "image/png"
    assert "private" in response["Cache-Control"]
    body = b"".join(response.streaming_content)
    image.file.open("rb")
    assert body == image.file.read()
    thumb = clients["annotator"].get(f"/images/{image.sha256}/thumb/")
    assert thumb.status_code == 200
    assert b"".join(thumb.streaming_content).startswith(b"\x89PNG")


def test_image_of_another_project_is_404(
    project: Project, other_project: Project, clients: dict[str, Client]
) -> None:
    theirs = ImageFactory(projects=[other_project])
    assert clients["admin"].get(f"/images/{theirs.sha256}/").status_code == 404
    assert clients["admin"].get(f"/images/{theirs.sha256}/thumb/").status_code == 404
    assert clients["outsider"].get(f"/images/{theirs.sha256}/").status_code == 200


def test_image_shared_by_two_projects_is_visible_to_both(
    project: Project, other_project: Project, clients: dict[str, Client]
) -> None:
    shared = ImageFactory(projects=[project, other_project])
    assert clients["annotator"].get(f"/images/{shared.sha256}/").status_code == 200
    assert clients["outsider"].get(f"/images/{shared.sha256}/").status_code == 200


def test_image_whose_file_is_gone_is_404(project: Project, clients: dict[str, Client]) -> None:
    image = ImageFactory(projects=[project])
    image.file.storage.delete(image.file.name)
    assert Image.objects.filter(pk=image.pk).exists()
    assert clients["annotator"].get(f"/images/{image.sha256}/").status_code == 404


# --------------------------------------------------------------------------- scoping in the UI


def test_another_projects_item_is_404_even_through_this_projects_url(
    project: Project, other_project: Project, clients: dict[str, Client]
) -> None:
    theirs = ItemFactory(project=other_project)
    client = clients["admin"]
    assert client.get(f"/projects/{other_project.pk}/items/{theirs.pk}/").status_code == 404
    assert client.get(f"/projects/{project.pk}/items/{theirs.pk}/").status_code == 404
    assert client.get(f"/projects/{other_project.pk}/").status_code == 404


def test_another_projects_job_is_404(
    project: Project, other_project: Project, users: dict[str, Any], clients: dict[str, Client]
) -> None:
    theirs = JobFactory(project=other_project, created_by=users["outsider"])
    assert clients["admin"].get(f"/jobs/{theirs.pk}/").status_code == 404
    assert clients["outsider"].get(f"/jobs/{theirs.pk}/").status_code == 200


# --------------------------------------------------------------------------- jobs


def test_running_job_fragment_keeps_polling(
    project: Project, users: dict[str, Any], clients: dict[str, Client]
) -> None:
    job = JobFactory(
        project=project, created_by=users["admin"], status=JobStatus.RUNNING, progress=30, total=120
    )
    response = clients["admin"].get(
        f"/jobs/{job.pk}/", HTTP_HX_REQUEST="true", HTTP_HX_TARGET=f"job-{job.pk}"
    )
    html = text_of(response)
    assert response.status_code == 200
    assert html.lstrip().startswith(f'<div id="job-{job.pk}"')
    assert 'hx-trigger="every 1s"' in html
    assert 'aria-valuenow="25"' in html
    assert "30 of 120 records" in html


def test_finished_job_fragment_stops_polling_with_286(
    project: Project, users: dict[str, Any], clients: dict[str, Client]
) -> None:
    job = JobFactory(
        project=project,
        created_by=users["admin"],
        status=JobStatus.SUCCEEDED,
        result={"items_created": 12, "items_skipped": 0, "images_stored": 45},
    )
    response = clients["admin"].get(
        f"/jobs/{job.pk}/", HTTP_HX_REQUEST="true", HTTP_HX_TARGET=f"job-{job.pk}"
    )
    html = text_of(response)
    assert response.status_code == 286
    assert "every 1s" not in html
    assert "<dd>12</dd>" in html and "<dd>45</dd>" in html
    page = clients["admin"].get(f"/jobs/{job.pk}/")
    assert page.status_code == 200 and "<html" in text_of(page)


def test_failed_job_shows_its_error(
    project: Project, users: dict[str, Any], clients: dict[str, Client]
) -> None:
    job = JobFactory(
        project=project,
        created_by=users["admin"],
        status=JobStatus.FAILED,
        error="data.jsonl, record atp_0006, field 'gt': bad <tool> JSON",
    )
    html = text_of(clients["admin"].get(f"/jobs/{job.pk}/"))
    assert "record atp_0006" in html
    assert "bad &lt;tool&gt; JSON" in html


def test_project_kinds_render(clients: dict[str, Client], client_for: Any) -> None:
    from tests.factories import MembershipFactory, UserFactory

    user = UserFactory()
    for kind, fmt in [("plan", "mms"), ("trajectory", "agentic-mme"), ("interleaved", "llmi")]:
        p = ProjectFactory(kind=kind, data_format=fmt)
        MembershipFactory(project=p, user=user, role="admin")
        ItemFactory(project=p)
    client = client_for(user)
    html = text_of(client.get("/"))
    assert "Tool plans (m&amp;m&#x27;s)" in html
    assert "Agent trajectories (Agentic-MME)" in html


# --------------------------------------------------------------------------- admin


def test_admin_lists_and_forms_render(project: Project, client_for: Any) -> None:
    from django.contrib import admin
    from django.contrib.auth import get_user_model

    item = ItemFactory(project=project)
    ResponseFactory(item=item)
    PlanFactory(item=item)
    TrajectoryFactory(item=item)
    ImageFactory(projects=[project])
    JobFactory(project=project)
    superuser = get_user_model().objects.create_superuser("root", "root@example.org", "pw")
    client = client_for(superuser)
    models = [m for m in admin.site._registry if m._meta.app_label == "benchmark"]
    assert len(models) == 14  # API tokens (issue 22) joined the 13
    for model in models:
        opts = model._meta
        url = f"/admin/{opts.app_label}/{opts.model_name}/"
        assert client.get(url).status_code == 200, url
        assert client.get(url + "?q=a").status_code == 200, url
    assert client.get(f"/admin/benchmark/item/{item.pk}/change/").status_code == 200
