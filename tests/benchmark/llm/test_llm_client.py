"""The pure client against a real OpenAI-compatible HTTP server on 127.0.0.1."""

from __future__ import annotations

import base64
import io
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from PIL import Image as PILImage

from benchmark.llm import (
    CacheMiss,
    ChatClient,
    ChatRequest,
    DiskCache,
    ImageInput,
    MemoryCache,
    ModelCallFailed,
    ModelConfig,
    ModelError,
    ModelNotConfigured,
    image_mime,
)
from benchmark.llm.client import endpoint_limit
from tests.factories import png_bytes
from tests.llm_server import FakeModelServer

MODEL = "fake-vl-7b"


def jpeg_bytes() -> bytes:
    out = io.BytesIO()
    PILImage.new("RGB", (8, 8), (200, 10, 10)).save(out, format="JPEG")
    return out.getvalue()


def image(data: bytes) -> ImageInput:
    import hashlib

    return ImageInput(sha256=hashlib.sha256(data).hexdigest(), data=data)


def config(server: FakeModelServer, **kw: object) -> ModelConfig:
    return ModelConfig(base_url=server.url, model=MODEL, api_key="sk-test", **kw)  # type: ignore[arg-type]


class Sleeps(list[float]):
    """Records backoff delays instead of sleeping."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def test_a_call_returns_the_answer_with_tokens_latency_and_model(
    model_server: FakeModelServer,
) -> None:
    result = ChatClient(config(model_server)).complete(
        ChatRequest(prompt="How many apples?", system="Be brief.", params={"temperature": 0})
    )
    assert result.text == "The chart shows 42 apples."
    assert (result.prompt_tokens, result.completion_tokens) == (17, 7)
    assert result.latency_ms >= 0 and result.attempts == 1 and not result.cached
    (req,) = model_server.requests
    assert req.path == "/v1/chat/completions"
    assert req.body["model"] == MODEL
    assert req.body["temperature"] == 0
    assert req.body["messages"][0] == {"role": "system", "content": "Be brief."}
    assert req.user_content == "How many apples?"
    assert req.headers["authorization"] == "Bearer sk-test"


def test_images_arrive_as_data_urls_with_their_mime_type(model_server: FakeModelServer) -> None:
    png, jpeg = png_bytes(3), jpeg_bytes()
    ChatClient(config(model_server)).complete(
        ChatRequest(prompt="Compare", images=(image(png), image(jpeg)))
    )
    (req,) = model_server.requests
    assert req.user_content[0] == {"type": "text", "text": "Compare"}
    urls = req.image_urls
    assert urls[0] == "data:image/png;base64," + base64.b64encode(png).decode()
    assert urls[1] == "data:image/jpeg;base64," + base64.b64encode(jpeg).decode()


def test_unknown_image_bytes_are_refused_before_any_call(model_server: FakeModelServer) -> None:
    with pytest.raises(ModelError, match="PNG, JPEG"):
        ChatClient(config(model_server)).complete(
            ChatRequest(prompt="x", images=(image(b"not an image"),))
        )
    assert model_server.count == 0
    assert image_mime(b"RIFF\0\0\0\0WEBPVP8 ") == "image/webp"


@pytest.mark.parametrize("status", [500, 429, 503])
def test_transient_errors_are_retried_with_growing_backoff(
    model_server: FakeModelServer, status: int
) -> None:
    model_server.fail_next(status, times=2)
    sleeps = Sleeps()
    result = ChatClient(config(model_server, backoff_base=1.0), sleep=sleeps).complete(
        ChatRequest(prompt="q")
    )
    assert result.text == "The chart shows 42 apples."
    assert result.attempts == 3
    assert model_server.count == 3
    assert len(sleeps) == 2 and sleeps[1] > sleeps[0] > 0


def test_retry_after_from_the_server_is_honoured(model_server: FakeModelServer) -> None:
    model_server.fail_next(429, headers={"retry-after": "3"})
    sleeps = Sleeps()
    ChatClient(config(model_server), sleep=sleeps).complete(ChatRequest(prompt="q"))
    assert sleeps == [3.0]


def test_gives_up_after_the_retries_with_a_clear_message(model_server: FakeModelServer) -> None:
    model_server.fail_next(500, times=5)
    with pytest.raises(ModelCallFailed, match="answered 500.*gave up after 3 attempts") as info:
        ChatClient(config(model_server, max_retries=2), sleep=Sleeps()).complete(
            ChatRequest(prompt="q")
        )
    assert info.value.attempts == 3 and info.value.status == 500
    assert model_server.count == 3


def test_client_errors_are_not_retried(model_server: FakeModelServer) -> None:
    model_server.fail_next(400)
    with pytest.raises(ModelCallFailed, match="answered 400"):
        ChatClient(config(model_server), sleep=Sleeps()).complete(ChatRequest(prompt="q"))
    assert model_server.count == 1


def test_an_unreachable_endpoint_is_retried_then_reported() -> None:
    server = FakeModelServer().start()
    url = server.url
    server.stop()  # nothing listens on the port any more
    sleeps = Sleeps()
    cfg = ModelConfig(base_url=url, model=MODEL, max_retries=1, timeout=5)
    with pytest.raises(ModelCallFailed, match="could not reach the model endpoint"):
        ChatClient(cfg, sleep=sleeps).complete(ChatRequest(prompt="q"))
    assert len(sleeps) == 1


def test_the_cache_answers_a_repeat_without_calling_the_server(
    model_server: FakeModelServer, tmp_path: Path
) -> None:
    png = png_bytes(5)
    for cache in (MemoryCache(), DiskCache(tmp_path / "cache")):
        before = model_server.count
        client = ChatClient(config(model_server), cache=cache)
        first = client.complete(ChatRequest(prompt="q", images=(image(png),)))
        again = client.complete(ChatRequest(prompt="q", images=(image(png),)))
        assert model_server.count == before + 1
        assert again.cached and not first.cached
        assert (again.text, again.prompt_tokens, again.request_key) == (
            first.text,
            first.prompt_tokens,
            first.request_key,
        )
        # Another prompt, image, model or parameter is another request.
        client.complete(ChatRequest(prompt="q", images=(image(png_bytes(6)),)))
        client.complete(ChatRequest(prompt="q", images=(image(png),), params={"seed": 1}))
        assert model_server.count == before + 3


def test_cache_off_always_calls(model_server: FakeModelServer) -> None:
    cache = MemoryCache()
    ChatClient(config(model_server), cache=cache).complete(ChatRequest(prompt="q"))
    ChatClient(config(model_server), cache=cache, mode="off").complete(ChatRequest(prompt="q"))
    assert model_server.count == 2


def test_replay_answers_from_the_cache_and_raises_on_a_miss(
    model_server: FakeModelServer, tmp_path: Path
) -> None:
    cache = DiskCache(tmp_path)
    ChatClient(config(model_server), cache=cache).complete(ChatRequest(prompt="recorded"))
    replay = ChatClient(config(model_server), cache=cache, mode="replay")
    assert replay.complete(ChatRequest(prompt="recorded")).cached
    with pytest.raises(CacheMiss, match="replay mode: no recorded answer"):
        replay.complete(ChatRequest(prompt="never asked"))
    assert model_server.count == 1


def test_request_keys_hash_images_not_bytes() -> None:
    png = png_bytes(9)
    req = ChatRequest(prompt="q", images=(image(png),))
    assert "base64" not in str(req.key_messages())
    assert req.key(MODEL) == ChatRequest(prompt="q", images=(image(png),)).key(MODEL)
    assert req.key(MODEL) != req.key("another-model")


def test_missing_configuration_is_refused() -> None:
    with pytest.raises(ModelNotConfigured):
        ModelConfig(base_url="", model=MODEL)
    with pytest.raises(ModelNotConfigured):
        ModelConfig(base_url="http://127.0.0.1:1/v1", model=MODEL, concurrency=0)
    assert "sk-secret" not in repr(
        ModelConfig(base_url="http://x/v1", model="m", api_key="sk-secret")
    )


def _wait_until(predicate: Callable[[], bool], timeout: float = 10.0) -> bool:
    """Poll ``predicate`` until it holds or the deadline passes."""
    deadline = time.monotonic() + timeout
    tick = threading.Event()
    while not predicate():
        if time.monotonic() > deadline:
            return False
        tick.wait(0.005)
    return True


def test_concurrency_limit_one_never_overlaps(model_server: FakeModelServer) -> None:
    cfg = config(model_server, concurrency=1)
    client = ChatClient(cfg)
    results: list[str] = []

    def ask(prompt: str) -> None:
        results.append(client.complete(ChatRequest(prompt=prompt)).text)

    model_server.hold()
    first = threading.Thread(target=ask, args=("a",))
    second = threading.Thread(target=ask, args=("b",))
    first.start()
    assert model_server.wait_for_arrivals(1)
    second.start()
    # The second call waits on the endpoint's semaphore, not at the server.
    sem = endpoint_limit(cfg.base_url, 1)
    assert _wait_until(lambda: len(sem._cond._waiters) == 1)  # type: ignore[attr-defined]
    assert model_server.count == 1
    model_server.release()
    first.join(timeout=20)
    second.join(timeout=20)
    assert len(results) == 2
    assert model_server.count == 2
    assert model_server.max_in_flight == 1


def test_concurrency_limit_two_lets_two_calls_run_together(model_server: FakeModelServer) -> None:
    client = ChatClient(config(model_server, concurrency=2))
    model_server.hold()
    threads = [
        threading.Thread(target=client.complete, args=(ChatRequest(prompt=p),)) for p in "ab"
    ]
    for t in threads:
        t.start()
    assert model_server.wait_for_arrivals(2)  # both reached the server while held
    model_server.release()
    for t in threads:
        t.join(timeout=20)
    assert model_server.max_in_flight == 2


def test_every_sdk_client_verifies_with_the_processs_one_tls_context(
    monkeypatch: pytest.MonkeyPatch, model_server: FakeModelServer
) -> None:
    """The SDK's own HTTP client, given the one TLS context the process built (its CA bundle
    is read once, not once a client), which still verifies certificates."""
    import ssl

    import openai

    from benchmark.llm.client import tls_context

    given: list[object] = []
    default_client = openai.DefaultHttpxClient

    def recording(**kwargs: object) -> object:
        given.append(kwargs.get("verify"))
        return default_client(**kwargs)

    monkeypatch.setattr(openai, "DefaultHttpxClient", recording)
    for url in ("https://one.example/v1", "https://two.example/v1"):
        ChatClient(ModelConfig(base_url=url, model="m"))._sdk().close()
    assert given == [tls_context(), tls_context()]
    assert isinstance(given[0], ssl.SSLContext)
    assert given[0].verify_mode == ssl.CERT_REQUIRED and given[0].check_hostname
    # ... and a call through such a client still answers.
    result = ChatClient(config(model_server)).complete(ChatRequest(prompt="How many apples?"))
    assert result.text == "The chart shows 42 apples."


def test_the_answer_is_read_from_the_endpoints_json_as_it_is() -> None:
    """The SDK hands the body over as parsed JSON (no typed objects built for it): text,
    model, tokens and tool calls are read from it; a body without choices is an error."""
    import json

    from benchmark.llm.client import _result

    body = {
        "model": "m-1",
        "choices": [
            {
                "message": {
                    "content": "hi",
                    "tool_calls": [{"id": "c1", "function": {"name": "f", "arguments": "{}"}}],
                }
            }
        ],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1},
    }
    read = _result(body, "m", "k", 5, 1)
    assert (read.text, read.model, read.prompt_tokens, read.completion_tokens) == (
        "hi",
        "m-1",
        3,
        1,
    )
    assert read.tool_calls == ({"id": "c1", "name": "f", "arguments": "{}"},)
    # A body sent without a JSON content type arrives as text: read as JSON all the same.
    assert _result(json.dumps(body), "m", "k", 5, 1) == read
    bare = {
        "choices": [{"message": {"content": None, "tool_calls": [{"function": {"name": "g"}}]}}]
    }
    read = _result(bare, "m", "k", 0, 1)
    assert (read.text, read.model, read.prompt_tokens) == ("", "m", None)
    assert read.tool_calls == ({"id": "call_0", "name": "g", "arguments": ""},)
    for bad in ({}, {"choices": []}, "not json", None, [1], {"choices": ["x"]}):
        with pytest.raises(ModelCallFailed, match="without any choices"):
            _result(bad, "m", "k", 0, 1)


def test_a_reply_read_as_json_gives_what_the_sdk_s_typed_reply_gives() -> None:
    from openai.types.chat import ChatCompletion

    from benchmark.llm.client import _result

    reply = {
        "id": "r1",
        "object": "chat.completion",
        "created": 0,
        "model": "served-name",
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": "Step 1: crop.",
                    "tool_calls": [
                        {
                            "id": "call_7",
                            "type": "function",
                            "function": {"name": "crop", "arguments": '{"image_index": 0}'},
                        }
                    ],
                },
            }
        ],
        "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15},
    }
    as_json = _result(reply, MODEL, "k", 5, 1)
    typed = _result(ChatCompletion.construct(**reply), MODEL, "k", 5, 1)
    assert as_json == typed
    assert as_json.tool_calls == (
        {"id": "call_7", "name": "crop", "arguments": '{"image_index": 0}'},
    )
    assert (as_json.model, as_json.prompt_tokens, as_json.completion_tokens) == (
        "served-name",
        12,
        3,
    )
    for broken in ({}, {"choices": []}, {"choices": "x"}, []):
        with pytest.raises(ModelCallFailed, match="without any choices"):
            _result(broken, MODEL, "k", 5, 1)


def test_a_conversation_s_requests_sharing_urls_encode_each_image_once() -> None:
    import hashlib

    from benchmark.llm.client import ConversationRequest

    png, jpeg = png_bytes(1), jpeg_bytes()
    first, second = (hashlib.sha256(b).hexdigest() for b in (png, jpeg))

    def turn(*digests: str) -> list[dict]:
        parts = [{"type": "image_url", "image_url": {"url": f"sha256:{d}"}} for d in digests]
        return [{"role": "user", "content": [*parts, {"type": "text", "text": "look"}]}]

    images = {first: png, second: jpeg}
    urls: dict[str, str] = {}
    shared = [
        ConversationRequest(messages=tuple(turn(*ds)), images=images, urls=urls)
        for ds in ((first,), (first, second))
    ]
    alone = [ConversationRequest(messages=r.messages, images=images) for r in shared]
    assert shared[0].wire_messages() == alone[0].wire_messages()
    assert list(urls) == [first]
    encoded_once = urls[first]  # reused by the next turn, not encoded again
    assert shared[1].wire_messages() == alone[1].wire_messages()
    assert urls[first] is encoded_once and list(urls) == [first, second]
    assert urls[second] == ImageInput(sha256=second, data=jpeg).data_url()
    assert shared[1].key(MODEL) == alone[1].key(MODEL) and shared[0] == alone[0]


def test_the_request_body_is_written_as_the_sdk_writes_it_or_left_to_the_sdk() -> None:
    from openai._utils._json import openapi_dumps

    from benchmark.llm.client import _json_body

    image = ImageInput(sha256="x", data=png_bytes(2)).data_url()
    body = {
        "model": MODEL,
        "messages": [
            {"role": "system", "content": "Answer in <answer>…</answer>, «quoted» \u00e9\n\t\"x\""},
            {"role": "user", "content": [{"type": "image_url", "image_url": {"url": image}}]},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "c", "type": "function",
             "function": {"name": "crop", "arguments": "{\"bbox_2d\": [1, 2.5, 3, 4]}"}}]},
        ],
        "tools": [{"type": "function", "function": {"name": "crop", "parameters": {
            "type": "object", "properties": {"zoom": {"type": "number", "minimum": 0.0,
                                                      "maximum": 1000.25, "default": 1.5}}}}}],
        "temperature": 0.0, "max_tokens": 256, "seed": 7, "stop": ("</answer>",),
    }  # fmt: skip
    assert _json_body(body) == openapi_dumps(body)
    awkward_values = (
        {"temperature": float("nan")}, {"top_p": 1e-05}, {"logit_bias": {50256: -100}},
        {"n": 2**70},
    )  # fmt: skip
    for awkward in awkward_values:
        assert _json_body({**body, **awkward}) is None  # the SDK writes (or refuses) it


def test_request_keys_are_the_sha256_of_the_json_canonical_text_they_always_were() -> None:
    import datetime
    import hashlib
    import json

    from benchmark.llm.cache import canonical_json, request_key

    def by_json(value: object) -> str:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)

    messages = [
        {"role": "system", "content": "Sé breve \u2028 «x» \x00\x1f\x7f \U0001f600 \"q\" \\"},
        {"role": "user", "content": [{"type": "image", "sha256": "ab" * 32},
                                     {"type": "text", "text": "zoom 1.5, 0.0001, 1e+16"}]},
    ]  # fmt: skip
    tools = [
        {
            "type": "function",
            "function": {
                "name": "crop",
                "parameters": {
                    "properties": {
                        "z": {"minimum": 0.0, "maximum": 1000.25, "default": 1e-05},
                        "é": {},
                        "e": {},
                        "Z": {},
                    }
                },
            },
        }
    ]
    for params in ({}, {"temperature": 0.7, "seed": 3}, {"top_p": float("nan")}, {"n": 2**70}):
        payload = {"endpoint": "http://h/v1", "scope": "project:1", "model": MODEL,
                   "messages": messages, "params": params, "tools": tools}  # fmt: skip
        text = by_json(payload)
        assert canonical_json(payload) == text
        key = request_key(
            model=MODEL, messages=messages, params=params, endpoint="http://h/v1/",
            scope="project:1", tools=tools,
        )  # fmt: skip
        assert key == hashlib.sha256(text.encode("utf-8")).hexdigest()
    assert canonical_json({2: "int keys", 10: "x"}) == by_json({2: "int keys", 10: "x"})
    with pytest.raises(TypeError):  # json refuses a date: so does the key, as before
        canonical_json({"when": datetime.date(2026, 1, 1)})


def test_plain_json_tells_the_values_orjson_writes_as_json_does() -> None:
    import datetime
    import json

    import orjson

    from benchmark.llm.cache import plain_json

    class Text(str):
        pass

    plain = [{"a": [1, 2.5, "x", None, True, (1, 2)]}, [Text("t"), 10**18], {}, [], 1.5, 1e15]
    for value in plain:
        assert plain_json(value)
        assert orjson.dumps(value) == json.dumps(value, separators=(",", ":")).encode()
    for value in ({"a": 1e-05}, [float("nan")], {"a": {"b": [float("inf")]}}, 1e16,
                  {"d": datetime.date(2026, 1, 1)}, [object()]):  # fmt: skip
        assert not plain_json(value)
