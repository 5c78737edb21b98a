"""A rendered answer as HTML: the answer's Markdown (sanitized) with each tool call replaced by
its image (a figure with its caption) or by a labelled card saying why there is none. Pure
Python (no Django).

``document_html(parsed, results, image_src=...)`` draws one result per tag (``results[i]``
for ``parsed.tools[i]``; a tag without a result is drawn as "not rendered"). ``image_src``
turns a sha256 into the ``src`` of its ``<img>``: a URL on the site, or a ``data:`` URL for
the standalone file (``standalone_html``, which inlines the CSS too, so the file opens
anywhere without the site).

Every card and figure carries ``data-call`` (the tag's index), ``data-tool`` and
``data-status`` (``rendered``, ``placeholder``, ``failed``), and a card ``data-reason``.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Callable, Sequence
from typing import Any

from benchmark.rendering.calls import (
    LABELS,
    NOT_AVAILABLE,
    NOT_CONFIGURED,
    PLACEHOLDER,
    RENDERED,
    CallResult,
)
from benchmark.rendering.markup import SanitizedHtml, interleave
from benchmark.rendering.providers import image_mime
from benchmark.tags import ParsedText, ToolCall

__all__ = ["data_url", "document_html", "standalone_html"]

#: ``image_src(sha256) -> src``.
ImageSrc = Callable[[str], str]

_SHOWN_CHARS = {"code": 4000, "prompt": 1000, "query": 300}
_TOOL_TITLES = {
    "reference": "Reference",
    "diffusion": "Diffusion",
    "search": "Search",
    "code": "Code",
    "edit": "Edit",
}
_MISSING = CallResult(status="failed", reason="error", message="this call was not rendered")


def _e(value: Any) -> str:
    return html.escape(value if isinstance(value, str) else repr(value), quote=True)


def _cut(value: Any, n: int) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= n else text[:n] + f"… ({len(text) - n:,} more characters)"


def _tool_name(tool: ToolCall) -> str:
    name = (tool.tool_name or "").strip()
    return _TOOL_TITLES.get(name.lower(), name) or "Tool call"


def _attrs(tool: ToolCall, result: CallResult) -> str:
    attrs = (
        f' data-call="{tool.index}" data-tool="{_e((tool.tool_name or "").lower()[:40])}"'
        f' data-status="{_e(result.status)}"'
    )
    if result.reason:
        attrs += f' data-reason="{_e(result.reason)}"'
    return attrs


def _asked(tool: ToolCall) -> str:
    """What the call asked for: its prompt, query or program (shortened)."""
    params = tool.params or {}
    for name in ("prompt", "query", "code"):
        value = params.get(name)
        if isinstance(value, str) and value.strip():
            shown = _cut(value, _SHOWN_CHARS[name])
            if name == "code":
                return f'<code class="rd-code">{_e(shown)}</code>'
            return f'<span class="rd-param"><span class="rd-param-name">{name}:</span> {_e(shown)}</span>'
    if tool.data is None and tool.payload_text:
        return f'<code class="rd-code">{_e(_cut(tool.payload_text, 500))}</code>'
    return ""


def _caption(tool: ToolCall) -> str:
    description = (tool.description or "").strip()
    return f'<span class="rd-caption">{_e(_cut(description, 500))}</span>' if description else ""


def _figure(tool: ToolCall, result: CallResult, src: str) -> str:
    alt = (tool.description or "").strip() or _tool_name(tool)
    return (
        f'<span class="rd-figure"{_attrs(tool, result)}>'
        f'<img src="{_e(src)}" alt="{_e(_cut(alt, 300))}" loading="lazy">'
        f"{_caption(tool)}</span>"
    )


def _unedited(tool: ToolCall, result: CallResult, src: str) -> str:
    prompt = (tool.params or {}).get("prompt")
    prompt_text = _cut(prompt, _SHOWN_CHARS["prompt"]) if isinstance(prompt, str) else ""
    return (
        f'<span class="rd-figure rd-unedited"{_attrs(tool, result)}>'
        f'<img src="{_e(src)}" alt="{_e("source image of an edit that was not executed")}"'
        ' loading="lazy">'
        f'<span class="rd-overlay"><span class="rd-card-label">Edit not executed:</span> '
        f"{_e(prompt_text)}</span>"
        f'<span class="rd-why">{_e(result.message)}</span>'
        f"{_caption(tool)}</span>"
    )


def _card(tool: ToolCall, result: CallResult) -> str:
    name = _tool_name(tool)
    if result.status == PLACEHOLDER:
        kind = "rd-placeholder"
        label = f"{name} not executed"
        if result.reason not in (NOT_CONFIGURED, NOT_AVAILABLE):
            label = f"{name}: {LABELS.get(result.reason, 'not executed').lower()}"
    else:
        kind = "rd-failed"
        label = f"{name} · {LABELS.get(result.reason, 'Failed')}"
    description = (tool.description or "").strip()
    return (
        f'<span class="rd-card {kind}"{_attrs(tool, result)}>'
        f'<span class="rd-card-label">{_e(label)}</span>'
        f'<span class="rd-why">{_e(_cut(result.message, 1000))}</span>'
        + (f'<span class="rd-desc">{_e(_cut(description, 300))}</span>' if description else "")
        + _asked(tool)
        + "</span>"
    )


def call_html(tool: ToolCall, result: CallResult | None, image_src: ImageSrc) -> str:
    """One tool call as the reader sees it."""
    result = result or _MISSING
    if result.status == RENDERED and result.image:
        return _figure(tool, result, image_src(result.image))
    if result.status == PLACEHOLDER and result.shown:
        return _unedited(tool, result, image_src(result.shown))
    return _card(tool, result)


def document_html(
    parsed: ParsedText,
    results: Sequence[CallResult | None],
    *,
    image_src: ImageSrc,
    data_images: bool = False,
) -> SanitizedHtml:
    """The answer as sanitized HTML with every call drawn (see the module docstring).
    ``data_images`` keeps ``data:`` image URLs (the standalone file)."""

    def card(tool: ToolCall) -> str:
        result = results[tool.index] if tool.index < len(results) else None
        return call_html(tool, result, image_src)

    body = interleave(parsed, card, data_images=data_images)
    return SanitizedHtml(f'<div class="rd-document">{body}</div>')


def data_url(data: bytes) -> str:
    """A ``data:`` URL for image bytes (PNG, JPEG, GIF or WebP; anything else as PNG, which a
    browser will refuse to draw rather than run)."""
    mime = image_mime(data) or "image/png"
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


def standalone_html(
    *,
    title: str,
    body: str,
    css: str,
    facts: Sequence[tuple[str, str]] = (),
    error: str = "",
) -> str:
    """A complete HTML file: ``title`` as its heading, ``facts`` (label, value; plain text)
    under it, then ``body`` (already sanitized HTML), or, when the answer could not be
    rendered, ``error`` (plain text) in its place; with the CSS inlined. The file carries its
    own Content-Security-Policy: no scripts, images only from ``data:``."""
    if error:
        body = f"<p>Not rendered: {_e(error)}</p>"
    heading = f"<h1>{_e(title)}</h1>"
    if facts:
        heading += (
            '<dl class="rd-facts">'
            + "".join(f"<dt>{_e(label)}</dt><dd>{_e(value)}</dd>" for label, value in facts)
            + "</dl>"
        )
    policy = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{policy}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{_e(title)}</title>\n<style>\n{css}\n</style>\n</head>\n"
        '<body class="rd-standalone">\n'
        + f'<header class="rd-head">{heading}</header>\n'
        + f"<main>\n{body}\n</main>\n</body>\n</html>\n"
    )
