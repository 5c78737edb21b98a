"""benchmark.tags.serialize: the parse/serialize identity and byte-local tag edits."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:  # pytest-django adds the project root; -p no:django does not
    sys.path.insert(0, str(ROOT))

from benchmark.tags import (  # noqa: E402
    TagEditError,
    close_tag,
    insert_tag,
    make_payload,
    move_tag,
    parse,
    remove_tag,
    render_payload,
    render_tag,
    replace_payload,
    serialize,
    set_description,
    set_param,
    set_params,
    set_tool,
    validate,
)
from tests.shared_data import SHARED_DATA, needs_data  # noqa: E402

DATA = SHARED_DATA
needs_atp = needs_data("atp")

REF0 = '<tool>{"tool_name": "Reference", "description": "Panel", "params": {"img_index": 0}}</tool>'
REF1 = '<tool>{"tool_name": "Reference", "description": "Tank", "params": {"img_index": 1}}</tool>'


def squash(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def is_insertion(old: str, new: str, tag: str) -> bool:
    """``new`` is ``old`` with ``tag`` (plus line breaks around it) inserted at one place."""
    added = len(new) - len(old)
    at = new.index(tag)
    return any(
        new == old[:p] + new[p : p + added] + old[p:] and new[p : p + added].strip("\n") == tag
        for p in range(max(0, at - 2), at + 1)
    )


def nows(text: str) -> str:
    return re.sub(r"\s+", "", text)


def is_whitespace_widened_deletion(old: str, new: str, start: int, end: int) -> bool:
    """``new`` is ``old`` minus one range that covers ``old[start:end]`` and, besides it,
    only whitespace."""
    d = len(old) - len(new)
    return any(
        new == old[:p] + old[p + d :]
        and p + d >= end
        and not old[p:start].strip()
        and not old[end : p + d].strip()
        for p in range(max(0, start - (d - (end - start))), start + 1)
    )


def is_reinsertion(rest: str, new: str, raw: str) -> bool:
    """Ignoring whitespace, ``new`` is ``rest`` with ``raw`` inserted at one place."""
    base, piece, got = nows(rest), nows(raw), nows(new)
    i = got.find(piece)
    while i >= 0:
        if got[:i] + got[i + len(piece) :] == base:
            return True
        i = got.find(piece, i + 1)
    return False


def assert_only_tag_changed(old: str, new: str, start: int, end: int) -> tuple[str, str]:
    """``old[:start]`` and ``old[end:]`` survive byte for byte; returns (old part, new part)."""
    assert new.startswith(old[:start])
    tail = old[end:]
    assert new.endswith(tail)
    return old[start:end], new[start : len(new) - len(tail)]


# --------------------------------------------------------------------------- identity


@pytest.mark.parametrize(
    "text",
    [
        "",
        "no tags",
        REF0,
        f"a {REF0} b {REF1}",
        "<tool>{unclosed",
        "</tool></tool><tool><tool>",
        "<tool>\n\n</tool>",
        "é ✓ \u2028 \x00 <tool>{}</tool>",
    ],
)
def test_identity_examples(text: str) -> None:
    for syntax in ("atp", "llmi"):
        assert serialize(parse(text, syntax)) == text  # type: ignore[arg-type]
        assert serialize(list(parse(text, syntax))) == text  # type: ignore[arg-type]


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_identity_on_any_text(text: str) -> None:
    assert serialize(parse(text, "atp")) == text
    assert serialize(parse(text, "llmi")) == text


@needs_atp
def test_identity_on_sample_answers() -> None:
    for line in (DATA / "atp" / "data.jsonl").open(encoding="utf-8"):
        gt = json.loads(line)["gt"]
        assert serialize(parse(gt, "atp")) == gt
    for answer in json.loads((DATA / "llmi" / "answers.json").read_text(encoding="utf-8")):
        assert serialize(parse(answer["answer"], "llmi")) == answer["answer"]


# --------------------------------------------------------------------------- rendering


def test_render_payload_styles() -> None:
    atp = make_payload("atp", "Search", "Galangal", {"query": "galangal root"})
    assert render_payload(atp, "atp") == (
        '{"tool_name": "Search", "description": "Galangal", "params": {"query": "galangal root"}}'
    )
    llmi = make_payload("llmi", "code", "Chart", {"code": "plt.title('x')\nplt.show()"})
    rendered = render_payload(llmi, "llmi")
    assert rendered.startswith("{'source': 'code', 'description': 'Chart'")
    assert parse(render_tag(llmi, "llmi"), "llmi").tools[0].payload == llmi


def test_render_rejects_values_the_syntax_cannot_hold() -> None:
    with pytest.raises(TagEditError):
        render_payload({"x": {1, 2}}, "atp")
    with pytest.raises(TagEditError):
        render_payload({"x": float("nan")}, "atp")
    with pytest.raises(TagEditError):
        render_payload({"x": object()}, "llmi")


def test_markers_inside_values_are_escaped() -> None:
    for syntax, marker in (("atp", "</tool>"), ("llmi", "</imgen>")):
        payload = make_payload(syntax, "search", f"odd {marker} title", {"query": "q"})  # type: ignore[arg-type]
        text = render_tag(payload, syntax)  # type: ignore[arg-type]
        # render_tag uses payload text as given; replace_payload/insert_tag escape markers
        new = insert_tag(parse("A.", syntax), payload, at=0)  # type: ignore[arg-type]
        parsed = parse(new, syntax)  # type: ignore[arg-type]
        assert len(parsed.tools) == 1 and parsed.tools[0].payload == payload
        assert parsed.findings == []
        assert text.count(marker) == 2


# --------------------------------------------------------------------------- payload edits


def test_replace_payload_changes_only_the_payload() -> None:
    text = f"Intro.\n\n<tool>  {REF0[6:-7]}\n</tool>\n\nOutro {REF1}"
    parsed = parse(text, "atp")
    tool = parsed.tools[0]
    new = replace_payload(parsed, 0, make_payload("atp", "Search", "d", {"query": "q"}))
    old_part, new_part = assert_only_tag_changed(text, new, tool.payload_start, tool.payload_end)
    assert old_part == tool.payload_text
    reparsed = parse(new, "atp")
    assert reparsed.tools[0].tool_name == "Search"
    assert reparsed.tools[0].raw.startswith("<tool>  {") and reparsed.tools[0].raw.endswith(
        "}\n</tool>"
    )
    assert reparsed.tools[1].raw == REF1


def test_replace_payload_with_raw_text() -> None:
    parsed = parse(f"x {REF0} y", "atp")
    assert replace_payload(parsed, 0, "{}") == "x <tool>{}</tool> y"


def test_field_setters() -> None:
    text = f"A.\n\n{REF0}\n\nB.\n\n{REF1}"
    parsed = parse(text, "atp")
    tool = parsed.tools[1]
    cases = {
        "tool": set_tool(parsed, 1, "Edit"),
        "description": set_description(parsed, 1, "New caption"),
        "params": set_params(parsed, 1, {"img_index": 2, "prompt": "label it"}),
        "param": set_param(parsed, 1, "img_index", 3),
    }
    for new in cases.values():
        assert_only_tag_changed(text, new, tool.start, tool.end)
        assert parse(new, "atp").tools[0].raw == REF0
    tools = {name: parse(new, "atp").tools[1] for name, new in cases.items()}
    assert tools["tool"].tool_name == "Edit" and tools["tool"].params == {"img_index": 1}
    assert list(tools["tool"].payload) == ["tool_name", "description", "params"]  # type: ignore[arg-type]
    assert tools["description"].description == "New caption"
    assert tools["params"].params == {"img_index": 2, "prompt": "label it"}
    assert tools["param"].params == {"img_index": 3}


def test_llmi_setter_turns_a_fallback_payload_into_a_clean_literal() -> None:
    body = (
        "{'source': 'code', 'description': 'Mix', 'params': {'code': "
        "'labels = ['A', 'B']\\nplt.pie([1, 2], labels=labels)'}}"
    )
    parsed = parse(f"Text.\n\n<imgen>{body}</imgen>", "llmi")
    assert parsed.tools[0].via_fallback
    new = set_description(parsed, 0, "Revenue mix")
    reparsed = parse(new, "llmi")
    assert reparsed.findings == [] and not reparsed.tools[0].via_fallback
    assert reparsed.tools[0].params == parsed.tools[0].params


def test_fixing_a_malformed_atp_payload_through_its_recovered_reading() -> None:
    text = (
        'Look.\n\n<tool>{"tool_name": "Edit", "description": "d", '
        '"params": {"img_index": 1, "prompt": "p"},}</tool>\n\nEnd.'
    )
    parsed = parse(text, "atp")
    new = set_param(parsed, 0, "img_index", 2)
    assert validate(parse(new, "atp"), None, image_count=4) == []


def test_edits_on_unreadable_payloads_fail_clearly() -> None:
    parsed = parse("<tool>garbage</tool>", "atp")
    with pytest.raises(TagEditError, match="could not be read"):
        set_tool(parsed, 0, "Search")
    with pytest.raises(TagEditError, match="no tag 3"):
        remove_tag(parsed, 3)
    with pytest.raises(TagEditError):
        move_tag(parsed, 0, "sideways")  # type: ignore[arg-type]


def test_replace_and_close_an_unclosed_tag() -> None:
    text = (
        "Closing page.\n\n<imgen>{'source': 'diffusion', 'description': 'Sunset', "
        "'params': {'prompt': 'A lighthouse at sunset'}}"
    )
    parsed = parse(text, "llmi")
    closed = close_tag(parsed, 0)
    assert closed == text + "</imgen>"
    assert parse(closed, "llmi").findings == []
    new = set_param(parsed, 0, "prompt", "A lighthouse at dawn")
    assert new.startswith(text[: parsed.tools[0].payload_start]) and new.endswith("}}</imgen>")
    assert close_tag(parse(closed, "llmi"), 0) == closed


# --------------------------------------------------------------------------- remove


def test_remove_tag_strict_and_tidy() -> None:
    text = f"Intro.\n\n{REF0}\n\nPress both {REF1} for 3 s."
    parsed = parse(text, "atp")
    strict = remove_tag(parsed, 0)
    assert strict == text.replace(REF0, "")
    assert remove_tag(parsed, 0, tidy=True) == f"Intro.\n\nPress both {REF1} for 3 s."
    assert remove_tag(parsed, 1, tidy=True) == f"Intro.\n\n{REF0}\n\nPress both for 3 s."
    assert remove_tag(parse(f"{REF0}\n\nText", "atp"), 0, tidy=True) == "Text"
    assert remove_tag(parse(f"Text\n\n{REF0}", "atp"), 0, tidy=True) == "Text"
    assert remove_tag(parse(f"Text\n\n{REF0}\n", "atp"), 0, tidy=True) == "Text\n"


# --------------------------------------------------------------------------- move


def test_move_mid_sentence_tag_to_paragraph_end() -> None:
    text = f"Step 3. Hold both buttons {REF0} for 3 seconds.\n\n**4. Rinse.** Refill."
    parsed = parse(text, "atp")
    new = move_tag(parsed, 0, "after")
    assert new == f"Step 3. Hold both buttons for 3 seconds.\n\n{REF0}\n\n**4. Rinse.** Refill."
    assert [f.code for f in validate(parse(new, "atp"))] == []
    before = move_tag(parsed, 0, "before")
    assert before == f"{REF0}\n\nStep 3. Hold both buttons for 3 seconds.\n\n**4. Rinse.** Refill."


def test_move_tag_glued_to_paragraph_start() -> None:
    text = f"P1.\n\n{REF0} A sentence.\n\nP3."
    parsed = parse(text, "atp")
    assert move_tag(parsed, 0, "before") == f"P1.\n\n{REF0}\n\nA sentence.\n\nP3."
    assert move_tag(parsed, 0, "after") == f"P1.\n\nA sentence.\n\n{REF0}\n\nP3."


def test_move_tag_glued_to_paragraph_end() -> None:
    text = f"P1.\n\nA sentence. {REF0}\n\nP3."
    assert move_tag(parse(text, "atp"), 0, "after") == f"P1.\n\nA sentence.\n\n{REF0}\n\nP3."


def test_move_tag_at_boundary_moves_past_a_paragraph() -> None:
    text = f"P1.\n\n{REF0}\n\nP2.\n\nP3."
    parsed = parse(text, "atp")
    assert move_tag(parsed, 0, "after") == f"P1.\n\nP2.\n\n{REF0}\n\nP3."
    assert move_tag(parsed, 0, "before") == f"{REF0}\n\nP1.\n\nP2.\n\nP3."
    last = f"P1.\n\n{REF0}"
    assert move_tag(parse(last, "atp"), 0, "after") == last
    first = f"{REF0}\n\nP1."
    assert move_tag(parse(first, "atp"), 0, "before") == first


def test_move_swaps_neighbouring_tags() -> None:
    text = f"P1.\n\n{REF0}\n\n{REF1}\n\nP2."
    assert move_tag(parse(text, "atp"), 0, "after") == f"P1.\n\n{REF1}\n\n{REF0}\n\nP2."


def test_move_ignores_blank_lines_inside_other_tags() -> None:
    code = '<tool>{"tool_name": "Code", "description": "c", "params": {"code": "x"}}\n\n</tool>'
    text = f"Say {REF0} here. {code} more text\n\nP2."
    new = move_tag(parse(text, "atp"), 0, "after")
    assert new == f"Say here. {code} more text\n\n{REF0}\n\nP2."


@needs_atp
def test_move_fixes_the_sample_mid_sentence_tag() -> None:
    rows = {
        row["trace_id"]: row
        for row in map(json.loads, (DATA / "atp" / "data.jsonl").open(encoding="utf-8"))
    }
    gt = rows["atp_0002"]["gt"]
    parsed = parse(gt, "atp")
    new = move_tag(parsed, 3, "after")
    assert validate(parse(new, "atp"), None, image_count=4) == []
    moved = parsed.tools[3].raw
    assert squash(new.replace(moved, "")) == squash(gt.replace(moved, ""))
    assert [t.raw for t in parse(new, "atp").tools] == [t.raw for t in parsed.tools]


# --------------------------------------------------------------------------- insert


def test_insert_tag_at_boundaries() -> None:
    text = "P1 first.\n\nP2 second.\n\nP3 third."
    parsed = parse(text, "atp")
    payload = make_payload("atp", "Search", "d", {"query": "q"})
    tag = render_tag(payload, "atp")
    assert insert_tag(parsed, payload, at=3) == f"P1 first.\n\n{tag}\n\nP2 second.\n\nP3 third."
    assert insert_tag(parsed, payload, at=15, direction="before") == (
        f"P1 first.\n\n{tag}\n\nP2 second.\n\nP3 third."
    )
    assert insert_tag(parsed, payload, at=len(text)) == f"{text}\n\n{tag}"
    assert insert_tag(parsed, payload, at=0, direction="before") == f"{tag}\n\n{text}"
    assert insert_tag(parse("", "atp"), payload, at=0) == tag
    assert insert_tag(parse("End\n", "atp"), payload, at=0) == f"End\n\n{tag}"


# --------------------------------------------------------------------------- locality property

paragraph_words = st.text(
    alphabet=st.sampled_from(list("abcdefgh .,;:!?'\"{}[]é")), min_size=1, max_size=30
).filter(lambda s: s.strip() != "")


@st.composite
def documents(draw: st.DrawFn) -> tuple[str, str]:
    syntax = draw(st.sampled_from(["atp", "llmi"]))
    blocks = []
    for n in range(draw(st.integers(1, 6))):
        if draw(st.booleans()):
            payload = make_payload(
                syntax,  # type: ignore[arg-type]
                draw(st.sampled_from(["Search", "Diffusion", "Reference"])),
                draw(paragraph_words) + f" #{n}",  # every tag's bytes are unique
                {"query": draw(paragraph_words)},
            )
            blocks.append(render_tag(payload, syntax))  # type: ignore[arg-type]
        else:
            blocks.append(draw(paragraph_words))
    seps = [draw(st.sampled_from(["\n\n", " ", "\n", "\n \n\n", ""])) for _ in blocks[1:]]
    text = blocks[0] + "".join(sep + block for sep, block in zip(seps, blocks[1:], strict=True))
    return syntax, text


@settings(max_examples=300, deadline=None)
@given(documents(), st.data())
def test_edits_are_local(doc: tuple[str, str], data: st.DataObject) -> None:
    syntax, text = doc
    parsed = parse(text, syntax)  # type: ignore[arg-type]
    if not parsed.tools:
        return
    k = data.draw(st.integers(0, len(parsed.tools) - 1))
    tool = parsed.tools[k]
    others = [t.raw for t in parsed.tools if t is not tool]

    new = set_param(parsed, k, "query", data.draw(paragraph_words))
    assert_only_tag_changed(text, new, tool.payload_start, tool.payload_end)
    assert [t.raw for i, t in enumerate(parse(new, syntax).tools) if i != k] == others  # type: ignore[arg-type]

    assert remove_tag(parsed, k) == text[: tool.start] + text[tool.end :]
    tidy = remove_tag(parsed, k, tidy=True)
    assert is_whitespace_widened_deletion(text, tidy, tool.start, tool.end)

    direction = data.draw(st.sampled_from(["before", "after"]))
    moved = move_tag(parsed, k, direction)
    assert is_reinsertion(text[: tool.start] + text[tool.end :], moved, tool.raw)
    reparsed = parse(moved, syntax)  # type: ignore[arg-type]
    assert sorted(t.raw for t in reparsed.tools) == sorted(t.raw for t in parsed.tools)
    if moved != text:
        index = [t.raw for t in reparsed.tools].index(tool.raw)
        mid = [
            f
            for f in validate(reparsed, None, placement=True)
            if f.code == "mid_sentence" and f.tag == index
        ]
        assert mid == []

    payload = make_payload(syntax, "Search", "new", {"query": "q"})  # type: ignore[arg-type]
    at = data.draw(st.integers(0, len(text)))
    inserted = insert_tag(parsed, payload, at=at)
    tag = render_tag(payload, syntax)  # type: ignore[arg-type]
    assert is_insertion(text, inserted, tag)
    assert any(t.raw == tag for t in parse(inserted, syntax).tools)  # type: ignore[arg-type]
