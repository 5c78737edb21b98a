"""Agentic-MME's retrieval tools: the HTTP provider against the recorded retrieval server, the
tool layer recording every call once and replaying it identically with the provider gone, a
replay miss naming the call, and "not available here" without a provider."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from typing import Any

import pytest
from PIL import Image

from benchmark.evaluation.agentic_mme import AgenticMmeProtocol
from benchmark.evaluation.base import EvalSettings, MemoryRecords, Status, ToolLayer, call_key
from benchmark.evaluation.mme_retrieval import HttpRetrievalProvider, RetrievalError
from benchmark.imaging import ops
from benchmark.imaging import recipe as recipes
from tests.benchmark.evaluation.mme_scripted import (
    DEMO,
    ScriptedChat,
    answer,
    call,
    item,
    task,
    tools,
)
from tests.retrieval_server import RecordedWeb

FIXED = AgenticMmeProtocol(now=lambda: "2026-01-01T00:00:00Z")
QUERY = "On the Origin of Species first published"
PAGE = "https://en.wikipedia.org/wiki/On_the_Origin_of_Species"
PICTURE = "https://upload.example.org/origin-title-page.png"
SPINE = {"image_index": 0, "bbox_2d": [530, 170, 578, 482]}


def spine_sha() -> str:
    """The sha256 of the crop the script below makes (what Lens is asked about)."""
    source = ops.load((DEMO / "images/image_demo04.png").read_bytes(), max_pixels=10**8)
    box = {"bbox_2d": SPINE["bbox_2d"]}
    return recipes.sha256_hex(recipes.render_bytes(ops.apply(source, "crop", box)))


@pytest.fixture
def web() -> Iterator[RecordedWeb]:
    picture = io.BytesIO()
    Image.new("RGB", (40, 30), (200, 30, 30)).save(picture, "PNG")
    server = RecordedWeb(
        searches={
            QUERY: [
                {
                    "title": "On the Origin of Species - Wikipedia",
                    "link": PAGE,
                    "snippet": "first published on 24 November 1859",
                }
            ]
        },
        lens={
            spine_sha(): [
                {"title": "On the Origin of Species, spine", "link": PAGE, "source": "Wikipedia"}
            ]
        },
        pages={PAGE: "On the Origin of Species ... published on 24 November 1859 by John Murray."},
        images={PICTURE: picture.getvalue()},
        api_key="secret-key",
    ).start()
    yield server
    server.stop()


def provider(web: RecordedWeb, **kwargs: Any) -> HttpRetrievalProvider:
    """The provider of the recorded web; a backoff is recorded, not slept."""
    kwargs.setdefault("sleep", lambda seconds: None)
    return HttpRetrievalProvider(web.base_url, api_key="secret-key", timeout=5, **kwargs)


SCRIPT = [
    tools(call("crop", SPINE)),
    tools(call("google_lens_search", {"image_index": 1})),
    tools(
        call("google_search", {"query": QUERY}),
        call("fetch_webpage", {"url": PAGE, "max_chars": 60}),
    ),
    tools(call("download_image", {"url": PICTURE})),
    answer("<answer>102</answer>"),
]


def run(layer: ToolLayer, script: list[Any] = SCRIPT) -> Any:
    chat = ScriptedChat(script)
    outcome = FIXED.run_item(
        item("demo04"), settings=EvalSettings(), chat=chat, tools=layer, truth=task("demo04")
    )
    return outcome, chat


def test_the_provider_answers_each_tool_through_the_api(web: RecordedWeb) -> None:
    api = provider(web)
    assert list(api.tools()) == [
        "google_search",
        "google_lens_search",
        "fetch_webpage",
        "download_image",
    ]
    found = api.call("google_search", {"query": QUERY})
    assert "1859" in found.output["context"] and not found.error
    assert web.requests[-1].headers["Authorization"] == "Bearer secret-key"
    assert web.requests[-1].arguments == {"query": QUERY}
    page = api.call("fetch_webpage", {"url": PAGE, "max_chars": 20})
    assert page.output == {"url": PAGE, "text": "On the Origin of Spe"}
    picture = api.call("download_image", {"url": PICTURE})
    assert picture.files["image.png"] == web.images[PICTURE]
    missing = api.call("google_search", {"query": "nothing"})
    assert missing.output is None
    assert (
        missing.error
        == "google_search: the retrieval provider answered 404: no recorded search for 'nothing'"
    )


def test_a_failing_or_misconfigured_provider_says_so(web: RecordedWeb) -> None:
    web.failures.extend([503] * 4)
    with pytest.raises(
        RetrievalError,
        match="google_search: the retrieval provider answered 503.*gave up after 4 attempts",
    ):
        provider(web).call("google_search", {"query": QUERY})
    wrong_key = HttpRetrievalProvider(web.base_url, api_key="wrong").call(
        "google_search", {"query": QUERY}
    )
    assert "answered 401: bad key" in wrong_key.error
    with pytest.raises(ValueError, match="base URL must be an http"):
        HttpRetrievalProvider("ftp://example.org")
    with pytest.raises(ValueError, match="unknown tool 'bing'"):
        HttpRetrievalProvider(web.base_url, offered=("bing",))
    web.redirect_to = "http://169.254.169.254/latest/meta-data/"
    moved = provider(web).call("google_search", {"query": QUERY})
    assert moved.error == "google_search: the retrieval provider answered 302"
    web.redirect_to = ""
    closed = HttpRetrievalProvider("http://127.0.0.1:9", timeout=2, max_retries=0)
    with pytest.raises(RetrievalError, match="cannot be reached"):
        closed.call("google_search", {"query": QUERY})


def test_retrieval_is_recorded_once_and_replayed_identically_without_the_provider(
    web: RecordedWeb,
) -> None:
    records = MemoryRecords()
    first, chat = run(ToolLayer([provider(web)], records=records))
    assert first.status == Status.OK, first.error
    assert [r.tool for r in web.requests] == [
        "google_lens_search",
        "google_search",
        "fetch_webpage",
        "download_image",
    ]
    # Lens was sent the crop's pixels, keyed by their hash.
    assert web.requests[0].arguments["image_sha256"] == spine_sha()
    lens_said = [m["content"] for m in chat.requests[2].messages if m["role"] == "tool"][-1]
    assert "On the Origin of Species, spine" in lens_said
    # The downloaded image is image 2, shown to the model and kept in the run folder.
    assert first.files["tool_images/downloaded_image_1.png"]
    assert "[Image 2: downloaded from" in json.dumps(chat.requests[4].messages[-1])
    assert len(records.records) == 4
    assert first.scores["S"] == 1.0 and first.scores["acc"] is True

    web.stop()
    requests_before = len(web.requests)
    again, _ = run(ToolLayer([], records=records, replay=True))
    assert again.status == Status.OK, again.error
    assert len(web.requests) == requests_before
    assert again.files == first.files
    assert again.scores == first.scores


def test_a_replay_miss_names_the_call() -> None:
    outcome, _ = run(ToolLayer([], records=MemoryRecords(), replay=True))
    assert outcome.status == Status.ERROR
    assert outcome.error.startswith("replay: no record of google_lens_search(")
    assert "for item demo04" in outcome.error
    script = [tools(call("google_search", {"query": QUERY})), answer("<answer>102</answer>")]
    outcome, _ = run(ToolLayer([], records=MemoryRecords(), replay=True), script)
    assert outcome.error == (
        f'replay: no record of google_search({{"query": "{QUERY}"}}) for item demo04'
    )


def test_without_a_provider_the_tools_are_not_available_here_and_the_run_says_so() -> None:
    script = [tools(call("google_search", {"query": QUERY})), answer("<answer>102</answer>")]
    outcome, chat = run(ToolLayer(), script)
    assert outcome.status == Status.OK
    said = [m["content"] for m in chat.requests[1].messages if m["role"] == "tool"]
    assert said == ["Error: google_search is not available here (no provider is configured)"]
    meta = json.loads(outcome.files["run_meta.json"])
    assert meta["not_available"] == ["google_search"]
    assert "not available here" in meta["warnings"][-1]
    assert FIXED.summarize([outcome])["not_available"] == ["google_search"]
    assert outcome.scores["S"] == 0.0


def test_a_provider_failure_is_told_to_the_model_and_not_recorded(web: RecordedWeb) -> None:
    web.failures.extend([503] * 4)  # one attempt and its three retries
    records = MemoryRecords()
    script = [
        tools(call("google_search", {"query": QUERY})),
        tools(call("google_search", {"query": QUERY})),
        answer("<answer>102</answer>"),
    ]
    outcome, chat = run(ToolLayer([provider(web)], records=records), script)
    said = [m["content"] for m in chat.requests[2].messages if m["role"] == "tool"]
    assert said[0].startswith(
        "Error: google_search failed: google_search: the retrieval provider answered 503"
    )
    assert "1859" in said[1]
    assert list(records.records) == [call_key("demo04", "google_search", {"query": QUERY})]
    events = json.loads(outcome.files["tool_use_list.json"])
    assert [e["output"].get("ok", True) for e in events] == [False, True]
