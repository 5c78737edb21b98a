"""An m&m's item's audio files wherever its images are: the REST API lists them with the
item (sha256, name, kind, size and the permission-checked URL; the same visibility rule as
images) and attaches one (``POST /api/items/<id>/audio/``); the judging page and the plan
editor play them; and attaching one, from the item page or the API, is a new version of the
item like any other edit."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from benchmark.builtin import toolsets_ensure
from benchmark.items.selectors import item_versions
from benchmark.models import AudioFile, Item, Membership, Project, Role
from tests.factories import (
    AudioFileFactory,
    ItemFactory,
    JudgmentTaskFactory,
    PlanFactory,
    ProjectFactory,
    flac_bytes,
)

pytestmark = pytest.mark.django_db

SPEECH = "1284-1180-0003.flac"
MISSING = "61-70968-0000.flac"


@pytest.fixture
def mms(users: dict[str, Any]) -> Project:
    project = ProjectFactory(
        name="m&m's audio", kind="plan", data_format="mms", tag_syntax="",
        toolset=toolsets_ensure()["mms"],
    )  # fmt: skip
    for role in ("admin", "reviewer", "annotator"):
        Membership.objects.create(project=project, user=users[role], role=Role(role))
    return project


@pytest.fixture
def item(mms: Project) -> Item:
    audio = AudioFileFactory(projects=[mms])
    return ItemFactory(
        project=mms,
        external_id="12",
        query=f"Summarize what is said in the audio file '{SPEECH}'.",
        audio_refs=[{"sha256": audio.sha256, "path": SPEECH}, {"sha256": "", "path": MISSING}],
    )


def test_the_api_lists_the_items_audio_like_its_images(
    item: Item, clients: dict[str, Client], client_for: Any, users: dict[str, Any]
) -> None:
    audio = AudioFile.objects.get()
    body = clients["annotator"].get(reverse("item-detail", args=[item.pk])).json()
    assert body["audio_files"] == [
        {
            "name": SPEECH,
            "sha256": audio.sha256,
            "kind": "flac",
            "size": audio.size_bytes,
            "url": f"http://testserver/audio/{audio.sha256}/",
        },
        {"name": MISSING, "sha256": None, "kind": None, "size": None, "url": None},
    ]
    assert clients["annotator"].get(f"/audio/{audio.sha256}/").status_code == 200
    listed = clients["annotator"].get(reverse("item-list"), {"project": item.project_id}).json()
    assert [row["n_audio"] for row in listed["results"]] == [2]
    # Another project's member: the item (and so its audio) does not exist for them.
    outsider = client_for(users["outsider"])
    assert outsider.get(reverse("item-detail", args=[item.pk])).status_code == 404
    assert outsider.get(f"/audio/{audio.sha256}/").status_code == 404
    # The schema describes the field and the attach action.
    schema = clients["annotator"].get(reverse("schema"), {"format": "json"}).json()
    assert "audio_files" in schema["components"]["schemas"]["ItemDetail"]["properties"]
    assert "post" in schema["paths"]["/api/items/{id}/audio/"]


def test_the_api_attaches_audio_as_a_new_version(
    item: Item, clients: dict[str, Client], client_for: Any, users: dict[str, Any]
) -> None:
    url = reverse("item-audio", args=[item.pk])
    client = clients["annotator"]
    bad = client.post(url, {"file": SimpleUploadedFile(MISSING, b"%PDF-1.4 not audio")})
    assert bad.status_code == 400
    assert f"{MISSING}: not a FLAC, WAV or MP3 file" in bad.content.decode()
    assert client.post(url, {}).status_code == 400
    item.refresh_from_db()
    assert item.audio_refs[1] == {"sha256": "", "path": MISSING}  # nothing changed
    assert not item.versions.exists()

    done = client.post(url, {"file": SimpleUploadedFile(MISSING, flac_bytes(7))})
    assert done.status_code == 201, done.content
    stored = AudioFile.objects.get(sha256__in=[r["sha256"] for r in done.json()["audio_files"]][1:])
    assert done.json()["version"] == 2
    assert done.json()["audio_files"][1] == {
        "name": MISSING,
        "sha256": stored.sha256,
        "kind": "flac",
        "size": stored.size_bytes,
        "url": f"http://testserver/audio/{stored.sha256}/",
    }
    item.refresh_from_db()
    assert item.audio_refs[1] == {"sha256": stored.sha256, "path": MISSING}
    # The same file again changes nothing: no new version.
    again = client.post(url, {"file": SimpleUploadedFile(MISSING, flac_bytes(7))})
    assert again.status_code == 201 and again.json()["version"] is None
    assert item.versions.count() == 2
    # Another project's admin: the item does not exist for them.
    outsider = client_for(users["outsider"])
    files = {"file": SimpleUploadedFile(MISSING, flac_bytes(8))}
    assert outsider.post(url, files).status_code == 404


def test_attaching_audio_on_the_item_page_is_a_version_that_can_be_reverted(
    item: Item, clients: dict[str, Client], users: dict[str, Any]
) -> None:
    url = reverse("benchmark:audio_attach", args=[item.project_id, item.pk])
    response = clients["annotator"].post(url, {"audio": SimpleUploadedFile("new.wav", _wav())})
    assert response.status_code == 302
    item.refresh_from_db()
    assert [r["path"] for r in item.audio_refs] == [SPEECH, MISSING, "new.wav"]
    rows = item_versions(user=users["annotator"], item=item)
    assert [r.number for r in rows] == [2, 1]
    newest = rows[0]
    assert newest.author == users["annotator"].get_username()
    assert newest.note == "Attached audio new.wav" and newest.current
    assert [c.name for c in newest.changes] == ["audio_refs"]
    # Reverting to version 1 takes the file off again (as a third version).
    from benchmark.items.services import item_revert

    item_revert(item=item, user=users["annotator"], number=1, base_version=2)
    item.refresh_from_db()
    assert [r["path"] for r in item.audio_refs] == [SPEECH, MISSING]
    assert item.versions.count() == 3


def _wav() -> bytes:
    from tests.factories import wav_bytes

    return wav_bytes(3)


def test_the_judging_page_and_the_plan_editor_play_the_items_audio(
    item: Item, mms: Project, clients: dict[str, Client]
) -> None:
    audio = AudioFile.objects.get()
    player = f'<audio controls preload="none" src="/audio/{audio.sha256}/">{SPEECH}</audio>'
    task = JudgmentTaskFactory(project=mms)
    judging = clients["reviewer"].get(reverse("annotation:judge", args=[task.pk, item.pk]))
    assert judging.status_code == 200
    html = judging.content.decode()
    assert player in html and MISSING in html and "Not stored here." in html
    PlanFactory(item=item, key="gold", steps=[{"id": 0, "name": "text summarization"}])
    editor = clients["annotator"].get(reverse("annotation:plan_edit", args=[mms.pk, item.pk]))
    assert editor.status_code == 200
    assert player in editor.content.decode()
    # No inline script or style for the player (Content-Security-Policy).
    assert "<audio controls" in html and 'style="' not in html.split("data-item-audio", 1)[1][:600]
