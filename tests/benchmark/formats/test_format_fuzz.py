"""Property tests: on any bytes or any JSON the readers raise FormatError and nothing else, and
whatever they accept writes back to records that read the same."""

from __future__ import annotations

import dataclasses
import inspect
import json
import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:  # pytest-django adds the project root; -p no:django does not
    sys.path.insert(0, str(ROOT))

from benchmark.formats import FormatError, ItemRecord, agentic_mme, atp, llmi, mms  # noqa: E402

FUZZ = settings(
    max_examples=int(os.environ.get("BENCHWRIGHT_FUZZ_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=10,
)
texts = st.text(max_size=20)
words = st.text(min_size=1, max_size=20) | st.sampled_from(["q", "Why?", " "])
paths = st.sampled_from(["images/a.png", "b.png", "", "../c.png", "/abs/d.png"]) | texts
ids = st.text(min_size=1, max_size=6) | st.integers(min_value=-5, max_value=10**6)


def record(
    fields: dict[str, st.SearchStrategy[Any]], required: tuple[str, ...] = ()
) -> st.SearchStrategy[Any]:
    """Objects with the ``required`` fields and some of the other known ones, each usually
    plausible but sometimes arbitrary JSON; sometimes an unknown extra field; a required field
    dropped now and then; and now and then not an object at all."""

    def value(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        return st.one_of(strategy, strategy, strategy, json_values)

    known = st.fixed_dictionaries(
        {key: value(fields[key]) for key in required},
        optional={key: value(s) for key, s in fields.items() if key not in required},
    )
    extra = st.dictionaries(st.text(max_size=5), json_values, max_size=2)
    objects = st.builds(lambda a, b: {**b, **a}, known, extra)
    dropped = st.builds(
        lambda obj, key: {k: v for k, v in obj.items() if k != key},
        objects,
        st.sampled_from(required or ("",)),
    )
    return st.one_of(objects, objects, objects, objects, dropped, json_values)


def fuzz_plan() -> st.SearchStrategy[Any]:
    step = st.fixed_dictionaries(
        {"id": st.integers(0, 3), "name": texts, "args": st.dictionaries(texts, texts, max_size=2)}
    )
    plans = st.lists(step, max_size=3)
    return plans.map(repr) | plans | texts | plans.map(lambda p: repr(p)[:-1])


ATP = record(
    {
        "trace_id": ids,
        "query": words,
        "image_query": st.none() | paths | st.lists(paths, max_size=2),
        "doc": st.lists(
            st.fixed_dictionaries(
                {}, optional={"text": texts, "images": st.lists(paths, max_size=3)}
            )
            | texts,
            max_size=3,
        )
        | texts,
        "images": st.lists(paths, max_size=3),
        "gt": texts | st.none(),
        "category": texts,
        "intent": texts,
    },
    required=("trace_id", "query"),
)
LLMI_ROW = record(
    {
        "prompt": words,
        "r1": texts,
        "r2": texts,
        "r10": texts,
        "images": st.lists(paths, max_size=2),
    },
    required=("prompt",),
)
LLMI_TRAIN = record(
    {
        "prompt": words
        | st.lists(
            st.fixed_dictionaries({"role": st.sampled_from(["user", "system"]), "content": texts})
        ),
        "data_source": texts,
        "extra_info": st.fixed_dictionaries(
            {},
            optional={
                "image_num": st.sampled_from([-1, 0, 1, 3, 99, "Inf", -2, "x", 1.5]) | json_values,
                "tools": st.lists(texts, max_size=2),
                "question": texts,
                "split": texts,
            },
        ),
        "images": st.lists(paths | st.fixed_dictionaries({"image": paths}), max_size=2),
    },
    required=("prompt", "data_source"),
)
LLMI_ANSWER = record(
    {
        "input_file": st.sampled_from(["text_only.json", "mm_input.json", "other.json"]) | texts,
        "sample_index": st.integers(-1, 4) | st.text(max_size=2),
        "prompt": texts,
        "answer": texts,
        "scores": st.dictionaries(texts, st.integers(-1, 2), max_size=2),
        "justifications": st.dictionaries(texts, texts, max_size=2),
    },
    required=("answer", "sample_index"),
)
MMS_TASK = record(
    {
        "id": ids,
        "user_request": words,
        "plan_str": fuzz_plan(),
        "code_str": texts | st.none(),
        "alt_plans_str": st.none() | st.lists(st.lists(st.dictionaries(texts, texts))).map(repr),
    },
    required=("id", "user_request", "plan_str"),
)
MMS_PREDICTION = record(
    {"id": ids, "prediction": fuzz_plan() | json_values}, required=("id", "prediction")
)
AMME_TASK = record(
    {
        "task_id": ids,
        "meta": st.fixed_dictionaries(
            {},
            optional={"level": st.integers(0, 4), "domain": texts, "turncase": texts},
        ),
        "input": st.fixed_dictionaries(
            {"prompt": words}, optional={"image": paths | st.lists(paths, max_size=2)}
        ),
        "golden_answer": st.fixed_dictionaries(
            {},
            optional={
                "value": texts | st.integers() | st.floats(allow_nan=False, allow_infinity=False),
                "match_type": texts,
                "accepted_variants": st.lists(texts, max_size=2),
            },
        ),
        "process_evaluation": st.fixed_dictionaries(
            {},
            optional={
                "checkpoints": st.lists(st.dictionaries(texts, texts, max_size=2), max_size=2),
                "ordering_constraints": st.lists(st.dictionaries(texts, texts), max_size=2),
                "efficiency": st.dictionaries(texts, st.integers(), max_size=2),
            },
        ),
    },
    required=("task_id", "input"),
)
AMME_EVENTS = (
    st.lists(
        record(
            {
                "index": st.integers(),
                "output": st.fixed_dictionaries({}, optional={"output_path": paths}),
            }
        ),
        max_size=3,
    )
    | json_values
)


@contextmanager
def folder() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as tmp:
        yield Path(tmp)


def put(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def dump(value: Any, indent: int | None = None) -> bytes:
    """JSON text for generated values (the standard library also writes integers beyond 64 bits,
    which the readers must reject or accept cleanly)."""
    return json.dumps(value, indent=indent).encode()


def jsonl(rows: list[Any], garbage: bytes) -> bytes:
    return b"".join(dump(r) + b"\n" for r in rows) + garbage


def comparable(records: list[Any]) -> list[Any]:
    """Records without their raw text (which legitimately changes when fields are rewritten)."""
    out = []
    for r in records:
        fields = dict(vars(r))
        fields.pop("raw", None)
        out.append((type(r).__name__, repr(fields)))
    return out


def read_only_format_errors(read: Callable[[Path], Any], path: Path) -> list[Any] | None:
    """Read ``path``; None if the reader rejected it with a FormatError. Anything else raised
    fails the test."""
    try:
        return list(read(path))
    except FormatError as exc:
        assert str(exc)
        return None


def check_rewrite(module: Any, records: list[Any], out: Path, source: Path) -> None:
    """Accepted input writes back to files that read as the same records.

    A writer that renames images where a released loader looks for them (Agentic-MME) reports
    each written path's original in ``image_names``; the records read back are compared with
    those paths mapped back, so only the renaming it reports is forgiven."""
    items = [r for r in records if isinstance(r, ItemRecord)]
    attachments = [r for r in records if not isinstance(r, ItemRecord)]
    image_names: dict[str, str] = {}
    if "image_names" in inspect.signature(module.write).parameters:
        module.write(out, items, attachments, image_names=image_names)
    else:
        module.write(out, items, attachments)
    if not records:
        return
    again = [_original_images(r, image_names) for r in module.read(source)]
    assert comparable(again) == comparable(records)


def _original_images(record: Any, image_names: dict[str, str]) -> Any:
    if not isinstance(record, ItemRecord) or not image_names:
        return record
    images = [dataclasses.replace(i, path=image_names.get(i.path, i.path)) for i in record.images]
    return dataclasses.replace(record, images=images)


# --------------------------------------------------------------------------------------------
# Arbitrary bytes
# --------------------------------------------------------------------------------------------

BYTES_TARGETS = [
    (atp.read, "data.jsonl"),
    (llmi.read, "text_only.json"),
    (llmi.read, "answers.jsonl"),
    (mms.read, "tasks.json"),
    (mms.read, "predictions.jsonl"),
    (agentic_mme.read, "json/0001.json"),
    (agentic_mme.read, "runs/0001/tool_use_list.json"),
]


@FUZZ
@given(
    target=st.sampled_from(BYTES_TARGETS),
    data=st.binary(max_size=200)
    | st.sampled_from([b"", b"\xef\xbb\xbf[]", b"[1e999]", b"\xff", b"[" * 2000, b"{}\n{"]),
    whole_folder=st.booleans(),
)
def test_any_bytes_raise_only_format_error(target: Any, data: bytes, whole_folder: bool) -> None:
    read, name = target
    with folder() as root:
        path = put(root / name, data)
        read_only_format_errors(read, root if whole_folder else path)


# --------------------------------------------------------------------------------------------
# Arbitrary JSON in each format's shape
# --------------------------------------------------------------------------------------------


@FUZZ
@given(rows=st.lists(ATP, max_size=4), garbage=st.sampled_from([b"", b"\n\n", b"{", b"x\n"]))
def test_atp(rows: list[Any], garbage: bytes) -> None:
    with folder() as root:
        path = put(root / "in" / "data.jsonl", jsonl(rows, garbage))
        records = read_only_format_errors(atp.read, path)
        if records is not None:
            check_rewrite(atp, records, root / "out" / "data.jsonl", root / "out" / "data.jsonl")


@FUZZ
@given(
    rows=st.lists(LLMI_ROW, max_size=3),
    train=st.lists(LLMI_TRAIN, max_size=3),
    answers=st.lists(LLMI_ANSWER, max_size=3),
    as_folder=st.booleans(),
)
def test_llmi(rows: list[Any], train: list[Any], answers: list[Any], as_folder: bool) -> None:
    with folder() as root:
        src = root / "in"
        put(src / "text_only.json", dump(rows))
        put(src / "train_sample.json", dump(train))
        answers_path = put(src / "answers.json", dump(answers))
        records = read_only_format_errors(llmi.read, src if as_folder else answers_path)
        if records is not None and as_folder:
            check_rewrite(llmi, records, root / "out", root / "out")


@FUZZ
@given(
    tasks=st.lists(MMS_TASK, max_size=3),
    predictions=st.lists(MMS_PREDICTION, max_size=3),
    tasks_name=st.sampled_from(["tasks.json", "tasks.jsonl"]),
)
def test_mms(tasks: list[Any], predictions: list[Any], tasks_name: str) -> None:
    with folder() as root:
        src = root / "in"
        data = jsonl(tasks, b"") if tasks_name.endswith(".jsonl") else dump(tasks)
        put(src / tasks_name, data)
        put(src / "predictions.jsonl", jsonl(predictions, b""))
        records = read_only_format_errors(mms.read, src)
        if records is not None:
            check_rewrite(mms, records, root / "out", root / "out")


@FUZZ
@given(
    tasks=st.lists(AMME_TASK, max_size=3),
    events=AMME_EVENTS,
    answer=st.binary(max_size=20),
    run_name=st.sampled_from(["0001", "x", "0002"]),
)
def test_agentic_mme(tasks: list[Any], events: Any, answer: bytes, run_name: str) -> None:
    with folder() as root:
        src = root / "in"
        for i, task in enumerate(tasks):
            put(src / "json" / f"{i:04d}.json", dump(task, indent=2))
        (src / "json").mkdir(parents=True, exist_ok=True)
        put(src / "runs" / run_name / "tool_use_list.json", dump(events))
        put(src / "runs" / run_name / "model_answer.txt", answer)
        records = read_only_format_errors(agentic_mme.read, src)
        if records is not None:
            check_rewrite(agentic_mme, records, root / "out", root / "out")


@FUZZ
@given(
    metadata=json_values | st.lists(record({"name": texts, "input": json_values}), max_size=3),
    graph=json_values,
)
def test_toolset(metadata: Any, graph: Any) -> None:
    with folder() as root:
        meta_path = put(root / "meta.json", dump(metadata))
        graph_path = put(root / "graph.json", dump(graph))
        for args in ((meta_path,), (meta_path, graph_path)):
            with suppress(FormatError):
                mms.load_toolset(*args)
