"""m&m's audio inputs: stored once by sha256 (FLAC, WAV, MP3 by their magic bytes, within
MAX_AUDIO_MB), attached by an import that holds them (missing ones counted), written back by
export and releases in m&m's layout (``data/<name>``), played on the item page from a
permission-checked view, and attached by hand with a clear refusal of a bad file."""

from __future__ import annotations

import hashlib
import json
import shutil
import zipfile
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from benchmark.audio import services as audio_services
from benchmark.builtin import toolsets_ensure
from benchmark.datasets.services import dataset_export, dataset_import
from benchmark.exceptions import ValidationFailed
from benchmark.formats import FormatError, mms
from benchmark.formats.audio import AudioRejected, audio_names, inspect_audio
from benchmark.models import AudioFile, Item, ItemStatus, Project
from review.releases.services import release_create
from tests.factories import AudioFileFactory, ItemFactory, ProjectFactory, flac_bytes, wav_bytes

SPEECH = "1284-1180-0003.flac"
PLAN = [
    {"id": 0, "name": "automatic speech recognition", "args": {"audio": SPEECH}},
    {"id": 1, "name": "text summarization", "args": {"text": "<node-0>.text"}},
]
ROWS = [
    {
        "id": 12,
        "user_request": f"Summarize what is said in the audio file '{SPEECH}'.",
        "plan_str": repr(PLAN),
        "code_str": "",
        "alt_plans_str": None,
    },
    {
        "id": 13,
        "user_request": "Transcribe 61-70968-0000.flac.",
        "plan_str": repr(
            [
                {
                    "id": 0,
                    "name": "automatic speech recognition",
                    "args": {"audio": "61-70968-0000.flac"},
                }
            ]
        ),
        "code_str": "",
        "alt_plans_str": None,
    },
]


@pytest.fixture
def project(db: None) -> Project:
    return ProjectFactory(
        name="m&m's audio",
        kind="plan",
        data_format="mms",
        tag_syntax="",
        toolset=toolsets_ensure()["mms"],
    )


def _dataset(root: Path, *, with_audio: bool = True) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "tasks.json").write_text(json.dumps(ROWS))
    if with_audio:  # m&m's own layout: mnms/execution/data/<name>
        data = root / "mnms" / "execution" / "data"
        data.mkdir(parents=True)
        (data / SPEECH).write_bytes(flac_bytes(1))
        (data / "61-70968-0000.flac").write_bytes(flac_bytes(2))
    return root


# --------------------------------------------------------------------------- pure


def test_audio_is_told_by_its_magic_bytes_with_the_duration_where_cheap() -> None:
    flac = inspect_audio(flac_bytes(1, rate=16_000, samples=40_000))
    assert (flac.format, flac.duration_seconds, flac.content_type) == ("flac", 2.5, "audio/flac")
    wav = inspect_audio(wav_bytes(seconds=0.5))
    assert (wav.format, wav.duration_seconds) == ("wav", 0.5)
    assert inspect_audio(b"ID3\x04\x00" + bytes(20)).format == "mp3"
    assert inspect_audio(b"\xff\xfb\x90\x00" + bytes(20)).format == "mp3"
    for bad in (b"\x89PNG\r\n\x1a\n....", b"OggS\x00", b"RIFF\x00\x00\x00\x00AVI "):
        with pytest.raises(AudioRejected, match="not a FLAC, WAV or MP3 file"):
            inspect_audio(bad)
    with pytest.raises(AudioRejected, match="empty"):
        inspect_audio(b"")
    with pytest.raises(AudioRejected, match="limit for audio is 0.0 MB"):
        inspect_audio(flac_bytes(1), max_bytes=10)


def test_an_mms_task_names_its_audio_in_its_input_files_and_plan_arguments() -> None:
    assert audio_names(["a.wav", "x.png"], [PLAN, [{"args": {"audio": "<node-0>.audio"}}]]) == [
        "a.wav",
        SPEECH,
    ]
    record = mms.parse_record(ROWS[0])
    assert record.audio == [SPEECH]


# --------------------------------------------------------------------------- storing


@pytest.mark.django_db
def test_audio_is_stored_once_and_a_bad_or_large_file_is_refused_by_name(settings: Any) -> None:
    first = audio_services.audio_store(data=flac_bytes(7), name="a.flac")
    again = audio_services.audio_store(data=flac_bytes(7), name="b.flac")
    assert first.pk == again.pk and AudioFile.objects.count() == 1
    assert (first.format, first.duration_seconds, first.size_bytes) == ("flac", 2.0, 74)
    with pytest.raises(ValidationFailed, match=r"^notes\.flac: not a FLAC, WAV or MP3 file"):
        audio_services.audio_store(data=b"just text", name="notes.flac")
    settings.BENCHWRIGHT_MAX_AUDIO_BYTES = 50
    with pytest.raises(ValidationFailed, match=r"^big\.flac: file is 0\.0 MB; the limit"):
        audio_services.audio_store(data=flac_bytes(8), name="big.flac")


# --------------------------------------------------------------------------- import, export


@pytest.mark.django_db
def test_import_attaches_the_audio_the_tasks_name_and_export_writes_it_back(
    project: Project, tmp_path: Path
) -> None:
    result = dataset_import(project=project, path=_dataset(tmp_path / "in"))
    assert (result.items_created, result.audio_stored, result.audio_missing) == (2, 2, [])
    assert result.as_dict()["outcome"] == "ok"
    item = Item.objects.get(project=project, external_id="12")
    speech = AudioFile.objects.get(sha256=item.audio_refs[0]["sha256"])
    assert item.audio_refs == [{"sha256": speech.sha256, "path": SPEECH}]
    assert list(speech.projects.all()) == [project]

    written = dataset_export(project=project, out=tmp_path / "out")
    assert [p.name for p in written] == ["tasks.json"]
    assert (tmp_path / "out" / "data" / SPEECH).read_bytes() == flac_bytes(1)
    assert json.loads((tmp_path / "out" / "tasks.json").read_text()) == ROWS

    # The export imports again into another project with the same files.
    fresh = ProjectFactory(
        name="fresh", kind="plan", data_format="mms", tag_syntax="", toolset=project.toolset
    )
    again = dataset_import(project=fresh, path=tmp_path / "out")
    assert (again.items_created, again.audio_missing) == (2, [])
    assert Item.objects.get(project=fresh, external_id="12").audio_refs == item.audio_refs
    assert speech.projects.filter(pk=fresh.pk).exists()


@pytest.mark.django_db
def test_an_import_without_its_audio_counts_it_missing(project: Project, tmp_path: Path) -> None:
    result = dataset_import(project=project, path=_dataset(tmp_path / "in", with_audio=False))
    report = result.as_dict()
    assert (report["audio_missing"], report["outcome"]) == (2, "warnings")
    assert report["audio_missing_paths"] == [SPEECH, "61-70968-0000.flac"]
    item = Item.objects.get(project=project, external_id="12")
    assert item.audio_refs == [{"sha256": "", "path": SPEECH}]
    # The same tasks again with their files: the items already here get them filled in.
    again = dataset_import(project=project, path=_dataset(tmp_path / "full"))
    assert (again.items_created, again.audio_filled, again.audio_missing) == (0, 2, [])
    item.refresh_from_db()
    speech = hashlib.sha256(flac_bytes(1)).hexdigest()
    assert item.audio_refs == [{"sha256": speech, "path": SPEECH}]
    assert AudioFile.objects.get(sha256=speech).projects.filter(pk=project.pk).exists()


@pytest.mark.django_db
def test_an_import_with_a_file_that_is_not_audio_stops_naming_it(
    project: Project, tmp_path: Path
) -> None:
    root = _dataset(tmp_path / "in")
    (root / "mnms" / "execution" / "data" / SPEECH).write_bytes(b"<html>not audio</html>")
    with pytest.raises(FormatError) as caught:
        dataset_import(project=project, path=root)
    assert f"{SPEECH}: not a FLAC, WAV or MP3 file" in str(caught.value)
    assert "12" in str(caught.value)
    assert not project.items.exists() and not AudioFile.objects.exists()


@pytest.mark.django_db
def test_the_web_import_of_a_zip_says_how_many_audio_files_are_missing(
    project: Project,
    users: dict[str, Any],
    client_for: Any,
    tmp_path: Path,
    django_capture_on_commit_callbacks: Any,
) -> None:
    from django.core.files.uploadedfile import SimpleUploadedFile

    root = _dataset(tmp_path / "in", with_audio=False)
    zipped = tmp_path / "tasks.zip"
    with zipfile.ZipFile(zipped, "w") as archive:
        archive.write(root / "tasks.json", "tasks.json")
    client = client_for(users["admin"])
    upload = SimpleUploadedFile("tasks.zip", zipped.read_bytes())
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(f"/projects/{project.pk}/datasets/import/", {"file": upload})
    assert response.status_code == 302
    assert project.items.count() == 2
    html = client.get(response["Location"]).content.decode()
    assert "Done with warnings" in html
    assert "2 audio files missing." in html and SPEECH in html
    assert html.index('id="audio-missing"') < html.index("Items added")


@pytest.mark.django_db
def test_a_release_writes_the_audio_and_a_project_made_from_it_gets_it_back(
    project: Project, tmp_path: Path
) -> None:
    dataset_import(project=project, path=_dataset(tmp_path / "in"))
    project.items.update(status=ItemStatus.VERIFIED)
    release = release_create(project=project, user=None, name="v1", out_dir=tmp_path / "rel")
    root = Path(release.path)
    assert (root / "data" / "data" / SPEECH).read_bytes() == flac_bytes(1)
    assert f"data/data/{SPEECH}" in {f["path"] for f in release.manifest["files"]}
    fresh = ProjectFactory(
        name="from release", kind="plan", data_format="mms", tag_syntax="", toolset=project.toolset
    )
    result = dataset_import(project=fresh, path=root)
    assert (result.items_created, result.audio_missing) == (2, [])
    before = {i.external_id: i.audio_refs for i in project.items.all()}
    assert {i.external_id: i.audio_refs for i in fresh.items.all()} == before
    shutil.rmtree(root)


# --------------------------------------------------------------------------- pages


@pytest.mark.django_db
def test_the_item_page_plays_the_audio_for_members_only(
    project: Project,
    other_project: Project,
    users: dict[str, Any],
    client_for: Any,
    django_assert_max_num_queries: Any,
) -> None:
    audio = AudioFileFactory(projects=[project], data=flac_bytes(1))
    item = ItemFactory(
        project=project,
        external_id="12",
        audio_refs=[{"sha256": audio.sha256, "path": SPEECH}, {"sha256": "", "path": "b.wav"}],
    )
    annotator = client_for(users["annotator"])
    annotator.get(f"/projects/{project.pk}/items/{item.pk}/")  # warm the per-process caches
    with django_assert_max_num_queries(40):
        page = annotator.get(f"/projects/{project.pk}/items/{item.pk}/")
    html = page.content.decode()
    assert f'<audio controls preload="none" src="/audio/{audio.sha256}/">' in html
    assert "b.wav" in html and "Not stored here" in html
    played = annotator.get(f"/audio/{audio.sha256}/")
    assert played.status_code == 200 and played["Content-Type"] == "audio/flac"
    assert b"".join(played.streaming_content) == flac_bytes(1)
    # Another project's user: the file does not exist for them; nor for the anonymous.
    assert client_for(users["outsider"]).get(f"/audio/{audio.sha256}/").status_code == 404
    assert client_for(None).get(f"/audio/{audio.sha256}/").status_code == 302
    other = AudioFileFactory(projects=[other_project])
    assert annotator.get(f"/audio/{other.sha256}/").status_code == 404


@pytest.mark.django_db
def test_attaching_audio_fills_the_missing_file_and_refuses_a_bad_one_by_name(
    project: Project, users: dict[str, Any], client_for: Any, settings: Any
) -> None:
    from django.core.files.uploadedfile import SimpleUploadedFile

    item = ItemFactory(project=project, audio_refs=[{"sha256": "", "path": SPEECH}])
    url = f"/projects/{project.pk}/audio/items/{item.pk}/attach/"
    client: Client = client_for(users["annotator"])
    bad = client.post(url, {"audio": SimpleUploadedFile(SPEECH, b"%PDF-1.4 not audio")})
    assert bad.status_code == 400
    assert f"{SPEECH}: not a FLAC, WAV or MP3 file" in bad.content.decode()
    wrong_name = client.post(url, {"audio": SimpleUploadedFile("speech.txt", flac_bytes(3))})
    assert wrong_name.status_code == 400
    assert "speech.txt: the name must end in .flac, .wav or .mp3" in wrong_name.content.decode()
    assert client.post(url, {}).status_code == 400
    settings.BENCHWRIGHT_MAX_AUDIO_BYTES = 20
    big = client.post(url, {"audio": SimpleUploadedFile(SPEECH, flac_bytes(3))})
    assert big.status_code == 400 and "the limit for audio is" in big.content.decode()
    settings.BENCHWRIGHT_MAX_AUDIO_BYTES = 1_000_000
    item.refresh_from_db()
    assert item.audio_refs == [{"sha256": "", "path": SPEECH}]  # nothing changed

    done = client.post(url, {"audio": SimpleUploadedFile(SPEECH, flac_bytes(3))})
    assert done.status_code == 302
    item.refresh_from_db()
    stored = AudioFile.objects.get()
    assert item.audio_refs == [{"sha256": stored.sha256, "path": SPEECH}]
    assert list(stored.projects.all()) == [project]
    # Another project's admin cannot attach to this item.
    assert client_for(users["outsider"]).post(url, {}).status_code == 404
