"""Property tests of the editor's pure core: whatever an imported task file holds and whatever
is posted, reading it and laying a draft over it answers with messages, never an exception, and
leaves the stored document as it was."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotation.trajectories import document as td

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 2000),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.sampled_from(["", " ", "x", " V ", "S", "crop", "numeric", "C1", "https://example.org/a"]),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(["a", "b", "x"]), inner)
    ),
    max_leaves=6,
)


def _maybe(key: str, value: Any) -> st.SearchStrategy[dict[str, Any]]:
    return st.one_of(st.just({}), st.fixed_dictionaries({key: value}))


CHECKPOINT = st.builds(
    lambda base, *parts: {k: v for part in (base, *parts) for k, v in part.items()},
    st.fixed_dictionaries({"id": st.sampled_from(["C1", "C2", "C3", "bad id", 7])}),
    _maybe("axis", st.one_of(st.sampled_from(["V", "S", "v", "X"]), VALUES)),
    _maybe("description", VALUES),
    _maybe("tools", st.one_of(st.lists(st.sampled_from(["crop", "rotate", "google_search"]),
                                       max_size=2), VALUES)),
    _maybe("code_check", st.one_of(st.fixed_dictionaries(
        {"verifier": st.just("verify_crop_ast"), "bbox_2d": st.just([1, 2, 3, 4])}), VALUES)),
    _maybe("visual_check", st.one_of(st.fixed_dictionaries(
        {"question": VALUES, "expected_answer": VALUES}), VALUES)),
    _maybe("search_check", st.one_of(st.fixed_dictionaries(
        {"keywords": VALUES, "expected": VALUES, "urls": VALUES}), VALUES)),
    _maybe("answer_check", st.one_of(st.fixed_dictionaries(
        {"match_type": VALUES, "target": VALUES, "tolerance": VALUES}), VALUES)),
    _maybe("reference_image", VALUES),
)  # fmt: skip

DOCUMENT = st.fixed_dictionaries(
    {},
    optional={
        "meta": st.one_of(st.fixed_dictionaries({"level": VALUES, "domain": VALUES}), VALUES),
        "input": st.one_of(st.fixed_dictionaries({"prompt": VALUES}), VALUES),
        "golden_answer": st.one_of(
            st.fixed_dictionaries(
                {"value": VALUES, "match_type": VALUES},
                optional={"tolerance": VALUES, "accepted_variants": VALUES},
            ),
            VALUES,
        ),
        "process_evaluation": st.one_of(
            st.fixed_dictionaries(
                {"checkpoints": st.lists(CHECKPOINT, max_size=4)},
                optional={
                    "ordering_constraints": st.lists(
                        st.fixed_dictionaries(
                            {"id": VALUES, "sequence": VALUES}, optional={"max_gap": VALUES}
                        ),
                        max_size=2,
                    ),
                    "efficiency": st.one_of(
                        st.fixed_dictionaries(
                            {},
                            optional={
                                "reference_tool_calls": VALUES,
                                "penalty_per_extra_call": VALUES,
                                "max_tool_calls": VALUES,
                            },
                        ),
                        VALUES,
                    ),
                },
            ),
            VALUES,
        ),
    },
)
TEXT = st.one_of(
    st.sampled_from(["", " ", "3", "-1", "0.5", "numeric", "exact", "C1, C2", "crop", "S", "V",
                     '{"angle": 90}', "{bad", "[1]", "https://example.org/a", "ftp://x", "a\nb"]),
    st.text(max_size=12),
)  # fmt: skip
EDITS = st.lists(
    st.tuples(
        st.sampled_from(["task", "step", "ordering"]),
        st.sampled_from(sorted({*td.ITEM_FIELDS, *td.STEP_FIELDS, *td.ORDERING_FIELDS})),
        TEXT,
    ),
    max_size=6,
)
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _edited(draft: td.Draft, edits: list[tuple[str, str, str]]) -> td.Draft:
    for place, name, text in edits:
        targets: list[Any] = {
            "task": [draft],
            "step": draft.steps[:1],
            "ordering": draft.orderings[:1],
        }[place]
        for target in targets:
            if name in td.BOOL_STEP_FIELDS and place == "step":
                setattr(target, name, bool(text))
            elif hasattr(target, name) and name not in td.BOOL_STEP_FIELDS:
                setattr(target, name, text)
    return draft


@SETTINGS
@given(DOCUMENT, EDITS)
def test_no_document_and_no_edit_makes_the_core_raise(
    doc: dict[str, Any], edits: list[tuple[str, str, str]]
) -> None:
    before = copy.deepcopy(doc)
    draft = _edited(td.draft_from_document(doc), edits)
    applied = td.apply_draft(doc, draft, tools=["google_search"], domains=["Life"])
    assert all(isinstance(e, td.FieldError) and e.message for e in applied.errors)
    td.level_warnings(applied.document)
    assert doc == before  # the stored document is not changed
