"""The plan editor's pages as people use them: open, live findings, save, 409 with both plans
kept, bad JSON, history and revert, alternatives, roles and query counts."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from annotation.plan_editor.models import PlanVersion
from benchmark.builtin import toolsets_ensure
from benchmark.models import Item, Plan, Project
from tests.factories import ItemFactory, PlanFactory

pytestmark = pytest.mark.django_db

IMPORTED = [
    {"id": 0, "name": "image editing", "args": {"image": "17320.jpg", "prompt": "blue"}},
    {"id": 1, "name": "image captioning", "args": {"image": "<node-0>.image"}},
]
EDITED = [*IMPORTED, {"id": 2, "name": "text summarization", "args": {"text": "<node-1>.text"}}]


@pytest.fixture
def mms(project: Project) -> Project:
    project.kind = "plan"
    project.data_format = "mms"
    project.tag_syntax = ""
    project.toolset = toolsets_ensure()["mms"]
    project.save()
    return project


@pytest.fixture
def item(mms: Project) -> Item:
    item = ItemFactory(project=mms, query="Make the green ball blue, then describe the picture")
    PlanFactory(item=item, key="gold", steps=IMPORTED, code="")
    return item


def edit_url(item: Item, **query: str) -> str:
    url = reverse("annotation:plan_edit", args=[item.project_id, item.pk])
    return url + ("?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else "")


def findings_url(item: Item) -> str:
    return reverse("annotation:plan_findings", args=[item.project_id, item.pk])


def save(client: Client, item: Item, steps: Any, base: Any, key: str = "gold") -> Any:
    body = steps if isinstance(steps, str) else json.dumps(steps)
    return client.post(edit_url(item), {"steps": body, "base_number": base, "key": key, "note": ""})


def test_editor_shows_request_tools_findings_and_code(
    clients: dict[str, Client], item: Item, django_assert_max_num_queries: Any
) -> None:
    with django_assert_max_num_queries(11):
        page = clients["annotator"].get(edit_url(item))
    assert page.status_code == 200
    html = page.content.decode()
    assert "Make the green ball blue" in html and "17320.jpg" in html
    assert 'id="plan-tools"' in html and "image captioning" in html
    assert 'hx-post="' + findings_url(item) in html and "input changed delay:400ms" in html
    assert "No findings" in html
    assert "output1 = image_captioning(image=output0[&#x27;image&#x27;])" in html
    assert 'name="base_number" value="1"' in html


def test_findings_fragment_follows_the_typed_plan(
    clients: dict[str, Client], item: Item, django_assert_max_num_queries: Any
) -> None:
    wrong = [IMPORTED[0], {"id": 1, "name": "image captioning", "args": {"image": "<node-0>.text"}}]
    with django_assert_max_num_queries(8):  # the item read is two: hiding rules, then the row
        answer = clients["annotator"].post(
            findings_url(item), {"steps": json.dumps(wrong)}, HTTP_HX_REQUEST="true"
        )
    html = answer.content.decode()
    assert answer.status_code == 200 and "<html" not in html
    assert 'id="plan-findings"' in html and 'data-step="1" data-arg="image"' in html
    assert "has no output &#x27;text&#x27;" in html
    assert 'id="plan-code" class="card plan-code" hx-swap-oob="true"' in html
    fixed = clients["annotator"].post(findings_url(item), {"steps": json.dumps(IMPORTED)})
    assert "No findings" in fixed.content.decode()
    typing = clients["annotator"].post(findings_url(item), {"steps": '[{"id": 0,'})
    assert typing.status_code == 200 and "not valid JSON" in typing.content.decode()


def test_save_adds_a_version_and_redirects(clients: dict[str, Client], item: Item) -> None:
    answer = save(clients["annotator"], item, EDITED, 1)
    assert answer.status_code == 302 and "saved=2" in answer["Location"]
    assert Plan.objects.get(item=item, key="gold").steps == EDITED
    page = clients["annotator"].get(answer["Location"])
    assert (
        "Saved as" in page.content.decode()
        and 'name="base_number" value="2"' in page.content.decode()
    )


def test_stale_save_answers_409_keeping_both_plans(clients: dict[str, Client], item: Item) -> None:
    save(clients["reviewer"], item, EDITED, 1)
    mine = [
        {"id": 0, "name": "image editing", "args": {"image": "17320.jpg", "prompt": "make it red"}}
    ]
    answer = save(clients["annotator"], item, mine, 1)
    assert answer.status_code == 409
    html = answer.content.decode()
    assert 'id="conflict"' in html and "text summarization" in html  # their version
    assert "make it red" in html  # mine, still in the editor
    assert 'name="base_number" value="2"' in html
    assert Plan.objects.get(item=item, key="gold").steps == EDITED
    # Saving again from the conflict page puts mine on top.
    assert save(clients["annotator"], item, mine, 2).status_code == 302


def test_bad_json_and_unchanged_plan_answer_400_naming_the_field(
    clients: dict[str, Client], item: Item
) -> None:
    bad = save(clients["annotator"], item, '[{"id": 0, "name": ', 1)
    assert bad.status_code == 400 and "steps: not valid JSON" in bad.content.decode()
    assert "[{&quot;id&quot;: 0, &quot;name&quot;: " in bad.content.decode()  # kept as typed
    same = save(clients["annotator"], item, IMPORTED, 1)
    assert same.status_code == 400 and "nothing to save" in same.content.decode()


def test_history_and_revert(
    clients: dict[str, Client], item: Item, django_assert_max_num_queries: Any
) -> None:
    save(clients["annotator"], item, EDITED, 1)
    save(clients["annotator"], item, EDITED[:2][::-1], 2)
    save(clients["annotator"], item, EDITED, 3)
    versions = reverse("annotation:plan_versions", args=[item.project_id, item.pk])
    # Four versions, their authors in the same query; the item read is two (hiding rules, row).
    with django_assert_max_num_queries(7):
        page = clients["reviewer"].get(versions)
    html = page.content.decode()
    assert page.status_code == 200 and "v2" in html and "v1" in html
    assert "step 2 (text summarization) added" in html
    one = reverse("annotation:plan_version", args=[item.project_id, item.pk, 1])
    assert "Revert to this version" in clients["reviewer"].get(one).content.decode()
    revert = reverse("annotation:plan_version_revert", args=[item.project_id, item.pk, 1])
    assert "moved" in html  # version 3 swapped the two steps
    stale = clients["reviewer"].post(revert, {"base": "1"})
    assert stale.status_code == 409
    done = clients["reviewer"].post(revert, {"base": "4"})
    assert done.status_code == 302
    assert Plan.objects.get(item=item, key="gold").steps == IMPORTED
    assert PlanVersion.objects.filter(item=item).count() == 5


def test_alternatives_from_the_editor(clients: dict[str, Client], item: Item) -> None:
    add = reverse("annotation:plan_alternative_add", args=[item.project_id, item.pk])
    answer = clients["annotator"].post(add)
    assert answer.status_code == 302 and "key=alt%3A0" in answer["Location"]
    page = clients["annotator"].get(answer["Location"])
    assert "Alternative plan" in page.content.decode()
    assert save(clients["annotator"], item, EDITED, 1, key="alt:0").status_code == 302
    assert Plan.objects.get(item=item, key="alt:0").steps == EDITED
    remove = reverse("annotation:plan_alternative_remove", args=[item.project_id, item.pk])
    assert clients["annotator"].post(remove, {"key": "alt:0"}).status_code == 302
    assert not Plan.objects.filter(item=item, key="alt:0").exists()
    assert clients["annotator"].get(edit_url(item, key="alt:9")).status_code == 404


def test_roles(clients: dict[str, Client], item: Item) -> None:
    assert clients["outsider"].get(edit_url(item)).status_code == 404
    assert clients["anonymous"].get(edit_url(item)).status_code == 302
    assert save(clients["outsider"], item, EDITED, 1).status_code == 404
    for role in ("admin", "reviewer", "annotator"):
        assert clients[role].get(edit_url(item)).status_code == 200


def test_item_page_links_to_the_editor(clients: dict[str, Client], item: Item) -> None:
    page = clients["annotator"].get(
        reverse("benchmark:item_detail", args=[item.project_id, item.pk])
    )
    assert edit_url(item) in page.content.decode() and "Edit plan" in page.content.decode()


def test_other_kinds_have_no_plan_editor(clients: dict[str, Client], project: Project) -> None:
    atp_item = ItemFactory(project=project)
    assert clients["admin"].get(edit_url(atp_item)).status_code == 404


def test_editor_reopens_with_the_arguments_in_the_order_written(
    clients: dict[str, Client], item: Item
) -> None:
    steps = [{"id": 0, "name": "image editing", "args": {"prompt": "blue", "image": "a.jpg"}}]
    assert save(clients["annotator"], item, steps, 1).status_code == 302
    html = clients["annotator"].get(edit_url(item)).content.decode()
    textarea = html[html.index('id="plan-json"') :]
    assert textarea.index("&quot;prompt&quot;") < textarea.index("&quot;image&quot;")
    assert "image_editing(prompt=&quot;blue&quot;, image=&quot;a.jpg&quot;)" in html


def test_findings_are_in_words_with_1_based_steps(clients: dict[str, Client], item: Item) -> None:
    """Findings once showed their code (``dangling_reference``), Python lists ("its outputs
    are ['text']") and 0-based step ids beside a 1-based "step 2" chip."""
    wrong = [IMPORTED[0], {"id": 1, "name": "image captioning", "args": {"image": "<node-0>.text"}}]
    html = clients["annotator"].post(findings_url(item), {"steps": json.dumps(wrong)}).content
    findings = html.decode().split('id="plan-findings"')[1].split('id="plan-code"')[0]
    text = re.sub(r"<[^>]+>", " ", findings)
    assert "dangling_reference" not in text and "Reference to no earlier output" in text
    assert "[&#x27;" not in text and "(its outputs are image)" in text
    assert "step 2, argument &#x27;image&#x27;" in text and "step 1, argument" not in text


def test_a_save_with_findings_says_which(clients: dict[str, Client], item: Item) -> None:
    wrong = [IMPORTED[0], {"id": 1, "name": "image captioning", "args": {"image": "<node-0>.text"}}]
    answer = save(clients["annotator"], item, wrong, 1)
    assert answer.status_code == 302
    html = clients["annotator"].get(answer["Location"]).content.decode()
    message = re.search(r'id="saved-message">(.*?)</div>', html, re.S)
    assert message
    text = re.sub(r"<[^>]+>", "", message.group(1))
    assert "version 2 with 1 verifier finding: step 2 · image · reference to no earlier" in text
    clean = save(clients["annotator"], item, EDITED, 2)
    html = clients["annotator"].get(clean["Location"]).content.decode()
    assert "verifier finding" not in html.split('id="saved-message"')[1].split("</div>")[0]
