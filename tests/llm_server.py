"""A real HTTP server on 127.0.0.1 that speaks the OpenAI chat-completions protocol, for tests,
and ``point_at`` to give a project that server as its model. The fixtures that start it
(``model_server``, ``model_project``) are in tests/conftest.py.

The server answers ``POST /v1/chat/completions`` with a fixture answer and usage counts, can be
told to fail the next requests (429, 500, ...), can hold requests until released (to observe
concurrency), can hold only the requests a test picks (``gate(predicate)``: the others are
answered; ``open_gate()`` lets the held ones through, so a browser test sees a run part-way
without sleeping), and records every request it got (path, headers, JSON body).

Scripted replies (a model under test, ``benchmark.evaluation``): ``script(*replies)`` queues
replies for the next requests, in order, and ``respond = fn`` answers every request with
``fn(body)``; a reply is a text, or a dict ``{"content": ..., "tool_calls": [{"name": ...,
"arguments": {...} or "raw json"}]}`` sent as OpenAI ``tool_calls``. Without either, every
request gets ``answer``. ``Recorded.messages`` and ``Recorded.tools`` say what was sent.

For speed scripts: each reply waits until ``delay`` seconds after its request arrived (a model
that answers in 50 ms: reading and parsing the request count in it), each request in its own thread so concurrent requests wait concurrently;
``keep_alive`` answers over HTTP/1.1 keep-alive (as vLLM does); ``keep_requests=False`` counts
requests without keeping their bodies (which carry every image as base64); and
``python tests/llm_server.py --delay 0.05 --respond module:function`` serves in a process of
its own, printing its port."""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from benchmark.models import Project

HOLD_TIMEOUT = 30.0  # a held request never outlives a broken test by much
MODEL = "fake-vl-7b"
"""The model name ``point_at`` gives a project."""


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]

    @property
    def user_content(self) -> Any:
        return [m for m in self.body["messages"] if m["role"] == "user"][-1]["content"]

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages") or [])

    @property
    def tools(self) -> list[dict[str, Any]]:
        return list(self.body.get("tools") or [])

    @property
    def tool_names(self) -> list[str]:
        return [t["function"]["name"] for t in self.tools]

    @property
    def image_urls(self) -> list[str]:
        content = self.user_content
        if isinstance(content, str):
            return []
        return [part["image_url"]["url"] for part in content if part["type"] == "image_url"]


@dataclass
class FakeModelServer:
    answer: str = "The chart shows 42 apples."
    prompt_tokens: int = 17
    completion_tokens: int = 7
    requests: list[Recorded] = field(default_factory=list)
    in_flight: int = 0
    max_in_flight: int = 0
    #: A function answering each request's JSON body with a reply (see the module docstring).
    respond: Callable[[dict[str, Any]], Any] | None = None
    #: Seconds slept before each reply (in the request's own thread).
    delay: float = 0.0
    #: HTTP/1.1 keep-alive (one connection serves many requests), as vLLM and hosted APIs.
    keep_alive: bool = False
    #: Keep each request's path, headers and body in ``requests`` (False: only count them).
    keep_requests: bool = True
    #: The port to listen on (0: any free port).
    port: int = 0
    served: int = 0
    _script: deque[Any] = field(default_factory=deque)
    _failures: deque[tuple[int, dict[str, str]]] = field(default_factory=deque)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _arrived: threading.Condition = field(default_factory=threading.Condition)
    _release: threading.Event = field(default_factory=threading.Event)
    #: Requests whose body this says yes to wait at the gate until ``open_gate``.
    _gated: Callable[[dict[str, Any]], bool] | None = None
    _gate: threading.Event = field(default_factory=threading.Event)
    at_gate: int = 0
    _httpd: ThreadingHTTPServer | None = None

    def __post_init__(self) -> None:
        self._release.set()
        self._gate.set()

    # ---------------------------------------------------------------- control

    @property
    def url(self) -> str:
        assert self._httpd is not None
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    @property
    def count(self) -> int:
        with self._lock:
            return self.served

    def fail_next(self, status: int, times: int = 1, headers: dict[str, str] | None = None) -> None:
        """Answer the next ``times`` requests with ``status`` (and an OpenAI-style error body)."""
        for _ in range(times):
            self._failures.append((status, headers or {}))

    def script(self, *replies: Any) -> None:
        """Answer the next requests with ``replies``, one each, in order."""
        self._script.extend(replies)

    def _scripted(self, body: dict[str, Any]) -> dict[str, Any]:
        """The assistant message of the next reply."""
        try:
            reply = self._script.popleft()
        except IndexError:
            reply = self.respond(body) if self.respond is not None else self.answer
        if isinstance(reply, str):
            return {"role": "assistant", "content": reply}
        message: dict[str, Any] = {"role": "assistant", "content": reply.get("content")}
        calls = reply.get("tool_calls") or []
        if calls:
            message["tool_calls"] = [
                {
                    "id": call.get("id") or f"call_{i}",
                    "type": "function",
                    "function": {
                        "name": call["name"],
                        "arguments": call["arguments"]
                        if isinstance(call.get("arguments"), str)
                        else json.dumps(call.get("arguments") or {}),
                    },
                }
                for i, call in enumerate(calls)
            ]
        return message

    def hold(self) -> None:
        """Keep requests open (after they are counted as arrived) until ``release``."""
        self._release.clear()

    def release(self) -> None:
        self._release.set()

    def gate(self, predicate: Callable[[dict[str, Any]], bool]) -> None:
        """Hold the requests whose JSON body ``predicate`` says yes to (after they are counted
        as arrived) until ``open_gate``; every other request is answered as usual."""
        self._gated = predicate
        self._gate.clear()

    def open_gate(self) -> None:
        self._gate.set()

    def wait_at_gate(self, n: int = 1, timeout: float = 10.0) -> bool:
        """Wait until ``n`` requests are held at the gate; False on timeout."""
        with self._arrived:
            return self._arrived.wait_for(lambda: self.at_gate >= n, timeout=timeout)

    def wait_for_arrivals(self, n: int, timeout: float = 10.0) -> bool:
        """Wait until ``n`` requests have arrived in all; False on timeout."""
        with self._arrived:
            return self._arrived.wait_for(lambda: self.served >= n, timeout=timeout)

    # ---------------------------------------------------------------- serving

    def start(self) -> FakeModelServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1" if self.keep_alive else "HTTP/1.0"
            disable_nagle_algorithm = self.keep_alive

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                return None

            def do_POST(self) -> None:  # noqa: N802
                arrived = time.monotonic()
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                server._arrive(self.path, dict(self.headers.items()), body)
                # The delay counts from the request's arrival: reading and parsing its body
                # (every image as base64, for a model under test) is part of the model's time.
                spent = time.monotonic() - arrived
                try:
                    server._release.wait(HOLD_TIMEOUT)
                    gated = server._gated
                    if gated is not None and not server._gate.is_set() and gated(body):
                        with server._arrived:
                            server.at_gate += 1
                            server._arrived.notify_all()
                        server._gate.wait(HOLD_TIMEOUT)
                    if server.delay > spent:
                        time.sleep(server.delay - spent)
                    status, payload, headers = server._reply(self.path, body)
                finally:
                    with server._lock:
                        server.in_flight -= 1
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._httpd.daemon_threads = True
        self._httpd.request_queue_size = 128
        threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()
        return self

    def stop(self) -> None:
        self.release()
        self.open_gate()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()

    def _arrive(self, path: str, headers: dict[str, str], body: dict[str, Any]) -> None:
        with self._arrived:
            with self._lock:
                self.served += 1
                if self.keep_requests:
                    self.requests.append(
                        Recorded(
                            path=path, headers={k.lower(): v for k, v in headers.items()}, body=body
                        )
                    )
                self.in_flight += 1
                self.max_in_flight = max(self.max_in_flight, self.in_flight)
            self._arrived.notify_all()

    def _reply(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any], dict[str, str]]:
        if path.rstrip("/") != "/v1/chat/completions":
            return 404, {"error": {"message": f"no route {path}", "type": "not_found"}}, {}
        try:
            status, headers = self._failures.popleft()
        except IndexError:
            pass
        else:
            kind = "rate_limit_exceeded" if status == 429 else "server_error"
            message = f"fake failure {status}"
            return status, {"error": {"message": message, "type": kind, "code": kind}}, headers
        message = self._scripted(body)
        return (
            200,
            {
                "id": f"chatcmpl-{self.served}",
                "object": "chat.completion",
                "created": 0,
                "model": body.get("model", ""),
                "choices": [
                    {
                        "index": 0,
                        "message": message,
                        "finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
                    }
                ],
                "usage": {
                    "prompt_tokens": self.prompt_tokens,
                    "completion_tokens": self.completion_tokens,
                    "total_tokens": self.prompt_tokens + self.completion_tokens,
                },
            },
            {},
        )


def point_at(project: Project, server: FakeModelServer, **extra: Any) -> Project:
    """Give the project its own model: the fake server, fast backoff."""
    project.settings = {
        **(project.settings or {}),
        "model": {"base_url": server.url, "model": MODEL, "backoff_base": 0.01, **extra},
    }
    project.save(update_fields=["settings"])
    return project


def main() -> None:
    """Serve in this process until killed: ``--delay`` seconds per reply, keep-alive, bodies
    not kept, replies from ``--respond module:function`` (default: the fixed answer). Prints
    the base URL's port on the first line of stdout."""
    import argparse
    import importlib
    import sys
    from pathlib import Path

    parser = argparse.ArgumentParser()
    parser.add_argument("--delay", type=float, default=0.05)
    parser.add_argument("--respond", default="")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    server = FakeModelServer(delay=args.delay, keep_alive=True, keep_requests=False, port=args.port)
    if args.respond:
        module, _, name = args.respond.partition(":")
        server.respond = getattr(importlib.import_module(module), name)
    server.start()
    print(server.url.rsplit(":", 1)[1].split("/")[0], flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    main()
