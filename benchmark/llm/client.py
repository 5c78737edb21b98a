"""A small client for OpenAI-compatible chat-completions endpoints (OpenAI, vLLM, Ollama,
llama.cpp server, LiteLLM), through the ``openai`` SDK. Pure Python: no Django.

- images go as ``data:`` URLs (base64, with the mime type read from the bytes);
- transient errors (connection errors, timeouts, 429, 5xx) are retried with exponential backoff
  (the SDK's own retries are off, so the policy and its count are ours and testable);
- at most ``concurrency`` calls run at once per base URL, across threads of one process;
- one :class:`RateGate` per base URL, shared by every thread of the process, spaces requests to
  at most ``rpm`` a minute (when set) and, when the endpoint answers 429, holds every thread's
  next request until its Retry-After (or the backoff) has passed, not only the one that got it
  (these three are ``benchmark.pacing``'s, which the evaluations' retrieval provider passes
  too);
- a cache keyed by the request, the endpoint and a scope answers repeats; in replay mode only
  the cache answers, and a miss raises ``CacheMiss``, so a judge run or a drafting session can be
  reproduced exactly."""

from __future__ import annotations

import base64
import functools
import json
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from benchmark.llm.cache import CachedAnswer, ResponseCache, plain_json, request_key
from benchmark.pacing import (  # noqa: F401 - the client's machinery, named here as before
    GaveUp,
    RateGate,
    RetryPolicy,
    Transient,
    _gates,
    _limits,
    call_with_retries,
    endpoint_gate,
    endpoint_limit,
    retry_after_seconds,
)

if TYPE_CHECKING:
    import ssl

    import openai

CacheMode = Literal["use", "off", "replay"]
CACHE_MODES: tuple[str, ...] = ("use", "off", "replay")

DEFAULT_TIMEOUT = 120.0
DEFAULT_MAX_RETRIES = 3
DEFAULT_CONCURRENCY = 4
DEFAULT_RPM = 0
"""No cap on requests per minute."""


class ModelError(Exception):
    """A model call that did not give an answer; the message says why, for a person."""


class ModelNotConfigured(ModelError):
    pass


class CacheMiss(ModelError):
    pass


class ModelCallFailed(ModelError):
    def __init__(self, message: str, *, attempts: int = 1, status: int | None = None) -> None:
        super().__init__(message)
        self.attempts = attempts
        self.status = status


@dataclass(frozen=True)
class ModelConfig:
    """Where and how to call a model. ``api_key`` may be empty for local servers."""

    base_url: str
    model: str
    api_key: str = ""
    timeout: float = DEFAULT_TIMEOUT
    max_retries: int = DEFAULT_MAX_RETRIES
    backoff_base: float = 0.5
    backoff_max: float = 20.0
    concurrency: int = DEFAULT_CONCURRENCY
    #: At most this many requests a minute to the endpoint, from all threads; 0: no cap.
    rpm: int = DEFAULT_RPM

    def __post_init__(self) -> None:
        if not self.base_url or not self.model:
            raise ModelNotConfigured("a model needs both a base URL and a model name")
        if self.concurrency < 1:
            raise ModelNotConfigured("the concurrency limit must be at least 1")
        if self.rpm < 0:
            raise ModelNotConfigured("the requests-per-minute cap must be 0 (none) or more")
        if self.max_retries < 0 or self.timeout <= 0:
            raise ModelNotConfigured("retries must be >= 0 and the timeout > 0")

    def __repr__(self) -> str:  # never print the key
        return f"ModelConfig(base_url={self.base_url!r}, model={self.model!r})"


# --------------------------------------------------------------------------- images

_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


def image_mime(data: bytes) -> str:
    """The mime type of PNG, JPEG, GIF or WebP bytes; ModelError for anything else."""
    for magic, mime in _MAGIC:
        if data.startswith(magic):
            return mime
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    raise ModelError("only PNG, JPEG, GIF and WebP images can be sent to a model")


@dataclass(frozen=True)
class ImageInput:
    """An image to send: its bytes and their sha256 (which stands for them in the cache key)."""

    sha256: str
    data: bytes = field(repr=False)

    @property
    def mime(self) -> str:
        return image_mime(self.data)

    def data_url(self) -> str:
        return f"data:{self.mime};base64,{base64.b64encode(self.data).decode('ascii')}"


# --------------------------------------------------------------------------- requests


@dataclass(frozen=True)
class ChatRequest:
    """One user turn (text, then images in order), an optional system prompt and sampling
    parameters passed to the endpoint as they are (``temperature``, ``max_tokens``, ``seed``).

    ``parts`` continues the same user turn after the prompt and its images: text (``str``)
    and images interleaved, in order (a walk through a reference trajectory, each step's
    words followed by the image it produced). Without parts the message, and so its cache
    key, is exactly what it was before parts existed."""

    prompt: str
    images: tuple[ImageInput, ...] = ()
    system: str = ""
    params: dict[str, Any] = field(default_factory=dict)
    parts: tuple[str | ImageInput, ...] = ()

    @property
    def all_images(self) -> tuple[ImageInput, ...]:
        """Every image sent, in order: ``images``, then the images among ``parts``."""
        return self.images + tuple(p for p in self.parts if isinstance(p, ImageInput))

    def _messages(self, image_part: Callable[[ImageInput], dict[str, Any]]) -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = []
        if self.system:
            messages.append({"role": "system", "content": self.system})
        if self.images or self.parts:
            content: Any = [{"type": "text", "text": self.prompt}]
            content += [image_part(img) for img in self.images]
            content += [
                image_part(part) if isinstance(part, ImageInput) else {"type": "text", "text": part}
                for part in self.parts
            ]
        else:
            content = self.prompt
        messages.append({"role": "user", "content": content})
        return messages

    def wire_messages(self) -> list[dict[str, Any]]:
        """The messages as sent: images as data URLs."""
        return self._messages(
            lambda img: {"type": "image_url", "image_url": {"url": img.data_url()}}
        )

    def key_messages(self) -> list[dict[str, Any]]:
        """The messages as keyed: images by their sha256."""
        return self._messages(lambda img: {"type": "image", "sha256": img.sha256})

    @classmethod
    def from_messages(
        cls,
        messages: list[dict[str, Any]],
        *,
        images: tuple[ImageInput, ...] | list[ImageInput] = (),
        params: dict[str, Any] | None = None,
    ) -> ChatRequest:
        """A request from OpenAI chat messages as a judge builds them (``benchmark.judge_prompts``):
        the system message's text and the last user message's text parts; its image parts
        are references the caller resolves, and ``images`` are sent in their place, in
        order."""
        system = prompt = ""
        for message in messages:
            content = message.get("content") or ""
            if not isinstance(content, str):
                content = "\n".join(
                    str(p.get("text", "")) for p in content if p.get("type") == "text"
                )
            if message.get("role") == "system":
                system = content
            else:
                prompt = content
        return cls(prompt=prompt, system=system, images=tuple(images), params=dict(params or {}))

    def key(self, model: str, *, endpoint: str = "", scope: str = "") -> str:
        return request_key(
            model=model,
            messages=self.key_messages(),
            params=self.params,
            endpoint=endpoint,
            scope=scope,
        )


IMAGE_REF = "sha256:"


@dataclass(frozen=True)
class ConversationRequest:
    """A whole conversation in OpenAI chat messages, optionally with ``tools`` (OpenAI
    function specs), for a model under test (``benchmark.evaluation``).

    An image in a message is the part ``{"type": "image_url", "image_url": {"url":
    "sha256:<hex>"}}``; its bytes are in ``images`` (sha256 -> bytes). The key covers the
    messages as given (images by hash), the tools and the params; what is sent has each
    reference replaced by a data URL.

    ``urls`` (sha256 -> data URL) may be shared by the requests of one conversation: each
    image is then encoded once for all its turns, not once a turn (an agent's request
    carries every image so far). It is neither keyed nor compared."""

    messages: tuple[dict[str, Any], ...]
    images: Mapping[str, bytes] = field(default_factory=dict, repr=False)
    tools: tuple[dict[str, Any], ...] = ()
    params: dict[str, Any] = field(default_factory=dict)
    urls: dict[str, str] = field(default_factory=dict, repr=False, compare=False)

    def _image(self, url: str) -> str:
        digest = url[len(IMAGE_REF) :]
        data = self.images.get(digest)
        if data is None:
            raise ModelError(f"image {digest[:12]} is referenced in the messages but not given")
        known = self.urls.get(digest)
        if known is None:
            known = self.urls[digest] = ImageInput(sha256=digest, data=data).data_url()
        return known

    def wire_messages(self) -> list[dict[str, Any]]:
        """The messages as sent: every ``sha256:`` image reference as a data URL."""
        out: list[dict[str, Any]] = []
        for message in self.messages:
            content = message.get("content")
            if isinstance(content, list):
                parts = []
                for part in content:
                    url = (part.get("image_url") or {}).get("url", "")
                    if part.get("type") == "image_url" and str(url).startswith(IMAGE_REF):
                        part = {**part, "image_url": {**part["image_url"], "url": self._image(url)}}
                    parts.append(part)
                message = {**message, "content": parts}
            out.append(message)
        return out

    def key_messages(self) -> list[dict[str, Any]]:
        return list(self.messages)

    def key(self, model: str, *, endpoint: str = "", scope: str = "") -> str:
        return request_key(
            model=model,
            messages=self.key_messages(),
            params=self.params,
            endpoint=endpoint,
            scope=scope,
            tools=list(self.tools),
        )


AnyRequest = ChatRequest | ConversationRequest


@dataclass(frozen=True)
class ChatResult:
    text: str
    model: str
    request_key: str
    prompt_tokens: int | None
    completion_tokens: int | None
    latency_ms: int
    cached: bool
    attempts: int
    #: The reply's tool calls, each ``{"id", "name", "arguments"}`` (arguments as written).
    tool_calls: tuple[dict[str, str], ...] = ()

    def to_cache(self) -> CachedAnswer:
        """What a response cache keeps of this answer."""
        return CachedAnswer(
            text=self.text,
            model=self.model,
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
            latency_ms=self.latency_ms,
            tool_calls=tuple(self.tool_calls),
        )


# --------------------------------------------------------------------------- client

Progress = Callable[[str], None]


class ChatClient:
    """Calls one configured endpoint. ``cache`` (optional) answers repeats; ``mode`` is "use"
    (read and fill the cache), "off" (always call) or "replay" (only the cache answers).
    Cached answers are keyed by the endpoint too, and by ``scope`` (the app passes its
    project), so they are never shared across endpoints or scopes.

    Every request passes the endpoint's :class:`RateGate` (``gate``; default the process's
    gate for the base URL). ``sleep`` waits out a backoff; default the gate's. Used as a
    context manager (``with ChatClient(...) as client``), the client keeps one HTTP
    connection pool for all its calls, from any thread, until the block ends; otherwise each
    call opens and closes its own."""

    def __init__(
        self,
        config: ModelConfig,
        *,
        cache: ResponseCache | None = None,
        mode: CacheMode = "use",
        scope: str = "",
        sleep: Callable[[float], None] | None = None,
        gate: RateGate | None = None,
    ) -> None:
        if mode not in CACHE_MODES:
            raise ModelError(f"unknown cache mode {mode!r}; use one of {', '.join(CACHE_MODES)}")
        if mode == "replay" and cache is None:
            raise ModelError("replay mode needs a cache to answer from")
        self.config = config
        self.cache = cache
        self.mode = mode
        self.scope = scope
        self.gate = gate if gate is not None else endpoint_gate(config.base_url, config.rpm)
        self._sleep = sleep if sleep is not None else self.gate.sleep
        self._shared: openai.OpenAI | None = None
        self._keep_open = False
        self._shared_lock = threading.Lock()
        self._pool_of: ChatClient | None = None

    def __enter__(self) -> ChatClient:
        return self.keep_open()

    def keep_open(self) -> ChatClient:
        """Keep one connection pool for every later call, from any thread, until ``close``."""
        with self._shared_lock:
            self._keep_open = True
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the kept connection pool (a later call opens a new one)."""
        with self._shared_lock:
            self._keep_open = False
            shared, self._shared = self._shared, None
        if shared is not None:
            shared.close()

    def _sdk(self) -> openai.OpenAI:
        import openai  # lazy: ~0.6 s to import, and only a model call needs it

        cfg = self.config
        return openai.OpenAI(
            base_url=cfg.base_url,
            api_key=cfg.api_key or "none",
            timeout=cfg.timeout,
            max_retries=0,
            # The SDK's own HTTP client with its defaults, but the process's one TLS context:
            # building one reads the CA bundle (~40 ms of CPU), once per SDK client otherwise.
            http_client=openai.DefaultHttpxClient(verify=tls_context()),
        )

    def sharing(self, *, cache: ResponseCache | None, mode: CacheMode | None = None) -> ChatClient:
        """A client of the same endpoint, scope and gate with its own ``cache`` (and
        ``mode``), that sends through this client's kept connection pool while it is kept
        open: many short-lived clients (one per evaluated item, each with the item's record)
        then share one pool instead of building an SDK client, its TLS context and a
        connection for every call."""
        other = ChatClient(
            self.config,
            cache=cache,
            mode=mode or self.mode,
            scope=self.scope,
            sleep=self._sleep,
            gate=self.gate,
        )
        other._pool_of = self
        return other

    def _kept_sdk(self) -> openai.OpenAI | None:
        if self._pool_of is not None:
            return self._pool_of._kept_sdk()
        with self._shared_lock:
            if not self._keep_open:
                return None
            if self._shared is None:
                self._shared = self._sdk()
            return self._shared

    def key(self, request: AnyRequest) -> str:
        """The cache key of ``request`` to this client's model, endpoint and scope."""
        return request.key(self.config.model, endpoint=self.config.base_url, scope=self.scope)

    def complete(self, request: AnyRequest, *, progress: Progress | None = None) -> ChatResult:
        key = self.key(request)
        if self.cache is not None and self.mode != "off":
            hit = self.cache.get(key)
            if hit is not None:
                return ChatResult(
                    text=hit.text,
                    model=hit.model,
                    request_key=key,
                    prompt_tokens=hit.prompt_tokens,
                    completion_tokens=hit.completion_tokens,
                    latency_ms=hit.latency_ms,
                    cached=True,
                    attempts=0,
                    tool_calls=tuple(dict(c) for c in hit.tool_calls),
                )
            if self.mode == "replay":
                raise CacheMiss(
                    f"replay mode: no recorded answer for this request to {self.config.model} "
                    f"(key {key[:12]}); run it once without replay to record it"
                )
        result = self._call(request, key, progress)
        if self.cache is not None and self.mode != "off":
            self.cache.put(key, result.to_cache())
        return result

    @property
    def _policy(self) -> RetryPolicy:
        cfg = self.config
        return RetryPolicy(
            max_retries=cfg.max_retries, backoff_base=cfg.backoff_base, backoff_max=cfg.backoff_max
        )

    def _call(self, request: AnyRequest, key: str, progress: Progress | None) -> ChatResult:
        messages = request.wire_messages()
        kept = self._kept_sdk()
        if kept is not None:
            return self._attempts(kept, request, messages, key, progress)
        with self._sdk() as sdk:
            return self._attempts(sdk, request, messages, key, progress)

    def _attempts(
        self,
        sdk: openai.OpenAI,
        request: AnyRequest,
        messages: list[dict[str, Any]],
        key: str,
        progress: Progress | None,
    ) -> ChatResult:
        import openai  # lazy, see _sdk

        cfg = self.config
        attempts_allowed = cfg.max_retries + 1
        tools = list(getattr(request, "tools", ()) or ())
        extra: dict[str, Any] = {"tools": tools} if tools else {}
        body = {"model": cfg.model, "messages": messages, **extra, **request.params}
        content = _json_body(body)

        def before(attempt: int) -> None:
            if progress:
                progress(
                    f"waiting for {cfg.model}"
                    if attempt == 1
                    else f"waiting for {cfg.model} (attempt {attempt} of {attempts_allowed})"
                )

        def send(attempt: int) -> ChatResult:
            started = time.monotonic()
            try:
                # The SDK's own POST: ``chat.completions.create`` would first walk the whole
                # body against its typed schema (every message part, every base64 image,
                # every tool spec), ~10 ms of CPU under the GIL per agent turn, to send the
                # same JSON. The reply comes back as the SDK's parsed JSON (``cast_to=object``),
                # not built into its typed ``ChatCompletion`` (~0.5 ms of CPU a call), since
                # ``_result`` reads five of its fields. The body goes as the JSON bytes
                # ``_json_body`` wrote once for every attempt, where it could.
                if content is not None:
                    response = sdk.post("/chat/completions", content=content, cast_to=object)
                else:
                    response = sdk.post("/chat/completions", body=body, cast_to=object)
            except (openai.APIConnectionError, openai.RateLimitError) as exc:
                raise self._transient(attempt, exc) from exc
            except openai.APIStatusError as exc:
                if exc.status_code < 500:
                    raise ModelCallFailed(
                        _describe(exc), attempts=attempt, status=exc.status_code
                    ) from exc
                raise self._transient(attempt, exc) from exc
            except openai.OpenAIError as exc:
                raise ModelCallFailed(_describe(exc), attempts=attempt) from exc
            latency_ms = int((time.monotonic() - started) * 1000)
            return _result(response, cfg.model, key, latency_ms, attempt)

        try:
            return call_with_retries(
                send,
                base_url=cfg.base_url,
                concurrency=cfg.concurrency,
                gate=self.gate,
                policy=self._policy,
                sleep=self._sleep,
                before=before,
            )
        except GaveUp as exc:
            attempts = exc.attempts
            raise ModelCallFailed(
                f"{_describe(exc.last.error)} (gave up after {attempts} attempt"
                f"{'s' if attempts > 1 else ''})",
                attempts=attempts,
                status=exc.last.status,
            ) from exc.last.error

    @staticmethod
    def _transient(attempt: int, exc: Exception) -> Transient:
        import openai  # lazy, see _sdk

        response = getattr(exc, "response", None)
        after = (
            retry_after_seconds(response.headers.get("retry-after"))
            if response is not None
            else None
        )
        return Transient(
            exc,
            retry_after=after,
            rate_limited=isinstance(exc, openai.RateLimitError),
            status=getattr(exc, "status_code", None),
        )


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The TLS context every SDK client of this process verifies with: the SDK's HTTP
    library's default (its CA bundle and ``SSL_CERT_FILE`` / ``SSL_CERT_DIR``), built once.
    A forked process (an evaluation's chunk) inherits the one its parent built."""
    import httpx2  # the SDK's HTTP library (a dependency of openai)

    return httpx2.create_ssl_context()


def _describe(exc: Exception) -> str:
    import openai  # lazy, see ChatClient._sdk

    if isinstance(exc, openai.APITimeoutError):
        return "the model endpoint did not answer in time"
    if isinstance(exc, openai.APIConnectionError):
        return f"could not reach the model endpoint: {exc}"
    if isinstance(exc, openai.APIStatusError):
        return f"the model endpoint answered {exc.status_code}: {exc.message}"
    return f"the model call failed: {exc}"


def _json_body(body: dict[str, Any]) -> bytes | None:
    """The request body as the JSON bytes the SDK would send (compact, UTF-8), written with
    orjson: the same bytes for JSON values, ~50 times faster than the SDK's ``json.dumps``
    on an agent's request (every image so far as a base64 data URL). None where the two
    could differ, so the SDK writes the body itself as before: a value orjson does not take
    (a key that is not a string, an integer past 64 bits, an object of another type) or a
    float it writes otherwise (``plain_json``: NaN and infinity, which orjson would write as
    null where the SDK refuses them, and floats with an exponent)."""
    import orjson

    if not plain_json(body):
        return None
    try:
        return orjson.dumps(body)
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return None


def _field(value: Any, name: str) -> Any:
    """``value[name]`` of a JSON object (the reply as parsed JSON), else the attribute (a
    typed SDK object); None when it has neither."""
    if isinstance(value, Mapping):
        return value.get(name)
    return getattr(value, name, None)


def _result(response: Any, model: str, key: str, latency_ms: int, attempts: int) -> ChatResult:
    """The chat completion ``response`` as a result: its JSON as parsed (the text of a body
    sent without a JSON content type is read as JSON too), or the SDK's typed object."""
    if isinstance(response, str | bytes):
        try:
            response = json.loads(response)
        except ValueError:
            response = None
    choices = _field(response, "choices") or []
    if (
        not isinstance(choices, list | tuple)
        or not choices
        or not (isinstance(choices[0], Mapping) or hasattr(choices[0], "message"))
    ):
        raise ModelCallFailed("the model endpoint answered without any choices", attempts=attempts)
    message = _field(choices[0], "message")
    text = _field(message, "content") or ""
    calls = tuple(
        {
            "id": str(_field(call, "id") or f"call_{i}"),
            "name": str(_field(_field(call, "function"), "name") or ""),
            "arguments": str(_field(_field(call, "function"), "arguments") or ""),
        }
        for i, call in enumerate(_field(message, "tool_calls") or [])
        if _field(call, "function") is not None
    )
    usage = _field(response, "usage")
    return ChatResult(
        text=text if isinstance(text, str) else str(text),
        model=str(_field(response, "model") or model),
        request_key=key,
        prompt_tokens=_field(usage, "prompt_tokens"),
        completion_tokens=_field(usage, "completion_tokens"),
        latency_ms=latency_ms,
        cached=False,
        attempts=attempts,
        tool_calls=calls,
    )
