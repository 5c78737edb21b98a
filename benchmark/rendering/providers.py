"""What executes the tools: image generation and editing (OpenAI-compatible images API),
image search (a configurable HTTP JSON endpoint) and code (the sandbox). Pure Python (no
Django); the openai SDK and the sandbox are imported inside the functions that use them.

Every provider has a ``name`` (recorded with each image it produced and part of the cache
key; it never contains a key) and one method that returns image bytes or
raises :class:`ProviderError`. Any provider can be replaced by an object with the same
method (tests inject fakes).
"""

from __future__ import annotations

import base64
import ipaddress
import json
import re
import socket
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

__all__ = [
    "CodeRunner",
    "Found",
    "HttpImageSearch",
    "ImageEditor",
    "ImageEndpoint",
    "ImageGenerator",
    "ImageSearch",
    "OpenAIImageEditor",
    "OpenAIImageGenerator",
    "ProviderError",
    "Providers",
    "SandboxCodeRunner",
    "fetch_image",
    "image_mime",
    "sandbox_code_runner",
]

#: Largest image a provider may hand back (bytes).
MAX_IMAGE_BYTES = 20 * 1024 * 1024


class ProviderError(Exception):
    """A tool call the provider could not execute. ``kind`` is "timeout", "error" or
    "unavailable" (the provider cannot run here at all, e.g. a sandbox without the kernel
    features it needs: drawn as a placeholder); ``retry`` marks a failure that may pass
    another time (network, 429, 5xx, unavailable), which is never cached."""

    def __init__(self, message: str, *, kind: str = "error", retry: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.kind = kind
        self.retry = retry


@dataclass(frozen=True)
class Found:
    """An image a provider produced, with what it says about it (a search hit's page and
    title, the program's output)."""

    data: bytes = field(repr=False)
    detail: dict[str, Any] = field(default_factory=dict)


class ImageGenerator(Protocol):
    name: str

    def generate(self, prompt: str) -> Found: ...


class ImageEditor(Protocol):
    name: str

    def edit(self, image: bytes, prompt: str) -> Found: ...


class ImageSearch(Protocol):
    name: str

    def search(self, query: str) -> Found: ...


class CodeRunner(Protocol):
    name: str

    def run(self, code: str) -> Found: ...


@dataclass
class Providers:
    """What is configured; None means the tool is drawn as a labelled placeholder."""

    generate: ImageGenerator | None = None
    edit: ImageEditor | None = None
    search: ImageSearch | None = None
    code: CodeRunner | None = None

    def names(self) -> dict[str, str]:
        return {
            tool: getattr(self, attr).name if getattr(self, attr) is not None else ""
            for tool, attr in (
                ("diffusion", "generate"),
                ("edit", "edit"),
                ("search", "search"),
                ("code", "code"),
            )
        }


# --------------------------------------------------------------------------- bytes

_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


def image_mime(data: bytes) -> str | None:
    """The mime type of PNG, JPEG, GIF or WebP bytes, else None."""
    for magic, mime in _MAGIC:
        if data.startswith(magic):
            return mime
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


# --------------------------------------------------------------------------- downloads


def _public(host: str) -> bool:
    try:
        infos = socket.getaddrinfo(host, None)
    except OSError:
        return False
    for info in infos:
        address = ipaddress.ip_address(info[4][0])
        if (
            address.is_private
            or address.is_loopback
            or address.is_link_local
            or address.is_reserved
            or address.is_multicast
            or address.is_unspecified
        ):
            return False
    return True


def fetch_image(
    url: str,
    *,
    timeout: float = 30.0,
    max_bytes: int = MAX_IMAGE_BYTES,
    allow_private: bool = False,
    headers: dict[str, str] | None = None,
) -> bytes:
    """The bytes at an http(s) URL, at most ``max_bytes``. Unless ``allow_private``, a host
    that resolves to a private, loopback or link-local address is refused (a search result
    must not make the server fetch from its own network)."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ProviderError(f"not an http(s) image URL: {url[:200]}")
    if not allow_private and not _public(parts.hostname):
        raise ProviderError(f"refused to fetch {parts.hostname}: not a public address")
    request = urllib.request.Request(url, headers={"User-Agent": "Benchwright", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
            data = response.read(max_bytes + 1)
    except TimeoutError as exc:
        raise ProviderError(f"fetching {url[:200]} timed out", kind="timeout", retry=True) from exc
    except urllib.error.HTTPError as exc:
        retry = exc.code in (408, 429) or exc.code >= 500
        raise ProviderError(f"{url[:200]} answered HTTP {exc.code}", retry=retry) from exc
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        if isinstance(reason, TimeoutError | socket.timeout):
            raise ProviderError(
                f"fetching {url[:200]} timed out", kind="timeout", retry=True
            ) from exc
        raise ProviderError(f"could not fetch {url[:200]}: {reason}", retry=True) from exc
    if len(data) > max_bytes:
        raise ProviderError(f"the image at {url[:200]} is over {max_bytes // 2**20} MB")
    return data


# --------------------------------------------------------------------------- OpenAI images


@dataclass(frozen=True)
class ImageEndpoint:
    """An OpenAI-compatible images endpoint (``/images/generations``, ``/images/edits``)."""

    base_url: str
    model: str
    api_key: str = ""
    timeout: float = 120.0
    #: Passed as ``size`` when set ("1024x1024"); the endpoint's default otherwise.
    size: str = ""
    max_retries: int = 2

    @property
    def name(self) -> str:
        return f"{self.model}@{self.base_url.strip().rstrip('/')}"

    def __repr__(self) -> str:  # never print the key
        return f"ImageEndpoint(base_url={self.base_url!r}, model={self.model!r})"


class _OpenAIImages:
    prefix = "images"

    def __init__(self, endpoint: ImageEndpoint) -> None:
        self.endpoint = endpoint
        self.name = f"{self.prefix}:{endpoint.name}"
        self._client: Any = None
        self._lock = threading.Lock()

    def client(self) -> Any:
        with self._lock:
            if self._client is None:
                import openai

                self._client = openai.OpenAI(
                    base_url=self.endpoint.base_url,
                    api_key=self.endpoint.api_key or "not-needed",
                    timeout=self.endpoint.timeout,
                    max_retries=self.endpoint.max_retries,
                )
            return self._client

    def _options(self) -> dict[str, Any]:
        options: dict[str, Any] = {"model": self.endpoint.model, "n": 1}
        if self.endpoint.size:
            options["size"] = self.endpoint.size
        return options

    def _call(self, send: Callable[[], Any]) -> Found:
        import openai

        try:
            result = send()
        except openai.APITimeoutError as exc:
            raise ProviderError(
                f"{self.endpoint.name} did not answer within {self.endpoint.timeout:g} s",
                kind="timeout",
                retry=True,
            ) from exc
        except openai.APIConnectionError as exc:
            raise ProviderError(f"cannot reach {self.endpoint.name}: {exc}", retry=True) from exc
        except openai.APIStatusError as exc:
            status = exc.status_code
            retry = status in (408, 409, 429) or status >= 500
            raise ProviderError(
                f"{self.endpoint.name} answered HTTP {status}: {_api_message(exc)}", retry=retry
            ) from exc
        except openai.OpenAIError as exc:
            raise ProviderError(f"{self.endpoint.name}: {exc}") from exc
        data = list(getattr(result, "data", None) or [])
        if not data:
            raise ProviderError(f"{self.endpoint.name} returned no image")
        first = data[0]
        detail: dict[str, Any] = {}
        revised = getattr(first, "revised_prompt", None)
        if revised:
            detail["revised_prompt"] = str(revised)[:2000]
        if getattr(first, "b64_json", None):
            try:
                return Found(base64.b64decode(first.b64_json, validate=False), detail)
            except (ValueError, TypeError) as exc:
                raise ProviderError(f"{self.endpoint.name} returned bad base64") from exc
        if getattr(first, "url", None):
            return Found(
                fetch_image(str(first.url), timeout=self.endpoint.timeout, allow_private=True),
                detail,
            )
        raise ProviderError(f"{self.endpoint.name} returned neither b64_json nor a URL")


def _api_message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])[:300]
    return str(getattr(exc, "message", "") or exc)[:300]


class OpenAIImageGenerator(_OpenAIImages):
    """Diffusion: ``images.generate`` on an OpenAI-compatible endpoint."""

    prefix = "images"

    def generate(self, prompt: str) -> Found:
        return self._call(lambda: self.client().images.generate(prompt=prompt, **self._options()))


class OpenAIImageEditor(_OpenAIImages):
    """Edit: ``images.edit`` (multipart: the source image and the prompt)."""

    prefix = "images-edit"

    def edit(self, image: bytes, prompt: str) -> Found:
        mime = image_mime(image) or "image/png"
        extension = mime.split("/")[1]
        return self._call(
            lambda: self.client().images.edit(
                image=(f"image.{extension}", image, mime), prompt=prompt, **self._options()
            )
        )


# --------------------------------------------------------------------------- search


_SECRET_PARAM = re.compile(r"key|token|secret|auth|pass|sig", re.I)
_RESULT_LISTS = ("results", "images_results", "images", "items", "data", "value")
_IMAGE_KEYS = ("image_url", "original", "contentUrl", "url", "link", "image", "thumbnail")
_PAGE_KEYS = ("source_url", "page_url", "hostPageUrl", "source", "link")


class HttpImageSearch:
    """Image search through an HTTP JSON endpoint: ``GET <url>?<param>=<query>`` (the URL may
    carry fixed parameters, e.g. SerpAPI's ``engine=google_images``), with
    ``Authorization: Bearer <api_key>`` when a key is set. The answer is a JSON object with a
    list of results under ``results``, ``images_results`` (SerpAPI), ``items`` (Google
    Custom Search), ``value`` (Bing) or ``data``; a result gives the image as base64
    (``b64_json``) or a URL (``image_url``, ``original``, ``contentUrl``, ``url``, ``link``,
    ``thumbnail``). The first of the first ``tries`` results that downloads is the image."""

    def __init__(
        self,
        url: str,
        *,
        api_key: str = "",
        param: str = "q",
        timeout: float = 30.0,
        tries: int = 3,
        allow_private: bool = False,
    ) -> None:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"the image search URL must be http(s): {url!r}")
        self.url = url
        self.api_key = api_key
        self.param = param
        self.timeout = timeout
        self.tries = max(1, tries)
        self.allow_private = allow_private
        # The fixed parameters tell one search from another (engine=google_images); secrets
        # among them (api_key=..., token=...) are left out.
        shown = [
            (k, "hidden" if _SECRET_PARAM.search(k) else v)
            for k, v in urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
            if k != param
        ]
        self.name = "search:" + urllib.parse.urlunsplit(
            (
                parts.scheme,
                parts.netloc.rpartition("@")[2],
                parts.path,
                urllib.parse.urlencode(shown),
                "",
            )
        )

    def _query_url(self, query: str) -> str:
        parts = urllib.parse.urlsplit(self.url)
        pairs = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
        pairs = [(k, v) for k, v in pairs if k != self.param] + [(self.param, query)]
        return urllib.parse.urlunsplit(parts._replace(query=urllib.parse.urlencode(pairs)))

    def _results(self, query: str) -> list[Any]:
        headers = {"Accept": "application/json", "User-Agent": "Benchwright"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        request = urllib.request.Request(self._query_url(query), headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:  # noqa: S310
                body = response.read(5 * 1024 * 1024 + 1)
        except urllib.error.HTTPError as exc:
            retry = exc.code in (408, 429) or exc.code >= 500
            raise ProviderError(f"{self.name} answered HTTP {exc.code}", retry=retry) from exc
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            if isinstance(reason, TimeoutError | socket.timeout) or isinstance(exc, TimeoutError):
                raise ProviderError(
                    f"{self.name} did not answer within {self.timeout:g} s",
                    kind="timeout",
                    retry=True,
                ) from exc
            raise ProviderError(f"cannot reach {self.name}: {reason}", retry=True) from exc
        try:
            payload = json.loads(body)
        except ValueError as exc:
            raise ProviderError(f"{self.name} did not answer JSON") from exc
        if isinstance(payload, list):
            return payload
        if isinstance(payload, dict):
            for key in _RESULT_LISTS:
                if isinstance(payload.get(key), list):
                    return list(payload[key])
        raise ProviderError(f"{self.name} answered JSON without a list of results")

    def search(self, query: str) -> Found:
        results = self._results(query)
        errors: list[str] = []
        for rank, hit in enumerate(results[: self.tries]):
            if isinstance(hit, str):
                hit = {"url": hit}
            if not isinstance(hit, dict):
                continue
            detail = {
                "rank": rank,
                "title": str(hit.get("title") or hit.get("name") or "")[:300],
                "page": next(
                    (str(hit[k])[:500] for k in _PAGE_KEYS if isinstance(hit.get(k), str)), ""
                ),
            }
            if isinstance(hit.get("b64_json"), str):
                try:
                    return Found(base64.b64decode(hit["b64_json"]), detail)
                except (ValueError, TypeError):
                    errors.append(f"result {rank}: bad base64")
                    continue
            url = next((hit[k] for k in _IMAGE_KEYS if isinstance(hit.get(k), str)), None)
            if url is None:
                errors.append(f"result {rank}: no image URL")
                continue
            try:
                data = fetch_image(url, timeout=self.timeout, allow_private=self.allow_private)
            except ProviderError as exc:
                errors.append(f"result {rank}: {exc.message}")
                continue
            return Found(data, {**detail, "image_url": url[:500]})
        if not results:
            raise ProviderError(f"{self.name} found no image for this query")
        raise ProviderError(
            f"none of the first {min(len(results), self.tries)} results could be fetched ("
            + "; ".join(errors)[:500]
            + ")"
        )


# --------------------------------------------------------------------------- code


class SandboxCodeRunner:
    """Code: the program run by ``benchmark.sandbox.run_code`` (or an injected function with
    the same shape: ``run(code, *, limits=None) -> result`` with ``ok``, ``images``,
    ``stdout``, ``stderr``, ``reason`` and ``kind``). The first image it made is the call's
    image."""

    name = "sandbox"

    def __init__(self, run: Callable[..., Any], limits: Any = None) -> None:
        self._run = run
        self.limits = limits

    def run(self, code: str) -> Found:
        result = self._run(code, limits=self.limits)
        detail = {
            "stdout": str(getattr(result, "stdout", "") or "")[-2000:],
            "stderr": str(getattr(result, "stderr", "") or "")[-2000:],
        }
        if not getattr(result, "ok", False):
            kind = str(getattr(result, "kind", "") or "").lower()
            reason = str(getattr(result, "reason", "") or "") or "the program failed"
            if kind == "unavailable":  # the machine cannot run the sandbox: not the program's fault
                raise ProviderError(reason[:1000], kind="unavailable", retry=True)
            error = ProviderError(reason[:1000], kind="timeout" if "time" in kind else "error")
            error.detail = detail  # type: ignore[attr-defined]
            raise error
        images = list(getattr(result, "images", None) or [])
        if not images:
            error = ProviderError("the program ran but saved or showed no figure")
            error.detail = detail  # type: ignore[attr-defined]
            raise error
        return Found(bytes(images[0]), detail)


def sandbox_code_runner(limits: Any = None) -> SandboxCodeRunner | None:
    """The sandbox as a code runner, or None when ``benchmark.sandbox`` is not installed (the
    card then says that code execution is not available)."""
    import importlib

    try:
        # By name: the sandbox is an optional package of its own (and the import-linter
        # contracts see no import of it from here).
        sandbox = importlib.import_module("benchmark.sandbox")
    except ImportError:
        return None
    run_code = getattr(sandbox, "run_code", None)
    return SandboxCodeRunner(run_code, limits) if callable(run_code) else None
