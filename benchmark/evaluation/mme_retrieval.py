"""A retrieval provider for Agentic-MME's four web tools that talks to a configured HTTP API.

The API (Benchwright's own shape, JSON in and out; a thin service in front of Serper, Jina
Reader or a recorded web implements it):

    POST <base_url>/<tool>            tool: google_search | google_lens_search |
    Authorization: Bearer <key>             fetch_webpage | download_image
    Content-Type: application/json
    {"arguments": {...}}

    200 {"output": <any JSON>, "files": {"<name>": "<base64>"}, "error": ""}

What each tool is sent (``arguments``) and should answer (``output``):

* ``google_search``: ``{"query", "gl"?, "hl"?}`` -> ``{"context": "<compact text for the
  model>", "raw": {...}}`` (the released tool's shape: ``context`` is what the model reads,
  ``raw`` the pruned search response).
* ``google_lens_search``: ``{"image_sha256", "image_base64"}`` (the PNG the model chose) ->
  ``{"context", "raw"}``.
* ``fetch_webpage``: ``{"url", "max_chars"}`` -> ``{"url", "text"}``.
* ``download_image``: ``{"url"}`` -> ``{"url", ...}`` with the image in ``files``.

A non-empty ``error`` (or a 3xx or 4xx answer other than 429; redirects are not followed) is
the tool's answer: the model reads it and the tool layer records it. A 429 or 5xx answer, a
timeout or a connection failure is retried with the model client's machinery
(``benchmark.pacing``): exponential backoff with jitter, a 429's Retry-After honoured and
holding every thread's next request to the provider, at most ``concurrency`` calls at once
and ``rpm`` a minute per provider base URL. When the retries run out it raises
:class:`RetrievalError` naming the attempts: the call is not recorded, the model is told the
search failed. The client is the one every HTTP tool provider shares
(:class:`benchmark.evaluation.http_tools.HttpToolProvider`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from .base import EvaluationError
from .http_tools import MAX_RESPONSE_BYTES, HttpToolError, HttpToolProvider
from .mme_tools import RETRIEVAL_TOOLS

__all__ = ["MAX_RESPONSE_BYTES", "HttpRetrievalProvider", "RetrievalError"]


class RetrievalError(HttpToolError):
    """The provider could not be reached or failed (not the tool's own answer)."""


@dataclass(frozen=True)
class HttpRetrievalProvider(HttpToolProvider):
    """``Provider`` for the retrieval tools over the HTTP API above."""

    known: ClassVar[tuple[str, ...]] = RETRIEVAL_TOOLS
    what: ClassVar[str] = "retrieval provider"
    error_class: ClassVar[type[EvaluationError]] = RetrievalError

    offered: tuple[str, ...] = RETRIEVAL_TOOLS
