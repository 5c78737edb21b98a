"""Issue 25, finding 12: every page usable from 390 px up (no page wider than the window, the
navigation and "Log out" on screen), a dark theme that follows the system setting, and no
serious or critical accessibility violation (axe) in either theme. The axe check itself runs on
every page the browser tests open (tests/e2e/axe.py, hooked into ``login_page``); the tests
here also show it can fail."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse
from playwright.sync_api import Page, expect

from annotation.judgment_tasks.models import JudgmentTask
from benchmark.models import Item, Project
from review.demo import demo_load
from tests.e2e.axe import violations, violations_in_both_themes

pytestmark = pytest.mark.django_db(transaction=True)

PHONE = {"width": 390, "height": 844}


def luminance(page: Page, selector: str, prop: str) -> float:
    """The relative luminance (0 black .. 1 white) of an element's computed colour."""
    return float(
        page.evaluate(
            """([selector, prop]) => {
              const value = getComputedStyle(document.querySelector(selector))[prop];
              const [r, g, b] = value.match(/[\\d.]+/g).slice(0, 3).map(Number).map(c => {
                c /= 255; return c <= 0.03928 ? c / 12.92 : Math.pow((c + 0.055) / 1.055, 2.4);
              });
              return 0.2126 * r + 0.7152 * g + 0.0722 * b;
            }""",
            [selector, prop],
        )
    )


def main_pages(username: str) -> list[str]:
    """The pages an annotator (or an admin) goes through in a day, in each demo project."""
    pages = ["/", reverse("benchmark:api_tokens")]
    for project in Project.objects.order_by("pk"):
        item = project.items.order_by("position").first()
        assert item is not None
        pages += [
            reverse("benchmark:project_detail", args=[project.pk]),
            reverse("benchmark:item_detail", args=[project.pk, item.pk]),
            reverse("annotation:task_list", args=[project.pk]),
            reverse("benchmark:images", args=[project.pk]),
        ]
    for task in JudgmentTask.objects.order_by("pk"):
        pages.append(reverse("annotation:task_next", args=[task.pk]))
    atp = Item.objects.get(external_id="atp_demo_02")
    pages.append(
        reverse(
            "annotation:tag_review",
            args=[atp.project_id, atp.pk, atp.responses.get(key="gt").pk],
        )
    )
    if username == "admin":
        pages.append(reverse("benchmark:people"))
    return pages


@pytest.mark.slow
@pytest.mark.parametrize("username", ["annotator1", "admin"])
def test_every_main_page_fits_a_390_px_window_with_log_out_on_screen(  # type: ignore[no-untyped-def]
    login_page, ready, username
) -> None:
    demo_load()
    page = login_page(get_user_model().objects.get(username=username))
    page.set_viewport_size(PHONE)
    for path in main_pages(username):
        response = page.goto(path)
        assert response is not None and response.ok, path
        ready(page)
        width = page.evaluate("document.scrollingElement.scrollWidth")
        assert width <= PHONE["width"], f"{page.url} is {width} px wide"
        # A page may scroll to its work (the judging form, the selected tag): the top bar,
        # which scrolls away on a small screen, is there again at the top of the page.
        page.evaluate("window.scrollTo(0, 0)")
        log_out = page.get_by_role("button", name="Log out")
        expect(log_out).to_be_in_viewport(ratio=1)
        nav = page.get_by_role("navigation", name="Main")
        expect(nav.get_by_role("link", name="Projects")).to_be_in_viewport(ratio=1)
    # "Log out" works from the small screen: the last page's button logs the person out.
    page.get_by_role("button", name="Log out").click()
    expect(page.get_by_role("button", name="Log out")).to_have_count(0)
    page.goto("/")
    expect(page).to_have_url(f"{page.url.split('/accounts')[0].rstrip('/')}/accounts/login/?next=/")


def test_the_dark_theme_follows_the_system_setting_and_leaves_images_alone(  # type: ignore[no-untyped-def]
    login_page, ready
) -> None:
    demo_load()
    page = login_page(get_user_model().objects.get(username="annotator1"))
    item = Item.objects.filter(project__data_format="atp").order_by("position").first()
    assert item is not None
    page.goto(reverse("benchmark:item_detail", args=[item.project_id, item.pk]))
    ready(page)
    expect(page.locator(".thumb img").first).to_be_visible()
    assert luminance(page, "body", "backgroundColor") > 0.8  # light unless the system says dark

    page.emulate_media(color_scheme="dark")
    assert luminance(page, "body", "backgroundColor") < 0.05
    assert luminance(page, "body", "color") > 0.6
    assert luminance(page, ".card", "backgroundColor") < 0.05
    # Images are shown as they are: no filter, no inverted colours.
    assert page.evaluate("getComputedStyle(document.querySelector('.thumb img')).filter") == "none"
    assert violations(page) == []

    # A judging screen, dark: no serious accessibility violation either.
    task = JudgmentTask.objects.get(project=item.project)
    page.goto(reverse("annotation:task_next", args=[task.pk]))
    ready(page)
    expect(page.get_by_role("button", name="Submit")).to_be_visible()
    assert luminance(page, "body", "backgroundColor") < 0.05
    assert violations(page) == []


def test_the_login_page_passes_axe_in_both_themes_at_390_px(browser, live_server) -> None:  # type: ignore[no-untyped-def]
    context = browser.new_context(base_url=live_server.url, viewport=PHONE)
    try:
        page = context.new_page()
        page.goto("/accounts/login/")
        assert page.evaluate("document.scrollingElement.scrollWidth") <= PHONE["width"]
        assert violations_in_both_themes(page) == []
    finally:
        context.close()


def test_the_axe_check_reports_a_violation(login_page, ready) -> None:  # type: ignore[no-untyped-def]
    """The check can fail: a button without a name is a critical violation."""
    demo_load()
    page = login_page(get_user_model().objects.get(username="annotator1"))
    page.goto("/")
    ready(page)
    assert violations(page) == []
    page.evaluate(
        "document.querySelector('main').insertAdjacentHTML('beforeend', '<button></button>')"
    )
    found = violations(page)
    assert any(line.startswith("button-name (critical)") for line in found), found
