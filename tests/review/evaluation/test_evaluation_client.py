"""Model calls with whole conversations and tools (benchmark.llm.client.ConversationRequest):
what is sent, what comes back, what the cache keeps, and that one-turn requests key as before."""

from __future__ import annotations

import hashlib

import pytest

from benchmark.evaluation.base import ReplayMiss, image_part
from benchmark.llm.cache import MemoryCache, request_key
from benchmark.llm.client import ChatClient, ChatRequest, ConversationRequest, ModelConfig
from review.evaluation.chat import ItemCalls, ModelChat
from tests.factories import png_bytes
from tests.llm_server import FakeModelServer

TOOL = {"type": "function", "function": {"name": "zoom", "parameters": {"type": "object"}}}


def _config(server: FakeModelServer) -> ModelConfig:
    return ModelConfig(base_url=server.url, model="m", backoff_base=0.01)


def test_a_conversation_with_images_and_tools_is_sent_and_tool_calls_come_back(
    model_server: FakeModelServer,
) -> None:
    data = png_bytes(3)
    digest = hashlib.sha256(data).hexdigest()
    model_server.script(
        {
            "content": "let me zoom",
            "tool_calls": [{"id": "c1", "name": "zoom", "arguments": {"x": 2}}],
        }
    )
    messages = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": [{"type": "text", "text": "what?"}, image_part(digest)]},
    ]
    calls = ItemCalls()
    chat = ModelChat(ChatClient(_config(model_server), cache=calls), item="i1", calls=calls)
    reply = chat(messages, images={digest: data}, tools=[TOOL])
    assert reply.text == "let me zoom"
    assert [(c.id, c.name, c.parsed()) for c in reply.tool_calls] == [("c1", "zoom", {"x": 2})]
    assert reply.prompt_tokens == model_server.prompt_tokens
    sent = model_server.requests[0]
    assert sent.tool_names == ["zoom"]
    assert sent.messages[0] == {"role": "system", "content": "be brief"}
    assert sent.image_urls[0].startswith("data:image/png;base64,")
    # The call is kept as keyed: the image by its hash, never its data.
    assert calls.made[0].messages[1]["content"][1]["image_url"]["url"] == f"sha256:{digest}"
    assert calls.made[0].answer.tool_calls[0]["name"] == "zoom"


def test_the_cache_keeps_tool_calls_and_keys_tools_and_images_by_hash(
    model_server: FakeModelServer,
) -> None:
    model_server.script({"content": "", "tool_calls": [{"name": "zoom", "arguments": "{}"}]})
    cache = MemoryCache()
    client = ChatClient(_config(model_server), cache=cache)
    request = ConversationRequest(messages=({"role": "user", "content": "hi"},), tools=(TOOL,))
    first = client.complete(request)
    again = client.complete(request)
    assert model_server.count == 1
    assert again.cached and again.tool_calls == first.tool_calls
    assert again.tool_calls[0]["name"] == "zoom"
    # Tools are part of the key; another tool list is another request.
    no_tools = ConversationRequest(messages=({"role": "user", "content": "hi"},))
    assert client.key(no_tools) != client.key(request)
    client.complete(no_tools)
    assert model_server.count == 2
    assert model_server.requests[1].tools == []


def test_a_one_turn_request_keys_as_it_always_did() -> None:
    request = ChatRequest(prompt="hello", system="sys", params={"temperature": 0})
    expected = request_key(
        model="m",
        messages=[{"role": "system", "content": "sys"}, {"role": "user", "content": "hello"}],
        params={"temperature": 0},
        endpoint="http://x/v1",
    )
    assert request.key("m", endpoint="http://x/v1") == expected


def test_an_image_referenced_but_not_given_is_an_error_naming_it(
    model_server: FakeModelServer,
) -> None:
    calls = ItemCalls()
    chat = ModelChat(ChatClient(_config(model_server), cache=calls), item="i1", calls=calls)
    with pytest.raises(Exception, match="image abcdefabcdef"):
        chat([{"role": "user", "content": [image_part("abcdef" * 10 + "abcd")]}])
    assert model_server.count == 0


def test_replay_answers_from_the_record_and_a_miss_names_the_model_and_item(
    model_server: FakeModelServer,
) -> None:
    calls = ItemCalls()
    recorder = ModelChat(ChatClient(_config(model_server), cache=calls), item="i1", calls=calls)
    recorded = recorder([{"role": "user", "content": "hi"}])
    model_server.stop()
    replay = ModelChat(
        ChatClient(_config(model_server), cache=calls, mode="replay"), item="i1", calls=calls
    )
    assert replay([{"role": "user", "content": "hi"}]).text == recorded.text
    with pytest.raises(ReplayMiss, match=r"no recorded answer of m for item i1 \(model call 2"):
        replay([{"role": "user", "content": "something else"}])
