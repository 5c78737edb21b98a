"""Import and export through the services: all or nothing, no duplicates, images by hash."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import Image as PILImage

from benchmark.datasets import services as dataset_services
from benchmark.formats import FormatError
from benchmark.jobs import services as job_services
from benchmark.jobs.tasks import job_task
from benchmark.models import Image, Item, Job, JobStatus, Project, Response, Toolset

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _media(settings, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    settings.MEDIA_ROOT = tmp_path / "media"


@pytest.fixture
def project() -> Project:
    toolset = Toolset.objects.create(name="atp-test")
    return Project.objects.create(
        name="p", kind="interleaved", tag_syntax="atp", data_format="atp", toolset=toolset
    )


def _row(i: int, **over: object) -> dict[str, object]:
    row: dict[str, object] = {
        "trace_id": f"t{i}",
        "query": f"How does thing {i} work?",
        "image_query": None,
        "doc": [{"text": "Some text.", "images": ["images/a.png"]}],
        "images": ["images/a.png"],
        "gt": 'It works.\n\n<tool>{"tool_name": "Reference", "description": "d", '
        '"params": {"img_index": 0}}</tool>',
        "category": "Academic",
        "intent": "Framework",
        "extra_unknown_field": {"kept": [1, None, "x"]},
    }
    row.update(over)
    return row


def _write(folder: Path, rows: list[dict[str, object]], *, image: bool = True) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    if image:
        (folder / "images").mkdir(exist_ok=True)
        PILImage.new("RGB", (8, 6), "red").save(folder / "images" / "a.png")
    path = folder / "data.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_import_creates_items_responses_and_one_image(project: Project, tmp_path: Path) -> None:
    path = _write(tmp_path / "d", [_row(1), _row(2)])
    result = dataset_services.dataset_import(project=project, path=path)
    assert result.items_created == 2
    assert Item.objects.filter(project=project).count() == 2
    assert Response.objects.filter(item__project=project, key="gt").count() == 2
    assert Image.objects.count() == 1  # the same bytes are stored once
    image = Image.objects.get()
    assert (image.width, image.height) == (8, 6)
    assert list(image.projects.all()) == [project]
    item = Item.objects.get(external_id="t1")
    assert item.image_refs[0]["sha256"] == image.sha256
    assert item.raw_record["extra_unknown_field"] == {"kept": [1, None, "x"]}


def test_reimport_adds_no_duplicates(project: Project, tmp_path: Path) -> None:
    path = _write(tmp_path / "d", [_row(1), _row(2)])
    dataset_services.dataset_import(project=project, path=path)
    again = dataset_services.dataset_import(project=project, path=path)
    assert (again.items_created, again.items_skipped) == (0, 2)
    assert Item.objects.count() == 2
    assert Response.objects.count() == 2


def test_bad_record_imports_nothing_and_names_the_record(project: Project, tmp_path: Path) -> None:
    rows = [_row(1), _row(2)]
    path = _write(tmp_path / "d", rows)
    with path.open("a") as fh:
        fh.write('{"trace_id": "t3", "query": \n')  # a broken last line
    with pytest.raises(FormatError) as err:
        dataset_services.dataset_import(project=project, path=path)
    assert "3" in str(err.value)  # the line / record is named
    assert Item.objects.count() == 0
    assert Response.objects.count() == 0


def test_same_id_twice_in_one_file_is_refused(project: Project, tmp_path: Path) -> None:
    path = _write(tmp_path / "d", [_row(1), _row(1)])
    with pytest.raises(FormatError, match="twice|duplicate"):
        dataset_services.dataset_import(project=project, path=path)
    assert Item.objects.count() == 0


def test_missing_image_is_a_warning_not_a_crash(project: Project, tmp_path: Path) -> None:
    path = _write(tmp_path / "d", [_row(1)], image=False)
    result = dataset_services.dataset_import(project=project, path=path)
    assert result.items_created == 1
    assert "images/a.png" in result.images_missing
    assert Item.objects.get().image_refs[0]["sha256"] is None


def test_reimport_with_the_images_fills_in_the_missing_ones(
    project: Project, tmp_path: Path
) -> None:
    """An import that dropped every image says so (not a plain success); importing the same
    records again with their images fills them in on the items already present."""
    first = dataset_services.dataset_import(
        project=project, path=_write(tmp_path / "a", [_row(1), _row(2)], image=False)
    )
    assert first.images_missing == ["images/a.png"]
    assert first.as_dict()["outcome"] == "warnings"
    assert first.as_dict()["images_missing"] == 1
    again = dataset_services.dataset_import(
        project=project, path=_write(tmp_path / "b", [_row(1), _row(2)])
    )
    assert (again.items_created, again.items_skipped) == (0, 2)
    assert (again.items_filled, again.images_filled) == (2, 2)
    assert again.images_missing == []
    assert again.as_dict()["outcome"] == "ok"
    sha = Image.objects.get().sha256
    for item in Item.objects.all():
        assert {ref["sha256"] for ref in item.image_refs} == {sha}
    assert list(Image.objects.get().projects.all()) == [project]
    # A third import has nothing left to fill in.
    third = dataset_services.dataset_import(
        project=project, path=_write(tmp_path / "c", [_row(1), _row(2)])
    )
    assert (third.items_filled, third.images_filled, third.images_stored) == (0, 0, 0)


def test_images_alone_fill_in_what_an_import_left_out(project: Project, tmp_path: Path) -> None:
    """An upload of images only (any folder layout) attaches each to the items that name it
    by path and were imported without it; still-missing images are counted."""
    rows = [_row(1), _row(2, images=["images/b.png"], doc=[])]
    dataset_services.dataset_import(project=project, path=_write(tmp_path / "a", rows, image=False))
    upload = tmp_path / "upload" / "pictures"
    upload.mkdir(parents=True)
    PILImage.new("RGB", (8, 6), "red").save(upload / "a.png")  # by file name
    PILImage.new("RGB", (4, 4), "blue").save(upload / "unrelated.png")
    result = dataset_services.dataset_images_attach(project=project, path=tmp_path / "upload")
    assert (result.items_created, result.items_skipped) == (0, 0)
    assert (result.items_filled, result.images_filled, result.images_stored) == (1, 1, 1)
    assert result.images_missing == ["images/b.png"]
    assert result.as_dict()["outcome"] == "warnings"
    t1, t2 = Item.objects.get(external_id="t1"), Item.objects.get(external_id="t2")
    assert t1.image_refs[0]["sha256"] == Image.objects.get().sha256
    assert t2.image_refs[0]["sha256"] is None
    assert list(Image.objects.get().projects.all()) == [project]


def test_non_image_file_is_refused_with_its_name(project: Project, tmp_path: Path) -> None:
    path = _write(tmp_path / "d", [_row(1)], image=False)
    (tmp_path / "d" / "images").mkdir()
    (tmp_path / "d" / "images" / "a.png").write_text("not a picture")
    with pytest.raises(FormatError) as err:
        dataset_services.dataset_import(project=project, path=path)
    assert "images/a.png" in str(err.value)
    assert Item.objects.count() == 0


def test_export_roundtrips_and_carries_edits(project: Project, tmp_path: Path) -> None:
    rows = [_row(1), _row(2, image_query="images/a.png")]
    path = _write(tmp_path / "d", rows)
    dataset_services.dataset_import(project=project, path=path)
    Item.objects.filter(external_id="t2").update(category="Lifestyle", status="verified")

    out = tmp_path / "out" / "data.jsonl"
    dataset_services.dataset_export(project=project, out=out)
    exported = [json.loads(line) for line in out.read_text().splitlines()]
    assert exported[0] == rows[0]
    assert exported[1] == {**rows[1], "category": "Lifestyle"}
    assert (tmp_path / "out" / "images" / "a.png").read_bytes() == (
        tmp_path / "d" / "images" / "a.png"
    ).read_bytes()

    only = tmp_path / "verified" / "data.jsonl"
    dataset_services.dataset_export(project=project, out=only, status="verified")
    assert [json.loads(line)["trace_id"] for line in only.read_text().splitlines()] == ["t2"]


def test_export_refuses_unknown_status(project: Project, tmp_path: Path) -> None:
    from benchmark.exceptions import ValidationFailed

    with pytest.raises(ValidationFailed, match="unknown status"):
        dataset_services.dataset_export(project=project, out=tmp_path / "x.jsonl", status="nope")


def test_import_task_records_result_and_is_idempotent(project: Project, tmp_path: Path) -> None:
    path = _write(tmp_path / "d", [_row(1), _row(2)])
    job = job_services.job_create(
        kind="import", project=project, params={"project_id": project.pk, "path": str(path)}
    )
    job_task(job.pk)
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED
    assert (job.progress, job.total) == (2, 2)
    assert job.result["items_created"] == 2
    job_task(job.pk)  # a repeated delivery changes nothing
    assert Item.objects.count() == 2
    assert Job.objects.get(pk=job.pk).result["items_created"] == 2


def test_import_task_reports_a_bad_file_on_the_job(project: Project, tmp_path: Path) -> None:
    path = tmp_path / "data.jsonl"
    path.write_text('{"trace_id": "x"}\nnot json\n')
    job = job_services.job_create(
        kind="import", project=project, params={"project_id": project.pk, "path": str(path)}
    )
    job_task(job.pk)
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert "data.jsonl" in job.error
    assert Item.objects.count() == 0


def test_import_task_removes_the_uploaded_folder(project: Project, settings) -> None:  # type: ignore[no-untyped-def]
    job = job_services.job_create(kind="import", project=project)
    folder = Path(settings.MEDIA_ROOT) / "imports" / str(job.pk)  # the job's upload folder
    path = _write(folder, [_row(1)])
    job.params = {"project_id": project.pk, "path": str(path)}
    job.save()
    job_task(job.pk)
    job.refresh_from_db()
    assert job.status == JobStatus.SUCCEEDED
    assert not folder.exists()
    assert Item.objects.filter(project=project).count() == 1


def test_reimport_fills_in_the_tool_images_of_an_agent_run(tmp_path: Path) -> None:
    """An Agentic-MME folder imported without its images (the input images and a recorded
    run's tool images): importing the whole folder again fills in both."""
    import shutil

    from benchmark.builtin import toolsets_ensure
    from benchmark.models import Trajectory

    demo = Path(__file__).resolve().parents[2] / "review" / "demo" / "agentic-mme"
    bare = tmp_path / "bare"
    shutil.copytree(demo, bare)
    shutil.rmtree(bare / "images")
    shutil.rmtree(bare / "runs" / "demo03" / "tool_images")
    project = Project.objects.create(
        name="mme",
        kind="trajectory",
        data_format="agentic-mme",
        toolset=toolsets_ensure()["agentic-mme"],
    )
    first = dataset_services.dataset_import(project=project, path=bare)
    run = Trajectory.objects.get(item__project=project, key__startswith="run:")
    assert run.image_refs and not any(r["sha256"] for r in run.image_refs)
    assert len(first.images_missing) == 4 + len(run.image_refs)
    again = dataset_services.dataset_import(project=project, path=demo)
    assert again.items_created == 0 and again.images_missing == []
    assert again.images_filled == len(first.images_missing)
    assert again.items_filled == 4
    run.refresh_from_db()
    assert all(r["sha256"] for r in run.image_refs)
    assert all(r["sha256"] for item in project.items.all() for r in item.image_refs)
