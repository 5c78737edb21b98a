"""Records travel with releases: a release holds the tool records and model calls of its items, a fresh
project made by importing the release folder answers the same tool calls from them with no
provider configured, and a bad record stops the import naming its line."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from benchmark.models import Item, ItemStatus, Project
from review.evaluation.models import EvaluationCall, ToolCallRecord
from review.releases.models import Release
from review.releases.services import release_create, release_verify
from tests import evaluation_protocol
from tests.factories import ItemFactory
from tests.llm_server import MODEL, FakeModelServer

pytestmark = pytest.mark.django_db

WORDS = [("apple", "a fruit"), ("pear", "unknown"), ("kiwi", "a bird")]


@pytest.fixture
def source(project: Project, eval_server: FakeModelServer, protocol: Any) -> Project:
    """Three verified ATP-Bench items (their records in ATP-Bench's format, so a release
    exports and imports them), the scripted model looking each one up once."""
    for word, answer in WORDS:
        ItemFactory(
            project=project,
            external_id=word,
            query=word,
            status=ItemStatus.VERIFIED,
            raw=json.dumps({"trace_id": word, "query": word, "answer": answer}),
        )
    return project


def _evaluate(project: Project, server: FakeModelServer, *extra: str) -> list[dict[str, Any]]:
    out = StringIO()
    call_command(
        "evaluate", "--project", project.name, "--model", MODEL, "--base-url", server.url,
        "--items", "all", *extra, stdout=out, stderr=StringIO(),
    )  # fmt: skip
    return [json.loads(line) for line in out.getvalue().splitlines()]


def _items(lines: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [(x["item"], x["status"], x.get("output"), x.get("scores")) for x in lines[:-1]]


def _import(path: Path, name: str) -> dict[str, Any]:
    out = StringIO()
    call_command(
        "import_dataset", "--format", "atp", "--project", name, "--create", str(path),
        stdout=out, stderr=StringIO(),
    )  # fmt: skip
    return dict(json.loads(out.getvalue()))


def _release(project: Project, tmp_path: Path) -> Release:
    return release_create(project=project, user=None, name="v1", out_dir=tmp_path / "release")


def test_a_fresh_project_from_the_release_answers_the_tools_from_its_records(
    source: Project, eval_server: FakeModelServer, tmp_path: Path, settings: Any
) -> None:
    first = _evaluate(source, eval_server)
    provider = evaluation_protocol.LOOKUP_PROVIDER
    assert provider.calls == 3
    release = _release(source, tmp_path)
    root = Path(release.path)
    lines = (root / "tool_records" / "records.jsonl").read_text().splitlines()
    assert [(r["item"], r["name"], r["arguments"], r["output"]["meaning"]) for r in
            map(json.loads, lines)] == [
        ("apple", "lookup", {"q": "apple"}, "a fruit"),
        ("pear", "lookup", {"q": "pear"}, "unknown"),
        ("kiwi", "lookup", {"q": "kiwi"}, "a fruit"),
    ]  # fmt: skip
    assert release.manifest["tool_records"] == {"records": 3, "files": 0}
    assert "tool_records/records.jsonl" in {f["path"] for f in release.manifest["files"]}
    assert release_verify(path=root).ok
    assert "`tool_records/`: the 3 tool records" in (root / "README.md").read_text()

    # Elsewhere: no tool provider at all, a project made from the release folder.
    settings.EVALUATION_TOOL_PROVIDERS = []
    report = _import(root, "Fresh")
    assert (report["items_created"], report["tool_records"]) == (3, 3)
    fresh = Project.objects.get(name="Fresh")
    again = _evaluate(fresh, eval_server)
    assert _items(again) == _items(first)
    assert again[-1]["summary"]["accuracy"] == first[-1]["summary"]["accuracy"]
    assert provider.calls == 3  # not one more call: the records answered
    # Importing the release again adds nothing twice.
    assert _import(root, "Fresh")["tool_records"] == 0
    assert ToolCallRecord.objects.filter(project=fresh).count() == 3


def test_without_the_records_the_same_run_has_no_tool_to_answer(
    source: Project, eval_server: FakeModelServer, tmp_path: Path, settings: Any
) -> None:
    _evaluate(source, eval_server)
    release = _release(source, tmp_path)
    settings.EVALUATION_TOOL_PROVIDERS = []
    report = _import(Path(release.path) / "data", "Data only")  # the items alone
    assert "tool_records" not in report
    lines = _evaluate(Project.objects.get(name="Data only"), eval_server)
    assert {x["status"] for x in lines[:-1]} == {"error"}
    assert "lookup is not available here" in lines[0]["error"]


def test_a_replay_in_the_fresh_project_answers_the_models_calls_from_the_release(
    source: Project, eval_server: FakeModelServer, tmp_path: Path, settings: Any
) -> None:
    """A release carries the model calls its items' evaluations made (the cache --replay
    answers from), keyed again in the project made from it: there, with no model server and
    no tool provider, --replay gives the same per-item results; a call never recorded fails
    naming the model and the item."""
    first = _evaluate(source, eval_server)
    release = _release(source, tmp_path)
    root = Path(release.path)
    calls = [json.loads(line) for line in (root / "model_calls" / "calls.jsonl").read_text()
             .splitlines()]  # fmt: skip
    # Two calls an item (look the word up, then answer), with the messages as keyed.
    assert [c["item"] for c in calls] == ["apple", "apple", "pear", "pear", "kiwi", "kiwi"]
    assert {c["model"] for c in calls} == {MODEL}
    assert calls[0]["messages"][0]["content"][0]["text"] == "apple"
    assert calls[1]["answer"] == "a fruit"
    assert release.manifest["model_calls"] == {"calls": 6}
    assert "model_calls/calls.jsonl" in {f["path"] for f in release.manifest["files"]}
    assert release_verify(path=root).ok
    assert "`model_calls/`: the 6 model calls" in (root / "README.md").read_text()

    settings.EVALUATION_TOOL_PROVIDERS = []
    eval_server.stop()
    report = _import(root, "Fresh")
    assert (report["tool_records"], report["model_calls"]) == (3, 6)
    fresh = Project.objects.get(name="Fresh")
    again = _evaluate(fresh, eval_server, "--replay")
    assert _items(again) == _items(first)
    assert again[-1]["summary"]["accuracy"] == first[-1]["summary"]["accuracy"]
    # A model whose calls were never recorded: the replay names the call it lacks.
    with pytest.raises(CommandError, match=r"no recorded answer of other-model for item apple"):
        call_command(
            "evaluate", "--project", "Fresh", "--model", "other-model", "--base-url",
            eval_server.url, "--items", "all", "--replay", stdout=StringIO(), stderr=StringIO(),
        )  # fmt: skip
    # Importing the release again adds nothing twice.
    assert _import(root, "Fresh")["model_calls"] == 0
    assert EvaluationCall.objects.filter(project=fresh).count() == 6


def test_a_bad_model_call_stops_the_import_naming_its_line(
    source: Project, eval_server: FakeModelServer, tmp_path: Path
) -> None:
    _evaluate(source, eval_server)
    release = _release(source, tmp_path)
    path = Path(release.path) / "model_calls" / "calls.jsonl"
    lines = path.read_text().splitlines()
    changed = json.loads(lines[2])
    changed["messages"] = "not a list"
    path.write_text("\n".join([*lines[:2], json.dumps(changed), *lines[3:]]) + "\n")
    with pytest.raises(CommandError) as caught:
        _import(Path(release.path), "Fresh")
    assert "model_calls/calls.jsonl, record line 3, field 'messages'" in str(caught.value)
    assert not Project.objects.filter(name="Fresh").exists()
    assert not EvaluationCall.objects.exclude(project=source).exists()


def test_a_release_of_items_without_records_has_none(source: Project, tmp_path: Path) -> None:
    release = _release(source, tmp_path)
    assert not (Path(release.path) / "tool_records").exists()
    assert not (Path(release.path) / "model_calls").exists()
    assert release.manifest["tool_records"] == {"records": 0, "files": 0}
    assert release.manifest["model_calls"] == {"calls": 0}
    assert release_verify(path=release.path).ok


def test_only_the_released_items_records_travel(
    source: Project, eval_server: FakeModelServer, tmp_path: Path
) -> None:
    _evaluate(source, eval_server)
    Item.objects.filter(project=source, external_id="pear").update(status=ItemStatus.DRAFT)
    release = _release(source, tmp_path)
    lines = (Path(release.path) / "tool_records" / "records.jsonl").read_text().splitlines()
    assert [json.loads(line)["item"] for line in lines] == ["apple", "kiwi"]


def test_a_bad_record_stops_the_import_naming_it_and_nothing_is_kept(
    source: Project, eval_server: FakeModelServer, tmp_path: Path
) -> None:
    _evaluate(source, eval_server)
    release = _release(source, tmp_path)
    path = Path(release.path) / "tool_records" / "records.jsonl"
    lines = path.read_text().splitlines()
    changed = json.loads(lines[1])
    changed["arguments"] = {"q": "plum"}  # no longer the call its key names
    path.write_text("\n".join([lines[0], json.dumps(changed), lines[2]]) + "\n")
    assert not release_verify(path=release.path).ok  # the checksum says so too
    with pytest.raises(CommandError) as caught:
        _import(Path(release.path), "Fresh")
    assert "tool_records/records.jsonl, record line 2, field 'key'" in str(caught.value)
    assert not Project.objects.filter(name="Fresh").exists()
    assert not ToolCallRecord.objects.exclude(project=source).exists()


def test_a_record_of_an_item_not_in_the_release_is_refused(
    source: Project, eval_server: FakeModelServer, tmp_path: Path
) -> None:
    _evaluate(source, eval_server)
    release = _release(source, tmp_path)
    data = Path(release.path) / "data" / "data.jsonl"
    data.write_text("\n".join(data.read_text().splitlines()[:2]) + "\n")  # kiwi goes
    with pytest.raises(CommandError, match=r"record line 3, field 'item': item 'kiwi' is not"):
        _import(Path(release.path), "Fresh")


def test_the_release_zip_uploaded_to_another_project_brings_its_records(
    source: Project,
    eval_server: FakeModelServer,
    clients: dict[str, Any],
    other_project: Project,
    users: dict[str, Any],
    django_capture_on_commit_callbacks: Any,
) -> None:
    """As a user does it in the browser: download the release's .zip, import it on another
    project's import page."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    from benchmark.models import Job, JobStatus

    _evaluate(source, eval_server)
    release = release_create(project=source, user=None, name="v1")
    detail = clients["admin"].get(f"/projects/{source.pk}/releases/{release.pk}/")
    assert "With the 3 tool records of its items" in detail.content.decode()
    assert "With the 6 model calls its evaluations made" in detail.content.decode()
    download = clients["admin"].get(f"/projects/{source.pk}/releases/{release.pk}/download/")
    assert download.status_code == 200
    data = b"".join(download.streaming_content)
    upload = SimpleUploadedFile("release.zip", data, content_type="application/zip")
    with django_capture_on_commit_callbacks(execute=True):
        clients["outsider"].post(f"/projects/{other_project.pk}/datasets/import/", {"file": upload})
    job = Job.objects.get(project=other_project)
    assert job.status == JobStatus.SUCCEEDED, job.error
    assert (job.result["items_created"], job.result["tool_records"]) == (3, 3)
    assert job.result["model_calls"] == 6
    assert sorted(
        ToolCallRecord.objects.filter(project=other_project).values_list(
            "item__external_id", flat=True
        )
    ) == ["apple", "kiwi", "pear"]
    page = clients["outsider"].get(f"/jobs/{job.pk}/").content.decode()
    assert "Tool records of the release added</dt><dd>3</dd>" in page
    assert "Model calls of the release added</dt><dd>6</dd>" in page


def test_a_records_files_travel_and_load_back_in_the_fresh_project(
    source: Project, tmp_path: Path
) -> None:
    from benchmark.evaluation.base import call_key
    from review.evaluation.records import files_store, items_records_load

    png = b"\x89PNG a downloaded image"
    apple = Item.objects.get(project=source, external_id="apple")
    arguments = {"url": "https://example.org/apple.png"}
    ToolCallRecord.objects.create(
        project=source, item=apple, key=call_key("apple", "download_image", arguments),
        name="download_image",
        request={"item": "apple", "name": "download_image", "arguments": arguments},
        response={"url": arguments["url"]}, files=files_store({"image.png": png}), seconds=0.5,
    )  # fmt: skip
    release = _release(source, tmp_path)
    assert release.manifest["tool_records"] == {"records": 1, "files": 1}
    _import(Path(release.path), "Fresh")
    fresh_apple = Item.objects.get(project__name="Fresh", external_id="apple")
    _, tools = items_records_load(project_id=fresh_apple.project_id, item_ids=[fresh_apple.pk])[
        fresh_apple.pk
    ]
    record = tools.get(call_key("apple", "download_image", arguments))
    assert record is not None
    assert (record.files, record.output, record.seconds) == (
        {"image.png": png},
        {"url": arguments["url"]},
        0.5,
    )
