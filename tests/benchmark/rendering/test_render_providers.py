"""The providers that execute tool calls, against a local fake server (tests/image_server.py):
the OpenAI-compatible images API (generate, edit), the HTTP JSON image search, downloads,
and the sandbox adapter. Never the network."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from benchmark.rendering import (
    HttpImageSearch,
    ImageEndpoint,
    OpenAIImageEditor,
    OpenAIImageGenerator,
    ProviderError,
    SandboxCodeRunner,
    sandbox_code_runner,
)
from benchmark.rendering.providers import fetch_image
from tests.image_server import FakeImageServer, png_for


@pytest.fixture
def server() -> Iterator[FakeImageServer]:
    s = FakeImageServer().start()
    try:
        yield s
    finally:
        s.stop()


def endpoint(server: FakeImageServer, **kw: Any) -> ImageEndpoint:
    return ImageEndpoint(base_url=f"{server.url}/v1", model="fake-image-1", api_key="sk-test", **kw)


def test_generation_returns_the_endpoints_image(server: FakeImageServer) -> None:
    generator = OpenAIImageGenerator(endpoint(server, size="256x256"))
    found = generator.generate("a red cube")
    assert found.data == png_for("generate:a red cube")
    assert generator.name == f"images:fake-image-1@{server.url}/v1"
    [seen] = server.requests
    assert seen.path == "/v1/images/generations"
    assert seen.headers["authorization"] == "Bearer sk-test"
    assert b'"size": "256x256"' in seen.body or b'"size":"256x256"' in seen.body
    assert "sk-test" not in repr(generator.endpoint)


def test_edit_uploads_the_image_and_prompt(server: FakeImageServer) -> None:
    editor = OpenAIImageEditor(endpoint(server))
    source = png_for("source")
    found = editor.edit(source, "circle the cat")
    assert found.data == png_for("edit:circle the cat")
    [seen] = server.requests
    assert seen.path == "/v1/images/edits"
    assert source in seen.body and b"circle the cat" in seen.body
    assert editor.name.startswith("images-edit:")


@pytest.mark.parametrize(("status", "retry"), [(400, False), (429, True), (500, True)])
def test_endpoint_errors_say_what_happened(
    server: FakeImageServer, status: int, retry: bool
) -> None:
    server.fail_next(status, times=5)
    generator = OpenAIImageGenerator(endpoint(server, max_retries=0))
    with pytest.raises(ProviderError) as caught:
        generator.generate("x")
    assert f"HTTP {status}" in caught.value.message
    assert f"failing on purpose with {status}" in caught.value.message
    assert caught.value.retry is retry


def test_a_slow_endpoint_times_out(server: FakeImageServer) -> None:
    server.delay = 1.0
    generator = OpenAIImageGenerator(endpoint(server, timeout=0.2, max_retries=0))
    with pytest.raises(ProviderError) as caught:
        generator.generate("x")
    assert caught.value.kind == "timeout" and caught.value.retry


def test_search_fetches_the_first_results_image(server: FakeImageServer) -> None:
    search = HttpImageSearch(
        f"{server.url}/search?engine=images&api_key=secret-in-url",
        api_key="sk-search",
        allow_private=True,
    )
    found = search.search("eiffel tower")
    assert found.data == png_for("search:eiffel tower")
    assert found.detail["title"] == "A picture of eiffel tower"
    assert found.detail["page"] == "https://example.org/eiffel%20tower"
    # The fixed parameters name the search; the key in the URL does not show.
    assert search.name == f"search:{server.url}/search?engine=images&api_key=hidden"
    first = server.requests[0]
    assert "engine=images" in first.path and "q=eiffel+tower" in first.path
    assert first.headers["authorization"] == "Bearer sk-search"


def test_search_reads_serpapi_results_and_skips_a_broken_hit(server: FakeImageServer) -> None:
    server.results["owl"] = {
        "images_results": [
            {"title": "gone", "original": f"{server.url}/nowhere"},
            {"title": "an owl", "original": f"{server.url}/img/owl.png", "link": "https://x.org"},
        ]
    }
    found = HttpImageSearch(f"{server.url}/search", allow_private=True).search("owl")
    assert found.data == png_for("search:owl")
    assert found.detail["rank"] == 1 and found.detail["page"] == "https://x.org"


def test_search_without_results_fails(server: FakeImageServer) -> None:
    server.results["nothing"] = {"results": []}
    with pytest.raises(ProviderError, match="found no image"):
        HttpImageSearch(f"{server.url}/search", allow_private=True).search("nothing")


def test_search_results_on_private_addresses_are_refused(server: FakeImageServer) -> None:
    with pytest.raises(ProviderError, match="not a public address"):
        HttpImageSearch(f"{server.url}/search").search("intranet")
    with pytest.raises(ProviderError, match="not a public address"):
        fetch_image("http://127.0.0.1:9/x.png")
    with pytest.raises(ProviderError, match="not an http"):
        fetch_image("file:///etc/passwd", allow_private=True)


def test_search_url_must_be_http() -> None:
    with pytest.raises(ValueError, match="http"):
        HttpImageSearch("ftp://example.org/search")


def test_sandbox_results_become_images_or_failures() -> None:
    def run(code: str, *, limits: Any = None) -> SimpleNamespace:
        outcomes = {
            "ok": SimpleNamespace(ok=True, images=[b"png1", b"png2"], stdout="o", stderr="", reason="", kind=""),
            "slow": SimpleNamespace(ok=False, images=[], stdout="", stderr="", reason="wall-clock limit", kind="timeout"),
            "net": SimpleNamespace(ok=False, images=[], stdout="", stderr="denied", reason="network is blocked", kind="error"),
            "jail": SimpleNamespace(ok=False, images=[], stdout="", stderr="", reason="the sandbox needs Linux namespaces", kind="unavailable"),
        }  # fmt: skip
        return outcomes[code]

    runner = SandboxCodeRunner(run)
    assert runner.run("ok").data == b"png1"
    with pytest.raises(ProviderError) as slow:
        runner.run("slow")
    assert slow.value.kind == "timeout" and not slow.value.retry
    with pytest.raises(ProviderError) as net:
        runner.run("net")
    assert net.value.kind == "error" and net.value.message == "network is blocked"
    assert net.value.detail["stderr"] == "denied"  # type: ignore[attr-defined]
    with pytest.raises(ProviderError) as jail:
        runner.run("jail")
    assert jail.value.kind == "unavailable" and jail.value.retry  # never cached


def test_without_the_sandbox_package_code_is_not_available(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "benchmark.sandbox", None)  # import raises ImportError
    assert sandbox_code_runner() is None
