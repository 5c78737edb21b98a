"""Agentic-MME reader and writer: task configs and model runs."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import orjson
import pytest

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:  # pytest-django adds the project root; -p no:django does not
    sys.path.insert(0, str(ROOT))

from benchmark.formats import FormatError, ItemRecord, TrajectoryRecord, agentic_mme  # noqa: E402
from tests.shared_data import SHARED_DATA, needs_data  # noqa: E402

DATA = SHARED_DATA / "agentic-mme"
pytestmark = needs_data("agentic-mme")


def split(records: list) -> tuple[dict[str, ItemRecord], dict[str, TrajectoryRecord]]:
    items = {r.external_id: r for r in records if isinstance(r, ItemRecord)}
    runs = {r.key: r for r in records if isinstance(r, TrajectoryRecord)}
    return items, runs


def test_task_fields() -> None:
    items, _ = split(list(agentic_mme.read(DATA)))
    assert list(items) == ["0001", "0002", "0003", "0004", "0005", "0006"]
    task = items["0003"]
    assert task.source_file == "json/0003.json"
    assert task.level == 2 and task.domain == "Society"
    assert task.modality == "image"
    assert [(im.path, im.role) for im in task.images] == [("images/image_0003.png", "input")]
    assert (DATA / task.images[0].path).is_file()
    assert task.expected_answer == "317" and task.match_type == "exact"
    assert task.query.startswith("This photo of a street was taken at night")
    (reference,) = task.trajectories
    assert reference.key == "reference" and reference.origin == "ground_truth"
    assert len(reference.checkpoints) == 3
    assert [c["id"] for c in reference.checkpoints] == ["C1", "C2", "C3"]
    assert reference.efficiency["reference_tool_calls"] == 2
    assert reference.ordering_constraints[0]["sequence"] == ["C1", "C2", "C3"]
    assert {t.level for t in items.values()} == {1, 2, 3}


def test_runs() -> None:
    records = list(agentic_mme.read(DATA))
    assert all(isinstance(r, ItemRecord) for r in records[:6])  # tasks before runs
    _, runs = split(records)
    assert list(runs) == ["run:0001", "run:0003"]
    run = runs["run:0003"]
    assert run.item_id == "0003" and run.origin == "model"
    assert run.source_file == "runs/0003/tool_use_list.json"
    assert len(run.steps) == 9
    assert run.steps[6]["tool_name"] == "google_search"
    assert run.final_answer == "317"
    assert run.raw == (DATA / "runs/0003/tool_use_list.json").read_text(encoding="utf-8")
    assert [im.path for im in run.images] == [
        f"runs/0003/tool_images/transformed_image_{k}.png" for k in range(1, 9)
    ]
    assert all((DATA / im.path).is_file() for im in run.images)
    assert runs["run:0001"].final_answer == "Willow St"


def test_json_folder_single_file_and_run_folder() -> None:
    items, runs = split(list(agentic_mme.read(DATA / "json")))
    assert len(items) == 6 and list(runs) == ["run:0001", "run:0003"]
    items, runs = split(list(agentic_mme.read(DATA / "json" / "0003.json")))
    assert list(items) == ["0003"] and list(runs) == ["run:0003"]
    assert items["0003"].images[0].path == "images/image_0003.png"
    items, runs = split(list(agentic_mme.read(DATA / "json" / "0002.json")))
    assert list(items) == ["0002"] and not runs
    items, runs = split(list(agentic_mme.read(DATA / "runs" / "0001")))
    assert not items and runs["run:0001"].images[0].path.startswith("runs/0001/")


def test_unchanged_export_is_byte_identical(tmp_path: Path) -> None:
    items, runs = split(list(agentic_mme.read(DATA)))
    paths = agentic_mme.write(tmp_path, items.values(), runs.values())
    assert len(paths) == 6 + 4
    for path in paths:
        relative = path.relative_to(tmp_path)
        assert path.read_bytes() == (DATA / relative).read_bytes(), relative


def test_edits_show_up_in_export(tmp_path: Path) -> None:
    items, runs = split(list(agentic_mme.read(DATA)))
    task = items["0003"]
    task.query = "What number is above the door?"
    task.expected_answer = "318"
    task.level = 3
    task.trajectories[0].efficiency = {**task.trajectories[0].efficiency, "max_tool_calls": 12}
    runs["run:0003"].steps = runs["run:0003"].steps[:2]
    runs["run:0003"].final_answer = "318"
    agentic_mme.write(tmp_path, items.values(), runs.values())

    before = orjson.loads((DATA / "json/0003.json").read_bytes())
    after = orjson.loads((tmp_path / "json/0003.json").read_bytes())
    before["input"]["prompt"] = "What number is above the door?"
    before["golden_answer"]["value"] = "318"
    before["meta"]["level"] = 3
    before["process_evaluation"]["efficiency"]["max_tool_calls"] = 12
    assert after == before
    assert (tmp_path / "json/0003.json").read_text().startswith('{\n  "task_id": "0003",')
    for other in ("0001", "0002", "0004"):
        name = f"json/{other}.json"
        assert (tmp_path / name).read_bytes() == (DATA / name).read_bytes()

    events = orjson.loads((tmp_path / "runs/0003/tool_use_list.json").read_bytes())
    full = orjson.loads((DATA / "runs/0003/tool_use_list.json").read_bytes())
    assert events == full[:2]
    assert (tmp_path / "runs/0003/model_answer.txt").read_text() == "318\n"


def test_new_task_without_raw(tmp_path: Path) -> None:
    item = ItemRecord(
        external_id="L1_new_0001",
        source_file="",
        raw="",
        query="Read the sign.",
        level=1,
        domain="Life",
        expected_answer="STOP",
        match_type="exact",
    )
    agentic_mme.write(tmp_path, [item])
    (back,) = agentic_mme.read(tmp_path / "json" / "L1_new_0001.json")
    assert (back.external_id, back.query, back.level, back.expected_answer) == (
        "L1_new_0001",
        "Read the sign.",
        1,
        "STOP",
    )


def make_dataset(tmp_path: Path, task: dict) -> Path:
    (tmp_path / "json").mkdir()
    (tmp_path / "json" / "t.json").write_bytes(orjson.dumps(task))
    return tmp_path


def base_task() -> dict:
    return orjson.loads((DATA / "json/0003.json").read_bytes())


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda t: t["meta"].update(level=4), "meta.level"),
        (lambda t: t["meta"].update(level="2"), "meta.level"),
        (lambda t: t["input"].pop("prompt"), "input.prompt"),
        (lambda t: t.pop("input"), "input"),
        (lambda t: t.pop("task_id"), "task_id"),
        (lambda t: t["input"].update(image=[3]), "input.image[0]"),
        (lambda t: t["golden_answer"].update(value={"a": 1}), "golden_answer.value"),
        (
            lambda t: t["process_evaluation"].update(checkpoints=[1]),
            "process_evaluation.checkpoints[0]",
        ),
        (lambda t: t["process_evaluation"].update(efficiency=[]), "process_evaluation.efficiency"),
    ],
)
def test_bad_tasks(tmp_path: Path, change, field: str) -> None:
    task = base_task()
    change(task)
    root = make_dataset(tmp_path, task)
    with pytest.raises(FormatError) as info:
        list(agentic_mme.read(root))
    assert info.value.field == field
    assert info.value.file == "json/t.json"
    assert info.value.record in ("0003", "t")


def test_bad_runs(tmp_path: Path) -> None:
    root = make_dataset(tmp_path, base_task())
    run = root / "runs" / "0003"
    run.mkdir(parents=True)
    (run / "tool_use_list.json").write_text('{"index": 0}')
    with pytest.raises(FormatError) as info:
        list(agentic_mme.read(root))
    assert info.value.file == "runs/0003/tool_use_list.json" and info.value.record == "0003"
    (run / "tool_use_list.json").write_text('[{"output": {"output_path": 5}}]')
    with pytest.raises(FormatError) as info:
        list(agentic_mme.read(root))
    assert info.value.field == "events[0].output.output_path"
    (run / "tool_use_list.json").write_text("[")
    with pytest.raises(FormatError, match="not valid JSON"):
        list(agentic_mme.read(root))


def test_duplicate_task_ids_and_empty_folder(tmp_path: Path) -> None:
    root = make_dataset(tmp_path, base_task())
    shutil.copy(root / "json" / "t.json", root / "json" / "u.json")
    with pytest.raises(FormatError, match="duplicate"):
        list(agentic_mme.read(root))
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(FormatError, match="no json/ folder"):
        list(agentic_mme.read(empty))


def test_dataset_root_for_every_entry_point() -> None:
    for entry in (DATA, DATA / "json", DATA / "json" / "0003.json", DATA / "runs" / "0003"):
        assert agentic_mme.dataset_root(entry) == DATA


def test_run_without_events_file_is_still_written(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    src = make_dataset(tmp_path / "in", base_task())
    (src / "runs" / "0003").mkdir(parents=True)
    (src / "runs" / "0003" / "model_answer.txt").write_text("317\n")
    items, runs = split(list(agentic_mme.read(src)))
    run = runs["run:0003"]
    assert run.raw == "" and run.steps == [] and run.final_answer == "317"
    # The app hands back attachments without raw text nested in their item.
    items["0003"].trajectories.append(run)
    agentic_mme.write(tmp_path / "out", items.values())
    assert (tmp_path / "out/runs/0003/model_answer.txt").read_text() == "317\n"
    assert (tmp_path / "out/runs/0003/tool_use_list.json").read_text() == "[]\n"


# --------------------------------------------------------------------------------------------
# The released runners find every exported task's images
# --------------------------------------------------------------------------------------------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from benchmark.formats import ImageRef  # noqa: E402
from tests.released_loaders import agentic_mme_load  # noqa: E402

# Ids as people and other tools write them: numbers, names with and without digits, digits of
# other scripts (the runners read any Unicode digit), UUID-like, and the runners' own naming.
task_ids = st.one_of(
    st.integers(min_value=0, max_value=10**6).map(str),
    st.integers(min_value=0, max_value=9999).map(lambda n: f"{n:04d}"),
    st.text(alphabet="abcXYZ-_.0123456789٣", min_size=1, max_size=10).filter(
        lambda s: s not in (".", "..")
    ),
    st.uuids().map(str),
)
image_kinds = st.lists(
    st.sampled_from([".png", ".jpg", ".jpeg", ".gif", ".webp", ".PNG"]), min_size=1, max_size=3
)


def _task(task_id: str, suffixes: list[str], in_loader_naming: bool) -> ItemRecord:
    """A task as the app holds it; ``in_loader_naming``: stored as ``json/<id>.json`` with
    ``images/image_<id>...`` (for a numeric id, the runners' own naming)."""
    if in_loader_naming and task_id.isascii() and task_id.isdigit():
        paths = agentic_mme.loader_image_paths(int(task_id), suffixes)
    else:
        paths = [f"images/{task_id}-{k}{suffix}" for k, suffix in enumerate(suffixes)]
    return ItemRecord(
        external_id=task_id,
        source_file=f"json/{task_id}.json",
        raw="",
        query=f"What is in picture {task_id}?",
        modality="image",
        images=[ImageRef(path=p, role="input", position=k) for k, p in enumerate(paths)],
        expected_answer="cat",
    )


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    tasks=st.lists(
        st.tuples(task_ids, image_kinds, st.booleans()),
        min_size=1,
        max_size=8,
        unique_by=lambda t: t[0],
    )
)
def test_every_exported_task_loads_in_the_released_runner(tasks: list, tmp_path_factory) -> None:
    """Whatever the ids, each task file the export writes is one the runners load, and the
    images they find for it are its own, in order (the caller copies each image where
    ``image_names`` says; here each file holds the path it was copied from). Tasks already in
    the runners' naming keep their file names."""
    out = tmp_path_factory.mktemp("out")
    items = [_task(*t) for t in tasks]
    names: dict[str, str] = {}
    agentic_mme.write(out, items, image_names=names)
    for new, old in names.items():
        (out / new).parent.mkdir(parents=True, exist_ok=True)
        assert not (out / new).exists(), f"two images written to {new}"
        (out / new).write_text(old)

    loaded = {}
    for task_json, images in agentic_mme_load(out):
        task_id = orjson.loads(task_json.read_bytes())["task_id"]
        loaded[task_id] = (task_json.name, [p.read_text() for p in images])
    assert set(loaded) == {item.external_id for item in items}
    for item in items:
        name, found = loaded[item.external_id]
        assert found == [im.path for im in item.images], item.external_id
    claimed: set[int] = set()
    for item, (task_id, suffixes, in_naming) in zip(items, tasks, strict=True):
        runners_naming = (
            in_naming
            and task_id.isascii()
            and task_id.isdigit()
            and str(int(task_id)).zfill(4) == task_id
            and all(s in agentic_mme.LOADER_EXTENSIONS for s in suffixes)
        )
        if runners_naming and int(task_id) not in claimed:  # the first with its number
            claimed.add(int(task_id))
            assert loaded[task_id][0] == f"{task_id}.json"
            assert all(names[im.path] == im.path for im in item.images)

    # Read back by the app's own reader, the tasks keep their ids and name the images written.
    back = [r for r in agentic_mme.read(out) if isinstance(r, ItemRecord)]
    assert {r.external_id for r in back} == {item.external_id for item in items}
    for record in back:
        assert all((out / im.path).read_text() for im in record.images)
        assert len(record.images) == len(
            next(i for i in items if i.external_id == record.external_id).images
        )


def test_tasks_in_the_runners_naming_keep_their_files(tmp_path: Path) -> None:
    items, runs = split(list(agentic_mme.read(DATA)))
    names: dict[str, str] = {}
    agentic_mme.write(tmp_path, items.values(), runs.values(), image_names=names)
    assert names == {f"images/image_{n:04d}.png": f"images/image_{n:04d}.png" for n in range(1, 7)}
    for n in range(1, 7):
        name = f"json/{n:04d}.json"
        assert (tmp_path / name).read_bytes() == (DATA / name).read_bytes()
