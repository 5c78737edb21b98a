"""Markdown to sanitized HTML, with each tool call of an answer drawn in place by a caller's
function. Pure Python (no Django).

Raw HTML in the answer is shown as text, never passed through: markdown-it runs with ``html``
off, and the result goes through nh3 with a short allowlist. The answer's text and the cards
are joined by placeholders that the answer cannot forge (a random nonce per call); the joined
document is cleaned once more. ``data:`` URLs survive only as an ``<img src>`` holding a
base64 PNG, JPEG, GIF or WebP image (``data_images=True``, the standalone file). No ``style``
attribute survives (a table's column alignment is dropped): the site's Content-Security-Policy
refuses inline styles.

What comes out of :func:`sanitize` is a :class:`SanitizedHtml`: a ``str`` that says where it
came from, so a template can print it as HTML (the ``sanitized`` filter,
``benchmark/templatetags/sanitized.py``) while escaping any other text it is given.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING

import nh3

from benchmark.tags import ParsedText, ToolCall

if TYPE_CHECKING:
    from markdown_it import MarkdownIt

__all__ = ["CardFor", "SanitizedHtml", "interleave", "markdown_html", "sanitize"]


class SanitizedHtml(str):
    """HTML that went through :func:`sanitize` (nh3 with the allowlist below). Joining it with
    other text gives a plain ``str`` again."""

    __slots__ = ()


#: ``card(tool) -> html`` for one tool call; the HTML is the caller's own (escaped) markup.
CardFor = Callable[[ToolCall], str]

_TAGS = {
    "p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "em", "del", "s", "code",
    "pre", "blockquote", "ul", "ol", "li", "a", "table", "thead", "tbody", "tr", "th", "td",
    "img", "span", "div",
}  # fmt: skip
_ATTRIBUTES: dict[str, set[str]] = {
    "*": {"class"},
    "a": {"href", "title"},
    "img": {"src", "alt", "title", "loading"},
    "ol": {"start"},
    "span": {"data-call", "data-status", "data-reason", "data-tool"},
}
_URL_SCHEMES = {"http", "https", "mailto"}
_DATA_IMAGE = re.compile(r"data:image/(?:png|jpeg|gif|webp);base64,[A-Za-z0-9+/=]*\Z")


@cache
def _markdown() -> MarkdownIt:
    from markdown_it import MarkdownIt  # lazy: ~25 ms to import, only rendering needs it

    return MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])


def _data_images_only(tag: str, attribute: str, value: str) -> str | None:
    if value[:5].lower() != "data:":
        return value
    if tag == "img" and attribute == "src" and _DATA_IMAGE.match(value):
        return value
    return None


def sanitize(fragment: str, *, data_images: bool = False) -> SanitizedHtml:
    """``fragment`` through nh3 with the allowlist (with ``data_images``: base64 images in
    ``<img src>`` too, no other ``data:`` URL)."""
    return SanitizedHtml(_clean(fragment, data_images=data_images))


def _clean(fragment: str, *, data_images: bool) -> str:
    if not data_images:
        return nh3.clean(
            fragment,
            tags=_TAGS,
            attributes=_ATTRIBUTES,
            url_schemes=_URL_SCHEMES,
            link_rel="noopener noreferrer nofollow",
        )
    return nh3.clean(
        fragment,
        tags=_TAGS,
        attributes=_ATTRIBUTES,
        url_schemes=_URL_SCHEMES | {"data"},
        link_rel="noopener noreferrer nofollow",
        attribute_filter=_data_images_only,
    )


def markdown_html(text: str) -> SanitizedHtml:
    """Markdown to sanitized HTML (raw HTML in ``text`` shows as text)."""
    return sanitize(_markdown().render(text))


def interleave(parsed: ParsedText, card: CardFor, *, data_images: bool = False) -> SanitizedHtml:
    """Sanitized HTML of an answer whose tool calls are drawn by ``card``. A call alone in
    its paragraph becomes a block (``<div class="pv-block">``); one inside running text stays
    inline."""
    nonce = secrets.token_hex(8)
    cards: dict[str, str] = {}
    parts: list[str] = []
    for segment in parsed.segments:
        if isinstance(segment, ToolCall):
            key = f"bwtag{nonce}x{segment.index}x"
            cards[key] = card(segment)
            parts.append(key)
        else:
            parts.append(segment.text)
    body = sanitize(_markdown().render("".join(parts)))

    # One pass over the HTML (500 cards in a 1 MB answer made 1,000 passes with str.replace).
    def card_for(m: re.Match[str]) -> str:
        if m.group(1) is not None:
            return f'<div class="pv-block">{cards[m.group(1)]}</div>'
        return cards[m.group(2)]

    key = rf"bwtag{nonce}x\d+x"
    return sanitize(re.sub(rf"<p>({key})</p>|({key})", card_for, body), data_images=data_images)
