"""Model drafting pages: drafting queries from the project (form checks naming the field),
the draft page with its candidates (keep / edit / reject over htmx, 409 on a second
decision), drafting an item's answer / rubric / plan from the item page, the overview with the
figures, and query counts that do not grow with the drafts or candidates."""

from __future__ import annotations

import json
from typing import Any

import pytest

from annotation.model_drafts.models import DraftCandidate, ModelDraft
from benchmark.builtin import taxonomies_ensure
from benchmark.models import Item, Project, Response
from tests.factories import (
    DraftCandidateFactory,
    ItemFactory,
    ModelDraftFactory,
    ProjectFactory,
)
from tests.llm_server import MODEL, FakeModelServer

pytestmark = pytest.mark.django_db

QUERIES = ["Which apples keep longest?", "What does a ripe mango look like?"]
HX = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "main"}


@pytest.fixture
def atp(model_project: Project) -> Project:
    model_project.taxonomy = taxonomies_ensure()["atp"]
    model_project.save(update_fields=["taxonomy"])
    return model_project


def drafts_url(project: Project) -> str:
    return f"/projects/{project.pk}/model-drafts/"


def test_the_project_page_offers_drafting_queries_to_editors(
    atp: Project, client_for: Any, users: dict[str, Any]
) -> None:
    page = client_for(users["annotator"]).get(f"/projects/{atp.pk}/")
    assert b"Draft queries" in page.content and b"Model drafts" in page.content
    form = client_for(users["annotator"]).get(drafts_url(atp) + "queries/")
    assert form.status_code == 200
    assert b'<option value="Recipe">' in form.content and b"Ingredient" in form.content


def test_drafting_queries_from_the_form_shows_the_candidates(
    atp: Project,
    client_for: Any,
    users: dict[str, Any],
    model_server: FakeModelServer,
    django_capture_on_commit_callbacks: Any,
) -> None:
    model_server.answer = json.dumps(QUERIES)
    client = client_for(users["annotator"])
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            drafts_url(atp) + "queries/",
            {"category": "Recipe", "intent": "Ingredient", "n": "2"},
            HTTP_HX_REQUEST="true",
        )
    draft = ModelDraft.objects.get()
    assert response.status_code == 200
    assert response["HX-Redirect"] == f"{drafts_url(atp)}{draft.pk}/"
    page = client.get(f"{drafts_url(atp)}{draft.pk}/")
    body = page.content.decode()
    assert page.status_code == 200 and QUERIES[0] in body and QUERIES[1] in body
    assert 'data-action="keep"' in body and "model_drafts.js" in body
    assert "Model draft job" in body


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"category": "Recipe", "intent": "Ingredient", "n": "50"}, "n: ask for 1 to 20"),
        ({"category": "Recipe", "intent": "Hairstyle", "n": "2"}, "intent: &#x27;Hairstyle&#x27;"),
        ({"category": "", "intent": "Ingredient", "n": "2"}, "Category: This field is required"),
    ],
)
def test_a_bad_queries_form_comes_back_with_the_field_named(
    atp: Project, client_for: Any, users: dict[str, Any], data: dict[str, str], message: str
) -> None:
    response = client_for(users["annotator"]).post(
        drafts_url(atp) + "queries/",
        data,
        HTTP_HX_REQUEST="true",
        HTTP_HX_TARGET="draft-queries-form",
    )
    assert response.status_code == 200
    assert message in response.content.decode()
    assert not ModelDraft.objects.exists()


def test_queries_are_not_offered_outside_atp(client_for: Any, users: dict[str, Any]) -> None:
    project = ProjectFactory(data_format="llmi")
    from tests.factories import MembershipFactory

    MembershipFactory(project=project, user=users["annotator"], role="annotator")
    assert client_for(users["annotator"]).get(drafts_url(project) + "queries/").status_code == 404


def test_deciding_over_htmx_swaps_the_candidate_and_a_second_decision_is_409(
    atp: Project, client_for: Any, users: dict[str, Any]
) -> None:
    draft = ModelDraftFactory(project=atp)
    keep, edit, reject = (
        DraftCandidateFactory(draft=draft, position=n, content=q)
        for n, q in enumerate([*QUERIES, "Rejected?"])
    )
    client = client_for(users["annotator"])
    url = f"{drafts_url(atp)}{draft.pk}/candidates/"
    kept = client.post(f"{url}{keep.pk}/", {"action": "keep"}, HTTP_HX_REQUEST="true")
    assert kept.status_code == 200 and b'data-status="kept"' in kept.content
    assert b"data-new-item" in kept.content
    edited = client.post(
        f"{url}{edit.pk}/", {"action": "edit", "query": "Mango, ripe?"}, HTTP_HX_REQUEST="true"
    )
    assert b'data-status="edited"' in edited.content and b"Mango, ripe?" in edited.content
    client.post(f"{url}{reject.pk}/", {"action": "reject"}, HTTP_HX_REQUEST="true")
    assert sorted(Item.objects.values_list("query", flat=True)) == ["Mango, ripe?", QUERIES[0]]
    assert set(Item.objects.values_list("provenance", flat=True)) == {f"drafted by {MODEL}"}
    again = client.post(f"{url}{keep.pk}/", {"action": "reject"}, HTTP_HX_REQUEST="true")
    assert again.status_code == 409 and b"already kept by annotator-user" in again.content
    empty = DraftCandidateFactory(draft=draft, position=9)
    bad = client.post(f"{url}{empty.pk}/", {"action": "edit", "query": ""}, HTTP_HX_REQUEST="true")
    assert bad.status_code == 200 and b"query: write the query" in bad.content
    # Without JavaScript: back to the draft page.
    plain = client.post(f"{url}{empty.pk}/", {"action": "reject"})
    assert plain.status_code == 302 and plain["Location"] == f"{drafts_url(atp)}{draft.pk}/"


def test_another_projects_draft_is_404(
    atp: Project, client_for: Any, users: dict[str, Any]
) -> None:
    draft = ModelDraftFactory(project=atp)
    candidate = DraftCandidateFactory(draft=draft)
    outsider = client_for(users["outsider"])
    assert outsider.get(f"{drafts_url(atp)}{draft.pk}/").status_code == 404
    url = f"{drafts_url(atp)}{draft.pk}/candidates/{candidate.pk}/"
    assert outsider.post(url, {"action": "keep"}).status_code == 404
    other = ModelDraftFactory()
    member = client_for(users["admin"])
    assert member.get(f"{drafts_url(atp)}{other.pk}/").status_code == 404


def test_the_item_page_offers_drafting_and_the_answer_goes_to_the_tag_editor(
    atp: Project,
    client_for: Any,
    users: dict[str, Any],
    model_server: FakeModelServer,
    django_capture_on_commit_callbacks: Any,
) -> None:
    item = ItemFactory(project=atp, query="How do I keep basil fresh?")
    client = client_for(users["annotator"])
    page = client.get(f"/projects/{atp.pk}/items/{item.pk}/")
    assert b'data-draft-link="answer"' in page.content
    assert b'data-draft-link="rubric"' not in page.content
    url = f"/projects/{atp.pk}/model-drafts/items/{item.pk}/answer/"
    assert client.get(url).status_code == 200
    model_server.answer = 'Keep it in water. <tool>{"tool_name": "Search", "description": "basil", "params": {"query": "basil in water"}}</tool>'
    with django_capture_on_commit_callbacks(execute=True):
        started = client.post(url)
    draft = ModelDraft.objects.get()
    assert started.status_code == 302 and started["Location"] == f"{drafts_url(atp)}{draft.pk}/"
    response = Response.objects.get(item=item, key="gt")
    body = client.get(started["Location"]).content.decode()
    tag_editor = f"/projects/{atp.pk}/tag-review/items/{item.pk}/responses/{response.pk}/review/"
    assert tag_editor in body and "Saved as version 2" in body
    candidate = DraftCandidate.objects.get()
    edit = client.post(
        f"{drafts_url(atp)}{draft.pk}/candidates/{candidate.pk}/", {"action": "edit"}
    )
    assert edit.status_code == 302 and edit["Location"] == tag_editor
    assert client.get(f"/projects/{atp.pk}/model-drafts/items/{item.pk}/plan/").status_code == 404


def test_drafting_a_rubric_page_shows_ten_fields(
    client_for: Any, users: dict[str, Any], model_server: FakeModelServer
) -> None:
    from tests.llm_server import point_at

    project = point_at(ProjectFactory(data_format="llmi"), model_server)
    from tests.factories import MembershipFactory

    MembershipFactory(project=project, user=users["annotator"], role="annotator")
    item = ItemFactory(project=project, query="Fold a crane.")
    draft = ModelDraftFactory(item=item, kind="rubric")
    DraftCandidateFactory(draft=draft, content=[f"Criterion {n} is met." for n in range(1, 11)])
    body = client_for(users["annotator"]).get(f"{drafts_url(project)}{draft.pk}/").content.decode()
    assert body.count("data-edit-field") == 10 and 'value="Criterion 10 is met."' in body


def test_overview_lists_drafts_and_figures_in_bounded_queries(
    atp: Project,
    client_for: Any,
    users: dict[str, Any],
    django_assert_max_num_queries: Any,
) -> None:
    client = client_for(users["reviewer"])
    client.get(drafts_url(atp))  # warm up the session and the toolset caches

    def page() -> str:
        with django_assert_max_num_queries(12):
            response = client.get(drafts_url(atp))
        assert response.status_code == 200
        return response.content.decode()

    draft = ModelDraftFactory(project=atp, created_by=users["annotator"])
    DraftCandidateFactory(draft=draft, status="kept", decided_at="2026-01-01T00:00Z")
    page()
    for _ in range(5):
        other = ModelDraftFactory(project=atp, created_by=users["admin"])
        DraftCandidateFactory.create_batch(3, draft=other)
    body = page()
    assert "Model-in-the-loop" in body and body.count("data-draft=") == 6
    assert 'data-kind="queries"' in body


def test_draft_page_queries_do_not_grow_with_candidates(
    atp: Project, client_for: Any, users: dict[str, Any], django_assert_max_num_queries: Any
) -> None:
    draft = ModelDraftFactory(project=atp)
    DraftCandidateFactory(
        draft=draft, status="kept", decided_by=users["admin"], decided_at="2026-01-01T00:00Z"
    )
    client = client_for(users["annotator"])
    client.get(f"{drafts_url(atp)}{draft.pk}/")
    with django_assert_max_num_queries(10):
        client.get(f"{drafts_url(atp)}{draft.pk}/")
    for _ in range(10):
        DraftCandidateFactory(
            draft=draft, status="kept", decided_by=users["admin"], decided_at="2026-01-01T00:00Z"
        )
    with django_assert_max_num_queries(10):
        body = client.get(f"{drafts_url(atp)}{draft.pk}/").content.decode()
    assert body.count("data-candidate=") == 11


def test_a_failed_draft_shows_why_and_asks_again(
    atp: Project,
    client_for: Any,
    users: dict[str, Any],
    model_server: FakeModelServer,
    django_capture_on_commit_callbacks: Any,
) -> None:
    model_server.answer = "Happy to help! Here are some thoughts about fruit."
    client = client_for(users["annotator"])
    with django_capture_on_commit_callbacks(execute=True):
        client.post(
            drafts_url(atp) + "queries/", {"category": "Recipe", "intent": "Ingredient", "n": "2"}
        )
    draft = ModelDraft.objects.get()
    body = client.get(f"{drafts_url(atp)}{draft.pk}/").content.decode()
    assert "data-draft-failed" in body and "not a JSON list of queries" in body
    assert f"/llm/jobs/{draft.job_id}/retry/" in body and "Ask again" in body
    model_server.answer = json.dumps(QUERIES)
    with django_capture_on_commit_callbacks(execute=True):
        retried = client.post(f"/llm/jobs/{draft.job_id}/retry/", HTTP_HX_REQUEST="true")
    assert retried.status_code == 200
    draft.refresh_from_db()
    assert draft.status == "ready" and draft.candidates.count() == 2


def test_a_rubric_with_an_empty_criterion_comes_back_with_what_was_typed(
    client_for: Any, users: dict[str, Any], model_server: FakeModelServer
) -> None:
    from tests.factories import MembershipFactory
    from tests.llm_server import point_at

    project = point_at(ProjectFactory(data_format="llmi"), model_server)
    MembershipFactory(project=project, user=users["annotator"], role="annotator")
    item = ItemFactory(project=project, query="Fold a crane.")
    draft = ModelDraftFactory(item=item, kind="rubric")
    candidate = DraftCandidateFactory(
        draft=draft, content=[f"Criterion {n} is met." for n in range(1, 11)]
    )
    data = {"action": "edit", **{f"r{n}": f"Typed criterion {n}." for n in range(1, 11)}}
    data["r4"] = ""
    response = client_for(users["annotator"]).post(
        f"{drafts_url(project)}{draft.pk}/candidates/{candidate.pk}/", data, HTTP_HX_REQUEST="true"
    )
    body = response.content.decode()
    assert response.status_code == 200 and "r4: write the criterion" in body
    assert 'value="Typed criterion 10."' in body and 'data-status="pending"' in body
    item.refresh_from_db()
    assert item.rubric == []


def test_the_candidates_fragment_refreshes_alone(
    atp: Project, client_for: Any, users: dict[str, Any]
) -> None:
    draft = ModelDraftFactory(project=atp, status="pending")
    client = client_for(users["annotator"])
    url = f"{drafts_url(atp)}{draft.pk}/"
    waiting = client.get(url).content.decode()
    assert 'hx-trigger="model-draft-done from:body"' in waiting and "data-draft-pending" in waiting
    ModelDraft.objects.filter(pk=draft.pk).update(status="ready")
    DraftCandidateFactory.create_batch(2, draft=draft)
    fragment = client.get(url, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="draft-candidates")
    body = fragment.content.decode()
    assert body.lstrip().startswith('<section id="draft-candidates"')
    assert body.count("data-candidate=") == 2 and "model-draft-done" not in body


@pytest.mark.parametrize(
    ("fields", "offered", "not_offered"),
    [
        ({"data_format": "llmi"}, ["answer", "rubric"], ["plan"]),
        ({"kind": "plan", "data_format": "mms"}, ["plan"], ["answer", "rubric"]),
        ({"kind": "trajectory", "data_format": "agentic-mme"}, [], ["answer", "rubric", "plan"]),
    ],
)
def test_the_item_page_offers_the_drafts_of_its_benchmark(
    client_for: Any,
    users: dict[str, Any],
    fields: dict[str, str],
    offered: list[str],
    not_offered: list[str],
) -> None:
    from tests.factories import MembershipFactory

    project = ProjectFactory(**fields)
    MembershipFactory(project=project, user=users["annotator"], role="annotator")
    item = ItemFactory(project=project, query="Something to draft from.")
    client = client_for(users["annotator"])
    body = client.get(f"/projects/{project.pk}/items/{item.pk}/").content.decode()
    for kind in offered:
        assert f'data-draft-link="{kind}"' in body
        url = f"/projects/{project.pk}/model-drafts/items/{item.pk}/{kind}/"
        assert client.get(url).status_code == 200
    for kind in not_offered:
        assert f'data-draft-link="{kind}"' not in body
        url = f"/projects/{project.pk}/model-drafts/items/{item.pk}/{kind}/"
        assert client.get(url).status_code == 404
