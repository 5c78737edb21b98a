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
search failed.
"""

from __future__ import annotations

import base64
import binascii
import json
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from benchmark.pacing import (
    GaveUp,
    RateGate,
    RetryPolicy,
    Transient,
    call_with_retries,
    endpoint_gate,
    retry_after_seconds,
)

from .base import EvaluationError, ToolResult
from .mme_tools import RETRIEVAL_TOOLS

MAX_RESPONSE_BYTES = 64 * 1024 * 1024


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """The configured API answers itself: a redirect elsewhere is refused (an error answer),
    never followed to a host nobody allow-listed."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirects)


class RetrievalError(EvaluationError):
    """The provider could not be reached or failed (not the tool's own answer)."""


@dataclass(frozen=True)
class HttpRetrievalProvider:
    """``Provider`` for the retrieval tools over the HTTP API above."""

    base_url: str
    api_key: str = ""
    timeout: float = 45.0
    offered: tuple[str, ...] = RETRIEVAL_TOOLS
    #: Transient failures retried this many times (0: none).
    max_retries: int = 3
    backoff_base: float = 0.5
    backoff_max: float = 20.0
    #: At most this many calls at once to the provider (per process), and this many a
    #: minute (0: no cap), whoever makes them.
    concurrency: int = 4
    rpm: int = 0
    #: The provider's gate (default the process's gate for its base URL) and what waits out
    #: a backoff (default the gate's sleep); tests give their own, so no wall clock.
    gate: RateGate | None = field(default=None, compare=False, repr=False)
    sleep: Callable[[float], None] | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        parts = urlsplit(self.base_url or "")
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(
                f"retrieval provider: base URL must be an http(s) URL, not {self.base_url!r}"
            )
        unknown = [name for name in self.offered if name not in RETRIEVAL_TOOLS]
        if unknown:
            raise ValueError(
                f"retrieval provider: unknown tool {unknown[0]!r} "
                f"(the tools are {', '.join(RETRIEVAL_TOOLS)})"
            )
        if self.max_retries < 0 or self.concurrency < 1 or self.rpm < 0 or self.timeout <= 0:
            raise ValueError(
                "retrieval provider: max_retries and rpm must be 0 or more, concurrency at "
                "least 1 and the timeout over 0"
            )

    def tools(self) -> Iterable[str]:
        return self.offered

    def call(self, name: str, arguments: Mapping[str, Any]) -> ToolResult:
        if name not in self.offered:
            return ToolResult(output=None, error=f"{name} is not offered by this provider")
        url = f"{self.base_url.rstrip('/')}/{name}"
        body = json.dumps({"arguments": dict(arguments)}, ensure_ascii=False).encode("utf-8")
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        request = urllib.request.Request(url, data=body, headers=headers, method="POST")

        def send(attempt: int) -> ToolResult:
            try:
                with _OPENER.open(request, timeout=self.timeout) as response:
                    payload = response.read(MAX_RESPONSE_BYTES + 1)
            except urllib.error.HTTPError as exc:
                return self._http_error(name, exc)
            except (urllib.error.URLError, TimeoutError, OSError) as exc:
                reason = getattr(exc, "reason", exc)
                raise Transient(
                    RetrievalError(f"{name}: the retrieval provider cannot be reached ({reason})")
                ) from None
            if len(payload) > MAX_RESPONSE_BYTES:
                raise RetrievalError(
                    f"{name}: the provider's answer is over {MAX_RESPONSE_BYTES} bytes"
                )
            return self._result(name, payload)

        gate = self.gate if self.gate is not None else endpoint_gate(self.base_url, self.rpm)
        try:
            return call_with_retries(
                send,
                base_url=self.base_url,
                concurrency=self.concurrency,
                gate=gate,
                policy=RetryPolicy(
                    max_retries=self.max_retries,
                    backoff_base=self.backoff_base,
                    backoff_max=self.backoff_max,
                ),
                sleep=self.sleep,
            )
        except GaveUp as exc:
            raise RetrievalError(str(exc)) from None

    @staticmethod
    def _http_error(name: str, exc: urllib.error.HTTPError) -> ToolResult:
        try:
            detail = exc.read(4096).decode("utf-8", "replace").strip()
        except OSError:
            detail = ""
        try:
            detail = str(json.loads(detail).get("error") or detail)
        except (ValueError, AttributeError):
            pass
        message = f"{name}: the retrieval provider answered {exc.code}" + (
            f": {detail[:300]}" if detail else ""
        )
        if exc.code == 429 or exc.code >= 500:
            raise Transient(
                RetrievalError(message),
                retry_after=retry_after_seconds(exc.headers.get("Retry-After")),
                rate_limited=exc.code == 429,
                status=exc.code,
            ) from None
        return ToolResult(output=None, error=message)

    @staticmethod
    def _result(name: str, payload: bytes) -> ToolResult:
        try:
            data = json.loads(payload)
        except (ValueError, UnicodeDecodeError):
            raise RetrievalError(f"{name}: the provider's answer is not JSON") from None
        if not isinstance(data, dict):
            raise RetrievalError(f"{name}: the provider's answer must be a JSON object")
        files_in = data.get("files") or {}
        if not isinstance(files_in, dict):
            raise RetrievalError(f"{name}: the provider's 'files' must be an object")
        files: dict[str, bytes] = {}
        for file_name, encoded in files_in.items():
            try:
                files[str(file_name)] = base64.b64decode(str(encoded), validate=True)
            except (binascii.Error, ValueError):
                raise RetrievalError(f"{name}: file {file_name!r} is not base64") from None
        error = data.get("error") or ""
        return ToolResult(output=data.get("output"), files=files, error=str(error))
