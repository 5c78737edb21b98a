"""A small client for OpenAI-compatible chat-completions endpoints (OpenAI, vLLM, Ollama,
llama.cpp server, LiteLLM), through the ``openai`` SDK. Pure Python: no Django.

- images go as ``data:`` URLs (base64, with the mime type read from the bytes);
- transient errors (connection errors, timeouts, 429, 5xx) are retried with exponential backoff
  (the SDK's own retries are off, so the policy and its count are ours and testable);
- at most ``concurrency`` calls run at once per base URL, across threads of one process;
- one :class:`RateGate` per base URL, shared by every thread of the process, spaces requests to
  at most ``rpm`` a minute (when set) and, when the endpoint answers 429, holds every thread's
  next request until its Retry-After (or the backoff) has passed, not only the one that got it;
- a cache keyed by the request, the endpoint and a scope answers repeats; in replay mode only
  the cache answers, and a miss raises ``CacheMiss``, so a judge run or a drafting session can be
  reproduced exactly."""

from __future__ import annotations

import base64
import random
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from benchmark.llm.cache import CachedAnswer, ResponseCache, request_key

if TYPE_CHECKING:
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
    reference replaced by a data URL."""

    messages: tuple[dict[str, Any], ...]
    images: Mapping[str, bytes] = field(default_factory=dict, repr=False)
    tools: tuple[dict[str, Any], ...] = ()
    params: dict[str, Any] = field(default_factory=dict)

    def _image(self, url: str) -> str:
        digest = url[len(IMAGE_REF) :]
        data = self.images.get(digest)
        if data is None:
            raise ModelError(f"image {digest[:12]} is referenced in the messages but not given")
        return ImageInput(sha256=digest, data=data).data_url()

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


# --------------------------------------------------------------------------- concurrency

_limits_lock = threading.Lock()
_limits: dict[str, tuple[int, threading.BoundedSemaphore]] = {}


def endpoint_limit(base_url: str, size: int) -> threading.BoundedSemaphore:
    """The semaphore that bounds concurrent calls to ``base_url`` in this process. A new size
    replaces the semaphore for later callers; calls already holding the old one finish on it."""
    key = base_url.rstrip("/")
    with _limits_lock:
        current = _limits.get(key)
        if current is None or current[0] != size:
            current = (size, threading.BoundedSemaphore(size))
            _limits[key] = current
        return current[1]


class RateGate:
    """What every thread of a process must pass before it sends a request to one endpoint.

    * ``rpm`` > 0 spaces requests at least 60 / rpm seconds apart (each passage reserves the
      next slot), so all threads together stay under the cap;
    * ``pause(seconds)`` (an endpoint's 429, with its Retry-After) holds every later passage
      until then; a pause that arrives while a thread waits makes it wait again.

    ``clock`` and ``sleep`` are injectable so tests need no wall clock."""

    def __init__(
        self,
        *,
        rpm: int = 0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.clock = clock
        self.sleep = sleep
        self._lock = threading.Lock()
        self._interval = 0.0
        self._next_slot = 0.0
        self._paused_until = 0.0
        self._pauses = 0
        self.rpm = rpm

    @property
    def rpm(self) -> int:
        return round(60.0 / self._interval) if self._interval else 0

    @rpm.setter
    def rpm(self, value: int) -> None:
        with self._lock:
            self._interval = 60.0 / value if value and value > 0 else 0.0

    @property
    def paused_until(self) -> float:
        with self._lock:
            return self._paused_until

    def pause(self, seconds: float) -> float:
        """Hold every request until ``seconds`` from now (a longer pause already set stays);
        returns that time on the gate's clock, for ``passage(waited_out=...)``."""
        with self._lock:
            until = self.clock() + max(0.0, seconds)
            if until > self._paused_until:
                self._paused_until = until
                self._pauses += 1
            return until

    def passage(self, *, waited_out: float = 0.0) -> float:
        """Wait until a request may go; returns the seconds waited. ``waited_out``: a pause
        (as returned by ``pause``) the caller has already slept through itself."""
        waited = 0.0
        while True:
            with self._lock:
                now = self.clock()
                paused = self._paused_until if self._paused_until > waited_out else 0.0
                start = max(now, paused, self._next_slot if self._interval else 0.0)
                if self._interval:
                    self._next_slot = start + self._interval
                pauses = self._pauses
            delay = start - now
            if delay <= 0:
                return waited
            self.sleep(delay)
            waited += delay
            with self._lock:
                if self._pauses == pauses:  # no new pause while asleep: the slot is ours
                    return waited


_gates_lock = threading.Lock()
_gates: dict[str, RateGate] = {}


def endpoint_gate(base_url: str, rpm: int = 0) -> RateGate:
    """The process's gate for ``base_url`` (one per endpoint, created on first use); ``rpm``
    replaces its cap, and a pause in force stays."""
    key = base_url.rstrip("/")
    with _gates_lock:
        gate = _gates.get(key)
        if gate is None:
            gate = _gates[key] = RateGate(rpm=rpm)
        elif gate.rpm != rpm:
            gate.rpm = rpm
        return gate


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

    def _backoff(self, attempt: int, exc: Exception) -> float:
        """Exponential backoff with jitter, or the server's Retry-After when it asks for one."""
        cfg = self.config
        delay = cfg.backoff_base * (2 ** (attempt - 1))
        delay = delay * (0.75 + random.random() / 2)  # noqa: S311 - jitter, not crypto
        response = getattr(exc, "response", None)
        if response is not None:
            try:
                delay = float(response.headers.get("retry-after", ""))
            except ValueError:
                pass
        return max(0.0, min(delay, cfg.backoff_max))

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
        from openai.types.chat import ChatCompletion

        cfg = self.config
        attempts_allowed = cfg.max_retries + 1
        waited_out = 0.0  # a pause this thread set and slept through itself
        attempt = 0
        tools = list(getattr(request, "tools", ()) or ())
        extra: dict[str, Any] = {"tools": tools} if tools else {}
        while True:
            attempt += 1
            if progress:
                progress(
                    f"waiting for {cfg.model}"
                    if attempt == 1
                    else f"waiting for {cfg.model} (attempt {attempt} of {attempts_allowed})"
                )
            self.gate.passage(waited_out=waited_out)
            try:
                with endpoint_limit(cfg.base_url, cfg.concurrency):
                    started = time.monotonic()
                    # The SDK's own POST: ``chat.completions.create`` would first walk the
                    # whole body against its typed schema (every message part, every base64
                    # image, every tool spec), ~10 ms of CPU under the GIL per agent turn,
                    # to send the same JSON.
                    response = sdk.post(
                        "/chat/completions",
                        body={"model": cfg.model, "messages": messages, **extra, **request.params},
                        cast_to=ChatCompletion,
                    )
                    latency_ms = int((time.monotonic() - started) * 1000)
            except (openai.APIConnectionError, openai.RateLimitError) as exc:
                error: Exception = exc
            except openai.APIStatusError as exc:
                if exc.status_code < 500:
                    raise ModelCallFailed(
                        _describe(exc), attempts=attempt, status=exc.status_code
                    ) from exc
                error = exc
            except openai.OpenAIError as exc:
                raise ModelCallFailed(_describe(exc), attempts=attempt) from exc
            else:
                return _result(response, cfg.model, key, latency_ms, attempt)
            delay = self._backoff(attempt, error)
            paused = 0.0
            if isinstance(error, openai.RateLimitError):
                # The endpoint is saturated: hold every thread's next request, not only ours.
                paused = self.gate.pause(delay)
            if attempt >= attempts_allowed:
                raise ModelCallFailed(
                    f"{_describe(error)} (gave up after {attempt} attempt"
                    f"{'s' if attempt > 1 else ''})",
                    attempts=attempt,
                    status=getattr(error, "status_code", None),
                ) from error
            self._sleep(delay)
            waited_out = max(waited_out, paused)


def _describe(exc: Exception) -> str:
    import openai  # lazy, see ChatClient._sdk

    if isinstance(exc, openai.APITimeoutError):
        return "the model endpoint did not answer in time"
    if isinstance(exc, openai.APIConnectionError):
        return f"could not reach the model endpoint: {exc}"
    if isinstance(exc, openai.APIStatusError):
        return f"the model endpoint answered {exc.status_code}: {exc.message}"
    return f"the model call failed: {exc}"


def _result(response: Any, model: str, key: str, latency_ms: int, attempts: int) -> ChatResult:
    choices = getattr(response, "choices", None) or []
    if not choices:
        raise ModelCallFailed("the model endpoint answered without any choices", attempts=attempts)
    message = choices[0].message
    text = message.content or ""
    calls = tuple(
        {
            "id": str(getattr(call, "id", "") or f"call_{i}"),
            "name": str(getattr(call.function, "name", "") or ""),
            "arguments": str(getattr(call.function, "arguments", "") or ""),
        }
        for i, call in enumerate(getattr(message, "tool_calls", None) or [])
        if getattr(call, "function", None) is not None
    )
    usage = getattr(response, "usage", None)
    return ChatResult(
        text=text,
        model=getattr(response, "model", None) or model,
        request_key=key,
        prompt_tokens=getattr(usage, "prompt_tokens", None),
        completion_tokens=getattr(usage, "completion_tokens", None),
        latency_ms=latency_ms,
        cached=False,
        attempts=attempts,
        tool_calls=calls,
    )
