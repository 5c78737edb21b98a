"""A release written with Parquet loads with the Hugging Face ``datasets`` library: for each
of the four benchmarks, typed columns, one row per item and the images as ``Image`` features of
the right size; a record of irregular shape still loads (its column as JSON text); the card's
``configs`` points ``datasets`` at the files; and release_verify catches a changed byte."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from benchmark.datasets.services import dataset_import
from benchmark.models import Project, ProjectKind
from review.releases.models import Release
from review.releases.services import release_create, release_verify
from tests.factories import ProjectFactory, png_bytes

pytestmark = pytest.mark.django_db

SIZES = {"a": (40, 30), "b": (20, 12), "q": (33, 17), "m": (50, 40)}


@pytest.fixture(scope="module")
def hf(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The ``datasets`` library, offline, with a cache of this module's own (imported once:
    it is slow to import)."""
    mp = pytest.MonkeyPatch()
    mp.setenv("HF_DATASETS_OFFLINE", "1")
    mp.setenv("HF_HUB_OFFLINE", "1")
    mp.setenv("HF_HOME", str(tmp_path_factory.mktemp("hf-home")))
    datasets = pytest.importorskip("datasets")
    datasets.disable_progress_bars()
    datasets.cache_dir = str(tmp_path_factory.mktemp("hf-cache"))  # type: ignore[attr-defined]
    yield datasets
    mp.undo()


def _load(hf: Any, root: Path, **kwargs: Any) -> Any:
    return hf.load_dataset(
        "parquet",
        data_dir=str(root / "parquet"),
        split="train",
        cache_dir=hf.cache_dir,
        **kwargs,
    )


def _images(folder: Path, *names: str) -> None:
    (folder / "images").mkdir(parents=True, exist_ok=True)
    for n, name in enumerate(names):
        (folder / "images" / f"{name}.png").write_bytes(png_bytes(n + 1, size=SIZES[name]))


def _dump(path: Path, value: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=2))


def _atp(folder: Path, *, irregular: bool = False) -> Path:
    _images(folder, "a", "b", "q")
    rows: list[dict[str, Any]] = [
        {
            "trace_id": "atp_1",
            "query": "How does the framework work?",
            "image_query": None,
            "doc": [{"text": "Figure 1 shows it.", "images": ["images/a.png", "images/b.png"]}],
            "images": ["images/a.png", "images/b.png"],
            "gt": 'It works so.\n\n<tool>{"tool_name": "Reference", "params": '
            '{"img_index": 1}}</tool>',
            "category": "Academic",
            "intent": "Framework",
        },
        {
            "trace_id": "atp_2",
            "query": "What is on this sign?",
            "image_query": "images/q.png",
            "doc": "A plain-text document." if irregular else [],
            "images": [],
            "gt": "A street name.",
            "category": "Travel",
            "intent": "Identification",
        },
    ]
    if irregular:
        rows[0]["source_url"] = "https://example.org/paper"
    (folder / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


def _mms(folder: Path) -> Path:
    _images(folder, "a")
    plan = "[{'id': 0, 'name': 'image captioning', 'args': {'image': 'images/a.png'}}]"
    _dump(
        folder / "tasks.json",
        [
            {
                "id": 101,
                "user_request": "Describe images/a.png.",
                "plan_str": plan,
                "code_str": "def solve():\n    return {0: image_captioning(image='a.png')}\n",
                "alt_plans_str": None,
                "images": ["images/a.png"],
            },
            {
                "id": 102,
                "user_request": "Write a poem about the sea, then read it aloud.",
                "plan_str": "[{'id': 0, 'name': 'text generation', 'args': {'text': 'a poem'}},"
                " {'id': 1, 'name': 'text to speech', 'args': {'text': '<node-0>.text'}}]",
                "code_str": "",
                "alt_plans_str": "[[{'id': 0, 'name': 'text generation', 'args': {'text': 'x'}}]]",
            },
        ],
    )
    return folder / "tasks.json"


def _agentic(folder: Path) -> Path:
    _images(folder, "m")
    _dump(
        folder / "json" / "0001.json",
        {
            "task_id": "0001",
            "meta": {"level": 2, "domain": "Life", "turncase": "single_turn"},
            "input": {"prompt": "What street? Answer with the name.", "image": "images/m.png"},
            "golden_answer": {"value": "Willow St", "match_type": "contains"},
            "process_evaluation": {
                "checkpoints": [
                    {
                        "id": "C1",
                        "axis": "V",
                        "description": "Crop the sign.",
                        "tools": ["crop"],
                        "code_check": {"verifier": "verify_crop_ast", "bbox_2d": [1, 2, 30, 20]},
                    },
                    {
                        "id": "C2",
                        "axis": "S",
                        "description": "Search the street.",
                        "tools": ["search"],
                        "search_check": {"keywords": ["willow"]},
                    },
                ],
                "ordering_constraints": [{"id": "O1", "sequence": ["C1", "C2"], "max_gap": 2}],
                "efficiency": {
                    "reference_tool_calls": 2,
                    "penalty_per_extra_call": 0.1,
                    "max_tool_calls": 8,
                },
            },
        },
    )
    return folder


def _llmi(folder: Path) -> Path:
    _images(folder, "a", "m")
    _dump(
        folder / "mm_input.json",
        [
            {
                "prompt": "Plan a room like this one.",
                "r1": "Shows a floor plan.",
                "r2": "Names three pieces.",
                "images": ["images/m.png", "images/a.png"],
            }
        ],
    )
    _dump(folder / "text_only.json", [{"prompt": "Explain tides.", "r1": "Mentions the moon."}])
    return folder


# format -> (kind, writer, items, checks on the loaded dataset)
def _check_atp(hf: Any, ds: Any) -> None:
    f = ds.features
    assert f["images"] == hf.List(hf.Image()) and f["image_query"] == hf.Image()
    assert f["doc"] == hf.List({"text": hf.Value("string"), "images": hf.List(hf.Value("string"))})
    assert ds[0]["doc"][0]["images"] == ["images/a.png", "images/b.png"]
    assert [im.size for im in ds[0]["images"]] == [SIZES["a"], SIZES["b"]]
    assert ds[0]["image_query"] is None and ds[1]["image_query"].size == SIZES["q"]
    assert ds[1]["category"] == "Travel" and ds[0]["gt"].startswith("It works so.")


def _check_mms(hf: Any, ds: Any) -> None:
    f = ds.features
    assert f["id"] == hf.Value("int64") and ds["id"] == [101, 102]
    step = {"id": hf.Value("int64"), "name": hf.Value("string"), "args": hf.Value("string")}
    assert f["plan"] == hf.List(step) and f["alt_plans"] == hf.List(hf.List(step))
    assert [s["name"] for s in ds[1]["plan"]] == ["text generation", "text to speech"]
    assert json.loads(ds[1]["plan"][1]["args"]) == {"text": "<node-0>.text"}
    assert len(ds[1]["alt_plans"]) == 1 and ds[0]["alt_plans"] == []
    assert ds[0]["images"][0].size == SIZES["a"] and ds[1]["images"] == []


def _check_agentic(hf: Any, ds: Any) -> None:
    f = ds.features
    assert f["level"] == hf.Value("int64") and ds[0]["level"] == 2
    assert f["efficiency"]["penalty_per_extra_call"] == hf.Value("float64")
    assert f["accepted_variants"] == hf.List(hf.Value("string"))
    row = ds[0]
    assert row["answer"] == "Willow St" and row["images"][0].size == SIZES["m"]
    assert [c["tools"] for c in row["checkpoints"]] == [["crop"], ["search"]]
    assert json.loads(row["checkpoints"][1]["checks"]) == {"search_check": {"keywords": ["willow"]}}
    assert row["ordering_constraints"][0]["sequence"] == ["C1", "C2"]


def _check_llmi(hf: Any, ds: Any) -> None:
    f = ds.features
    assert f["rubric"] == hf.List({"key": hf.Value("string"), "text": hf.Value("string")})
    rows = {r["id"]: r for r in ds}
    image_row = rows["mm_input#1"]
    assert [c["key"] for c in image_row["rubric"]] == ["r1", "r2"]
    assert [im.size for im in image_row["images"]] == [SIZES["m"], SIZES["a"]]
    assert rows["text_only#1"]["images"] == [] and rows["text_only#1"]["prompt"] == "Explain tides."


CASES = {
    "atp": (ProjectKind.INTERLEAVED, _atp, 2, _check_atp),
    "mms": (ProjectKind.PLAN, _mms, 2, _check_mms),
    "agentic-mme": (ProjectKind.TRAJECTORY, _agentic, 1, _check_agentic),
    "llmi": (ProjectKind.INTERLEAVED, _llmi, 2, _check_llmi),
}


def _project(fmt: str, tmp_path: Path, **kwargs: Any) -> Project:
    kind, write, _, _ = CASES[fmt]
    project = ProjectFactory(kind=kind, data_format=fmt)
    result = dataset_import(project=project, path=write(tmp_path / "source", **kwargs))
    assert result.items_created == CASES[fmt][2] and not result.warnings, result.warnings
    return project


@pytest.mark.parametrize("fmt", list(CASES))
def test_a_parquet_release_loads_with_datasets(hf: Any, fmt: str, tmp_path: Path) -> None:
    project = _project(fmt, tmp_path)
    release = release_create(project=project, user=None, name="v1", status=None, parquet=True)
    root = Path(release.path)
    count = CASES[fmt][2]
    assert release.parquet and release.item_count == count
    assert release.manifest["parquet"]["rows"] == count
    assert release.manifest["parquet"]["files"] == ["parquet/train-00000-of-00001.parquet"]
    listed = {f["path"] for f in release.manifest["files"]}
    assert "parquet/train-00000-of-00001.parquet" in listed
    assert release_verify(path=root).ok

    ds = _load(hf, root)
    assert ds.num_rows == count
    CASES[fmt][3](hf, ds)
    # The card's YAML header describes the same features the files carry.
    import yaml  # comes with datasets

    card = (root / "README.md").read_text()
    header = yaml.safe_load(card.split("---\n")[1])
    assert header["configs"][0]["data_files"] == [
        {"split": "train", "path": "parquet/train-*.parquet"}
    ]
    assert hf.Features._from_yaml_list(header["dataset_info"]["features"]) == ds.features
    (split,) = header["dataset_info"]["splits"]
    assert split["name"] == "train" and split["num_examples"] == count and split["num_bytes"] > 0
    assert "## Parquet" in card


def test_the_card_points_datasets_at_the_parquet_files(hf: Any, tmp_path: Path) -> None:
    """``load_dataset(<release folder>)`` reads the card's ``configs`` and
    ``dataset_info.features``: only the Parquet rows load, typed as in the files."""
    project = _project("atp", tmp_path)
    root = Path(
        release_create(project=project, user=None, name="v1", status=None, parquet=True).path
    )
    ds = hf.load_dataset(str(root), split="train", cache_dir=hf.cache_dir)
    assert ds.num_rows == 2 and ds.features == _load(hf, root).features
    assert ds[0]["images"][1].size == SIZES["b"]


def test_an_irregular_record_still_loads(hf: Any, tmp_path: Path) -> None:
    """One ATP record's ``doc`` is a plain string, another has a key no column names: ``doc``
    becomes JSON text (the card says so) and the key lands in ``extra``."""
    project = _project("atp", tmp_path, irregular=True)
    release = release_create(project=project, user=None, name="v1", status=None, parquet=True)
    root = Path(release.path)
    ds = _load(hf, root)
    assert ds.num_rows == 2 and ds.features["doc"] == hf.Value("string")
    assert json.loads(ds[1]["doc"]) == "A plain-text document."
    assert json.loads(ds[0]["doc"])[0]["images"] == ["images/a.png", "images/b.png"]
    assert json.loads(ds[0]["extra"]) == {"source_url": "https://example.org/paper"}
    assert ds[1]["extra"] is None
    assert ds.features["images"] == hf.List(hf.Image())  # still typed
    assert release.manifest["parquet"]["json_text_columns"] == ["doc"]
    assert "these columns are JSON text" in (root / "README.md").read_text()


def test_verify_catches_a_changed_byte_in_the_parquet_file(tmp_path: Path) -> None:
    project = _project("mms", tmp_path)
    out = tmp_path / "cli"
    stdout = StringIO()
    call_command(
        "release",
        "--project",
        project.name,
        "--name",
        "v1",
        "--status",
        "all",
        "--parquet",
        str(out),
        stdout=stdout,
    )
    assert Release.objects.get(project=project).parquet
    shard = out / "parquet" / "train-00000-of-00001.parquet"
    assert release_verify(path=out).ok
    original = shard.read_bytes()
    middle = len(original) // 2
    shard.write_bytes(original[:middle] + bytes([original[middle] ^ 1]) + original[middle + 1 :])
    problems = release_verify(path=out).problems
    assert problems[0] == "parquet/train-00000-of-00001.parquet: sha256 differs from the manifest"
    shard.write_bytes(original)
    assert release_verify(path=out).ok


def test_shards_are_bounded_and_named_for_datasets(hf: Any, tmp_path: Path) -> None:
    from benchmark.formats import ItemRecord, get_format
    from benchmark.formats.hf_parquet import write_parquet

    source = _atp(tmp_path / "atp")
    items = [r for r in get_format("atp").read(source) if isinstance(r, ItemRecord)]
    result = write_parquet(
        "atp", items, data_root=source, out_dir=tmp_path / "parquet", max_shard_bytes=1
    )
    assert [f.name for f in result.files] == [
        "train-00000-of-00002.parquet",
        "train-00001-of-00002.parquet",
    ]
    ds = hf.load_dataset(
        "parquet", data_dir=str(tmp_path / "parquet"), split="train", cache_dir=hf.cache_dir
    )
    assert ds["trace_id"] == ["atp_1", "atp_2"]


def test_the_new_release_form_writes_parquet(
    project: Project, clients: dict[str, Client], tmp_path: Path
) -> None:
    url = reverse("review:release_list", kwargs={"project_id": project.pk})
    page = clients["reviewer"].get(url).content.decode()
    assert 'name="parquet"' in page
    _atp(tmp_path / "src")
    dataset_import(project=project, path=tmp_path / "src")
    clients["reviewer"].post(url, {"name": "With parquet", "status": "all", "parquet": "on"})
    release = Release.objects.get(project=project)
    assert release.parquet and (Path(release.path) / "parquet").is_dir()
    detail = reverse("review:release_detail", kwargs={"project_id": project.pk, "pk": release.pk})
    body = clients["reviewer"].get(detail).content.decode()
    assert "data-release-parquet" in body and "2 rows" in body
    clients["reviewer"].post(url, {"name": "Without", "status": "all"})
    assert not Release.objects.get(project=project, name="Without").parquet


def test_a_large_release_job_writes_parquet_too(
    project: Project,
    clients: dict[str, Client],
    tmp_path: Path,
    monkeypatch: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    from benchmark.models import Job, JobStatus
    from review.releases import services

    monkeypatch.setattr(services, "RELEASE_JOB_MIN_ITEMS", 2)
    dataset_import(project=project, path=_atp(tmp_path / "src"))
    url = reverse("review:release_list", kwargs={"project_id": project.pk})
    with django_capture_on_commit_callbacks(execute=True):
        clients["reviewer"].post(url, {"name": "Big", "status": "all", "parquet": "on"})
    job = Job.objects.get(kind=services.RELEASE_KIND)
    assert job.status == JobStatus.SUCCEEDED, job.error
    release = Release.objects.get(project=project, name="Big")
    assert release.parquet and release.manifest["parquet"]["rows"] == 2


# --------------------------------------------------------------------------- every demo


def _card_header(root: Path) -> dict[str, Any]:
    import yaml  # comes with datasets

    return yaml.safe_load((root / "README.md").read_text().split("---\n")[1])


def _raw_prompts(folder: Path) -> dict[str, Any]:
    """LLM-I rows' ``prompt`` as in the demo's files, by item id (``<file stem>#<row>``)."""
    out = {}
    for name in ("text_only.json", "mm_input.json", "train_sample.json"):
        for n, row in enumerate(json.loads((folder / name).read_text()), start=1):
            out[f"{Path(name).stem}#{n}"] = row["prompt"]
    return out


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["atp", "llmi", "agentic-mme", "mms"])
def test_every_demo_release_reads_typed_and_datasets_loads_it_without_warnings(
    hf: Any, fmt: str, tmp_path: Path, caplog: Any, recwarn: Any
) -> None:
    """For each benchmark's demo: every column of the Parquet files has the type the card
    declares and none fell back to JSON text (pyarrow reads LLM-I benchmark rows' ``prompt``
    as the plain text of the file, and the training row's chat messages as a list of
    ``{role, content}`` in ``prompt_messages``); the card's ``splits`` carry ``num_bytes``
    and ``num_examples``, so ``datasets`` loads the release through its card, and the Parquet
    folder, without a warning."""
    import logging

    import pyarrow.parquet as pq

    from review.demo import DEMO_PROJECTS, DEMO_ROOT

    spec = next(s for s in DEMO_PROJECTS if s.data_format == fmt)
    project = ProjectFactory(kind=spec.kind, data_format=fmt, tag_syntax=spec.tag_syntax)
    dataset_import(project=project, path=DEMO_ROOT / spec.folder)
    release = release_create(project=project, user=None, name="v1", status=None, parquet=True)
    root = Path(release.path)
    count = project.items.count()
    assert release.manifest["parquet"]["json_text_columns"] == []

    table = pq.read_table(root / "parquet")
    header = _card_header(root)
    declared = hf.Features._from_yaml_list(header["dataset_info"]["features"])
    assert declared.arrow_schema.remove_metadata() == table.schema.remove_metadata()
    (split,) = header["dataset_info"]["splits"]
    assert (split["name"], split["num_examples"]) == ("train", count) == ("train", table.num_rows)
    assert abs(split["num_bytes"] - table.nbytes) <= table.nbytes / 100  # the rows' Arrow size
    assert header["dataset_info"]["dataset_size"] == split["num_bytes"]
    assert header["dataset_info"]["download_size"] == sum(
        f.stat().st_size for f in (root / "parquet").glob("*.parquet")
    )
    if fmt == "llmi":
        raw = _raw_prompts(DEMO_ROOT / spec.folder)
        rows = dict(zip(table.column("id").to_pylist(), table.to_pylist(), strict=True))
        assert {i: r["prompt"] or r["prompt_messages"] for i, r in rows.items()} == raw
        assert table.schema.field("prompt").type == "string"
        assert any(r["prompt_messages"] for r in rows.values())  # the demo has a chat row

    caplog.set_level(logging.WARNING)
    recwarn.clear()
    through_card = hf.load_dataset(str(root), split="train", cache_dir=hf.cache_dir)
    folder = _load(hf, root)
    assert [(r.name, r.getMessage()) for r in caplog.records] == []
    assert [str(w.message) for w in recwarn] == []
    assert through_card.num_rows == folder.num_rows == count
    assert through_card.features == folder.features == declared
    assert through_card.info.splits["train"].num_examples == count
    if fmt == "llmi":
        assert {r["id"]: r["prompt"] or r["prompt_messages"] for r in folder} == raw
