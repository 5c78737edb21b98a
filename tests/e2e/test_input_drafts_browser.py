"""Never lose typed work (issue 25, finding 4): what is typed in the tag editor, the trajectory
editor, the plan editor, the item forms, adjudication and human-evaluation ratings is kept in
the browser and as a server-side draft; a reload offers it back ("You have unsaved input from …
— Restore / Discard"), another browser of the same user does too, and a save made after the
session expired keeps the input on screen and says so."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import Page, expect

from annotation.judgment_tasks.models import TaskUnit
from benchmark.builtin import taxonomies_ensure, toolsets_ensure
from benchmark.items.services import item_update
from benchmark.models import InputDraft, Item, Origin, Project, Role
from review.demo import demo_load
from review.human_eval.scales import ATP_SCALE
from tests.factories import (
    AssignmentFactory,
    ItemFactory,
    JudgmentTaskFactory,
    MembershipFactory,
    PlanFactory,
    ProjectFactory,
    ResponseFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db(transaction=True)

OFFER = "[data-draft-offer]"


def kept_on_server(page: Page, action) -> None:  # type: ignore[no-untyped-def]
    """Do ``action`` (typing) and wait until the draft it makes reaches the server."""
    with page.expect_response(
        lambda r: "/input-drafts/" in r.url and r.request.method == "POST", timeout=10_000
    ) as answer:
        action()
    assert answer.value.status == 200, answer.value.text()


def restore(page: Page) -> None:
    offer = page.locator(OFFER)
    expect(offer).to_be_visible()
    expect(offer).to_contain_text("You have unsaved input from")
    offer.get_by_role("button", name="Restore").click()
    expect(offer).to_be_hidden()


def user(name: str):  # type: ignore[no-untyped-def]
    return get_user_model().objects.get(username=name)


# --------------------------------------------------------------------------- item forms


def test_item_form_input_is_offered_back_after_a_reload_and_in_another_browser(
    login_page, ready
) -> None:  # type: ignore[no-untyped-def]
    project = ProjectFactory(name="Drafts ATP")
    writer = UserFactory(username="writer")
    MembershipFactory(project=project, user=writer, role=Role.ANNOTATOR)
    page = login_page(writer)
    page.goto(f"/projects/{project.pk}/items/new/")
    ready(page)
    expect(page.locator(OFFER)).to_be_hidden()
    page.get_by_label("Query", exact=True).fill("How do I descale the AquaPress 300?")
    documents = page.locator("[data-document]")
    documents.nth(0).locator("textarea").fill("Section 7: Descaling.")
    page.get_by_role("button", name="Add document").click()
    kept_on_server(
        page, lambda: documents.nth(1).locator("textarea").fill("Figure 3: the indicator lights.")
    )

    page.reload()
    ready(page)
    expect(page.get_by_label("Query", exact=True)).to_have_value("")
    restore(page)
    expect(page.get_by_label("Query", exact=True)).to_have_value(
        "How do I descale the AquaPress 300?"
    )
    expect(documents).to_have_count(2)
    expect(documents.nth(0).locator("textarea")).to_have_value("Section 7: Descaling.")
    expect(documents.nth(1).locator("textarea")).to_have_value("Figure 3: the indicator lights.")
    # This tab is done: closed, so its autosave cannot write the draft again after the item is
    # created in the other browser below.
    page.close()

    # Another browser (no local copy): the server's draft is offered.
    other = login_page(writer)
    other.goto(f"/projects/{project.pk}/items/new/")
    ready(other)
    restore(other)
    expect(other.get_by_label("Query", exact=True)).to_have_value(
        "How do I descale the AquaPress 300?"
    )
    expect(other.locator("[data-document]")).to_have_count(2)

    # Creating the item drops the server's draft.
    other.get_by_role("button", name="Create item").click()
    expect(other.locator("[data-created]")).to_be_visible()
    assert not InputDraft.objects.filter(user=writer).exists()


def test_a_save_after_the_session_expired_keeps_the_input_and_says_so(
    login_page, ready, client, live_server
) -> None:  # type: ignore[no-untyped-def]
    project = ProjectFactory(name="Drafts expiry")
    writer = UserFactory(username="writer")
    MembershipFactory(project=project, user=writer, role=Role.ANNOTATOR)
    item = ItemFactory(project=project, query="The query as saved.")
    page = login_page(writer)
    url = f"/projects/{project.pk}/items/{item.pk}/edit/"
    page.goto(url)
    ready(page)
    query = page.get_by_label(project.benchmark.query_label, exact=True)
    query.fill("The query as typed, not saved yet.")

    page.context.clear_cookies()  # the session expired
    page.get_by_role("button", name="Save a new version").click()
    failed = page.locator("[data-draft-failed]")
    expect(failed).to_be_visible()
    expect(failed).to_contain_text(
        "Not saved: you are logged out — log in in another tab, then save again; your input is kept."
    )
    expect(page).to_have_url(re.compile(rf"{url}$"))
    expect(query).to_have_value("The query as typed, not saved yet.")
    item.refresh_from_db()
    assert item.query == "The query as saved."

    # Logged in again (in another tab: a new session, a new CSRF token): save again works.
    client.force_login(writer)
    page.context.add_cookies(
        [{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url}]
    )
    page.get_by_role("button", name="Save a new version").click()
    expect(page.locator(".alert-success")).to_be_visible()
    item.refresh_from_db()
    assert item.query == "The query as typed, not saved yet."
    assert not InputDraft.objects.filter(user=writer).exists()


def test_a_draft_typed_on_an_older_version_says_so(login_page, ready) -> None:  # type: ignore[no-untyped-def]
    project = ProjectFactory(name="Drafts stale")
    writer, other = UserFactory(username="writer"), UserFactory(username="other")
    for person in (writer, other):
        MembershipFactory(project=project, user=person, role=Role.ANNOTATOR)
    item = ItemFactory(project=project, query="The query as saved.")
    page = login_page(writer)
    page.goto(f"/projects/{project.pk}/items/{item.pk}/edit/")
    ready(page)
    query = page.get_by_label(project.benchmark.query_label, exact=True)
    kept_on_server(page, lambda: query.fill("My version of the query."))
    item_update(item=item, user=other, changes={"query": "Their query."}, base_version=1)

    page.reload()
    ready(page)
    offer = page.locator(OFFER)
    expect(offer).to_contain_text("It was typed on version 1; version 2 has been saved since")
    offer.get_by_role("button", name="Restore").click()
    expect(query).to_have_value("My version of the query.")
    # Saved: the stale-edit rule answers as always (409, their change shown).
    page.get_by_role("button", name="Save a new version").click()
    expect(page.locator("#conflict")).to_contain_text("Not saved.")
    expect(query).to_have_value("My version of the query.")


# --------------------------------------------------------------------------- the editors


def _tag_review_url() -> str:
    item = Item.objects.get(external_id="atp_demo_02")
    response = item.responses.get(key="gt")
    return f"/projects/{item.project_id}/tag-review/items/{item.pk}/responses/{response.pk}/review/"


def test_tag_editor_decisions_and_note_are_offered_back(login_page, ready) -> None:  # type: ignore[no-untyped-def]
    demo_load()
    page = login_page(user("annotator1"))
    url = _tag_review_url()
    page.goto(url)
    ready(page)
    form = page.locator("form[data-tag-review]")
    expect(form.locator(".review-bar")).to_contain_text("on version 1")
    page.keyboard.press("a")  # keep call 1: a decision, not saved
    expect(form.locator(".review-bar .badge")).to_have_text("unsaved edits")
    kept_on_server(page, lambda: form.locator("input[name=note]").fill("Call 1 is right."))
    decisions = form.locator("input[name=decisions]").input_value()
    assert "kept" in decisions

    page.reload()
    ready(page)
    expect(form.locator(".review-bar .badge")).to_have_count(0)
    restore(page)
    expect(form.locator(".review-bar .badge")).to_have_text("unsaved edits")
    expect(form.locator("input[name=decisions]")).to_have_value(decisions)
    expect(form.locator("input[name=note]")).to_have_value("Call 1 is right.")

    # The restored work saves as usual, and the draft is gone.
    page.keyboard.press("Escape")
    page.keyboard.press("s")
    expect(page.locator(".alert-success")).to_have_text("Saved as version 2.")
    assert not InputDraft.objects.filter(user=user("annotator1")).exists()


def test_tag_editor_save_after_the_session_expired_keeps_the_work(login_page, ready) -> None:  # type: ignore[no-untyped-def]
    demo_load()
    page = login_page(user("annotator1"))
    page.goto(_tag_review_url())
    ready(page)
    form = page.locator("form[data-tag-review]")
    page.keyboard.press("a")
    expect(form.locator(".review-bar .badge")).to_have_text("unsaved edits")
    form.locator("input[name=note]").fill("Kept through a logout.")
    page.context.clear_cookies()
    form.get_by_role("button", name=re.compile("^Save as version 2")).click()
    expect(page.locator("[data-draft-failed]")).to_contain_text("Not saved: you are logged out")
    expect(form.locator(".review-bar .badge")).to_have_text("unsaved edits")
    expect(form.locator("input[name=note]")).to_have_value("Kept through a logout.")
    # An edit (not a save) sent while logged out does not swap the login page in either.
    page.keyboard.press("Escape")
    page.keyboard.press("j")
    page.keyboard.press("a")
    expect(page.locator("[data-draft-failed]")).to_contain_text("you are logged out")
    expect(form.locator("input[name=note]")).to_have_value("Kept through a logout.")
    expect(page.locator("form[data-tag-review]")).to_have_count(1)
    expect(page.locator("#id_username")).to_have_count(0)


def settle(page: Page) -> None:
    page.wait_for_function("() => !document.querySelector('.htmx-request')")


def test_trajectory_editor_steps_and_fields_are_offered_back(login_page, ready) -> None:  # type: ignore[no-untyped-def]
    project = Project.objects.create(
        name="Agentic-MME drafts",
        kind="trajectory",
        data_format="agentic-mme",
        toolset=toolsets_ensure()["agentic-mme"],
        taxonomy=taxonomies_ensure()["agentic-mme"],
    )
    item = ItemFactory(
        project=project,
        external_id="street-sign",
        query="What street name is on the blue sign? Answer with the name only.",
        expected_answer="Willow St",
        match_type="contains",
        level=2,
        domain="Life",
        raw="",
        documents=[],
        category="",
        intent="",
    )
    annotator = UserFactory(username="annotator-traj")
    MembershipFactory(project=project, user=annotator, role=Role.ANNOTATOR)
    page = login_page(annotator)
    url = f"/projects/{project.pk}/trajectories/items/{item.pk}/"
    page.goto(url)
    ready(page)
    question = page.locator("[name='task-question']")
    expect(question).to_have_value("What street name is on the blue sign?")
    question.fill("Which street is the blue sign for?")
    page.get_by_role("button", name="Add search step").click()  # a step the saved one lacks
    expect(page.locator("li.traj-step")).to_have_count(1)
    settle(page)
    page.locator("[name='steps-0-keywords']").fill("Willow Street sign")
    page.locator("[name='steps-0-search_expected']").fill("Willow St")
    kept_on_server(
        page, lambda: page.locator("[name='steps-0-intent']").fill("Search the street name.")
    )

    page.reload()
    ready(page)
    expect(page.locator("li.traj-step")).to_have_count(0)
    restore(page)
    expect(page.locator("li.traj-step")).to_have_count(1)
    expect(page.locator("[name='steps-0-intent']")).to_have_value("Search the street name.")
    expect(page.locator("[name='steps-0-keywords']")).to_have_value("Willow Street sign")
    expect(question).to_have_value("Which street is the blue sign for?")

    # Saved (in place, by htmx): the draft is gone and a reload offers nothing.
    settle(page)
    page.locator("[name='task-reference_tool_calls']").fill("1")
    page.get_by_role("button", name="Save trajectory").click()
    expect(page.locator("form[data-draft][data-draft-saved]")).to_have_count(1)
    assert not InputDraft.objects.filter(user=annotator).exists()
    page.reload()
    ready(page)
    page.wait_for_load_state("networkidle")
    expect(page.locator(OFFER)).to_be_hidden()
    expect(page.locator("[name='steps-0-intent']")).to_have_value("Search the street name.")


def test_plan_editor_steps_are_offered_back(login_page, ready) -> None:  # type: ignore[no-untyped-def]
    project = Project.objects.create(
        name="m&m's drafts", kind="plan", data_format="mms", toolset=toolsets_ensure()["mms"]
    )
    annotator = UserFactory(username="ines")
    MembershipFactory(project=project, user=annotator, role=Role.ANNOTATOR)
    item = ItemFactory(project=project, external_id="36", query="Write a story and illustrate it.")
    PlanFactory(
        item=item,
        key="gold",
        steps=[{"id": 0, "name": "text generation", "args": {"text": "a story"}}],
        code="",
    )
    page = login_page(annotator)
    page.goto(f"/projects/{project.pk}/plan-editor/items/{item.pk}/")
    ready(page)
    steps = page.locator("#plan-steps > li.plan-step")
    expect(steps).to_have_count(1)
    page.get_by_role("button", name="Add a step").click()
    expect(steps).to_have_count(2)
    kept_on_server(page, lambda: page.get_by_label("Step 2 tool").select_option("image generation"))
    typed = page.locator("#plan-json").input_value()

    page.reload()
    ready(page)
    expect(steps).to_have_count(1)
    restore(page)
    expect(steps).to_have_count(2)
    expect(page.get_by_label("Step 2 tool")).to_have_value("image generation")
    assert page.locator("#plan-json").input_value() == typed


def test_adjudication_reason_is_offered_back(login_page, ready) -> None:  # type: ignore[no-untyped-def]
    project = ProjectFactory(name="Drafts adjudication")
    reviewer = UserFactory(username="rev")
    MembershipFactory(project=project, user=reviewer, role=Role.REVIEWER)
    item = ItemFactory(project=project)
    task = JudgmentTaskFactory(project=project)
    page = login_page(reviewer)
    page.goto(f"/adjudication/{task.pk}/items/{item.pk}/")
    ready(page)
    decision = page.locator("form#decision")
    decision.locator("input[type=radio]").last.check()
    chosen = decision.locator("input[type=radio]").last.get_attribute("value")
    kept_on_server(
        page, lambda: decision.locator("textarea, input[type=text]").first.fill("Both are wrong.")
    )

    page.reload()
    ready(page)
    restore(page)
    expect(decision.locator(f"input[type=radio][value='{chosen}']")).to_be_checked()
    expect(decision.locator("textarea, input[type=text]").first).to_have_value("Both are wrong.")

    # Discard: gone here and on the server.
    page.reload()
    ready(page)
    page.locator(OFFER).get_by_role("button", name="Discard").click()
    expect(page.locator(OFFER)).to_be_hidden()
    page.wait_for_load_state("networkidle")
    assert not InputDraft.objects.filter(user=reviewer).exists()
    page.reload()
    ready(page)
    page.wait_for_load_state("networkidle")
    expect(page.locator(OFFER)).to_be_hidden()


def test_human_evaluation_comment_is_offered_back(login_page, ready) -> None:  # type: ignore[no-untyped-def]
    project = ProjectFactory(name="Drafts rating", data_format="atp")
    rater = UserFactory(username="rater")
    MembershipFactory(project=project, user=rater, role=Role.ANNOTATOR)
    item = ItemFactory(project=project)
    answer = ResponseFactory(item=item, origin=Origin.MODEL, model_name="m", key="model:m")
    task = JudgmentTaskFactory(
        project=project,
        name="Human evaluation",
        question="Rate the answer.",
        scheme="scores",
        labels=ATP_SCALE.labels,
        consensus="median",
        overlap=3,
        updates_item_status=False,
        unit_kind="answer-eval",
        unit_params={"scale": "atp", "models": ["m"], "seed": 0, "responses": [answer.pk]},
    )
    unit = f"response:{answer.pk}:atp"
    TaskUnit.objects.create(task=task, item=item, key=unit)
    AssignmentFactory(task=task, item=item, unit=unit, user=rater)
    page = login_page(rater)
    page.goto(f"/judgment-tasks/{task.pk}/units/{unit}/")
    ready(page)
    comment = page.locator("form#rating textarea[name=comment]")
    kept_on_server(page, lambda: comment.fill("The second image is off topic."))

    page.reload()
    ready(page)
    expect(comment).to_have_value("")
    restore(page)
    expect(comment).to_have_value("The second image is off topic.")
