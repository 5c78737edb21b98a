"""The answer preview: Markdown to sanitized HTML, tool calls drawn in place."""

from __future__ import annotations

from benchmark.rendering.preview import render_answer

REFERENCE = (
    '<tool>{"tool_name": "Reference", "description": "Panel", "params": {"img_index": 0}}</tool>'
)


def thumb(tool):  # type: ignore[no-untyped-def]
    index = (tool.params or {}).get("img_index")
    return ("/images/abc/thumb/", f"img_index {index}") if tool.tool_name == "Reference" else None


def test_script_in_the_answer_is_shown_as_text() -> None:
    html = render_answer("<script>alert(1)</script>\n\nHello <b>there</b>.", "atp")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<script>alert" not in html
    assert "<b>" not in html and "&lt;b&gt;" in html


def test_script_inside_a_tag_payload_is_escaped() -> None:
    text = (
        '<tool>{"tool_name": "Diffusion", "description": "<script>alert(2)</script>", '
        '"params": {"prompt": "<img src=x onerror=alert(3)>"}}</tool>'
    )
    html = render_answer(text, "atp", image=thumb)
    assert "<script" not in html and "<img src=x" not in html
    assert "&lt;script&gt;alert(2)&lt;/script&gt;" in html
    assert '<span class="pv-tool-name">Diffusion</span>' in html


def test_markdown_renders_and_javascript_links_are_dropped() -> None:
    html = render_answer(
        "**Bold** and [a link](javascript:alert(1)) and [ok](https://x.org)", "atp"
    )
    assert "<strong>Bold</strong>" in html
    assert 'href="javascript' not in html
    assert '<a href="https://x.org"' in html


def test_reference_shows_the_item_image_and_other_tools_a_card() -> None:
    text = f"Look:\n\n{REFERENCE}\n\nA mid-sentence {REFERENCE.replace('0}', '5}')} call."
    html = render_answer(text, "atp", image=thumb)
    assert '<div class="pv-block"><span class="pv-figure"><img src="/images/abc/thumb/"' in html
    assert "Reference · img_index 0 — Panel" in html
    llmi = render_answer(
        "Text <imgen>{'source': 'code', 'description': 'chart', 'params': {'code': 'print(1)'}}"
        "</imgen>",
        "llmi",
    )
    assert '<code class="pv-code">print(1)</code>' in llmi


def test_unreadable_call_is_labelled() -> None:
    html = render_answer('<tool>{"tool_name": "Diffusion", "params": {</tool>', "atp")
    assert "Unreadable tool call" in html
