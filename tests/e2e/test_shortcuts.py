"""The shared page behaviour of app.js: error answers a page opts in to (data-swap-errors) are
swapped in (a stale save's 409 on the tag review and the trajectory editor), others still only
raise the toast; keyboard shortcuts (Benchwright.shortcuts) do not fire while typing in a field
unless the page lets them (the trajectory editor's Ctrl+S and Alt+arrows), Escape leaves the
field, and a letter with Ctrl or Alt held is not its shortcut."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import Page, expect

from annotation.judgment_tasks.models import JudgmentTask
from annotation.tag_review.models import ResponseVersion
from benchmark.builtin import taxonomies_ensure, toolsets_ensure
from benchmark.models import Item, Project, Role
from review.demo import demo_load
from tests.factories import ItemFactory, MembershipFactory, UserFactory

pytestmark = pytest.mark.django_db(transaction=True)


def settle(page: Page) -> None:
    page.wait_for_function("() => !document.querySelector('.htmx-request')")


def review_url() -> str:
    item = Item.objects.get(external_id="atp_demo_02")
    response = item.responses.get(key="gt")
    return f"/projects/{item.project_id}/tag-review/items/{item.pk}/responses/{response.pk}/review/"


def selected(page: Page) -> str | None:
    return page.locator(".tag-card.selected").get_attribute("data-tag")


def test_stale_tag_review_save_swaps_the_409_conflict_in(login_page, ready) -> None:  # type: ignore[no-untyped-def]
    demo_load()
    url = review_url()
    annotator = get_user_model().objects.get(username="annotator1")
    first, second = login_page(annotator), login_page(annotator)
    for page in (first, second):
        page.goto(url)
        expect(page.locator(".review-bar")).to_contain_text("on version 1")
        ready(page)

    # The first tab keeps call 1 and saves: version 2.
    first.keyboard.press("a")
    settle(first)
    expect(first.locator(".review-bar .badge")).to_have_text("unsaved edits")
    first.keyboard.press("s")
    expect(first.locator(".alert-success")).to_have_text("Saved as version 2.")

    # The second tab, still on version 1, does the same: the server answers 409 with the
    # review form showing their version, and the page swaps it in (no toast).
    second.keyboard.press("a")
    settle(second)
    expect(second.locator(".review-bar .badge")).to_have_text("unsaved edits")
    with second.expect_response(
        lambda r: r.request.method == "POST" and "/input-drafts/" not in r.url
    ) as answer:
        second.keyboard.press("s")
    assert answer.value.status == 409
    conflict = second.locator("form[data-tag-review] #conflict")
    expect(conflict).to_contain_text("Someone else saved first")
    expect(conflict).to_contain_text("version 2 was saved by annotator1")
    expect(second.get_by_role("button", name="Save mine as version 3 anyway")).to_be_visible()
    expect(second.locator("#toast")).to_be_hidden()
    assert ResponseVersion.objects.filter(response__item__external_id="atp_demo_02").count() == 2


def test_an_error_the_page_does_not_opt_in_to_is_not_swapped(login_page, ready) -> None:  # type: ignore[no-untyped-def]
    """The tag review swaps 409 only: a 400 (a damaged working state) leaves the form as it is
    and says what went wrong."""
    demo_load()
    page = login_page(get_user_model().objects.get(username="annotator1"))
    page.goto(review_url())
    ready(page)
    page.locator("form[data-tag-review] input[name=decisions]").evaluate(
        "input => { input.value = 'not json'; }"
    )
    with page.expect_response(
        lambda r: r.request.method == "POST" and "/input-drafts/" not in r.url
    ) as answer:
        page.get_by_role("button", name="Re-check").click()
    assert answer.value.status == 400
    expect(page.locator("#toast")).to_contain_text("HTTP 400")
    expect(page.locator("form[data-tag-review] .review-bar")).to_contain_text("on version 1")
    expect(page.locator("body")).not_to_contain_text("working state is damaged")


def test_keys_typed_in_a_field_are_text_not_shortcuts(login_page, ready) -> None:  # type: ignore[no-untyped-def]
    demo_load()
    page = login_page(get_user_model().objects.get(username="annotator1"))
    page.goto(review_url())
    expect(page.locator(".tag-card.selected")).to_have_attribute("data-tag", "0")
    ready(page)

    note = page.locator("form[data-tag-review] input[name=note]")
    note.click()
    page.keyboard.type("jjs")  # next, next, save: all typed into the note
    expect(note).to_have_value("jjs")
    assert selected(page) == "0"
    expect(page.locator(".alert-success")).to_have_count(0)

    page.keyboard.press("Escape")  # leaves the field; the keys work again
    expect(note).not_to_be_focused()
    page.keyboard.press("j")
    expect(page.locator(".tag-card.selected")).to_have_attribute("data-tag", "1")

    # A letter with Alt or Ctrl held is not the letter's shortcut.
    page.keyboard.press("Alt+j")
    page.keyboard.press("Control+k")
    page.keyboard.press("k")
    expect(page.locator(".tag-card.selected")).to_have_attribute("data-tag", "0")
    expect(note).to_have_value("jjs")


def test_judge_keys_do_not_vote_from_the_comment(login_page, ready) -> None:  # type: ignore[no-untyped-def]
    demo_load()
    project = Project.objects.get(data_format="mms")
    task = JudgmentTask.objects.get(project=project)
    page = login_page(get_user_model().objects.get(username="annotator1"))
    page.goto(f"/projects/{project.pk}/judgment-tasks/")
    page.get_by_role("button", name="Judge next item").click()
    expect(page.locator("form#judgment")).to_be_visible()
    first = page.locator("h1").inner_text()
    ready(page)

    page.keyboard.press("c")  # into the comment: 1 and n are text there
    comment = page.locator("form#judgment textarea[name=comment]")
    expect(comment).to_be_focused()
    page.keyboard.type("1 n")
    expect(comment).to_have_value("1 n")
    expect(page.locator("h1")).to_have_text(first)
    assert not task.judgments.exists()

    page.keyboard.press("Escape")
    page.keyboard.press("1")  # outside the field: valid, submitted with the comment
    # The next item is shown at once and the judgment saved in the background: its answer
    # fills in the undo line.
    expect(page.locator("h1")).not_to_have_text(first)
    expect(page.locator("#undo")).to_contain_text(first)
    judgment = task.judgments.get()
    assert (judgment.value, judgment.comment) == (1, "1 n")


def trajectory_item():  # type: ignore[no-untyped-def]
    """An Agentic-MME item without a reference trajectory, an annotator, the editor's URL."""
    project = Project.objects.create(
        name="Shortcuts",
        kind="trajectory",
        data_format="agentic-mme",
        toolset=toolsets_ensure()["agentic-mme"],
        taxonomy=taxonomies_ensure()["agentic-mme"],
    )
    item = ItemFactory(
        project=project,
        external_id="sign",
        query="Which town has a Willow St?",
        expected_answer="Springfield",
        match_type="contains",
        level=1,
        domain="Life",
        raw="",
        documents=[],
        category="",
        intent="",
    )
    user = UserFactory(username="annotator-keys")
    MembershipFactory(project=project, user=user, role=Role.ANNOTATOR)
    return user, f"/projects/{project.pk}/trajectories/items/{item.pk}/"


def add_search_step(page: Page, intent: str) -> None:
    steps = page.locator("li.traj-step")
    count = steps.count()
    page.get_by_role("button", name="Add search step").click()
    expect(steps).to_have_count(count + 1)
    settle(page)
    page.locator(f"[name='steps-{count}-intent']").fill(intent)
    page.locator(f"[name='steps-{count}-keywords']").fill("Willow St")
    page.locator(f"[name='steps-{count}-search_expected']").fill("Springfield")


def test_trajectory_keys_work_in_fields_and_a_stale_save_swaps_409(login_page, ready) -> None:  # type: ignore[no-untyped-def]
    user, url = trajectory_item()
    first, second = login_page(user), login_page(user)
    for page in (first, second):
        page.goto(url)
        expect(page.locator("form[data-trajectory-editor]")).to_be_visible()
        ready(page)

    # Alt+Down in a step's field moves the step (the keys of this editor work while typing).
    add_search_step(first, "Search the street name.")
    add_search_step(first, "Read the town from the result.")
    first.locator("[name='steps-0-intent']").press("Alt+ArrowDown")
    settle(first)
    expect(first.locator("[name='steps-1-intent']")).to_have_value("Search the street name.")
    expect(first.locator("[name='steps-0-intent']")).to_have_value("Read the town from the result.")
    first.locator("[name='task-reference_tool_calls']").fill("2")
    first.locator("[name='steps-0-intent']").press("Control+s")
    expect(first.locator("#saved-message")).to_contain_text("Saved")

    # The second tab still edits the version it opened: its save answers 409 and the editor
    # swaps in with their version shown above the draft.
    add_search_step(second, "Something else.")
    with second.expect_response(
        lambda r: r.request.method == "POST" and "/input-drafts/" not in r.url
    ) as answer:
        second.locator("[name='steps-0-intent']").press("Control+s")
    assert answer.value.status == 409
    conflict = second.locator("form[data-trajectory-editor] #conflict")
    expect(conflict).to_contain_text("Someone saved this trajectory after you opened it")
    expect(conflict).to_contain_text("Read the town from the result.")
    expect(second.locator("[name='steps-0-intent']")).to_have_value("Something else.")
    expect(second.locator("#toast")).to_be_hidden()
