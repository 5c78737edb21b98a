"""Blind verification through the web and the API: the blind solve screen (nothing of the
reference in the HTML or the API), the audit after answering, the joint-review queue and page
(answers side by side, accept, revise, discard), the audit overview, and bounded queries."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from annotation.judgment_tasks.models import JudgmentTask, Outcome
from annotation.judgment_tasks.services import judgment_task_ensure_defaults
from annotation.verification.models import TrajectoryAudit
from benchmark.models import Image, Item, ItemStatus, Role
from review.adjudication.models import Decision
from tests.annotation.test_verification import SAMPLES, agentic_project, answer_directly
from tests.factories import ImageFactory, MembershipFactory, TrajectoryFactory, UserFactory

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(not SAMPLES.is_dir(), reason="shared Agentic-MME samples not found"),
]

# Strings that must never reach a verifier before they answer: the answer, a variant, the
# reference trajectory (intent, visual question and answer, search finding and keywords, URL)
# and another verifier's answer.
SECRET_ANSWER = "SECRET-ANSWER-4711"
SECRET_VARIANT = "SECRET-VARIANT-0815"
SECRET_OTHER = "OTHER-VERIFIER-ANSWER-99"
REFERENCE_BITS = [
    "Crop the small plaque",
    "What painting title is printed on the plaque?",
    "Starry Night",
    "expected to find: 1889",
    "https://example.org/starry-night",
]


@pytest.fixture
def world(client_for: Any) -> dict[str, Any]:
    project = agentic_project()
    (task,) = judgment_task_ensure_defaults(project=project)
    task.overlap = 3
    task.save()
    people, clients = {}, {}
    for name, role in [
        ("v1", Role.ANNOTATOR),
        ("v2", Role.ANNOTATOR),
        ("v3", Role.ANNOTATOR),
        ("rev", Role.REVIEWER),
    ]:
        people[name] = UserFactory(username=name)
        MembershipFactory(project=project, user=people[name], role=role)
        clients[name] = client_for(people[name])
    item = Item.objects.get(project=project, external_id="0005")
    item.expected_answer = SECRET_ANSWER
    item.accepted_variants = [SECRET_VARIANT]
    item.match_type = "exact"
    item.save()
    reference = item.trajectories.get(key="reference")
    reference.checkpoints[3]["search_check"]["urls"] = ["https://example.org/starry-night"]
    reference.save()
    # Everything else is verified already, so 0005 is the next item for everyone.
    Item.objects.filter(project=project).exclude(pk=item.pk).update(status=ItemStatus.VERIFIED)
    return {"project": project, "task": task, "item": item, "u": people, "c": clients}


def lease(world: dict[str, Any], name: str) -> str:
    response = world["c"][name].post(reverse("annotation:task_next", args=[world["task"].pk]))
    assert response.status_code == 302, response.content[:300]
    url = reverse("annotation:judge", args=[world["task"].pk, world["item"].pk])
    assert response["Location"] == url
    return url


def assert_blind(text: str) -> None:
    for secret in [SECRET_ANSWER, SECRET_VARIANT, SECRET_OTHER, *REFERENCE_BITS]:
        assert secret not in text, f"{secret!r} leaked"


def test_the_solve_screen_is_blind(world: dict[str, Any]) -> None:
    task, item = world["task"], world["item"]
    answer_directly(task, world["u"]["v2"], item, SECRET_OTHER)
    url = lease(world, "v1")
    page = world["c"]["v1"].get(url)
    html = page.content.decode()
    assert page.status_code == 200
    assert "a small plaque next to the frame names the painting" in html  # the question
    assert "Answer format:</span> Answer with an integer." in html  # its format instruction
    sha = item.image_refs[0]["sha256"]
    assert reverse("benchmark:image_thumb", args=[sha]) in html  # the image
    assert 'name="answer"' in html
    assert_blind(html)


def test_a_format_instruction_apart_from_the_question_is_shown(world: dict[str, Any]) -> None:
    item = world["item"]
    item.constraints = {"format_instruction": "Reply with digits only, no words."}
    item.save()
    html = world["c"]["v1"].get(lease(world, "v1")).content.decode()
    assert "Reply with digits only, no words." in html


def test_the_item_page_and_the_api_are_blind_until_answered(world: dict[str, Any]) -> None:
    task, item, c = world["task"], world["item"], world["c"]
    answer_directly(task, world["u"]["v2"], item, SECRET_OTHER)
    lease(world, "v1")
    item_page = c["v1"].get(reverse("benchmark:item_detail", args=[item.project_id, item.pk]))
    assert item_page.status_code == 200
    assert "hidden until you have solved this item blind" in item_page.content.decode()
    api = {
        "next": c["v1"].post(f"/api/judgment-tasks/{task.pk}/next/"),
        "blind": c["v1"].get(f"/api/judgment-tasks/{task.pk}/items/{item.pk}/blind/"),
        "judgments": c["v1"].get(f"/api/judgment-tasks/{task.pk}/judgments/"),
        "item": c["v1"].get(f"/api/items/{item.pk}/"),
        "trajectories": c["v1"].get(f"/api/trajectories/?item={item.pk}"),
    }
    for name, response in api.items():
        assert response.status_code == 200, (name, response.content[:300])
        assert_blind(response.content.decode())
    assert_blind(item_page.content.decode())
    blind = api["blind"].json()
    assert blind["question"].startswith("In this gallery photo")
    assert blind["question"].endswith("and the visit year?")
    assert blind["format_instruction"] == "Answer with an integer."
    assert blind["images"][0]["url"].endswith(item.image_refs[0]["sha256"] + "/")
    assert api["item"].json()["expected_answer"] == ""
    assert api["trajectories"].json()["results"] == []
    # A reviewer sees everything.
    assert SECRET_ANSWER in c["rev"].get(f"/api/items/{item.pk}/").content.decode()
    assert c["rev"].get(f"/api/trajectories/?item={item.pk}").json()["results"]
    # Once v1 has answered, the reference opens for v1.
    c["v1"].post(reverse("annotation:judge", args=[task.pk, item.pk]), {"answer": "130"})
    assert SECRET_ANSWER in c["v1"].get(f"/api/items/{item.pk}/").content.decode()
    assert c["v1"].get(f"/api/trajectories/?item={item.pk}").json()["results"]
    blind = c["v1"].get(f"/api/judgment-tasks/{task.pk}/items/{item.pk}/blind/").json()
    assert (blind["your_answer"], blind["matches"]) == ("130", False)
    # ...but not for v3, who has not answered.
    assert_blind(c["v3"].get(f"/api/items/{item.pk}/").content.decode())


def test_answering_opens_the_audit(world: dict[str, Any]) -> None:
    task, item, c = world["task"], world["item"], world["c"]
    url = lease(world, "v1")
    empty = c["v1"].post(url, {"answer": "  "})
    assert empty.status_code == 200
    assert "Write your answer before submitting." in empty.content.decode()
    done = c["v1"].post(url, {"answer": SECRET_ANSWER.lower(), "seconds": "12"})
    audit_url = reverse("annotation:verification_audit", args=[task.pk, item.pk])
    assert done.status_code == 302 and done["Location"] == audit_url
    page = c["v1"].get(audit_url)
    html = page.content.decode()
    assert page.status_code == 200
    # Now the reference is there, with the verifier's own answer marked against it.
    for bit in [SECRET_ANSWER, SECRET_VARIANT, *REFERENCE_BITS]:
        assert bit in html, bit
    assert "differs" in html  # exact match is case-sensitive
    assert 'href="https://example.org/starry-night"' in html
    assert 'rel="noopener noreferrer nofollow"' in html
    # intent, tool, checkpoint on the V steps C1, C2, C3, C5; and URLs on the S step C4.
    assert html.count('type="checkbox"') == 3 + 3 + 3 + 4 + 3
    # The solve screen now shows the answer given and a way to the audit.
    again = c["v1"].get(url).content.decode()
    assert SECRET_ANSWER.lower() in again and audit_url in again


def test_ticking_the_checklist(world: dict[str, Any]) -> None:
    task, item, c = world["task"], world["item"], world["c"]
    c["v1"].post(lease(world, "v1"), {"answer": "x"})
    audit_url = reverse("annotation:verification_audit", args=[task.pk, item.pk])
    form = {
        "base": "0",
        **{f"s-{i}-step": f"C{i + 1}" for i in range(5)},
        "s-0-intent": "on",
        "s-0-tool": "on",
        "s-3-url": "on",
        "s-3-comment": "The URL answers 1889.",
    }
    saved = c["v1"].post(audit_url, form)
    assert saved.status_code == 302 and saved["Location"] == audit_url + "?saved=1"
    audit = TrajectoryAudit.objects.get(user=world["u"]["v1"])
    by_step = {e["step"]: e for e in audit.steps}
    assert by_step["C1"]["checks"] == {"intent": True, "tool": True, "checkpoint": False}
    assert by_step["C4"]["checks"]["url"] is True
    assert by_step["C4"]["comment"] == "The URL answers 1889."
    page = c["v1"].get(audit_url + "?saved=1").content.decode()
    assert "Audit saved (version 1)" in page
    assert 'name="base" value="1"' in page
    # The same form again (base 0) is stale: 409, the message, and nothing written.
    stale = c["v1"].post(audit_url, form)
    assert stale.status_code == 409
    assert "saved elsewhere meanwhile (version 1)" in stale.content.decode()
    assert TrajectoryAudit.objects.count() == 1
    # Save and go on to the next item.
    onward = c["v1"].post(audit_url, {**form, "base": "1", "then": "next"})
    assert onward.status_code == 302
    assert onward["Location"] == reverse("annotation:task_next", args=[task.pk])
    assert TrajectoryAudit.objects.count() == 2


def test_the_audit_shows_the_crop_and_the_ground_truth_of_a_visual_step(
    world: dict[str, Any],
) -> None:
    """A visual step's crop (its source image cut to bbox_2d) and its stored ground-truth
    image beside it, each a lightbox link; nothing of it before the verifier answers."""
    task, item, c = world["task"], world["item"], world["c"]
    reference = item.trajectories.get(key="reference")
    crop = next(cp for cp in reference.checkpoints if (cp.get("code_check") or {}).get("bbox_2d"))
    artifact = ImageFactory()
    artifact.projects.add(world["project"])
    crop["reference_image"] = {"sha256": artifact.sha256, "recipe": {}, "box_px": None}
    reference.save()
    source = Image.objects.get(sha256=item.image_refs[0]["sha256"])
    audit_url = reverse("annotation:verification_audit", args=[task.pk, item.pk])
    lease(world, "v1")
    assert c["v1"].get(audit_url).status_code == 403
    c["v1"].post(reverse("annotation:judge", args=[task.pk, item.pk]), {"answer": "x"})
    html = c["v1"].get(audit_url).content.decode()
    x1, y1, x2, y2 = crop["code_check"]["bbox_2d"]
    box = [
        round(x1 * source.width / 1000),
        round(y1 * source.height / 1000),
        round(x2 * source.width / 1000) - round(x1 * source.width / 1000),
        round(y2 * source.height / 1000) - round(y1 * source.height / 1000),
    ]
    assert 'viewBox="{} {} {} {}"'.format(*box) in html
    assert html.count(f'href="/images/{source.sha256}/" data-lightbox') >= 2
    assert f'href="/images/{artifact.sha256}/" data-lightbox' in html
    assert "data-audit-crop" in html and "data-audit-artifact" in html


def test_only_verifiers_who_answered_audit(world: dict[str, Any]) -> None:
    task, item, c = world["task"], world["item"], world["c"]
    audit_url = reverse("annotation:verification_audit", args=[task.pk, item.pk])
    lease(world, "v1")
    assert c["v1"].get(audit_url).status_code == 403
    assert c["v1"].post(audit_url, {"base": "0"}).status_code == 403
    api = f"/api/judgment-tasks/{task.pk}/items/{item.pk}/audit/"
    assert c["v1"].get(api).status_code == 403
    # The reviewer reads it but has nothing to tick.
    page = c["rev"].get(audit_url)
    assert page.status_code == 200
    assert 'type="checkbox"' not in page.content.decode()
    assert c["rev"].post(audit_url, {"base": "0"}).status_code == 403


def test_audit_over_the_api(world: dict[str, Any]) -> None:
    task, item, c = world["task"], world["item"], world["c"]
    c["v1"].post(lease(world, "v1"), {"answer": "x"})
    api = f"/api/judgment-tasks/{task.pk}/items/{item.pk}/audit/"
    body = {"base": 0, "steps": {"C1": {"checks": {"intent": True}, "comment": "ok"}}}
    created = c["v1"].post(api, body, content_type="application/json")
    assert created.status_code == 201, created.content
    assert created.json()["number"] == 1
    stale = c["v1"].post(api, body, content_type="application/json")
    assert stale.status_code == 409
    bad = c["v1"].post(
        api,
        {"base": 1, "steps": {"C1": {"checks": {"nope": True}}}},
        content_type="application/json",
    )
    assert bad.status_code == 400
    assert "step C1: no check called nope" in bad.content.decode()
    mine = c["v1"].get(api).json()["audits"]
    assert [a["verifier"] for a in mine] == ["v1"]


def disagree(world: dict[str, Any]) -> None:
    task, item, u = world["task"], world["item"], world["u"]
    answer_directly(task, u["v1"], item, SECRET_ANSWER)
    answer_directly(task, u["v2"], item, SECRET_VARIANT)
    answer_directly(task, u["v3"], item, "1889")
    assert Outcome.objects.get(task=task, item=item).verdict == "disputed"


def test_joint_review_queue_shows_answers_side_by_side(world: dict[str, Any]) -> None:
    disagree(world)
    task, c = world["task"], world["c"]
    page = c["rev"].get(reverse("review:dispute_list", args=[task.pk]))
    html = page.content.decode()
    assert page.status_code == 200
    assert "Joint review" in html
    for text in [SECRET_ANSWER, SECRET_VARIANT, "1889", "v1", "v2", "v3"]:
        assert text in html
    assert html.count("badge-ok") == 2 and html.count("badge-warn") == 1
    assert c["v1"].get(reverse("review:dispute_list", args=[task.pk])).status_code == 403


def test_joint_review_page_shows_the_reference_and_audits(world: dict[str, Any]) -> None:
    disagree(world)
    task, item, c = world["task"], world["item"], world["c"]
    c["v1"].post(
        reverse("annotation:verification_audit", args=[task.pk, item.pk]),
        {"base": "0", "s-0-step": "C1", "s-0-intent": "on", "s-0-comment": "Plaque is tiny."},
    )
    page = c["rev"].get(reverse("review:adjudicate", args=[task.pk, item.pk]))
    html = page.content.decode()
    assert page.status_code == 200
    for bit in [SECRET_ANSWER, SECRET_VARIANT, "1889", *REFERENCE_BITS, "Plaque is tiny."]:
        assert bit in html, bit
    assert 'id="audit-table"' in html and "tick-no" in html and "tick-ok" in html


def test_reviewer_revises_the_answer_in_joint_review(world: dict[str, Any]) -> None:
    disagree(world)
    task, item, c = world["task"], world["item"], world["c"]
    url = reverse("review:adjudicate", args=[task.pk, item.pk])
    form = c["rev"].get(url).context["revise"]
    stamp = form.initial["stamp"]
    revise = {
        "action": "revise",
        "expected_answer": SECRET_ANSWER,
        "accepted_variants": f"{SECRET_VARIANT}\n1889",
        "match_type": "exact",
        "reason": "The year is accepted too.",
        "stamp": stamp,
    }
    done = c["rev"].post(url, revise)
    assert done.status_code == 302
    assert done["Location"] == reverse("review:dispute_list", args=[task.pk])
    item.refresh_from_db()
    assert item.status == ItemStatus.VERIFIED
    assert item.accepted_variants == [SECRET_VARIANT, "1889"]
    assert Decision.objects.get(item=item).verdict == "revised"
    # The same form again is stale (and the item is no longer in review): 409, nothing written.
    again = c["rev"].post(url, revise)
    assert again.status_code == 409
    assert Decision.objects.count() == 1


def test_a_stale_revision_form_answers_409(world: dict[str, Any]) -> None:
    disagree(world)
    task, item, c = world["task"], world["item"], world["c"]
    url = reverse("review:adjudicate", args=[task.pk, item.pk])
    stamp = c["rev"].get(url).context["revise"].initial["stamp"]
    elsewhere = Item.objects.get(pk=item.pk)
    elsewhere.expected_answer = "changed elsewhere"
    elsewhere.save()
    response = c["rev"].post(
        url,
        {
            "action": "revise",
            "expected_answer": "mine",
            "accepted_variants": "",
            "match_type": "exact",
            "stamp": stamp,
        },
    )
    assert response.status_code == 409
    assert "changed by someone else" in response.content.decode()
    item.refresh_from_db()
    assert item.expected_answer == "changed elsewhere"


def test_reviewer_discards_with_a_reason(world: dict[str, Any]) -> None:
    disagree(world)
    task, item, c = world["task"], world["item"], world["c"]
    url = reverse("review:adjudicate", args=[task.pk, item.pk])
    missing = c["rev"].post(url, {"action": "decide", "verdict": "discarded", "reason": ""})
    assert missing.status_code == 200
    assert "Say why the item is discarded." in missing.content.decode()
    item.refresh_from_db()
    assert item.status == ItemStatus.IN_REVIEW
    done = c["rev"].post(
        url, {"action": "decide", "verdict": "discarded", "reason": "Two readings of the plaque."}
    )
    assert done.status_code == 302
    item.refresh_from_db()
    assert item.status == ItemStatus.DISCARDED
    assert item.discard_reason == "Two readings of the plaque."


def test_reviewer_accepts_in_joint_review(world: dict[str, Any]) -> None:
    disagree(world)
    task, item, c = world["task"], world["item"], world["c"]
    url = reverse("review:adjudicate", args=[task.pk, item.pk])
    done = c["rev"].post(url, {"action": "decide", "verdict": "accepted"})
    assert done.status_code == 302
    item.refresh_from_db()
    outcome = Outcome.objects.get(task=task, item=item)
    assert (item.status, outcome.verdict, outcome.decided_by) == (
        ItemStatus.VERIFIED,
        "accepted",
        world["u"]["rev"],
    )


def test_audit_overview_lists_doubtful_items_first(world: dict[str, Any]) -> None:
    task, c, u, project = world["task"], world["c"], world["u"], world["project"]
    items = list(Item.objects.filter(project=project).order_by("position")[:2])
    for n, item in enumerate(items):
        answer_directly(task, u["v1"], item, "x")
        c["v1"].post(
            reverse("annotation:verification_audit", args=[task.pk, item.pk]),
            {"base": "0", "s-0-step": "C1", **({"s-0-intent": "on"} if n == 0 else {})},
        )
    page = c["rev"].get(reverse("annotation:verification_audits", args=[task.pk]))
    assert page.status_code == 200
    rows = page.context["rows"]
    assert [r["item"] for r in rows] == [items[1], items[0]]  # more unconfirmed first
    # A flagged visual step that crops shows its crop beside its chip.
    html = page.content.decode()
    flagged = [(row["item"], step, visual) for row in rows for step, _, visual in row["flagged"]]
    cropped = [(item, step) for item, step, visual in flagged if visual and visual.get("crop")]
    assert cropped, flagged
    assert html.count('class="crop-mini"') == len(cropped)
    assert 'class="audit-flag-crop" href="/images/' in html
    assert c["v1"].get(reverse("annotation:verification_audits", args=[task.pk])).status_code == 403


def test_other_tasks_have_no_audit(world: dict[str, Any]) -> None:
    other = JudgmentTask.objects.create(
        project=world["project"], name="b", question="?", scheme="binary", consensus="unanimous"
    )
    url = reverse("annotation:verification_audits", args=[other.pk])
    assert world["c"]["rev"].get(url).status_code == 404
    url = reverse("annotation:verification_audit", args=[other.pk, world["item"].pk])
    assert world["c"]["rev"].get(url).status_code == 404


# --------------------------------------------------------------------------- query counts


def _more_disputes(world: dict[str, Any], n: int) -> None:
    task, u = world["task"], world["u"]
    items = list(Item.objects.filter(project=world["project"]).exclude(pk=world["item"].pk))[:n]
    Item.objects.filter(pk__in=[i.pk for i in items]).update(status=ItemStatus.DRAFT)
    for item in items:
        answer_directly(task, u["v1"], item, "a")
        answer_directly(task, u["v2"], item, "b")
        answer_directly(task, u["v3"], item, "c")


@pytest.mark.parametrize("extra", [0, 4])
def test_queue_and_audit_pages_take_bounded_queries(
    world: dict[str, Any], extra: int, django_assert_max_num_queries: Any
) -> None:
    disagree(world)
    _more_disputes(world, extra)
    task, item, c = world["task"], world["item"], world["c"]
    reference = item.trajectories.get(key="reference")
    reference.checkpoints = reference.checkpoints * (1 + extra * 5)
    for n, cp in enumerate(reference.checkpoints):
        reference.checkpoints[n] = {**cp, "id": f"C{n + 1}"}
    reference.save()
    for name in ("v1", "v2", "v3"):
        c[name].post(
            reverse("annotation:verification_audit", args=[task.pk, item.pk]),
            {"base": "0", "s-0-step": "C1", "s-0-intent": "on"},
        )
    # Measured: 6, 11, 10 and 6 queries with 1 or 5 disputed items, 5 or 105 steps.
    with django_assert_max_num_queries(8):
        assert c["rev"].get(reverse("review:dispute_list", args=[task.pk])).status_code == 200
    with django_assert_max_num_queries(13):
        page = c["rev"].get(reverse("review:adjudicate", args=[task.pk, item.pk]))
        assert page.status_code == 200
    # 13: a blind verifier's reads first check for blind tasks (one small query)
    with django_assert_max_num_queries(13):
        page = c["v1"].get(reverse("annotation:verification_audit", args=[task.pk, item.pk]))
        assert page.status_code == 200
    with django_assert_max_num_queries(8):
        assert (
            c["rev"].get(reverse("annotation:verification_audits", args=[task.pk])).status_code
            == 200
        )
    assert len(page.context["rows"]) == 5 * (1 + extra * 5)


def test_an_item_without_reference_says_so(world: dict[str, Any]) -> None:
    task, item, c = world["task"], world["item"], world["c"]
    item.trajectories.all().delete()
    TrajectoryFactory(item=item, key="run:x", origin="model")
    c["v1"].post(lease(world, "v1"), {"answer": "x"})
    page = c["v1"].get(reverse("annotation:verification_audit", args=[task.pk, item.pk]))
    assert "no reference trajectory to audit" in page.content.decode()


@pytest.mark.parametrize("route", ["annotation:trajectory_edit", "annotation:drafting_list"])
def test_pages_showing_the_reference_refuse_a_blind_verifier(
    world: dict[str, Any], route: str
) -> None:
    item, c = world["item"], world["c"]
    url = reverse(route, args=[item.project_id, item.pk])
    refused = c["v1"].get(url)
    assert refused.status_code == 403
    assert_blind(refused.content.decode())
    assert c["rev"].get(url).status_code == 200
    c["v1"].post(lease(world, "v1"), {"answer": "130"})
    assert c["v1"].get(url).status_code == 200
