"""The tag editor's preview of an interleaved answer: Markdown rendered to sanitized HTML
(``benchmark.rendering.markup``), each tool call drawn in place as the referenced image or a
labelled card. Nothing is executed; ``benchmark.rendering.document`` draws executed calls.

Pure Python (no Django).
"""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

from benchmark.rendering.markup import SanitizedHtml, interleave
from benchmark.tags import ParsedText, ToolCall, parse

__all__ = ["ImageLookup", "render_answer"]

#: ``image(tool) -> (url, caption)`` for a call that shows a known image, else ``None``.
ImageLookup = Callable[[ToolCall], tuple[str, str] | None]

_MAIN_PARAM = ("prompt", "query", "code")


def _text(value: Any) -> str:
    return html.escape(value if isinstance(value, str) else repr(value), quote=True)


def _card(tool: ToolCall, image: ImageLookup | None) -> str:
    name = tool.tool_name or "(no tool)"
    description = tool.description or ""
    if tool.data is None:
        return (
            '<span class="pv-tool pv-broken"><span class="pv-tool-name">Unreadable tool call'
            f"</span> <code>{_text(tool.payload_text[:200])}</code></span>"
        )
    found = image(tool) if image is not None else None
    if found is not None:
        url, caption = found
        label = f"{name} · {caption}" + (f" — {description}" if description else "")
        return (
            f'<span class="pv-figure"><img src="{_text(url)}" alt="{_text(description or name)}"'
            f' loading="lazy"><span class="pv-caption">{_text(label)}</span></span>'
        )
    params = tool.params or {}
    main = next((k for k in _MAIN_PARAM if k in params), None)
    body = ""
    if main == "code":
        body = f'<code class="pv-code">{_text(params[main])}</code>'
    elif main is not None:
        body = f'<span class="pv-param">{_text(main)}: {_text(params[main])}</span>'
    elif params:
        body = (
            '<span class="pv-param">'
            + _text(", ".join(f"{k}={v!r}" for k, v in params.items()))
            + "</span>"
        )
    return (
        f'<span class="pv-tool"><span class="pv-tool-name">{_text(name)}</span>'
        f' <span class="pv-desc">{_text(description)}</span> {body}</span>'
    )


def render_answer(
    text: str,
    syntax: str,
    *,
    image: ImageLookup | None = None,
    parsed: ParsedText | None = None,
) -> SanitizedHtml:
    """Sanitized HTML for an answer. Each tool call becomes a figure (when ``image`` finds
    the image it shows) or a card naming the tool, its description and main parameter.
    ``parsed`` is ``parse(text, syntax)`` when the caller already has it."""
    if parsed is None or parsed.text != text or parsed.syntax != syntax:
        parsed = parse(text, syntax)  # type: ignore[arg-type]
    return interleave(parsed, lambda tool: _card(tool, image))
