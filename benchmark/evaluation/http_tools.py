"""A tool provider that talks to a configured HTTP API, one JSON request per call: the one
client behind every such provider of an evaluation run (Agentic-MME's retrieval tools,
``benchmark.evaluation.mme_retrieval``; m&m's detection, segmentation, speech and public-API
tools, ``benchmark.evaluation.mms_provided``). Pure Python, no Django.

The wire format (Benchwright's own; a thin service in front of the real APIs implements it):

    POST <base_url>/<path>            path: the tool's name as the subclass spells it
    Authorization: Bearer <key>
    Content-Type: application/json
    {"arguments": {...}, ...}         (a subclass may add fields, e.g. "files")

    200 {"output": <any JSON>, "files": {"<name>": "<base64>"}, "error": ""}

A non-empty ``error`` (or a 3xx or 4xx answer other than 429; redirects are not followed) is
the tool's answer: the caller reads it and the tool layer records it. A 429 or 5xx answer, a
timeout or a connection failure is retried with the model client's machinery
(``benchmark.pacing``): exponential backoff with jitter, a 429's Retry-After honoured and
holding every thread's next request to the provider, at most ``concurrency`` calls at once
and ``rpm`` a minute per provider base URL. When the retries run out it raises the provider's
``error_class`` naming the attempts: the call is not recorded.
"""

from __future__ import annotations

import base64
import binascii
import json
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar
from urllib.parse import quote, urlsplit

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

MAX_RESPONSE_BYTES = 64 * 1024 * 1024


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """The configured API answers itself: a redirect elsewhere is refused (an error answer),
    never followed to a host nobody allow-listed."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirects)


class HttpToolError(EvaluationError):
    """The provider could not be reached or failed (not the tool's own answer)."""


@dataclass(frozen=True)
class HttpToolProvider:
    """``Provider`` for the tools ``known`` over the HTTP API above. Subclasses say which
    tools (``known``, the default of ``offered``), what they are called in messages
    (``what``), their error class, and may shape the request (``path``, ``body``) and check
    the answer (``finish``)."""

    known: ClassVar[tuple[str, ...]] = ()
    what: ClassVar[str] = "tool provider"
    error_class: ClassVar[type[EvaluationError]] = HttpToolError

    base_url: str
    api_key: str = ""
    timeout: float = 45.0
    #: The tools this provider answers (a subclass defaults it to all it knows).
    offered: tuple[str, ...] = ()
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
            raise ValueError(f"{self.what}: base URL must be an http(s) URL, not {self.base_url!r}")
        unknown = [name for name in self.offered if name not in self.known]
        if unknown:
            raise ValueError(
                f"{self.what}: unknown tool {unknown[0]!r} (the tools are {', '.join(self.known)})"
            )
        if self.max_retries < 0 or self.concurrency < 1 or self.rpm < 0 or self.timeout <= 0:
            raise ValueError(
                f"{self.what}: max_retries and rpm must be 0 or more, concurrency at "
                "least 1 and the timeout over 0"
            )

    def tools(self) -> Iterable[str]:
        return self.offered

    # ---- what a subclass may shape

    def path(self, name: str) -> str:
        """The URL segment of the tool ``name`` (after the base URL)."""
        return quote(name, safe="")

    def body(
        self, name: str, arguments: Mapping[str, Any], files: Mapping[str, bytes]
    ) -> dict[str, Any]:
        """The JSON request of one call."""
        return {"arguments": dict(arguments)}

    def finish(
        self,
        name: str,
        arguments: Mapping[str, Any],
        files: Mapping[str, bytes],
        result: ToolResult,
    ) -> ToolResult:
        """The answer as the caller gets it (a subclass checks its shape)."""
        return result

    # ---- the call

    def call(
        self, name: str, arguments: Mapping[str, Any], files: Mapping[str, bytes] | None = None
    ) -> ToolResult:
        if name not in self.offered:
            return ToolResult(output=None, error=f"{name} is not offered by this provider")
        files = dict(files or {})
        url = f"{self.base_url.rstrip('/')}/{self.path(name)}"
        payload = json.dumps(self.body(name, arguments, files), ensure_ascii=False)
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        request = urllib.request.Request(
            url, data=payload.encode("utf-8"), headers=headers, method="POST"
        )

        def send(attempt: int) -> ToolResult:
            try:
                with _OPENER.open(request, timeout=self.timeout) as response:
                    answer = response.read(MAX_RESPONSE_BYTES + 1)
            except urllib.error.HTTPError as exc:
                return self._http_error(name, exc)
            except (urllib.error.URLError, TimeoutError, OSError) as exc:
                reason = getattr(exc, "reason", exc)
                raise Transient(
                    self.error_class(f"{name}: the {self.what} cannot be reached ({reason})")
                ) from None
            if len(answer) > MAX_RESPONSE_BYTES:
                raise self.error_class(
                    f"{name}: the provider's answer is over {MAX_RESPONSE_BYTES} bytes"
                )
            return self._result(name, answer)

        gate = self.gate if self.gate is not None else endpoint_gate(self.base_url, self.rpm)
        try:
            result = call_with_retries(
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
            raise self.error_class(str(exc)) from None
        return self.finish(name, arguments, files, result)

    def _http_error(self, name: str, exc: urllib.error.HTTPError) -> ToolResult:
        try:
            detail = exc.read(4096).decode("utf-8", "replace").strip()
        except OSError:
            detail = ""
        try:
            detail = str(json.loads(detail).get("error") or detail)
        except (ValueError, AttributeError):
            pass
        message = f"{name}: the {self.what} answered {exc.code}" + (
            f": {detail[:300]}" if detail else ""
        )
        if exc.code == 429 or exc.code >= 500:
            raise Transient(
                self.error_class(message),
                retry_after=retry_after_seconds(exc.headers.get("Retry-After")),
                rate_limited=exc.code == 429,
                status=exc.code,
            ) from None
        return ToolResult(output=None, error=message)

    def _result(self, name: str, payload: bytes) -> ToolResult:
        try:
            data = json.loads(payload)
        except (ValueError, UnicodeDecodeError):
            raise self.error_class(f"{name}: the provider's answer is not JSON") from None
        if not isinstance(data, dict):
            raise self.error_class(f"{name}: the provider's answer must be a JSON object")
        files_in = data.get("files") or {}
        if not isinstance(files_in, dict):
            raise self.error_class(f"{name}: the provider's 'files' must be an object")
        files: dict[str, bytes] = {}
        for file_name, encoded in files_in.items():
            try:
                files[str(file_name)] = base64.b64decode(str(encoded), validate=True)
            except (binascii.Error, ValueError):
                raise self.error_class(f"{name}: file {file_name!r} is not base64") from None
        error = data.get("error") or ""
        return ToolResult(output=data.get("output"), files=files, error=str(error))
