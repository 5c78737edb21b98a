"""Property test of benchmark.formats.hf_parquet (pure; pyarrow only): whatever shape the
records have, every format's table is written, reads back with one row per item, every value
fits its column's type or is JSON text that decodes, and a record's keys that no column holds
are in ``extra``."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:  # pytest-django adds the project root; -p no:django does not
    sys.path.insert(0, str(ROOT))

from benchmark.formats import ImageRef, ItemRecord  # noqa: E402
from benchmark.formats.hf_parquet import COLUMNS, write_parquet  # noqa: E402

FUZZ = settings(
    max_examples=int(os.environ.get("BENCHWRIGHT_FUZZ_EXAMPLES", "40")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=12,
)
KEYS = sorted(
    {key for columns in COLUMNS.values() for c in columns for key in c.keys}
    | {"meta", "input", "extra_info", "r1", "other"}
)
records = st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=5), json_values, max_size=6)


@FUZZ
@given(
    fmt=st.sampled_from(sorted(COLUMNS)),
    raws=st.lists(records, min_size=0, max_size=3),
    image_paths=st.lists(st.sampled_from(["a.png", "missing.png", "../outside.png"]), max_size=2),
)
def test_any_records_write_a_table_that_reads_back(
    fmt: str, raws: list[dict[str, Any]], image_paths: list[str]
) -> None:
    import pyarrow.parquet as pq

    json_texts = [json.dumps(raw) for raw in raws]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "a.png").write_bytes(b"\x89PNG not really")
        items = [
            ItemRecord(
                external_id=f"i{n}",
                source_file="f.json",
                raw=text,
                images=[ImageRef(p, "input", i) for i, p in enumerate(image_paths)],
            )
            for n, text in enumerate(json_texts)
        ]
        result = write_parquet(fmt, items, data_root=root, out_dir=root / "parquet")
        table = pq.read_table(result.files[0])
        assert table.num_rows == len(items) == result.rows
        assert b"huggingface" in table.schema.metadata
        assert table.column_names == [name for name, _, _ in result.columns]
        for name, spec, _ in result.columns:
            if spec == "json":
                for value in table.column(name).to_pylist():
                    if value is not None:
                        json.loads(value)  # JSON text, whatever it holds
        if fmt == "atp":  # nothing is lost: other keys are in extra, exactly
            taken = {key for c in COLUMNS["atp"] for key in c.keys}
            for raw, extra in zip(raws, table.column("extra").to_pylist(), strict=True):
                rest = {k: v for k, v in raw.items() if k not in taken}
                assert (json.loads(extra) if extra else {}) == rest
        assert set(result.missing_images) <= {"missing.png", "../outside.png"}
