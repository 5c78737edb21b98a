"""A benchmark's items as Parquet in the Hugging Face ``datasets`` layout. Pure: no Django;
pyarrow is imported inside the functions that write.

One row per item, one typed table per benchmark (``COLUMNS``): the benchmark's own field names,
nested fields as Arrow structs and lists where their shape is regular, and JSON text where it is
not. A column's type is chosen once per release from its candidates (``Column.types``, tried in
order) so that every row fits; when no candidate fits every row, the column holds each value as
JSON text (``"json"``) and the card says so. Keys of a record that no column names go to the
``extra`` column as a JSON object, so nothing of the record is lost.

The images an item refers to are stored inside the file as ``{"bytes", "path"}`` structs (the
path relative to the release's ``data/``), and the schema metadata key ``huggingface`` carries
the ``datasets`` Features, so ``datasets`` reads them as ``Image`` (or a list of ``Image``) and
every other column with the type written here. An image file that is missing is a null entry.

Type specs are plain values: ``"string"``, ``"int64"``, ``"float64"``, ``"bool"``,
``"image"``, ``"json"`` (text), ``("list", spec)`` and ``("struct", ((name, spec), ...))``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from .base import ImageRef, ItemRecord

Spec = Any
#: Shards are cut when the images and text of the rows written reach about this many bytes.
MAX_SHARD_BYTES = 256 * 1024 * 1024
#: Rows per row group; small, since rows carry their images.
ROW_GROUP_ROWS = 64
SPLIT = "train"
PARQUET_DIR = "parquet"

_SCALARS = {"string", "int64", "float64", "bool"}


@dataclass(frozen=True)
class Column:
    name: str
    #: Candidate types, tried in order; "json" is the last resort when none fits every row.
    types: tuple[Spec, ...]
    #: The value of this column for an item: (item, its raw record, images) -> value.
    get: Callable[[ItemRecord, dict[str, Any], Callable[[Sequence[ImageRef]], Any]], Any]
    description: str
    #: Raw record keys this column consumes (they are not repeated in ``extra``).
    keys: tuple[str, ...] = ()


@dataclass
class ParquetResult:
    files: list[Path] = field(default_factory=list)
    rows: int = 0
    #: (name, chosen spec, description) in column order.
    columns: list[tuple[str, Spec, str]] = field(default_factory=list)
    #: Columns that fell back to JSON text because some row did not fit a typed candidate.
    json_fallbacks: list[str] = field(default_factory=list)
    missing_images: list[str] = field(default_factory=list)
    #: The rows' size as Arrow tables (what ``datasets`` calls a split's ``num_bytes``).
    num_bytes: int = 0

    @property
    def download_size(self) -> int:
        """The Parquet files' size in bytes."""
        return sum(path.stat().st_size for path in self.files if path.is_file())

    @property
    def features(self) -> dict[str, Any]:
        """The ``datasets`` Features as the JSON that ``Features.from_dict`` reads."""
        return {name: hf_feature(spec) for name, spec, _ in self.columns}

    def yaml_features(self) -> list[dict[str, Any]]:
        """``dataset_info.features`` of a dataset card."""
        return [{"name": name, **yaml_feature(spec)} for name, spec, _ in self.columns]


# --------------------------------------------------------------------------- type specs


def json_text(value: Any) -> str:
    """Compact JSON with sorted keys, non-ASCII kept as is."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def fits(spec: Spec, value: Any) -> bool:
    """Whether ``value`` can be stored as ``spec`` without loss (null always can)."""
    if value is None or spec == "json":
        return True
    if spec == "string":
        return isinstance(value, str)
    if spec == "bool":
        return isinstance(value, bool)
    if spec == "int64":
        return isinstance(value, int) and not isinstance(value, bool) and -(2**63) <= value < 2**63
    if spec == "float64":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if spec == "image":
        return isinstance(value, dict) and set(value) <= {"bytes", "path"}
    kind, inner = spec
    if kind == "list":
        return isinstance(value, list) and all(fits(inner, v) for v in value)
    names = {name for name, _ in inner}
    return (
        isinstance(value, dict)
        and set(value) <= names
        and all(fits(sub, value.get(name)) for name, sub in inner)
    )


def convert(spec: Spec, value: Any) -> Any:
    """``value`` in the Python shape pyarrow takes for ``spec`` (``fits`` must hold)."""
    if value is None:
        return None
    if spec == "json":
        return json_text(value)
    if spec == "float64":
        return float(value)
    if isinstance(spec, str):
        return value
    kind, inner = spec
    if kind == "list":
        return [convert(inner, v) for v in value]
    return {name: convert(sub, value.get(name)) for name, sub in inner}


def arrow_type(spec: Spec) -> Any:
    import pyarrow as pa

    simple = {
        "string": pa.string(),
        "json": pa.string(),
        "int64": pa.int64(),
        "float64": pa.float64(),
        "bool": pa.bool_(),
    }
    if isinstance(spec, str):
        if spec == "image":
            return pa.struct([("bytes", pa.binary()), ("path", pa.string())])
        return simple[spec]
    kind, inner = spec
    if kind == "list":
        return pa.list_(arrow_type(inner))
    return pa.struct([(name, arrow_type(sub)) for name, sub in inner])


def hf_feature(spec: Spec) -> Any:
    """``datasets`` Features JSON, in the form every ``datasets`` from 2.x on reads: a list of
    scalars or images is a ``Sequence``, a list of structs a one-element JSON list."""
    if spec == "image":
        return {"_type": "Image"}
    if isinstance(spec, str):
        return {"dtype": "string" if spec == "json" else spec, "_type": "Value"}
    kind, inner = spec
    if kind == "list":
        if isinstance(inner, tuple) and inner[0] == "struct":
            return [hf_feature(inner)]
        return {"feature": hf_feature(inner), "_type": "Sequence"}
    return {name: hf_feature(sub) for name, sub in inner}


def yaml_feature(spec: Spec) -> dict[str, Any]:
    """One entry of a card's ``dataset_info.features`` (without its name)."""
    if isinstance(spec, str):
        return {"dtype": "string" if spec == "json" else spec}
    kind, inner = spec
    if kind == "list":
        if isinstance(inner, tuple) and inner[0] == "struct":
            return {"list": [{"name": n, **yaml_feature(s)} for n, s in inner[1]]}
        sub = yaml_feature(inner)
        return {"sequence": sub["dtype"] if list(sub) == ["dtype"] else sub}
    return {"struct": [{"name": n, **yaml_feature(s)} for n, s in inner]}


def spec_text(spec: Spec) -> str:
    """A short human name for a spec, for the card: ``list<struct<text: string>>``."""
    if isinstance(spec, str):
        return "JSON text" if spec == "json" else spec
    kind, inner = spec
    if kind == "list":
        return f"list<{spec_text(inner)}>"
    return "struct<" + ", ".join(f"{n}: {spec_text(s)}" for n, s in inner) + ">"


def _struct(*fields: tuple[str, Spec]) -> Spec:
    return ("struct", tuple(fields))


def _list(inner: Spec) -> Spec:
    return ("list", inner)


# --------------------------------------------------------------------------- per benchmark

Images = Callable[[Sequence[ImageRef]], Any]


def _raw(*path: str) -> Callable[[ItemRecord, dict[str, Any], Images], Any]:
    def get(item: ItemRecord, raw: dict[str, Any], images: Images) -> Any:
        value: Any = raw
        for key in path:
            if not isinstance(value, dict):
                return None
            value = value.get(key)
        return value

    return get


def _images(role: str | None = None) -> Callable[[ItemRecord, dict[str, Any], Images], Any]:
    def get(item: ItemRecord, raw: dict[str, Any], images: Images) -> Any:
        chosen = [im for im in item.images if role is None or im.role == role]
        return images(sorted(chosen, key=lambda im: im.position))

    return get


def _query_image(item: ItemRecord, raw: dict[str, Any], images: Images) -> Any:
    found = images([im for im in item.images if im.role == "query"])
    return None if not found else (found[0] if len(found) == 1 else found)


def _gt(item: ItemRecord, raw: dict[str, Any], images: Images) -> Any:
    return next((r.text for r in item.responses if r.key == "gt"), None)


def _plan(alternative: bool) -> Callable[[ItemRecord, dict[str, Any], Images], Any]:
    def get(item: ItemRecord, raw: dict[str, Any], images: Images) -> Any:
        plans = [_steps(p.steps) for p in item.plans if p.is_alternative == alternative]
        if alternative:
            return plans
        return plans[0] if plans else None

    return get


def _steps(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """m&m's steps with their tool-specific ``args`` as JSON text (their keys differ per
    tool); a step with other keys is kept whole, so the column falls back to JSON."""
    out = []
    for step in steps:
        if "args" in step:
            step = {
                **step,
                "args": json_text(step["args"]),
            }
        out.append(step)
    return out


def _mms_id(item: ItemRecord, raw: dict[str, Any], images: Images) -> Any:
    return raw.get("id", item.external_id)


def _trajectory(attr: str) -> Callable[[ItemRecord, dict[str, Any], Images], Any]:
    def get(item: ItemRecord, raw: dict[str, Any], images: Images) -> Any:
        ref = next((t for t in item.trajectories if t.key == "reference"), None)
        return getattr(ref, attr) if ref is not None else None

    return get


_CHECKPOINT_KEYS = ("id", "axis", "description", "tools")


def _checkpoints(item: ItemRecord, raw: dict[str, Any], images: Images) -> Any:
    checkpoints = _trajectory("checkpoints")(item, raw, images)
    if checkpoints is None:
        return None
    out = []
    for checkpoint in checkpoints:
        row = {k: checkpoint.get(k) for k in _CHECKPOINT_KEYS}
        rest = {k: v for k, v in checkpoint.items() if k not in _CHECKPOINT_KEYS}
        row["checks"] = json_text(rest)
        out.append(row)
    return out


def _unless_list(
    get: Callable[[ItemRecord, dict[str, Any], Images], Any],
) -> Callable[[ItemRecord, dict[str, Any], Images], Any]:
    """``get``'s value, None when it is a list (another column holds lists): the one value
    is in exactly one of the two columns."""

    def value(item: ItemRecord, raw: dict[str, Any], images: Images) -> Any:
        found = get(item, raw, images)
        return None if isinstance(found, list) else found

    return value


def _only_list(
    get: Callable[[ItemRecord, dict[str, Any], Images], Any],
) -> Callable[[ItemRecord, dict[str, Any], Images], Any]:
    def value(item: ItemRecord, raw: dict[str, Any], images: Images) -> Any:
        found = get(item, raw, images)
        return found if isinstance(found, list) else None

    return value


def _field(attr: str) -> Callable[[ItemRecord, dict[str, Any], Images], Any]:
    return lambda item, raw, images: getattr(item, attr)


def _constraint(key: str) -> Callable[[ItemRecord, dict[str, Any], Images], Any]:
    return lambda item, raw, images: item.constraints.get(key)


IMAGE_LIST = _list("image")
STRINGS = _list("string")

COLUMNS: dict[str, tuple[Column, ...]] = {
    "atp": (
        Column("trace_id", ("string",), _raw("trace_id"), "the sample's id", ("trace_id",)),
        Column("query", ("string",), _raw("query"), "the user's query", ("query",)),
        Column(
            "image_query",
            ("image", IMAGE_LIST),
            _query_image,
            "the query image of a VQA sample (a list when a sample has several)",
            ("image_query",),
        ),
        Column(
            "doc",
            (_list(_struct(("text", "string"), ("images", STRINGS))),),
            _raw("doc"),
            "the documents: text and the paths of their images",
            ("doc",),
        ),
        Column(
            "images",
            (IMAGE_LIST,),
            _images("document"),
            "the documents' images in img_index order (a Reference call's img_index)",
            ("images",),
        ),
        Column("gt", ("string",), _gt, "the ground-truth interleaved answer", ("gt",)),
        Column("category", ("string",), _raw("category"), "the category", ("category",)),
        Column("intent", ("string",), _raw("intent"), "the intent", ("intent",)),
    ),
    "mms": (
        Column("id", ("int64", "string"), _mms_id, "the task's id", ("id",)),
        Column("user_request", ("string",), _raw("user_request"), "the request", ("user_request",)),
        Column(
            "plan_str",
            ("string",),
            _raw("plan_str"),
            "the gold plan as in the dataset (a Python literal)",
            ("plan_str",),
        ),
        Column("code_str", ("string",), _raw("code_str"), "the gold plan as code", ("code_str",)),
        Column(
            "alt_plans_str",
            ("string",),
            _raw("alt_plans_str"),
            "alternative plans as in the dataset",
            ("alt_plans_str",),
        ),
        Column(
            "plan",
            (_list(_struct(("id", "int64"), ("name", "string"), ("args", "string"))),),
            _plan(False),
            "the gold plan parsed: steps with id, tool name and args (JSON text: keys differ"
            " per tool)",
        ),
        Column(
            "alt_plans",
            (_list(_list(_struct(("id", "int64"), ("name", "string"), ("args", "string")))),),
            _plan(True),
            "the alternative plans parsed, like plan",
        ),
        Column("images", (IMAGE_LIST,), _images(), "the task's input images", ("images",)),
        Column(
            "input_files",
            (STRINGS,),
            _raw("input_files"),
            "other input files by name",
            ("input_files",),
        ),
    ),
    "agentic-mme": (
        Column("task_id", ("string",), _raw("task_id"), "the task's id", ("task_id",)),
        Column("level", ("int64",), _raw("meta", "level"), "difficulty level 1-3"),
        Column("domain", ("string",), _raw("meta", "domain"), "the domain"),
        Column("turncase", ("string",), _raw("meta", "turncase"), "single or multi turn"),
        Column("prompt", ("string",), _raw("input", "prompt"), "the task prompt"),
        Column("images", (IMAGE_LIST,), _images(), "the input images (input.image)"),
        Column("answer", ("string",), _field("expected_answer"), "golden_answer.value as text"),
        Column("match_type", ("string",), _field("match_type"), "golden_answer.match_type"),
        Column(
            "accepted_variants",
            (STRINGS,),
            _field("accepted_variants"),
            "golden_answer.accepted_variants",
        ),
        Column(
            "checkpoints",
            (
                _list(
                    _struct(
                        ("id", "string"),
                        ("axis", "string"),
                        ("description", "string"),
                        ("tools", STRINGS),
                        ("checks", "string"),
                    )
                ),
            ),
            _checkpoints,
            "process_evaluation.checkpoints: id, axis, description, tools, and `checks`: the"
            " checkpoint's other keys (code_check, visual_check, answer_check, search_check, ...)"
            " as a JSON object in text, since they differ per verifier",
        ),
        Column(
            "ordering_constraints",
            (_list(_struct(("id", "string"), ("sequence", STRINGS), ("max_gap", "int64"))),),
            _trajectory("ordering_constraints"),
            "process_evaluation.ordering_constraints",
        ),
        Column(
            "efficiency",
            (
                _struct(
                    ("reference_tool_calls", "int64"),
                    ("penalty_per_extra_call", "float64"),
                    ("max_tool_calls", "int64"),
                ),
            ),
            _trajectory("efficiency"),
            "process_evaluation.efficiency",
        ),
    ),
    "llmi": (
        Column("id", ("string",), _field("external_id"), "<file stem>#<row number>"),
        Column("source_file", ("string",), _field("source_file"), "the file the row is in"),
        Column("question", ("string",), _field("query"), "the user's question as text"),
        Column(
            "prompt",
            ("string",),
            _unless_list(_raw("prompt")),
            "the prompt as in the file; null when it is chat messages (see prompt_messages)",
            ("prompt",),
        ),
        Column(
            "prompt_messages",
            (_list(_struct(("role", "string"), ("content", "string"))),),
            _only_list(_raw("prompt")),
            "a training row's prompt when it is a list of chat messages (role, content, with"
            " <image> placeholders); null otherwise",
            ("prompt",),
        ),
        Column("images", (IMAGE_LIST,), _images(), "the input images", ("images",)),
        Column(
            "rubric",
            (_list(_struct(("key", "string"), ("text", "string"))),),
            _field("rubric"),
            "the criteria r1..r10 of a benchmark row",
        ),
        Column("data_source", ("string",), _raw("data_source"), "training rows", ("data_source",)),
        Column(
            "image_num",
            ("int64",),
            _constraint("image_num"),
            'training rows\' image-number constraint as written (-1, 0, n, 99 or "Inf")',
        ),
        Column(
            "image_count",
            (_struct(("kind", "string"), ("n", "int64")),),
            _constraint("image_count"),
            "image_num in plain words: none, any, exact n, at_least_one",
        ),
        Column("tools", (STRINGS,), _raw("extra_info", "tools"), "training rows' tools"),
        Column("split", ("string",), _raw("extra_info", "split"), "training rows' split"),
    ),
}
#: Keys inside nested raw objects that columns consume (the rest go to ``extra``).
_NESTED_KEYS: dict[str, dict[str, set[str]]] = {
    "agentic-mme": {
        "meta": {"level", "domain", "turncase"},
        "input": {"prompt", "image"},
        "golden_answer": {"value", "match_type", "accepted_variants"},
        "process_evaluation": {"checkpoints", "ordering_constraints", "efficiency"},
    },
    "llmi": {"extra_info": {"image_num", "tools", "split", "question"}},
}
_LLMI_RUBRIC_KEY = "r"


def _extra(data_format: str, raw: dict[str, Any]) -> dict[str, Any] | None:
    """The record's keys that no column holds."""
    taken = {key for column in COLUMNS[data_format] for key in column.keys}
    nested = _NESTED_KEYS.get(data_format, {})
    extra: dict[str, Any] = {}
    for key, value in raw.items():
        if key in taken:
            continue
        if data_format == "llmi" and key[1:].isdigit() and key.startswith(_LLMI_RUBRIC_KEY):
            continue  # r1..r10 are the rubric column
        if key in nested and isinstance(value, dict):
            rest = {k: v for k, v in value.items() if k not in nested[key]}
            if rest:
                extra[key] = rest
            continue
        extra[key] = value
    return extra or None


EXTRA = Column("extra", ("json",), lambda item, raw, images: None, "the record's other keys")


# --------------------------------------------------------------------------- writing


def _loader(root: Path, missing: list[str]) -> Callable[[Sequence[ImageRef]], list[Any]]:
    root = root.resolve()

    def load(refs: Sequence[ImageRef]) -> list[Any]:
        out: list[Any] = []
        for ref in refs:
            path = (root / ref.path).resolve()
            if not path.is_relative_to(root) or not path.is_file():
                missing.append(ref.path)
                out.append(None)
                continue
            out.append({"bytes": path.read_bytes(), "path": ref.path})
        return out

    return load


def _rows(
    data_format: str, items: Iterable[ItemRecord], images: Images
) -> Iterable[dict[str, Any]]:
    for item in items:
        try:  # the standard library keeps integers of any size exact
            raw = json.loads(item.raw) if item.raw else {}
        except ValueError:
            raw = {}
        raw = raw if isinstance(raw, dict) else {}
        row = {c.name: c.get(item, raw, images) for c in COLUMNS[data_format]}
        row["extra"] = _extra(data_format, raw)
        yield row


def _no_images(refs: Sequence[ImageRef]) -> list[Any]:
    return [{"bytes": None, "path": ref.path} for ref in refs]


def choose_types(data_format: str, items: Sequence[ItemRecord]) -> list[tuple[Column, Spec]]:
    """Each column with the first candidate type that every item's value fits, else "json"."""
    columns = [*COLUMNS[data_format], EXTRA]
    possible = {c.name: list(c.types) for c in columns}
    for row in _rows(data_format, items, _no_images):
        for column in columns:
            value = row[column.name]
            possible[column.name] = [s for s in possible[column.name] if fits(s, value)]
    return [(c, (possible[c.name] or ["json"])[0]) for c in columns]


def write_parquet(
    data_format: str,
    items: Sequence[ItemRecord],
    *,
    data_root: Path,
    out_dir: Path,
    max_shard_bytes: int = MAX_SHARD_BYTES,
) -> ParquetResult:
    """Write ``items`` (as read back from ``data_root``, whose image paths they name) to
    ``out_dir/train-<i>-of-<n>.parquet`` shards of about ``max_shard_bytes`` at most (a single
    row larger than that gets a shard of its own)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if data_format not in COLUMNS:
        raise ValueError(f"no Parquet table for format {data_format!r}")
    items = list(items)
    chosen = choose_types(data_format, items)
    result = ParquetResult(
        columns=[(c.name, spec, c.description) for c, spec in chosen],
        json_fallbacks=[c.name for c, spec in chosen if spec == "json" and "json" not in c.types],
    )
    metadata = {b"huggingface": orjson.dumps({"info": {"features": result.features}})}
    schema = pa.schema([(c.name, arrow_type(spec)) for c, spec in chosen], metadata=metadata)
    out_dir.mkdir(parents=True, exist_ok=True)
    parts: list[Path] = []
    writer: Any = None
    shard_bytes = 0
    batch: list[dict[str, Any]] = []

    def flush() -> None:
        if batch:
            columns = {c.name: [convert(spec, row[c.name]) for row in batch] for c, spec in chosen}
            table = pa.Table.from_pydict(columns, schema=schema)
            writer.write_table(table)
            result.num_bytes += table.nbytes
            batch.clear()

    images = _loader(data_root, result.missing_images)
    for row in _rows(data_format, items, images):
        size = _row_bytes(row)
        if writer is not None and shard_bytes + size > max_shard_bytes:
            flush()
            writer.close()
            writer = None
        if writer is None:
            parts.append(out_dir / f".part-{len(parts):05d}.parquet")
            writer = pq.ParquetWriter(parts[-1], schema, compression="zstd")
            shard_bytes = 0
        batch.append(row)
        shard_bytes += size
        result.rows += 1
        if len(batch) >= ROW_GROUP_ROWS:
            flush()
    if writer is None:  # no items: one empty shard still carries the schema
        parts.append(out_dir / ".part-00000.parquet")
        writer = pq.ParquetWriter(parts[-1], schema, compression="zstd")
    flush()
    writer.close()
    for i, part in enumerate(parts):
        final = out_dir / f"{SPLIT}-{i:05d}-of-{len(parts):05d}.parquet"
        part.rename(final)
        result.files.append(final)
    return result


def _row_bytes(row: dict[str, Any]) -> int:
    total = 0
    stack: list[Any] = list(row.values())
    while stack:
        value = stack.pop()
        if isinstance(value, bytes | str):
            total += len(value)
        elif isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
        else:
            total += 8
    return total


# --------------------------------------------------------------------------- the card


def _yaml_scalar(value: Any) -> str:
    if isinstance(value, bool | int | float):
        return orjson.dumps(value).decode()
    text = str(value)
    plain = text.replace("_", "").replace("-", "").replace(".", "").replace("*", "")
    if plain.isalnum() and text[:1].isalpha() and text not in ("true", "false", "null"):
        return text
    return orjson.dumps(text).decode()


def yaml_lines(value: Any, indent: int = 0) -> list[str]:
    """Block YAML for nested dicts and lists of plain values (enough for a card's header)."""
    pad = " " * indent
    lines: list[str] = []
    if isinstance(value, dict):
        for key, sub in value.items():
            if isinstance(sub, dict | list) and sub:
                lines.append(f"{pad}{key}:")
                lines += yaml_lines(sub, indent + (0 if isinstance(sub, list) else 2))
            else:
                lines.append(f"{pad}{key}: {_yaml_scalar(sub) if sub != [] else '[]'}")
        return lines
    for entry in value:
        sub_lines = yaml_lines(entry, indent + 2) if isinstance(entry, dict | list) else []
        if sub_lines:
            lines.append(f"{pad}- {sub_lines[0].lstrip()}")
            lines += sub_lines[1:]
        else:
            lines.append(f"{pad}- {_yaml_scalar(entry)}")
    return lines


def card_header(result: ParquetResult, *, base: str = PARQUET_DIR) -> dict[str, Any]:
    """The ``configs`` and ``dataset_info`` entries of the card's YAML header."""
    return {
        "configs": [
            {
                "config_name": "default",
                "data_files": [{"split": SPLIT, "path": f"{base}/{SPLIT}-*.parquet"}],
            }
        ],
        "dataset_info": {
            "features": result.yaml_features(),
            # datasets ignores ``splits`` (with a warning) unless each has all three keys.
            "splits": [{"name": SPLIT, "num_bytes": result.num_bytes, "num_examples": result.rows}],
            "download_size": result.download_size,
            "dataset_size": result.num_bytes,
        },
    }


def card_section(result: ParquetResult, *, base: str = PARQUET_DIR) -> list[str]:
    """The card's markdown on the Parquet copy: how to load it and each column's type."""
    lines = [
        "## Parquet",
        "",
        f"`{base}/` holds the same items as Parquet ({len(result.files)}"
        f" file{'s' if len(result.files) != 1 else ''}, {result.rows} rows, split `{SPLIT}`),"
        " one row per item with its images inside:",
        "",
        "```python",
        "from datasets import load_dataset",
        f'ds = load_dataset("parquet", data_dir="{base}", split="{SPLIT}")',
        "```",
        "",
        "Images are `Image` features (their `path` is relative to `data/`). Nested fields are"
        " structs and lists where their shape is regular; *JSON text* columns hold each value"
        " as JSON (decode with `json.loads`).",
        "",
        "| column | type | what |",
        "| --- | --- | --- |",
    ]
    for name, spec, description in result.columns:
        lines.append(f"| `{name}` | `{spec_text(spec)}` | {description} |")
    if result.json_fallbacks:
        names = ", ".join(f"`{n}`" for n in result.json_fallbacks)
        lines += [
            "",
            f"Some records' {names} did not have the regular shape, so in this release"
            " these columns are JSON text.",
        ]
    if result.missing_images:
        lines += ["", f"{len(result.missing_images)} image(s) were missing and are null."]
    return lines + [""]
