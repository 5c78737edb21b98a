"""Every version of a reference trajectory is kept: the first save records the state before it,
each changing save adds a version, a change made outside the editor becomes its own version,
stale saves are refused by version number (and fingerprint), a revert is a new version made
through the same checks; the history and version pages, with bounded queries; blind verifiers
are refused the history like the editor."""

from __future__ import annotations

import json
from html import unescape
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from annotation.judgment_tasks.services import judgment_task_ensure_defaults
from annotation.trajectories import document as td
from annotation.trajectories.diff import document_diff
from annotation.trajectories.models import TrajectoryVersion
from annotation.trajectories.selectors import (
    FIRST_NOTE,
    OUTSIDE_NOTE,
    reference_of,
    trajectory_item_get,
    version_state,
)
from annotation.trajectories.services import (
    TrajectoryInvalid,
    task_document,
    trajectory_revert,
)
from benchmark.datasets import services
from benchmark.exceptions import ValidationFailed
from benchmark.models import Item, Role, Trajectory
from benchmark.versions import StaleVersion
from tests.annotation.test_trajectory_services import SOURCE, _save, mme, needs_data
from tests.annotation.test_trajectory_views import HX, _form, _url, world
from tests.factories import MembershipFactory, TrajectoryVersionFactory, UserFactory

pytestmark = pytest.mark.django_db
__all__ = ["mme", "world"]  # fixtures


def _versions(item: Item) -> list[TrajectoryVersion]:
    return list(TrajectoryVersion.objects.filter(item=item).order_by("number"))


def _history(item: Item) -> str:
    return reverse("annotation:trajectory_versions", args=[item.project_id, item.pk])


def _version(item: Item, number: int) -> str:
    return reverse("annotation:trajectory_version", args=[item.project_id, item.pk, number])


def _revert(item: Item, number: int) -> str:
    return reverse("annotation:trajectory_version_revert", args=[item.project_id, item.pk, number])


def _document(item: Item) -> dict[str, Any]:
    fresh = Item.objects.get(pk=item.pk)
    return task_document(item=fresh, reference=reference_of(fresh))


# --------------------------------------------------------------------------- the pure diff


def _doc() -> dict[str, Any]:
    return {
        "task_id": "0001",
        "meta": {"level": 2, "domain": "Life"},
        "input": {"prompt": "Which street? Answer with the name only."},
        "golden_answer": {"value": "Willow", "match_type": "exact"},
        "process_evaluation": {
            "checkpoints": [
                {"id": "C1", "axis": "V", "description": "Crop the sign.", "tools": ["crop"]},
                {"id": "C2", "axis": "V", "description": "Read it.", "tools": []},
                {
                    "id": "C3",
                    "axis": "S",
                    "description": "Look the street up.",
                    "tools": ["google_search"],
                    "search_check": {"keywords": ["Willow"], "expected": "Springfield"},
                },
            ],
            "efficiency": {"reference_tool_calls": 2},
        },
    }


def test_the_diff_says_in_words_what_changed_per_field_and_step() -> None:
    old, new = _doc(), _doc()
    new["golden_answer"]["value"] = "Willow St"
    cps = new["process_evaluation"]["checkpoints"]
    cps[2]["search_check"]["urls"] = ["https://example.org/willow"]
    cps[0], cps[1] = cps[1], cps[0]
    cps.append({"id": "C4", "axis": "V", "description": "Zoom.", "tools": ["zoom"]})
    new["process_evaluation"]["efficiency"]["max_tool_calls"] = 6
    new["meta"]["source"] = "hand-made"
    diff = document_diff(old, new)
    assert diff.summary() == (
        "answer changed; step C2: moved from 2 to 1; step C3: URL added; step C4 added; "
        "maximum tool calls added; other fields changed (meta.source)"
    )
    [answer] = diff.task
    assert (answer.label, answer.old, answer.new, answer.kind) == (
        "answer",
        "Willow",
        "Willow St",
        "changed",
    )
    by_id = {s.id: s for s in diff.steps}
    assert by_id["C1"].status == "unchanged" and by_id["C2"].status == "moved"
    assert [(f.label, f.old, f.new) for f in by_id["C3"].fields] == [
        ("URL", "", "https://example.org/willow")
    ]
    assert [f.label for f in by_id["C4"].fields] == ["checkpoint", "intent", "tool"]
    # Removing a step and two keywords.
    newer = json.loads(json.dumps(new))
    del newer["process_evaluation"]["checkpoints"][3]
    newer["process_evaluation"]["checkpoints"][2]["search_check"]["keywords"] = []
    assert document_diff(new, newer).summary() == "step C3: keyword removed; step C4 removed"
    assert document_diff(new, json.loads(json.dumps(new))).summary() == "no change"


# --------------------------------------------------------------------------- the save service


def test_the_first_save_records_the_state_before_it_then_each_change_a_version(
    world: dict[str, Any],
) -> None:
    item = world["make"](2)
    client = world["client"]
    imported = _document(item)
    data = _form(client.get(_url(item)).content.decode())
    assert data["version"] == "1" and data["fingerprint"] == td.fingerprint(imported)
    # An unchanged save writes nothing, not even version 1.
    client.post(_url(item), {**data, "op": "save"}, **HX)
    assert _versions(item) == []

    data["task-expected"] = "Birch"
    data["note"] = "The sign says Birch."
    saved = client.post(_url(item), {**data, "op": "save"}, **HX)
    assert saved.status_code == 200
    first, second = _versions(item)
    assert (first.number, first.author, first.note, first.base_number) == (
        1,
        None,
        FIRST_NOTE,
        None,
    )
    assert first.data == imported
    assert (second.number, second.author, second.note, second.base_number) == (
        2,
        world["user"],
        "The sign says Birch.",
        1,
    )
    assert second.data == _document(item) and second.data["golden_answer"]["value"] == "Birch"
    assert second.fingerprint == td.fingerprint(second.data)
    # The form now edits version 2; saving it again unchanged adds nothing.
    again = _form(saved.content.decode())
    assert again["version"] == "2" and again["note"] == ""
    client.post(_url(item), {**again, "op": "save"}, **HX)
    assert len(_versions(item)) == 2


def test_a_change_made_outside_the_editor_becomes_its_own_version(
    world: dict[str, Any],
) -> None:
    item = world["make"](2)
    client = world["client"]
    data = _form(client.get(_url(item)).content.decode())
    data["task-expected"] = "Birch"
    client.post(_url(item), {**data, "op": "save"}, **HX)  # versions 1 and 2
    opened_before = _form(client.get(_url(item)).content.decode())

    # Joint review (say) revises the answer directly.
    Item.objects.filter(pk=item.pk).update(expected_answer="Oak")
    opened_after = _form(client.get(_url(item)).content.decode())
    assert opened_after["version"] == "3"  # the outside change, not recorded yet

    # A save on the page opened before it is stale: nothing is written.
    opened_before["steps-0-intent"] = "Mine."
    stale = client.post(_url(item), {**opened_before, "op": "save"}, **HX)
    assert stale.status_code == 409
    assert "changed outside the editor after you opened version 2" in stale.content.decode()
    assert len(_versions(item)) == 2

    # A second outside change after opening: the number is the same, the fingerprint is not.
    Trajectory.objects.filter(item=item).update(efficiency={"reference_tool_calls": 9})
    assert client.post(_url(item), {**opened_after, "op": "save"}, **HX).status_code == 409

    fresh = _form(client.get(_url(item)).content.decode())
    fresh["steps-0-intent"] = "Crop the street sign."
    fresh["task-reference_tool_calls"] = "2"
    assert client.post(_url(item), {**fresh, "op": "save"}, **HX).status_code == 200
    numbers = [(v.number, v.author, v.note, v.base_number) for v in _versions(item)]
    assert numbers[2:] == [(3, None, OUTSIDE_NOTE, 2), (4, world["user"], "", 3)]
    outside = _versions(item)[2].data
    assert outside["golden_answer"]["value"] == "Oak"
    assert outside["process_evaluation"]["efficiency"] == {"reference_tool_calls": 9}


@needs_data
def test_a_stale_save_names_who_saved_and_writes_no_version(mme: dict[str, Any]) -> None:
    other = UserFactory(username="annotator-f")
    MembershipFactory(project=mme["project"], user=other, role=Role.ANNOTATOR)
    item = Item.objects.get(external_id="0003")
    opened = (1, td.fingerprint(_document(item)))

    def theirs(draft: td.Draft) -> None:
        draft.expected = "318"

    _save(mme, "0003", theirs, version=opened, user=other)

    def mine(draft: td.Draft) -> None:
        draft.domain = "Life"

    with pytest.raises(StaleVersion) as caught:
        _save(mme, "0003", mine, version=opened)
    assert caught.value.current.number == 2 and caught.value.current.author == "annotator-f"
    assert "version 2 was saved by annotator-f after you opened version 1" in str(caught.value)
    assert [v.author for v in _versions(item)] == [None, other]


@needs_data
def test_revert_restores_the_task_file_byte_for_byte_as_a_new_version(
    mme: dict[str, Any], tmp_path: Path
) -> None:
    def edit(draft: td.Draft) -> None:
        draft.question = "Which element is in the brown bottle?"
        draft.tolerance = "0"
        draft.steps[2].urls = "https://en.wikipedia.org/wiki/Copper"
        draft.steps = [draft.steps[0], draft.steps[1], draft.steps[3], draft.steps[2]]
        draft.orderings[1].sequence = "C4, C3"
        draft.reference_tool_calls = "4"

    assert _save(mme, "0006", edit).number == 2
    project, user = mme["project"], mme["user"]
    item = trajectory_item_get(
        user=user, project=project, pk=Item.objects.get(external_id="0006").pk
    )
    result = trajectory_revert(
        user=user, project=project, item=item, number=1, base_number=2, tools=[], domains=[]
    )
    assert result.changed and result.number == 3
    third = _versions(item)[2]
    assert (third.author, third.note, third.base_number) == (user, "Reverted to version 1", 2)
    assert third.data == _versions(item)[0].data == _document(item)
    # The export writes the imported file again, byte for byte (key order included).
    out = tmp_path / "out"
    services.dataset_export(project=project, out=out, copy_images=False)
    assert (out / "json" / "0006.json").read_bytes() == (SOURCE / "json" / "0006.json").read_bytes()

    # Reverting to what is already current changes nothing and says so.
    item = trajectory_item_get(user=user, project=project, pk=item.pk)
    with pytest.raises(ValidationFailed, match="version 3 already is version 1"):
        trajectory_revert(
            user=user, project=project, item=item, number=1, base_number=3, tools=[], domains=[]
        )
    # On an outdated page: 409, nothing written.
    with pytest.raises(StaleVersion):
        trajectory_revert(
            user=user, project=project, item=item, number=2, base_number=2, tools=[], domains=[]
        )
    assert len(_versions(item)) == 3


def test_revert_goes_through_the_editors_checks(world: dict[str, Any]) -> None:
    item = world["make"](2)
    client = world["client"]
    data = _form(client.get(_url(item)).content.decode())
    data["task-expected"] = "Birch"
    client.post(_url(item), {**data, "op": "save"}, **HX)
    # A version whose level no editor save could have written (say, from an older release).
    bad = _versions(item)[0].data
    bad["meta"]["level"] = 7
    TrajectoryVersionFactory(item=item, number=3, data=bad, base_number=2)
    before = _document(item)
    state = version_state(item=item, document=before)
    assert (state.number, state.recorded) == (4, False)  # the item is still at version 2
    response = client.post(_revert(item, 3), {"base": "4"})
    assert response.status_code == 400
    html = response.content.decode()
    assert "Not reverted" in html and "Task · level: choose level 1, 2 or 3" in html
    assert _document(item) == before and len(_versions(item)) == 3


def test_a_revert_to_a_bad_version_writes_nothing(world: dict[str, Any]) -> None:
    item = world["make"](2)
    doc = _document(item)
    bad = json.loads(json.dumps(doc))
    bad["process_evaluation"]["checkpoints"][0]["description"] = ""
    TrajectoryVersionFactory(item=item, number=1, data=bad)
    TrajectoryVersionFactory(item=item, number=2, data=doc, base_number=1)
    with pytest.raises(TrajectoryInvalid) as caught:
        trajectory_revert(
            user=world["user"],
            project=world["project"],
            item=trajectory_item_get(user=world["user"], project=world["project"], pk=item.pk),
            number=1,
            base_number=2,
            tools=[],
            domains=[],
        )
    assert [str(e) for e in caught.value.errors] == [
        "step 1 (C1) · intent: say in words what this step does"
    ]
    assert len(_versions(item)) == 2 and _document(item) == doc


# --------------------------------------------------------------------------- the pages


def _make_versions(world: dict[str, Any], n: int) -> Item:
    item = world["make"](3)
    doc = _document(item)
    for number in range(1, n + 1):
        version = json.loads(json.dumps(doc))
        version["golden_answer"]["value"] = f"answer {number}"
        cps = version["process_evaluation"]["checkpoints"]
        cps[1]["search_check"]["urls"] = [f"https://example.org/{k}" for k in range(number)]
        author = UserFactory(username=f"author-{number}")
        TrajectoryVersionFactory(
            item=item,
            number=number,
            data=version,
            author=author,
            note=f"note {number}",
            base_number=number - 1 or None,
        )
    return item


@pytest.mark.parametrize("n", [2, 20])
def test_history_and_version_pages_need_the_same_queries_for_2_and_20_versions(
    world: dict[str, Any], n: int, django_assert_max_num_queries: Any
) -> None:
    item = _make_versions(world, n)
    client = world["client"]
    # Measured: 7 queries for the history and 8 for a version, with 2 or 20 versions.
    with django_assert_max_num_queries(7):
        page = client.get(_history(item))
    assert page.status_code == 200
    html = page.content.decode()
    # Every saved version, plus the item as it stands (changed since: not yet a version).
    assert html.count('<tr id="version-') == n + 1
    assert f"author-{n}" in html and f"note {n}" in html
    assert "Answer changed; step C2: URL added" in html
    assert "not yet saved as a version" in html
    with django_assert_max_num_queries(8):
        page = client.get(_version(item, n))
    assert page.status_code == 200
    html = page.content.decode()
    assert f"answer {n - 1}" in html and f"answer {n}" in html  # before / after
    assert f"https://example.org/{n - 1}" in html
    assert f"Revert to v{n}" in html


def test_the_version_page_shows_field_and_step_differences_and_reverts(
    world: dict[str, Any],
) -> None:
    item = world["make"](3)
    client = world["client"]
    data = _form(client.get(_url(item)).content.decode())
    data["task-expected"] = "Birch"
    data["steps-1-urls"] = "https://example.org/birch"
    data["note"] = "checked the sign"
    client.post(_url(item), {**data, "op": "save"}, **HX)

    history = client.get(_history(item)).content.decode()
    assert "Answer changed; step C2: URL added" in history
    assert "traj-annotator" in history and "checked the sign" in history
    assert "outside the editor" in history  # version 1's author
    page = client.get(_version(item, 2)).content.decode()
    assert "Changes from v1" in page
    assert 'id="step-diff-C2"' in page and "https://example.org/birch" in page
    assert 'id="step-diff-C1"' not in page  # unchanged steps are only named
    assert "Unchanged: " in page
    first = client.get(_version(item, 1)).content.decode()
    assert "Contents (first version)" in first and "Revert to v1" in first

    reverted = client.post(_revert(item, 1), {"base": "2", "note": ""})
    assert reverted.status_code == 302 and reverted["Location"] == _version(item, 3)
    assert Item.objects.get(pk=item.pk).expected_answer == "Willow"
    page = client.get(_version(item, 3)).content.decode()
    assert "Reverted to version 1" in page and "Revert to v3" not in page
    # The same page, now outdated: 409 with the reason.
    stale = client.post(_revert(item, 2), {"base": "2"})
    assert stale.status_code == 409
    assert "version 3 was saved by traj-annotator after you opened version 2" in (
        stale.content.decode()
    )
    assert len(_versions(item)) == 3


def test_the_editor_links_its_history(world: dict[str, Any]) -> None:
    item = world["make"](1)
    html = world["client"].get(_url(item)).content.decode()
    assert f'href="{_history(item)}"' in html
    assert "Editing version 1" in html


def test_a_blind_verifier_is_refused_the_history(world: dict[str, Any]) -> None:
    item = world["make"](2)
    item.status = "draft"
    item.save()
    (solve,) = judgment_task_ensure_defaults(project=world["project"])
    verifier = UserFactory(username="blind-verifier")
    MembershipFactory(project=world["project"], user=verifier, role=Role.ANNOTATOR)
    client = Client()
    client.force_login(verifier)
    TrajectoryVersionFactory(item=item, number=1, data=_document(item))
    for url, method in [
        (_history(item), "get"),
        (_version(item, 1), "get"),
        (_revert(item, 1), "post"),
    ]:
        refused = getattr(client, method)(url)
        assert refused.status_code == 403, url
        text = unescape(refused.content.decode())
        assert "The trajectory history shows this item's reference" in text
        assert "Willow" not in text
    reviewer = UserFactory(username="reviewer-r")
    MembershipFactory(project=world["project"], user=reviewer, role=Role.REVIEWER)
    client.force_login(reviewer)
    assert client.get(_history(item)).status_code == 200  # reviewers are never blind
    assert solve.consensus == "author_plus_two"
