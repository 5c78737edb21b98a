"""Dataset statistics tables (benchmark.datastats) against hand-computed figures on small
fixture records, their CSV and markdown renderings, and a run over the shared sample data."""

from __future__ import annotations

import csv
import io
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:  # pytest-django adds the project root; -p no:django does not
    sys.path.insert(0, str(ROOT))

from benchmark.datastats import FORMATS, Table, item_record_dict, tables_for  # noqa: E402
from benchmark.formats import ItemRecord, get_format  # noqa: E402
from tests.shared_data import SHARED_DATA, needs_data  # noqa: E402


def item(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "external_id": "x",
        "query": "",
        "category": "",
        "intent": "",
        "documents": [],
        "image_refs": [],
        "rubric": [],
        "constraints": {},
        "level": None,
        "domain": "",
        "match_type": "",
        "status": "verified",
        "responses": [],
        "plans": [],
        "trajectories": [],
    }
    return {**base, **fields}


def refs(role: str, n: int) -> list[dict[str, Any]]:
    return [{"sha256": "", "role": role, "path": f"{role}{k}.png", "position": k} for k in range(n)]


def docs(n: int) -> list[dict[str, Any]]:
    return [{"text": f"doc {k}", "images": []} for k in range(n)]


def tags(n: int) -> str:
    call = '<tool>{"tool_name": "Reference", "description": "d", "params": {"img_index": 0}}</tool>'
    return "Intro.\n\n" + "\n\n".join([call] * n) + "\n\nEnd."


def by_name(tables: list[Table]) -> dict[str, Table]:
    return {t.name: t for t in tables}


def rows_of(table: Table) -> dict[str, list[Any]]:
    return {str(row[0]): row[1:] for row in table.rows}


# --------------------------------------------------------------------------- ATP-Bench


ATP_RECORDS = [
    item(
        category="Recipe",
        intent="Guideline",
        documents=docs(2),
        image_refs=refs("document", 3) + refs("query", 1),  # the VQA query image: not counted
        responses=[{"key": "gt", "text": tags(2)}],
    ),
    item(
        category="Recipe",
        intent="Ingredient",
        documents=docs(1),
        image_refs=refs("document", 1),
        responses=[
            {"key": "gt", "text": tags(1)},
            {"key": "m", "text": tags(5), "origin": "model"},  # a model answer: not counted
        ],
    ),
    item(
        category="Academic", intent="Framework", documents=docs(1), image_refs=refs("document", 2)
    ),
]


def test_atp_table2_per_category_hand_computed():
    table = by_name(tables_for("atp", ATP_RECORDS))["atp_table2"]
    assert table.columns == [
        "Category",
        "Intent",
        "#Query",
        "#Doc per Q",
        "#Img per Q",
        "#TC per GT",
    ]
    # Paper order: Academic before Recipe; Overall last.
    assert [r[0] for r in table.rows] == ["Academic", "Recipe", "Overall"]
    academic, recipe, overall = table.rows
    assert academic == ["Academic", "Framework", 1, 1.0, 2.0, None]  # no ground truth: no mean
    assert recipe[:3] == ["Recipe", "Guideline, Ingredient", 2]
    assert recipe[3:] == [pytest.approx(1.5), pytest.approx(2.0), pytest.approx(1.5)]
    assert overall[:3] == ["Overall", "–", 3]
    assert overall[3:] == [pytest.approx(4 / 3), pytest.approx(2.0), pytest.approx(1.5)]
    assert set(table.definitions) == set(table.columns)


def test_atp_table9_per_intent_hand_computed():
    table = by_name(tables_for("atp", ATP_RECORDS))["atp_table9"]
    assert table.rows[:3] == [
        ["Academic", "Framework", 1, 1.0, 2.0, None],
        ["Recipe", "Guideline", 1, 2.0, 3.0, 2.0],
        ["Recipe", "Ingredient", 1, 1.0, 1.0, 1.0],
    ]
    assert table.rows[3][:3] == ["Overall", "–", 3]


# --------------------------------------------------------------------------- m&m's


def plan(*names: str, alt: bool = False, kinds: dict[str, str] | None = None) -> dict[str, Any]:
    steps = []
    for k, name in enumerate(names):
        step: dict[str, Any] = {"id": k, "name": name, "args": {}}
        if kinds and name in kinds:
            step["category"] = kinds[name]
        steps.append(step)
    return {"key": "alt" if alt else "gold", "steps": steps, "is_alternative": alt}


KINDS = {"A": "ml model", "B": "public api"}

MMS_RECORDS = [
    item(query="q1", subset=True, plans=[plan("A", kinds=KINDS)]),
    item(query="q2", subset=True, plans=[plan("A", "B", kinds=KINDS)]),
    item(query="q3", subset=True, plans=[plan("A", "B", kinds=KINDS)]),
    item(query="q3", subset=True, plans=[plan("A", "B", kinds=KINDS)]),  # same query again
    item(query="q4", subset=False, plans=[plan("C", "C", "C")]),  # verified, not balanced
    item(query="q5", subset=True, status="draft", plans=[plan("A", kinds=KINDS)]),  # raw only
    item(
        query="q6",
        subset=True,
        plans=[plan("X", alt=True), plan("A", "D", "E", kinds=KINDS)],  # gold is the 2nd
    ),
]


def test_mms_table2_hand_computed():
    [table] = tables_for("mms", MMS_RECORDS, tool_kinds={"D": "public api"})
    assert table.name == "mms_table2"
    rows = rows_of(table)
    assert rows["Raw examples"] == [7]
    assert rows["Human verified examples"] == [6]
    assert rows["Human verified & balanced examples"] == [5]
    assert rows["Counted over"] == ["human verified & balanced (5)"]
    assert rows["- 1 / 2 / 3-tool examples"] == ["1 / 3 / 1"]
    assert rows["Tools"] == [4]  # A, B, D, E (C is not balanced, X is an alternative)
    # Kinds: B from its step, D from tool_kinds, E with none known.
    assert rows["- ml model"] == [1]
    assert rows["- public api"] == [2]
    assert rows["- no category known"] == [1]
    assert rows["Tool graphs"] == [3]  # (A), (A, B), (A, D, E)
    assert rows["Avg. # of unique queries per tool graph"] == [pytest.approx(4 / 3)]


def test_mms_falls_back_to_verified_when_no_subset():
    records = [{**r, "subset": False} for r in MMS_RECORDS]
    rows = rows_of(tables_for("mms", records)[0])
    assert rows["Human verified & balanced examples"] == [0]
    assert rows["Counted over"] == ["human verified (none is in the balanced subset) (6)"]
    assert rows["- 1 / 2 / 3-tool examples"] == ["1 / 3 / 2"]  # C C C now counts
    assert rows["Tool graphs"] == [4]
    assert rows["- no category known"] == [3]  # C, D (no tool_kinds), E


# --------------------------------------------------------------------------- Agentic-MME


def checkpoint(axis: str, description: str, tools: list[str]) -> dict[str, Any]:
    return {"id": "C", "axis": axis, "description": description, "tools": tools}


MME_RECORDS = [
    item(
        level=1,
        domain="Life",
        raw={"meta": {"level": 1, "sub_category": "Street"}},
        image_refs=refs("input", 1),
        trajectories=[
            {"key": "run:1", "steps": [{}, {}, {}], "checkpoints": []},  # a run, not the reference
            {
                "key": "reference",
                "steps": [],
                "checkpoints": [
                    checkpoint("V", "crop the sign", ["crop"]),
                    checkpoint("V", "read it", []),
                ],
            },
        ],
    ),
    item(
        level=1,
        domain="Life",
        raw={"meta": {"sub_category": "Shop"}},
        image_refs=refs("input", 2),
        trajectories=[
            {
                "key": "reference",
                "steps": [{"tool": "google_search"}, {"tool": "crop"}],  # steps win
                "checkpoints": [checkpoint("S", "search the web for it", ["google_search"])],
            }
        ],
    ),
    item(
        level=3,
        domain="Science",
        image_refs=refs("input", 1),
        trajectories=[
            {
                "key": "reference",
                "steps": [],
                "checkpoints": [
                    checkpoint("V", "flip", ["flip", "crop"]),
                    checkpoint("V", "a b c d", ["rotate"]),
                    checkpoint("S", "x y", []),
                ],
            }
        ],
    ),
    item(level=None),
]


def test_agentic_mme_levels_hand_computed():
    tables = by_name(tables_for("agentic-mme", MME_RECORDS))
    levels = tables["agentic_mme_table2_levels"]
    assert levels.columns == [
        "Task Difficulty",
        "#Tasks",
        "Share (%)",
        "Ckpts / Task",
        "Tools / Task",
    ]
    assert levels.rows == [
        ["Level 1 (Easy)", 2, 50.0, 1.5, 1.5],
        ["Level 3 (Hard)", 1, 25.0, 3.0, 3.0],
        ["No level", 1, 25.0, 0.0, 0.0],
    ]


def test_agentic_mme_properties_hand_computed():
    props = rows_of(
        by_name(tables_for("agentic-mme", MME_RECORDS))["agentic_mme_table2_properties"]
    )
    assert props["Total Images / Tools"] == ["4 / 6"]
    assert props["Domains / Sub"] == ["2 / 2"]
    assert props["Per Descri. Len (words)"] == [pytest.approx(17 / 6)]  # 3+2+5+1+4+2 words
    assert props["External Search (%)"] == [50.0]


def test_agentic_mme_sub_categories_not_recorded_says_so():
    records = [{**r, "raw": {}} for r in MME_RECORDS]
    props = rows_of(tables_for("agentic-mme", records)[1])
    assert props["Domains / Sub"] == ["2 / not recorded"]


# --------------------------------------------------------------------------- LLMI-Bench


def rubric(n: int) -> list[dict[str, str]]:
    return [{"key": f"r{k + 1}", "text": f"criterion {k + 1}"} for k in range(n)]


LLMI_RECORDS = [
    item(rubric=rubric(10)),
    item(rubric=rubric(10), image_refs=refs("input", 1), constraints={"image_num": -1}),
    item(rubric=rubric(8), constraints={"image_count": {"kind": "exact", "n": 2}, "image_num": 2}),
    item(rubric=[], constraints={"image_num": 99}),
    item(rubric=rubric(10), image_refs=refs("input", 2), constraints={"image_num": "inf"}),
    item(rubric=rubric(6), constraints={"image_num": 0}),
    item(rubric=rubric(10), constraints={"image_num": 3}),
]


def test_llmi_counts_hand_computed():
    [table] = tables_for("llmi", LLMI_RECORDS)
    rows = rows_of(table)
    assert rows["Prompts"] == [7]
    assert rows["Text-only prompts"] == [5]
    assert rows["Multimodal prompts"] == [2]
    assert rows["Criteria per prompt (mean)"] == [pytest.approx(54 / 7)]
    assert rows["Criteria per prompt (min-max)"] == ["0-10"]
    assert rows["Image number -1 (no image allowed)"] == [1]
    assert rows["Image number 0 (unconstrained)"] == [1]
    assert rows["Image number n (exactly n)"] == ["2 (n=2: 1, n=3: 1)"]
    assert rows["Image number Inf (at least one)"] == [2]
    assert rows["Image number not stated"] == [1]


# --------------------------------------------------------------------------- rendering


def test_csv_and_markdown_rendering():
    table = Table(
        name="t",
        title="A title",
        columns=["Name", "Mean", "Count"],
        rows=[["a, b | c", 4 / 3, 3], ["none", None, 0]],
        definitions={"Mean": "the mean of x.", "Count": "how many."},
    )
    parsed = list(csv.reader(io.StringIO(table.to_csv())))
    assert parsed == [["Name", "Mean", "Count"], ["a, b | c", "1.33", "3"], ["none", "", "0"]]
    md = table.to_markdown().splitlines()
    assert md[0] == "### A title"
    assert md[2] == "| Name | Mean | Count |"
    assert md[3] == "| --- | --- | --- |"
    assert md[4] == "| a, b \\| c | 1.33 | 3 |"
    assert md[5] == "| none | – | 0 |"
    assert md[-2:] == ["- **Mean**: the mean of x.", "- **Count**: how many."]


def test_every_table_renders_and_defines_its_columns():
    fixtures = {
        "atp": ATP_RECORDS,
        "mms": MMS_RECORDS,
        "agentic-mme": MME_RECORDS,
        "llmi": LLMI_RECORDS,
    }
    for data_format, records in fixtures.items():
        for table in tables_for(data_format, records):
            assert table.to_csv().count("\n") == len(table.rows) + 1
            assert "How each column is computed:" in table.to_markdown()
            assert table.definitions


def test_empty_records_and_unknown_format():
    for data_format in FORMATS:
        for table in tables_for(data_format, []):
            table.to_csv()
            table.to_markdown()
    with pytest.raises(ValueError, match="data_format"):
        tables_for("nope", [])


# --------------------------------------------------------------------------- real sample data


def _count_cell(data_format: str, tables: list[Table]) -> Any:
    named = by_name(tables)
    if data_format == "atp":
        return named["atp_table2"].rows[-1][2]
    if data_format == "mms":
        return rows_of(named["mms_table2"])["Raw examples"][0]
    if data_format == "agentic-mme":
        return sum(row[1] for row in named["agentic_mme_table2_levels"].rows)
    return rows_of(named["llmi_counts"])["Prompts"][0]


@needs_data()
@pytest.mark.parametrize("data_format", FORMATS)
def test_tables_over_the_shared_sample_data(data_format):
    folder = SHARED_DATA / data_format
    if not folder.exists():
        pytest.skip(f"no sample data at {folder}")
    items = [r for r in get_format(data_format).read(folder) if isinstance(r, ItemRecord)]
    assert items
    tables = tables_for(data_format, [item_record_dict(r) for r in items])
    assert tables
    for table in tables:
        assert table.to_csv()
        assert table.title in table.to_markdown()
    assert _count_cell(data_format, tables) == len(items)
