"""Preview an interleaved answer as the reader would see it: Markdown rendered to sanitized
HTML, each tool call drawn in place (the referenced image, or a labelled card).

Pure Python (no Django). Raw HTML in the answer is shown as text, never passed through:
markdown-it runs with ``html`` off, and the result goes through nh3 with a short allowlist.
"""

from __future__ import annotations

import html
import re
import secrets
from collections.abc import Callable
from typing import Any

import nh3
from markdown_it import MarkdownIt

from benchmark.tags import ParsedText, ToolCall, parse

__all__ = ["ImageLookup", "render_answer"]

#: ``image(tool) -> (url, caption)`` for a call that shows a known image, else ``None``.
ImageLookup = Callable[[ToolCall], tuple[str, str] | None]

_MARKDOWN_TAGS = {
    "p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "em", "del", "s", "code",
    "pre", "blockquote", "ul", "ol", "li", "a", "table", "thead", "tbody", "tr", "th", "td",
    "img", "span", "div",
}  # fmt: skip
_ATTRIBUTES: dict[str, set[str]] = {
    "*": {"class"},
    "a": {"href", "title"},
    "img": {"src", "alt", "title", "loading"},
    "ol": {"start"},
    "th": {"style"},
    "td": {"style"},
}
_URL_SCHEMES = {"http", "https", "mailto"}
_MAIN_PARAM = ("prompt", "query", "code")


def _markdown() -> MarkdownIt:
    return MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])


def _clean(fragment: str) -> str:
    return nh3.clean(
        fragment,
        tags=_MARKDOWN_TAGS,
        attributes=_ATTRIBUTES,
        url_schemes=_URL_SCHEMES,
        link_rel="noopener noreferrer nofollow",
    )


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
) -> str:
    """Sanitized HTML for an answer. Each tool call becomes a figure (when ``image`` finds
    the image it shows) or a card naming the tool, its description and main parameter.
    ``parsed`` is ``parse(text, syntax)`` when the caller already has it."""
    if parsed is None or parsed.text != text or parsed.syntax != syntax:
        parsed = parse(text, syntax)  # type: ignore[arg-type]
    nonce = secrets.token_hex(8)
    cards: dict[str, str] = {}
    parts: list[str] = []
    for segment in parsed.segments:
        if isinstance(segment, ToolCall):
            key = f"bwtag{nonce}x{segment.index}x"
            cards[key] = _card(segment, image)
            parts.append(key)
        else:
            parts.append(segment.text)
    body = _clean(_markdown().render("".join(parts)))

    # One pass over the HTML (500 cards in a 1 MB answer made 1,000 passes with str.replace):
    # a call alone in its paragraph becomes a block, one inside running text stays inline.
    def card_for(m: re.Match[str]) -> str:
        if m.group(1) is not None:
            return f'<div class="pv-block">{cards[m.group(1)]}</div>'
        return cards[m.group(2)]

    key = rf"bwtag{nonce}x\d+x"
    return _clean(re.sub(rf"<p>({key})</p>|({key})", card_for, body))
