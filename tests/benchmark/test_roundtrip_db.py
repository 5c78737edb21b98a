"""Every sample file in ../shared/data goes into the database and comes back out the same:
import the benchmark's folder, export it, and compare every data file as JSON values (key order
aside) and every image byte for byte."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmark.builtin import toolsets_ensure
from benchmark.datasets import services
from benchmark.models import Item, Project
from tests.shared_data import SHARED_DATA

pytestmark = pytest.mark.django_db

FORMATS = {
    "atp": ("atp", "interleaved", "atp"),
    "llmi": ("llmi", "interleaved", "llmi"),
    "agentic-mme": ("agentic-mme", "trajectory", ""),
    "mms": ("mms", "plan", ""),
}
NOT_RECORDS = {"tool_metadata.json", "tool_graph.json"}


def _load(path: Path) -> object:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    return json.loads(text)


def _data_files(root: Path) -> list[Path]:
    return sorted(
        p
        for p in root.rglob("*")
        if p.suffix in (".json", ".jsonl", ".txt") and p.name not in NOT_RECORDS
    )


@pytest.mark.parametrize("folder", sorted(FORMATS))
def test_sample_folder_roundtrips_through_the_database(folder: str, tmp_path: Path) -> None:
    fmt, kind, syntax = FORMATS[folder]
    toolset = toolsets_ensure()[fmt]
    project = Project.objects.create(
        name=folder, kind=kind, tag_syntax=syntax, data_format=fmt, toolset=toolset
    )
    source = SHARED_DATA / folder
    result = services.dataset_import(project=project, path=source)
    assert result.items_created > 0
    assert not result.images_missing

    out = tmp_path / "out"
    services.dataset_export(project=project, out=out)
    files = _data_files(source)
    assert files
    for original in files:
        copy = out / original.relative_to(source)
        assert copy.exists(), f"{copy.relative_to(out)} was not exported"
        if original.suffix == ".txt":
            assert copy.read_text().rstrip("\n") == original.read_text().rstrip("\n")
        else:
            assert _load(copy) == _load(original), original.name
    for image in source.rglob("*.png"):
        copy = out / image.relative_to(source)
        assert copy.read_bytes() == image.read_bytes(), image.name

    again = services.dataset_import(project=project, path=source)
    assert again.items_created == 0 and again.attachments_created == 0
    assert Item.objects.filter(project=project).count() == result.items_created


@pytest.mark.parametrize(
    "relative",
    [
        "atp/data.jsonl",
        "llmi/text_only.json",
        "llmi/mm_input.json",
        "llmi/train_sample.json",
        "mms/tasks.json",
        "agentic-mme/json/0003.json",
    ],
)
def test_single_sample_file_roundtrips(relative: str, tmp_path: Path) -> None:
    folder = relative.split("/")[0]
    fmt, kind, syntax = FORMATS[folder]
    project = Project.objects.create(
        name=relative,
        kind=kind,
        tag_syntax=syntax,
        data_format=fmt,
        toolset=toolsets_ensure()[fmt],
    )
    services.dataset_import(project=project, path=SHARED_DATA / relative)
    out = tmp_path / "out"
    services.dataset_export(project=project, out=out)
    exported = out / Path(relative).relative_to(folder)
    assert _load(exported) == _load(SHARED_DATA / relative)


def test_edits_show_up_in_the_export(tmp_path: Path) -> None:
    project = Project.objects.create(
        name="m", kind="plan", data_format="mms", toolset=toolsets_ensure()["mms"]
    )
    services.dataset_import(project=project, path=SHARED_DATA / "mms" / "tasks.json")
    Item.objects.filter(project=project, external_id="9001").update(query="Edited request")
    services.dataset_export(project=project, out=tmp_path / "out")
    rows = {row["id"]: row for row in _load(tmp_path / "out" / "tasks.json")}  # type: ignore[union-attr]
    originals = {row["id"]: row for row in _load(SHARED_DATA / "mms" / "tasks.json")}  # type: ignore[union-attr]
    assert rows[9001]["user_request"] == "Edited request"
    assert {k: v for k, v in rows.items() if k != 9001} == {
        k: v for k, v in originals.items() if k != 9001
    }


def test_a_written_mms_task_with_an_input_image_roundtrips(tmp_path: Path) -> None:
    """An m&m's task written in the app keeps its input image and files through export and
    import: the second export is byte for byte the first, image included."""
    from benchmark.items.services import item_create
    from benchmark.projects.services import project_create
    from tests.factories import UserFactory, png_bytes

    staff = UserFactory(is_staff=True)
    first = project_create(user=staff, name="written", data_format="mms")
    item = item_create(
        project=first,
        user=staff,
        data={
            "query": "Describe the image.",
            "images": [("photo.png", png_bytes(3))],
            "input_files": "song.mp3",
        },
    )
    assert item.modality == "image"
    services.dataset_export(project=first, out=tmp_path / "one")
    files = sorted(p.relative_to(tmp_path / "one") for p in (tmp_path / "one").rglob("*.*"))
    assert len(files) == 2 and files[1].name == "tasks.json"

    second = project_create(user=staff, name="again", data_format="mms")
    result = services.dataset_import(project=second, path=tmp_path / "one")
    assert (result.items_created, result.warnings) == (1, [])
    copy = Item.objects.get(project=second)
    assert copy.image_refs == item.image_refs and copy.constraints == item.constraints
    services.dataset_export(project=second, out=tmp_path / "two")
    for rel in files:
        assert (tmp_path / "two" / rel).read_bytes() == (tmp_path / "one" / rel).read_bytes()
