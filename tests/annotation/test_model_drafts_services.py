"""Model drafting for every kind, against the fake model server: the service starts a
model-call job, the task runs synchronously (on commit), the answer becomes candidates, and
people keep, edit or reject them; malformed replies fail the call clearly; figures count."""

from __future__ import annotations

import json
from typing import Any

import pytest

from annotation.model_drafts import selectors, services
from annotation.model_drafts.models import DraftCandidate, ModelDraft
from annotation.plan_editor.models import PlanVersion
from annotation.plan_editor.services import plan_save
from annotation.tag_review.models import ResponseVersion
from benchmark.builtin import taxonomies_ensure, toolsets_ensure
from benchmark.exceptions import Conflict, Forbidden, NotFound, ValidationFailed
from benchmark.llm import services as llm_services
from benchmark.models import Item, Job, ModelCall, Plan, Project, Response
from tests.factories import ItemFactory, MembershipFactory, ProjectFactory
from tests.llm_server import MODEL, FakeModelServer, point_at

pytestmark = pytest.mark.django_db

QUERIES = [
    "What should a ripe avocado look like inside?",
    "Which cheeses melt best on a homemade pizza?",
    "How can I tell fresh basil from wilted basil?",
]
RUBRIC = [f"The answer shows picture number {n} of the requested dish." for n in range(1, 11)]
ATP_ANSWER = (
    "Fresh basil has bright, flat leaves.\n\n"
    '<tool>{"tool_name": "Search", "description": "fresh basil", '
    '"params": {"query": "fresh basil leaves"}}</tool>\n\nStore it like flowers.'
)
PLAN = [
    {"id": 0, "name": "image captioning", "args": {"image": "2339720.jpg"}},
    {"id": 1, "name": "image generation", "args": {"text": "<node-0>.text"}},
]


@pytest.fixture
def atp(model_project: Project) -> Project:
    model_project.taxonomy = taxonomies_ensure()["atp"]
    model_project.toolset = toolsets_ensure()["atp"]
    model_project.save(update_fields=["taxonomy", "toolset"])
    return model_project


def _project(server: FakeModelServer, users: dict[str, Any], **fields: Any) -> Project:
    project = ProjectFactory(**fields)
    for role in ("admin", "reviewer", "annotator"):
        MembershipFactory(project=project, user=users[role], role=role)
    return point_at(project, server)


def run(capture: Any, start: Any) -> ModelDraft:
    with capture(execute=True):
        draft = start()
    draft.refresh_from_db()
    return draft


def draft_queries(atp: Project, user: Any, capture: Any, n: int = 3) -> ModelDraft:
    return run(
        capture,
        lambda: services.draft_queries_start(
            project=atp, user=user, category="Recipe", intent="Ingredient", n=n
        ),
    )


# --------------------------------------------------------------------------- queries


def test_drafting_queries_asks_the_model_and_keeps_the_call(
    atp: Project,
    users: dict[str, Any],
    model_server: FakeModelServer,
    django_capture_on_commit_callbacks: Any,
) -> None:
    model_server.answer = "Here you are:\n```json\n" + json.dumps(QUERIES) + "\n```"
    draft = draft_queries(atp, users["annotator"], django_capture_on_commit_callbacks)
    assert draft.status == "ready" and draft.model == MODEL and draft.error == ""
    assert [c.content for c in draft.candidates.order_by("position")] == QUERIES
    assert {c.status for c in draft.candidates.all()} == {"pending"}
    call = ModelCall.objects.get()
    assert draft.call == call and call.purpose == f"model-draft:queries:{draft.pk}"
    assert "Category: Recipe" in call.prompt and "Intent: Ingredient" in call.prompt
    assert "JSON list of 3 strings" in call.prompt
    assert call.prompt_tokens == 17 and call.completion_tokens == 7
    job = Job.objects.get()
    assert job.kind == "model_draft" and job.status == "succeeded" and draft.job == job
    assert job.result["candidates"] == 3 and job.result["draft_id"] == draft.pk
    # Drafting asks afresh: the recorded answer is not given again.
    assert job.params["mode"] == "off"


def test_more_queries_than_asked_are_cut_and_repeats_dropped(
    atp: Project,
    users: dict[str, Any],
    model_server: FakeModelServer,
    django_capture_on_commit_callbacks: Any,
) -> None:
    model_server.answer = json.dumps([{"query": q} for q in [*QUERIES, QUERIES[0], "Extra?"]])
    draft = draft_queries(atp, users["annotator"], django_capture_on_commit_callbacks, n=3)
    assert [c.content for c in draft.candidates.order_by("position")] == QUERIES


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        ("Sure! Avocados, cheese and basil are great topics.", "not a JSON list of queries"),
        ('["fine", 42]', "entry 2 of the list is not a query"),
        ("[]", "holds no query"),
    ],
)
def test_a_malformed_reply_fails_the_call_clearly(
    atp: Project,
    users: dict[str, Any],
    model_server: FakeModelServer,
    django_capture_on_commit_callbacks: Any,
    answer: str,
    message: str,
) -> None:
    model_server.answer = answer
    draft = draft_queries(atp, users["annotator"], django_capture_on_commit_callbacks)
    assert draft.status == "failed" and message in draft.error
    assert not DraftCandidate.objects.exists()
    job = Job.objects.get()
    assert job.status == "failed" and "could not be read" in job.error and message in job.error
    # The call is kept with the model's answer and its tokens.
    call = ModelCall.objects.get()
    assert call.answer == answer and draft.call == call and call.prompt_tokens == 17


def test_a_failed_draft_is_asked_again_as_a_retry(
    atp: Project,
    users: dict[str, Any],
    model_server: FakeModelServer,
    django_capture_on_commit_callbacks: Any,
) -> None:
    model_server.answer = "no list here"
    draft = draft_queries(atp, users["annotator"], django_capture_on_commit_callbacks)
    model_server.answer = json.dumps(QUERIES)
    with django_capture_on_commit_callbacks(execute=True):
        retry = llm_services.job_retry(job=Job.objects.get(), user=users["annotator"])
    draft.refresh_from_db()
    assert draft.status == "ready" and draft.job == retry and draft.candidates.count() == 3
    assert ModelCall.objects.count() == 2


def test_a_model_that_fails_fails_the_draft(
    atp: Project,
    users: dict[str, Any],
    model_server: FakeModelServer,
    django_capture_on_commit_callbacks: Any,
) -> None:
    point_at(atp, model_server, max_retries=0)
    model_server.fail_next(500, times=3)
    draft = draft_queries(atp, users["annotator"], django_capture_on_commit_callbacks)
    assert draft.status == "failed" and "the model call failed" in draft.error
    assert not DraftCandidate.objects.exists()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n": 0}, "n: ask for 1 to 20"),
        ({"n": 21}, "n: ask for 1 to 20"),
        ({"category": "Gardening"}, "category: 'Gardening' is not a category"),
        ({"intent": "Hairstyle"}, "intent: 'Hairstyle' is not an intent of category 'Recipe'"),
        ({"intent": ""}, "intent: choose an intent"),
    ],
)
def test_drafting_queries_checks_what_it_is_asked(
    atp: Project, users: dict[str, Any], kwargs: dict[str, Any], message: str
) -> None:
    args = {"category": "Recipe", "intent": "Ingredient", "n": 3, **kwargs}
    with pytest.raises(ValidationFailed, match=message):
        services.draft_queries_start(project=atp, user=users["annotator"], **args)
    assert not ModelDraft.objects.exists() and not Job.objects.exists()


def test_queries_are_for_atp_projects_and_members_who_may_edit(
    atp: Project, users: dict[str, Any], model_server: FakeModelServer
) -> None:
    llmi = _project(model_server, users, data_format="llmi")
    with pytest.raises(ValidationFailed, match="drafting queries is for ATP-Bench projects"):
        services.draft_queries_start(
            project=llmi, user=users["annotator"], category="Recipe", intent="Ingredient", n=3
        )
    with pytest.raises(Forbidden):
        services.draft_queries_start(
            project=atp, user=users["outsider"], category="Recipe", intent="Ingredient", n=3
        )
    assert not ModelDraft.objects.exists()


def test_without_a_model_nothing_is_drafted(atp: Project, users: dict[str, Any]) -> None:
    atp.settings = {}
    atp.save(update_fields=["settings"])
    with pytest.raises(ValidationFailed, match="No model is configured"):
        services.draft_queries_start(
            project=atp, user=users["annotator"], category="Recipe", intent="Ingredient", n=3
        )
    assert not ModelDraft.objects.exists()


def test_keep_edit_reject_make_draft_items_with_provenance(
    atp: Project,
    users: dict[str, Any],
    model_server: FakeModelServer,
    django_capture_on_commit_callbacks: Any,
) -> None:
    model_server.answer = json.dumps(QUERIES)
    draft = draft_queries(atp, users["annotator"], django_capture_on_commit_callbacks)
    kept, edited, rejected = draft.candidates.order_by("position")
    who = users["annotator"]
    kept = services.candidate_decide(candidate=kept, user=who, action="keep")
    edited = services.candidate_decide(
        candidate=edited, user=who, action="edit", content="Which cheeses melt best on pizza?"
    )
    rejected = services.candidate_decide(candidate=rejected, user=who, action="reject")
    assert (kept.status, edited.status, rejected.status) == ("kept", "edited", "rejected")
    assert kept.decided_by == who and kept.decided_at is not None
    items = Item.objects.filter(project=atp).order_by("id")
    assert [i.query for i in items] == [QUERIES[0], "Which cheeses melt best on pizza?"]
    for item in items:
        assert item.provenance == f"drafted by {MODEL}" and item.status == "draft"
        assert (item.category, item.intent) == ("Recipe", "Ingredient")
    assert kept.item == items[0] and edited.item == items[1] and rejected.item is None
    assert edited.final == "Which cheeses melt best on pizza?" and edited.content == QUERIES[1]
    # Decided once: a second decision says who decided first.
    with pytest.raises(Conflict, match="already kept by annotator-user"):
        services.candidate_decide(candidate=kept, user=users["admin"], action="reject")


def test_an_edit_that_changes_nothing_counts_as_kept_and_an_empty_one_is_refused(
    atp: Project,
    users: dict[str, Any],
    model_server: FakeModelServer,
    django_capture_on_commit_callbacks: Any,
) -> None:
    model_server.answer = json.dumps(QUERIES)
    draft = draft_queries(atp, users["annotator"], django_capture_on_commit_callbacks)
    first, second, _ = draft.candidates.order_by("position")
    with pytest.raises(ValidationFailed, match="query: write the query"):
        services.candidate_decide(
            candidate=first, user=users["annotator"], action="edit", content=" "
        )
    same = services.candidate_decide(
        candidate=second, user=users["annotator"], action="edit", content=f"  {QUERIES[1]} "
    )
    assert same.status == "kept"
    first.refresh_from_db()
    assert first.status == "pending" and Item.objects.count() == 1


def test_reviewers_and_outsiders_by_role(
    atp: Project,
    users: dict[str, Any],
    model_server: FakeModelServer,
    django_capture_on_commit_callbacks: Any,
) -> None:
    model_server.answer = json.dumps(QUERIES)
    draft = draft_queries(atp, users["reviewer"], django_capture_on_commit_callbacks)
    candidate = draft.candidates.first()
    with pytest.raises(Forbidden):
        services.candidate_decide(candidate=candidate, user=users["outsider"], action="keep")
    with pytest.raises(ValidationFailed, match="action: keep, edit or reject"):
        services.candidate_decide(candidate=candidate, user=users["admin"], action="maybe")


# --------------------------------------------------------------------------- answers


def test_drafting_an_atp_answer_saves_a_version_of_the_gt_response(
    atp: Project,
    users: dict[str, Any],
    model_server: FakeModelServer,
    django_capture_on_commit_callbacks: Any,
) -> None:
    item = ItemFactory(
        project=atp,
        query="How do I keep basil fresh?",
        documents=[
            {"text": "Basil keeps best in water, like cut flowers.", "images": ["a.jpg", "b.jpg"]}
        ],
    )
    model_server.answer = ATP_ANSWER
    draft = run(
        django_capture_on_commit_callbacks,
        lambda: services.draft_item_start(item=item, user=users["annotator"], kind="answer"),
    )
    assert draft.status == "ready"
    call = ModelCall.objects.get()
    assert "How do I keep basil fresh?" in call.prompt and "like cut flowers" in call.prompt
    assert '<tool>{"tool_name"' in call.prompt and "Search(" in call.prompt
    assert "Document 1 (its images are img_index 0 to 1):" in call.prompt
    response = Response.objects.get(item=item, key="gt")
    assert response.text == ATP_ANSWER and response.origin == "ground_truth"
    versions = list(ResponseVersion.objects.filter(response=response).order_by("number"))
    assert [(v.number, v.note) for v in versions] == [(1, "imported"), (2, f"drafted by {MODEL}")]
    assert versions[1].author == users["annotator"]
    (candidate,) = draft.candidates.all()
    assert candidate.saved_as == {"response": response.pk, "number": 2, "base": 1}
    # Rejecting puts back the answer before the draft, as a new version.
    candidate = services.candidate_decide(
        candidate=candidate, user=users["annotator"], action="reject"
    )
    response.refresh_from_db()
    assert candidate.status == "rejected" and response.text == ""
    assert candidate.saved_as["reverted_as"] == 3


def test_a_drafted_answer_edited_since_is_not_rejected(
    atp: Project,
    users: dict[str, Any],
    model_server: FakeModelServer,
    django_capture_on_commit_callbacks: Any,
) -> None:
    item = ItemFactory(project=atp, query="How do I keep basil fresh?")
    model_server.answer = ATP_ANSWER
    draft = run(
        django_capture_on_commit_callbacks,
        lambda: services.draft_item_start(item=item, user=users["annotator"], kind="answer"),
    )
    response = Response.objects.get(item=item, key="gt")
    response.item = item
    from annotation.tag_review.services import response_save_version

    response_save_version(
        response=response, user=users["admin"], text="Fixed.", base_number=2, decisions=[]
    )
    candidate = draft.candidates.get()
    with pytest.raises(Conflict, match="version 3 of the answer was saved after the draft"):
        services.candidate_decide(candidate=candidate, user=users["annotator"], action="reject")
    edited = services.candidate_decide(candidate=candidate, user=users["annotator"], action="edit")
    assert edited.status == "edited"


def test_drafting_an_llmi_answer_with_imgen_tags(
    users: dict[str, Any],
    model_server: FakeModelServer,
    django_capture_on_commit_callbacks: Any,
) -> None:
    project = _project(model_server, users, data_format="llmi", toolset=toolsets_ensure()["llmi"])
    item = ItemFactory(
        project=project, query="Explain the phases of the moon.", constraints={"image_num": 2}
    )
    answer = "The moon waxes. <imgen>{'source': 'diffusion', 'description': 'moon', 'params': {'prompt': 'moon phases'}}</imgen>"
    model_server.answer = answer
    draft = run(
        django_capture_on_commit_callbacks,
        lambda: services.draft_item_start(item=item, user=users["annotator"], kind="answer"),
    )
    assert draft.status == "ready"
    assert Response.objects.get(item=item, key="gt").text == answer
    prompt = ModelCall.objects.get().prompt
    assert "<imgen>{'source'" in prompt and "image_num = 2" in prompt


def test_an_item_without_a_query_is_not_drafted(atp: Project, users: dict[str, Any]) -> None:
    item = ItemFactory(project=atp, query="")
    with pytest.raises(ValidationFailed, match="query: the item has no query"):
        services.draft_item_start(item=item, user=users["annotator"], kind="answer")
    with pytest.raises(ValidationFailed, match="drafting a rubric is for LLM-I projects"):
        services.draft_item_start(item=item, user=users["annotator"], kind="rubric")
    with pytest.raises(ValidationFailed, match="drafting a plan is for m&m's projects"):
        services.draft_item_start(item=item, user=users["annotator"], kind="plan")


# --------------------------------------------------------------------------- rubric


@pytest.fixture
def llmi(model_server: FakeModelServer, users: dict[str, Any]) -> Project:
    return _project(model_server, users, data_format="llmi")


def test_drafting_a_rubric_gives_ten_criteria_to_edit_and_save(
    llmi: Project,
    users: dict[str, Any],
    model_server: FakeModelServer,
    django_capture_on_commit_callbacks: Any,
) -> None:
    item = ItemFactory(project=llmi, query="Show me how to fold a paper crane.")
    model_server.answer = json.dumps(RUBRIC)
    draft = run(
        django_capture_on_commit_callbacks,
        lambda: services.draft_item_start(item=item, user=users["annotator"], kind="rubric"),
    )
    (candidate,) = draft.candidates.all()
    assert candidate.content == RUBRIC
    assert "fold a paper crane" in ModelCall.objects.get().prompt
    changed = [*RUBRIC[:9], "The answer ends with a photo of the finished crane."]
    candidate = services.candidate_decide(
        candidate=candidate, user=users["annotator"], action="edit", content=changed
    )
    item.refresh_from_db()
    assert candidate.status == "edited" and candidate.final == changed
    assert item.rubric == [{"key": f"r{n}", "text": t} for n, t in enumerate(changed, 1)]


def test_a_rubric_needs_all_ten_criteria(
    llmi: Project,
    users: dict[str, Any],
    model_server: FakeModelServer,
    django_capture_on_commit_callbacks: Any,
) -> None:
    item = ItemFactory(project=llmi, query="Show me how to fold a paper crane.")
    model_server.answer = json.dumps(RUBRIC[:9])
    draft = run(
        django_capture_on_commit_callbacks,
        lambda: services.draft_item_start(item=item, user=users["annotator"], kind="rubric"),
    )
    assert draft.status == "failed" and "holds 9 criteria" in draft.error
    model_server.answer = "\n".join(f"r{n}: {t}" for n, t in enumerate(RUBRIC, 1))
    draft = run(
        django_capture_on_commit_callbacks,
        lambda: services.draft_item_start(item=item, user=users["annotator"], kind="rubric"),
    )
    candidate = draft.candidates.get()
    assert candidate.content == RUBRIC
    with pytest.raises(ValidationFailed, match="r3: write the criterion"):
        services.candidate_decide(
            candidate=candidate,
            user=users["annotator"],
            action="edit",
            content=[*RUBRIC[:2], "", *RUBRIC[3:]],
        )
    kept = services.candidate_decide(candidate=candidate, user=users["annotator"], action="keep")
    item.refresh_from_db()
    assert kept.status == "kept" and [c["text"] for c in item.rubric] == RUBRIC


# --------------------------------------------------------------------------- plans


@pytest.fixture
def mms(model_server: FakeModelServer, users: dict[str, Any]) -> Project:
    return _project(
        model_server, users, kind="plan", data_format="mms", toolset=toolsets_ensure()["mms"]
    )


def test_drafting_a_plan_saves_it_for_the_plan_editor(
    mms: Project,
    users: dict[str, Any],
    model_server: FakeModelServer,
    django_capture_on_commit_callbacks: Any,
) -> None:
    item = ItemFactory(project=mms, query="Describe 2339720.jpg, then paint it as a watercolor.")
    model_server.answer = "```json\n" + json.dumps(PLAN) + "\n```"
    draft = run(
        django_capture_on_commit_callbacks,
        lambda: services.draft_item_start(item=item, user=users["annotator"], kind="plan"),
    )
    assert draft.status == "ready", draft.error
    # plan_save keeps the ground truth under m&m's own key.
    plan = Plan.objects.get(item=item, key="gold")
    assert plan.steps == PLAN
    candidate = draft.candidates.get()
    assert candidate.content == PLAN
    assert candidate.saved_as == {"plan": plan.pk, "key": "gold", "number": 1, "base": None}
    prompt = ModelCall.objects.get().prompt
    assert "- image captioning(" in prompt and "[outputs: text]" in prompt
    # No earlier plan to put back: the rejection is recorded and the plan stays.
    candidate = services.candidate_decide(
        candidate=candidate, user=users["annotator"], action="reject"
    )
    assert candidate.status == "rejected" and candidate.saved_as["reverted_as"] is None
    assert Plan.objects.get(item=item, key="gold").steps == PLAN


EARLIER_PLAN = [{"id": 0, "name": "image captioning", "args": {"image": "1.jpg"}}]


def _drafted_over_a_plan(
    mms: Project, users: dict[str, Any], model_server: FakeModelServer, capture: Any
) -> tuple[Item, DraftCandidate]:
    item = ItemFactory(project=mms, query="Describe 2339720.jpg, then paint it as a watercolor.")
    plan_save(item=item, user=users["admin"], steps=EARLIER_PLAN, note="written by hand")
    model_server.answer = json.dumps(PLAN)
    draft = run(
        capture,
        lambda: services.draft_item_start(item=item, user=users["annotator"], kind="plan"),
    )
    assert draft.status == "ready", draft.error
    return item, draft.candidates.get()


def test_rejecting_a_drafted_plan_puts_back_the_earlier_version(
    mms: Project,
    users: dict[str, Any],
    model_server: FakeModelServer,
    django_capture_on_commit_callbacks: Any,
) -> None:
    item, candidate = _drafted_over_a_plan(
        mms, users, model_server, django_capture_on_commit_callbacks
    )
    assert Plan.objects.get(item=item, key="gold").steps == PLAN
    assert candidate.saved_as["number"] == 2 and candidate.saved_as["base"] == 1
    candidate = services.candidate_decide(
        candidate=candidate, user=users["annotator"], action="reject"
    )
    assert candidate.status == "rejected" and candidate.saved_as["reverted_as"] == 3
    assert Plan.objects.get(item=item, key="gold").steps == EARLIER_PLAN
    versions = list(PlanVersion.objects.filter(item=item).order_by("number"))
    assert [(v.number, v.author) for v in versions] == [
        (1, users["admin"]),
        (2, users["annotator"]),
        (3, users["annotator"]),
    ]
    assert versions[2].note == "drafted plan (version 2) rejected"
    assert versions[2].step_list == EARLIER_PLAN


def test_a_drafted_plan_edited_since_is_not_rejected(
    mms: Project,
    users: dict[str, Any],
    model_server: FakeModelServer,
    django_capture_on_commit_callbacks: Any,
) -> None:
    item, candidate = _drafted_over_a_plan(
        mms, users, model_server, django_capture_on_commit_callbacks
    )
    fixed = [{**PLAN[0], "args": {"image": "fixed.jpg"}}]
    plan_save(item=item, user=users["admin"], steps=fixed, base_number=2)
    with pytest.raises(Conflict, match="version 3 of the plan was saved after the draft"):
        services.candidate_decide(candidate=candidate, user=users["annotator"], action="reject")
    assert Plan.objects.get(item=item, key="gold").steps == fixed
    assert DraftCandidate.objects.get(pk=candidate.pk).status == "pending"


def test_a_reply_that_is_no_plan_fails_the_draft(
    mms: Project,
    users: dict[str, Any],
    model_server: FakeModelServer,
    django_capture_on_commit_callbacks: Any,
) -> None:
    item = ItemFactory(project=mms, query="Describe 2339720.jpg.")
    model_server.answer = "I would first caption the image and then paint it."
    draft = run(
        django_capture_on_commit_callbacks,
        lambda: services.draft_item_start(item=item, user=users["annotator"], kind="plan"),
    )
    assert draft.status == "failed" and "not a plan in JSON form" in draft.error
    assert not Plan.objects.exists()


# --------------------------------------------------------------------------- figures


def test_figures_count_decisions_per_kind_and_tokens(
    atp: Project,
    users: dict[str, Any],
    model_server: FakeModelServer,
    django_capture_on_commit_callbacks: Any,
    django_assert_max_num_queries: Any,
) -> None:
    model_server.answer = json.dumps(QUERIES)
    draft = draft_queries(atp, users["annotator"], django_capture_on_commit_callbacks)
    a, b, c = draft.candidates.order_by("position")
    who = users["annotator"]
    services.candidate_decide(candidate=a, user=who, action="keep")
    services.candidate_decide(candidate=b, user=who, action="edit", content="Edited?")
    services.candidate_decide(candidate=c, user=who, action="reject")
    model_server.answer = "not json"
    draft_queries(atp, who, django_capture_on_commit_callbacks)
    item = ItemFactory(project=atp, query="How do I keep basil fresh?")
    model_server.answer = ATP_ANSWER
    run(
        django_capture_on_commit_callbacks,
        lambda: services.draft_item_start(item=item, user=who, kind="answer"),
    )
    with django_assert_max_num_queries(4):
        figures = selectors.drafting_figures(user=users["reviewer"], project=atp)
    queries = figures.by_kind["queries"]
    assert (queries.drafts, queries.failed) == (2, 1)
    assert (queries.kept, queries.edited, queries.rejected, queries.pending) == (1, 1, 1, 0)
    assert queries.kept_rate == pytest.approx(1 / 3) and queries.acceptance == pytest.approx(2 / 3)
    assert queries.tokens == 2 * (17 + 7) and queries.cost is None
    answer = figures.by_kind["answer"]
    assert (answer.drafts, answer.pending, answer.tokens) == (1, 1, 24)
    assert answer.acceptance is None
    assert figures.total.tokens == 72 and figures.total.kept == 1
    assert figures.by_kind["plan"].drafts == 0


def test_figures_price_tokens_and_are_scoped(
    atp: Project,
    users: dict[str, Any],
    model_server: FakeModelServer,
    django_capture_on_commit_callbacks: Any,
) -> None:
    point_at(atp, model_server, price_per_1k_tokens=0.5)
    model_server.answer = json.dumps(QUERIES)
    draft_queries(atp, users["annotator"], django_capture_on_commit_callbacks)
    figures = selectors.drafting_figures(user=users["annotator"], project=atp)
    assert figures.price_per_1k_tokens == 0.5
    assert figures.by_kind["queries"].cost == pytest.approx(24 / 1000 * 0.5)
    with pytest.raises(NotFound):
        selectors.drafting_figures(user=users["outsider"], project=atp)


def test_running_the_task_again_changes_nothing(
    atp: Project,
    users: dict[str, Any],
    model_server: FakeModelServer,
    django_capture_on_commit_callbacks: Any,
) -> None:
    from benchmark.jobs.services import JobProgress

    model_server.answer = json.dumps(QUERIES)
    draft = draft_queries(atp, users["annotator"], django_capture_on_commit_callbacks)
    job = Job.objects.get()
    result = services.model_draft_job(job=job, progress=JobProgress(job.pk))
    assert result == {"draft_id": draft.pk, "candidates": 3, "kind": "queries"}
    assert DraftCandidate.objects.count() == 3 and model_server.count == 1
