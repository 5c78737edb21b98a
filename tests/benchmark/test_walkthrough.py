"""Regressions found by walking the demo as its users would: links that lead to a refusal,
refusals that do not say why, and the judging page's labels."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from benchmark.models import Item, Project
from review.demo import demo_load

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo() -> dict[str, Any]:
    demo_load()
    users = {u.username: u for u in get_user_model().objects.all()}
    mme = Project.objects.get(name="Agentic-MME demo")
    return {"users": users, "mme": mme, "item": Item.objects.get(project=mme, external_id="demo01")}


def _client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_a_blind_verifier_gets_no_links_to_pages_that_show_the_reference(
    demo: dict[str, Any],
) -> None:
    mme, item = demo["mme"], demo["item"]
    drafting = f"/projects/{mme.pk}/backward-drafting/items/{item.pk}/"
    trajectory = f"/projects/{mme.pk}/trajectories/items/{item.pk}/"

    page = _client(demo["users"]["annotator1"]).get(f"/projects/{mme.pk}/items/{item.pk}/")
    html = page.content.decode()
    assert page.status_code == 200
    assert 'id="answer-hidden"' in html
    assert drafting not in html and trajectory not in html

    html = _client(demo["users"]["reviewer"]).get(f"/projects/{mme.pk}/items/{item.pk}/")
    assert drafting in html.content.decode() and trajectory in html.content.decode()


def test_a_refusal_is_a_styled_page_that_says_why(demo: dict[str, Any]) -> None:
    mme, item = demo["mme"], demo["item"]
    page = _client(demo["users"]["annotator1"]).get(
        f"/projects/{mme.pk}/backward-drafting/items/{item.pk}/"
    )
    html = page.content.decode()
    assert page.status_code == 403
    assert "css/app.css" in html  # the site's layout, not the bare default page
    assert "you are one of its blind verifiers" in html
    assert 'id="error-reason"' in html


def test_the_judging_page_names_the_blind_tasks_queue_joint_review(
    demo: dict[str, Any],
) -> None:
    mme = demo["mme"]
    html = (
        _client(demo["users"]["admin"]).get(f"/projects/{mme.pk}/judgment-tasks/").content.decode()
    )
    assert "Joint review (0)" in html
    assert "Disagreements (" not in html
    assert "New judgment task" in html
    atp = Project.objects.get(name="ATP-Bench demo")
    html = (
        _client(demo["users"]["admin"]).get(f"/projects/{atp.pk}/judgment-tasks/").content.decode()
    )
    assert "Disagreements (0)" in html


def test_each_projects_page_links_its_scoring_page(demo: dict[str, Any]) -> None:
    reviewer = _client(demo["users"]["reviewer"])
    annotator = _client(demo["users"]["annotator1"])
    for name, path in [
        ("ATP-Bench demo", "answers"),
        ("LLM-I demo", "answers"),
        ("Agentic-MME demo", "runs"),
        ("m&m's demo", "plan-scoring"),
    ]:
        project = Project.objects.get(name=name)
        url = f"/projects/{project.pk}/{path}/"
        assert url in reviewer.get(f"/projects/{project.pk}/").content.decode(), name
        assert url not in annotator.get(f"/projects/{project.pk}/").content.decode(), name


def test_scoring_plans_with_no_verified_items_says_how_to_score_anyway(
    demo: dict[str, Any],
) -> None:
    from review.demo import DEMO_ROOT

    mms = Project.objects.get(name="m&m's demo")
    reviewer = _client(demo["users"]["reviewer"])
    url = f"/projects/{mms.pk}/plan-scoring/"
    with (DEMO_ROOT / "mms" / "predictions.jsonl").open("rb") as fh:
        page = reviewer.post(url, {"predictions": fh, "plan_format": "auto", "only_verified": "on"})
    html = page.content.decode()
    assert page.status_code in (200, 400)
    assert "no verified items with a ground-truth plan" in html
    assert "untick &quot;Verified items only&quot;" in html
    with (DEMO_ROOT / "mms" / "predictions.jsonl").open("rb") as fh:
        page = reviewer.post(url, {"predictions": fh, "plan_format": "auto"})
    assert page.status_code == 200
    assert "8 items scored" in page.content.decode()
