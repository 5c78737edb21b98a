"""Rendering answers without Django (benchmark.rendering): every tool of both syntaxes renders
or fails with a labelled card, sanitisation, limits, the cache and concurrency, with injected
fake providers (no network)."""

from __future__ import annotations

import hashlib
import re
import threading
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import pytest

from benchmark.rendering import (
    AnswerInput,
    BatchRenderer,
    CallResult,
    Found,
    Limits,
    Outcome,
    ProviderError,
    Providers,
    SandboxCodeRunner,
    Task,
    clean_code,
    data_url,
    document_html,
    standalone_html,
)
from benchmark.tags import parse
from tests.image_server import fake_run_code, png_for

DOC0, DOC1 = "d0" * 32, "d1" * 32
INPUT0 = "a0" * 32


# --------------------------------------------------------------------------- fakes


class FakeGenerator:
    name = "images:fake-gen@http://gen"

    def __init__(self) -> None:
        self.prompts: list[str] = []
        self.lock = threading.Lock()

    def generate(self, prompt: str) -> Found:
        with self.lock:
            self.prompts.append(prompt)
        return Found(png_for("generate:" + prompt), {"revised_prompt": prompt.upper()})


class FakeEditor:
    name = "images-edit:fake-edit@http://edit"

    def __init__(self) -> None:
        self.seen: list[tuple[bytes, str]] = []

    def edit(self, image: bytes, prompt: str) -> Found:
        self.seen.append((image, prompt))
        return Found(png_for("edit:" + prompt))


class FakeSearch:
    name = "search:http://search"

    def __init__(self) -> None:
        self.queries: list[str] = []

    def search(self, query: str) -> Found:
        self.queries.append(query)
        if query == "nothing":
            raise ProviderError("found no image for this query")
        if query == "flaky":
            raise ProviderError("cannot reach the search", retry=True)
        return Found(png_for("search:" + query), {"title": f"about {query}"})


def fake_code() -> SandboxCodeRunner:
    return SandboxCodeRunner(fake_run_code)


def all_providers() -> Providers:
    return Providers(
        generate=FakeGenerator(), edit=FakeEditor(), search=FakeSearch(), code=fake_code()
    )


class MemoryStore:
    """The cache and image store a Django job would give, in memory."""

    def __init__(self) -> None:
        self.images: dict[str, bytes] = {DOC0: png_for("doc0"), DOC1: png_for("doc1")}
        self.images[INPUT0] = png_for("input0")
        self.cache: dict[str, CallResult] = {}
        self.lookups = 0

    def lookup(self, tasks: list[Task]) -> dict[str, CallResult]:
        self.lookups += 1
        return {
            t.key: replace(self.cache[t.key], cached=True) for t in tasks if t.key in self.cache
        }

    def store(self, task: Task, outcome: Outcome) -> CallResult:
        result = outcome.result
        if outcome.data is not None:
            sha = hashlib.sha256(outcome.data).hexdigest()
            self.images[sha] = outcome.data
            result = replace(result, image=sha)
        if not result.retry:
            self.cache[task.key] = result
        return result

    def load(self, sha: str) -> bytes | None:
        return self.images.get(sha)


def render(
    text: str,
    syntax: str = "atp",
    providers: Providers | None = None,
    store: MemoryStore | None = None,
    *,
    documents: tuple[str | None, ...] = (DOC0, DOC1),
    inputs: tuple[str | None, ...] = (INPUT0,),
    limits: Limits | None = None,
) -> tuple[list[CallResult], str, BatchRenderer]:
    store = store or MemoryStore()
    renderer = BatchRenderer(
        providers=providers if providers is not None else Providers(),
        lookup=store.lookup,
        store=store.store,
        load=store.load,
        limits=limits,
    )
    [out] = renderer.render([AnswerInput(1, text, syntax, documents, inputs)])  # type: ignore[arg-type]
    assert not isinstance(out, str), out
    html = document_html(parse(text, syntax), out, image_src=lambda s: f"/img/{s}")  # type: ignore[arg-type]
    return out, html, renderer


def atp(tool: str, **params: Any) -> str:
    import json

    return (
        "<tool>"
        + json.dumps({"tool_name": tool, "description": f"{tool} figure", "params": params})
        + "</tool>"
    )


def llmi(source: str, **params: Any) -> str:
    return (
        "<imgen>"
        + repr({"source": source, "description": f"{source} figure", "params": params})
        + "</imgen>"
    )


# --------------------------------------------------------------------------- every tool

CHART = "import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.savefig('out.png')"

CASES = [
    # (id, syntax, tag, configured, status, reason, text on the card or figure)
    ("atp reference", "atp", atp("Reference", img_index=1), False, "rendered", "", 'src="/img/' + DOC1),
    ("atp reference out of range", "atp", atp("Reference", img_index=5), False, "failed", "out_of_range", "Image index out of range"),
    ("atp diffusion, none configured", "atp", atp("Diffusion", prompt="a red cube"), False, "placeholder", "not_configured", "Diffusion not executed"),
    ("atp diffusion", "atp", atp("Diffusion", prompt="a red cube"), True, "rendered", "", "Diffusion figure"),
    ("atp search, none configured", "atp", atp("Search", query="eiffel tower"), False, "placeholder", "not_configured", "eiffel tower"),
    ("atp search", "atp", atp("Search", query="eiffel tower"), True, "rendered", "", "Search figure"),
    ("atp search finds nothing", "atp", atp("Search", query="nothing"), True, "failed", "error", "found no image"),
    ("atp code, no sandbox", "atp", atp("Code", code=CHART), False, "placeholder", "not_available", "code execution is not available"),
    ("atp code", "atp", atp("Code", code=CHART), True, "rendered", "", "Code figure"),
    ("atp code raises", "atp", atp("Code", code="raise ValueError('boom')"), True, "failed", "error", "ValueError: boom"),
    ("atp code loops", "atp", atp("Code", code="while True: pass"), True, "failed", "timeout", "Timed out"),
    ("atp code, no figure", "atp", atp("Code", code="print('no figure')"), True, "failed", "error", "saved or showed no figure"),
    ("atp code, not Python", "atp", atp("Code", code="def f(:"), True, "failed", "error", "not valid Python"),
    ("atp edit, none configured", "atp", atp("Edit", img_index=0, prompt="circle the cat"), False, "placeholder", "not_configured", "Edit not executed:</span> circle the cat"),
    ("atp edit", "atp", atp("Edit", img_index=0, prompt="circle the cat"), True, "rendered", "", "Edit figure"),
    ("atp edit out of range", "atp", atp("Edit", img_index=2, prompt="x"), True, "failed", "out_of_range", "the item has 2 document images"),
    ("atp unknown tool", "atp", atp("Teleport", where="moon"), True, "failed", "unknown_tool", "Tool not configured"),
    ("atp malformed JSON", "atp", '<tool>{"tool_name": "Diffusion", "params": {"prompt": "x",}}</tool>', True, "failed", "malformed", "Malformed call"),
    ("atp missing param", "atp", atp("Diffusion", promt="typo"), True, "failed", "malformed", "needs 'prompt', which is missing"),
    ("atp unclosed tag", "atp", '<tool>{"tool_name": "Reference", "params": {"img_index": 0}}', True, "failed", "malformed", "never closed"),
    ("llmi diffusion, none configured", "llmi", llmi("diffusion", prompt="a lighthouse"), False, "placeholder", "not_configured", "a lighthouse"),
    ("llmi diffusion", "llmi", llmi("diffusion", prompt="a lighthouse"), True, "rendered", "", "diffusion figure"),
    ("llmi search, none configured", "llmi", llmi("search", query="qingming scroll"), False, "placeholder", "not_configured", "qingming scroll"),
    ("llmi search", "llmi", llmi("search", query="qingming scroll"), True, "rendered", "", "search figure"),
    ("llmi code, no sandbox", "llmi", llmi("code", code=CHART), False, "placeholder", "not_available", "code execution is not available"),
    ("llmi code", "llmi", llmi("code", code="```python\n" + CHART + "\n```"), True, "rendered", "", "code figure"),
    ("llmi edit of the input image, none configured", "llmi", llmi("edit", img_index=0, prompt="colourise"), False, "placeholder", "not_configured", 'src="/img/' + INPUT0),
    ("llmi edit of the input image", "llmi", llmi("edit", img_index=0, prompt="colourise"), True, "rendered", "", "edit figure"),
    ("llmi edit out of range", "llmi", llmi("edit", img_index=1, prompt="colourise"), True, "failed", "out_of_range", "1 input + 0 from earlier tags"),
    ("llmi reference is not an LLM-I tool", "llmi", llmi("reference", img_index=0), True, "failed", "unknown_tool", "Tool not configured"),
    ("llmi malformed literal", "llmi", "<imgen>{'source': 'search', 'params': {'query': 'x'</imgen>", True, "failed", "malformed", "Malformed call"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("syntax", "tag", "configured", "status", "reason", "shown"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_every_tool_renders_or_fails_with_a_labelled_card(
    syntax: str, tag: str, configured: bool, status: str, reason: str, shown: str
) -> None:
    text = f"Some text before.\n\n{tag}\n\nSome text after."
    providers = all_providers() if configured else Providers()
    [result], html, _ = render(text, syntax, providers)
    assert (result.status, result.reason) == (status, reason), result
    assert f'data-status="{status}"' in html
    if reason:
        assert f'data-reason="{reason}"' in html
        assert result.message
    if status == "rendered":
        assert result.image and f'src="/img/{result.image}"' in html
        assert result.provider
    else:
        assert result.image is None
    assert shown in html
    assert "<p>Some text before.</p>" in html and "<p>Some text after.</p>" in html


def test_produced_images_are_what_the_provider_made() -> None:
    providers = all_providers()
    text = "\n\n".join(
        [atp("Diffusion", prompt="a red cube"), atp("Search", query="owl"), atp("Code", code=CHART)]
    )
    results, _, _ = render(text, "atp", providers)
    expected = [png_for("generate:a red cube"), png_for("search:owl"), png_for("code:" + CHART)]
    assert [r.image for r in results] == [hashlib.sha256(e).hexdigest() for e in expected]
    assert [r.provider for r in results] == [
        "images:fake-gen@http://gen",
        "search:http://search",
        "sandbox",
    ]
    assert results[0].detail == {"revised_prompt": "A RED CUBE"}
    assert [r.tool for r in results] == ["diffusion", "search", "code"]


def test_edit_sends_the_referenced_document_image() -> None:
    providers = all_providers()
    results, _, _ = render(atp("Edit", img_index=1, prompt="add labels"), "atp", providers)
    editor = providers.edit
    assert isinstance(editor, FakeEditor)
    assert editor.seen == [(png_for("doc1"), "add labels")]
    assert results[0].image == hashlib.sha256(png_for("edit:add labels")).hexdigest()


def test_llmi_edit_of_an_earlier_tags_image_waits_for_it() -> None:
    providers = all_providers()
    text = (
        f"{llmi('search', query='old painting')} then {llmi('edit', img_index=1, prompt='colourise')}"
        f" and {llmi('edit', img_index=2, prompt='zoom')}"
    )
    results, html, _ = render(text, "llmi", providers)
    assert [r.status for r in results] == ["rendered", "rendered", "rendered"]
    editor = providers.edit
    assert isinstance(editor, FakeEditor)
    assert editor.seen[0] == (png_for("search:old painting"), "colourise")
    assert editor.seen[1] == (png_for("edit:colourise"), "zoom")
    # Without a search provider the first tag makes no image, so the edit of it fails.
    results, html, _ = render(text, "llmi", Providers(edit=FakeEditor()))
    assert [(r.status, r.reason) for r in results] == [
        ("placeholder", "not_configured"),
        ("failed", "missing_image"),
        ("failed", "missing_image"),
    ]
    assert "is the image of tag 0, which produced none" in html


def test_reference_to_a_document_image_that_is_not_stored() -> None:
    [result], html, _ = render(atp("Reference", img_index=1), documents=(DOC0, None))
    assert (result.status, result.reason) == ("failed", "missing_image")
    assert "Image not stored" in html


# --------------------------------------------------------------------------- sanitising


def test_script_in_the_answer_never_survives() -> None:
    text = (
        "<script>alert(1)</script>\n\n"
        "Click [me](javascript:alert(2)) or ![x](data:text/html;base64,PHNjcmlwdD4=)\n\n"
        '<tool>{"tool_name": "Diffusion", "description": "<script>alert(3)</script>", '
        '"params": {"prompt": "<img src=x onerror=alert(4)>"}}</tool>\n\n'
        '<tool>{"tool_name": "Code", "description": "</span><script>alert(5)</script>", '
        '"params": {"code": "print(\\"</code><script>alert(6)</script>\\")"}}</tool>\n\n'
        "<tool>not json <script>alert(7)</script></tool>"
    )
    for providers in (Providers(), all_providers()):
        results, html, _ = render(text, "atp", providers)
        assert "<script" not in html
        assert not re.search(r"(href|src)=\"(javascript|data:text)", html)
        assert "<img src=x" not in html
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
        parsed = parse(text, "atp")
        standalone = standalone_html(
            title="<script>t</script>",
            body=document_html(
                parsed, results, image_src=lambda s: data_url(png_for(s)), data_images=True
            ),
            css="body{}",
            facts=[("Query", "<script>q</script>")],
        )
        assert "<script" not in standalone
        assert not re.search(r"(href|src)=\"(javascript|data:text)", standalone)


def test_only_base64_images_survive_as_data_urls() -> None:
    results, _, _ = render(atp("Reference", img_index=0))
    parsed = parse(atp("Reference", img_index=0), "atp")
    html = document_html(
        parsed, results, image_src=lambda s: data_url(png_for("x")), data_images=True
    )
    assert 'src="data:image/png;base64,' in html
    evil = document_html(
        parsed, results, image_src=lambda s: "data:text/html;base64,PHNjcmlwdD4=", data_images=True
    )
    assert "data:text/html" not in evil
    on_site = document_html(parsed, results, image_src=lambda s: data_url(png_for("x")))
    assert "data:image" not in on_site  # the site's own pages take no data: images


def test_standalone_file_inlines_css_and_forbids_scripts() -> None:
    page = standalone_html(title="q1 · model", body="<p>x</p>", css=".rd-document{color:red}")
    assert "<style>\n.rd-document{color:red}\n</style>" in page
    assert "default-src 'none'; img-src data:" in page
    assert page.startswith("<!DOCTYPE html>")


# --------------------------------------------------------------------------- limits and bad input


def test_huge_payloads_fail_with_the_limit() -> None:
    text = "\n\n".join(
        [
            atp("Diffusion", prompt="x" * 10_000),
            atp("Code", code="print(1)\n" * 20_000),
            atp("Search", query="q" * 600),
        ]
    )
    results, html, _ = render(text, "atp", all_providers())
    assert [(r.status, r.reason) for r in results] == [("failed", "limit")] * 3
    assert "prompt is 10,000 characters; the renderer takes at most 4,000" in html
    assert "Over the limits" in html
    assert len(html) < 40_000  # the card shows the start of the payload, not all of it


def test_an_answer_with_500_tags_executes_the_first_50() -> None:
    providers = all_providers()
    text = "\n\n".join(atp("Diffusion", prompt=f"picture {i}") for i in range(500))
    results, html, _ = render(text, "atp", providers)
    assert len(results) == 500
    assert {r.status for r in results[:50]} == {"rendered"}
    assert {(r.status, r.reason) for r in results[50:]} == {("failed", "limit")}
    assert "an answer may have at most 50 tool calls rendered; this is call 51" in html
    generator = providers.generate
    assert isinstance(generator, FakeGenerator)
    assert len(generator.prompts) == 50


def test_a_huge_answer_is_not_rendered_and_says_why() -> None:
    renderer = BatchRenderer(
        providers=Providers(),
        lookup=lambda tasks: {},
        store=lambda task, outcome: outcome.result,
        load=lambda sha: None,
        limits=Limits(max_text_chars=1000),
    )
    [out] = renderer.render([AnswerInput(1, "x" * 1001, "atp")])
    assert out == "the answer is 1,001 characters; the renderer takes at most 1,000"


@pytest.mark.parametrize(
    "payload",
    [
        "",
        "{",
        "[1, 2]",
        '{"tool_name": 5, "params": {}}',
        '{"tool_name": "Reference", "params": "img 0"}',
        '{"tool_name": "Reference", "params": {"img_index": "zero"}}',
        '{"tool_name": "Reference", "params": {"img_index": true}}',
        '{"tool_name": "Diffusion", "params": {"prompt": "   "}}',
        '{"tool_name": "Code", "params": {"code": "\\u0000"}}',
        '{"tool_name": "' + "R" * 5000 + '", "params": {}}',
    ],
)
def test_malformed_calls_are_labelled_never_raised(payload: str) -> None:
    results, html, _ = render(f"<tool>{payload}</tool>", "atp", all_providers())
    assert results[0].status == "failed"
    assert results[0].reason in ("malformed", "unknown_tool", "error")
    assert 'data-status="failed"' in html
    assert len(html) < 20_000


def test_code_fences_are_stripped() -> None:
    assert clean_code("```python\nprint(1)\n```") == "print(1)"
    assert clean_code("  ```\nx = 1\n```  ") == "x = 1"
    assert clean_code("print(2)") == "print(2)"


# --------------------------------------------------------------------------- cache and concurrency


def test_identical_calls_run_once_and_a_second_rendering_comes_from_the_cache() -> None:
    providers = all_providers()
    store = MemoryStore()
    text = "\n\n".join([atp("Code", code=CHART)] * 3 + [atp("Diffusion", prompt="cube")] * 2)
    first, html1, renderer = render(text, "atp", providers, store)
    assert renderer.stats.executed == 2
    assert [r.cached for r in first] == [False, True, True, False, True]
    again, html2, renderer = render(text, "atp", providers, store)
    assert renderer.stats.executed == 0
    assert all(r.cached for r in again)
    assert [r.image for r in again] == [r.image for r in first]
    assert html1 == html2
    generator = providers.generate
    assert isinstance(generator, FakeGenerator)
    assert generator.prompts == ["cube"]


def test_a_sandbox_that_cannot_run_here_gives_placeholders_not_cached_failures() -> None:
    def unavailable(code: str, *, limits: Any = None) -> SimpleNamespace:
        return SimpleNamespace(
            ok=False, images=[], stdout="", stderr="", kind="unavailable",
            reason="the sandbox needs Linux namespaces",
        )  # fmt: skip

    store = MemoryStore()
    [result], html, _ = render(
        atp("Code", code=CHART), "atp", Providers(code=SandboxCodeRunner(unavailable)), store
    )
    assert (result.status, result.reason, result.retry) == ("placeholder", "not_available", True)
    assert "code execution is not available: the sandbox needs Linux namespaces" in html
    assert store.cache == {}


def test_a_failure_that_may_pass_is_not_cached() -> None:
    providers = all_providers()
    store = MemoryStore()
    [result], html, _ = render(atp("Search", query="flaky"), "atp", providers, store)
    assert (result.status, result.reason, result.retry) == ("failed", "error", True)
    assert store.cache == {}
    [result], _, _ = render(atp("Search", query="nothing"), "atp", providers, store)
    assert not result.retry and len(store.cache) == 1


def test_cache_key_depends_on_payload_provider_and_input() -> None:
    base = Task("edit", (("prompt", "p"),), "images-edit:a", "s" * 64)
    assert base.key == Task("edit", (("prompt", "p"),), "images-edit:a", "s" * 64).key
    assert base.key != replace(base, provider="images-edit:b").key
    assert base.key != replace(base, input_sha256="t" * 64).key
    assert base.key != replace(base, params=(("prompt", "q"),)).key
    assert re.fullmatch(r"[0-9a-f]{64}", base.key)


def test_code_runs_at_most_one_program_per_code_worker_and_a_cancel_stops_it() -> None:
    running = {"now": 0, "most": 0}
    lock = threading.Lock()
    release = threading.Event()

    def slow_run(code: str, *, limits: Any = None) -> SimpleNamespace:
        with lock:
            running["now"] += 1
            running["most"] = max(running["most"], running["now"])
        release.wait(5)
        with lock:
            running["now"] -= 1
        return SimpleNamespace(
            ok=True, images=[png_for(code)], stdout="", stderr="", reason="", kind=""
        )

    class Cancelled(Exception):
        pass

    ticks = {"n": 0}

    def tick() -> None:
        ticks["n"] += 1
        if ticks["n"] == 3:
            release.set()
            raise Cancelled

    store = MemoryStore()
    renderer = BatchRenderer(
        providers=Providers(code=SandboxCodeRunner(slow_run)),
        lookup=store.lookup,
        store=store.store,
        load=store.load,
        workers=8,
        code_workers=2,
        tick=tick,
        tick_seconds=0.05,
    )
    text = "\n\n".join(atp("Code", code=f"print({i})") for i in range(20))
    with pytest.raises(Cancelled):
        renderer.render([AnswerInput(1, text, "atp")])
    assert running["most"] == 2
    assert len(store.cache) < 20  # the queued programs were dropped
