"""A real HTTP server on 127.0.0.1 that answers Agentic-MME's retrieval tools from recorded
results, in the API ``benchmark.evaluation.mme_retrieval.HttpRetrievalProvider`` speaks
(``POST /<tool>`` with ``{"arguments": {...}}``), for tests: nothing reaches the web.

Give it searches by query, Lens results by image sha256, pages by URL and images by URL; a
request for anything else gets a 404 with an error naming it. It records every request
(tool, arguments, headers), can be told to fail the next requests (``failures``: a status, or
a status and headers such as ``(429, {"Retry-After": "7"})``), and checks the bearer key when
it has one."""

from __future__ import annotations

import base64
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Request:
    tool: str
    arguments: dict[str, Any]
    headers: dict[str, str]
    #: The request's other fields (an m&m's tool call's ``files``).
    body: dict[str, Any] = field(default_factory=dict)


@dataclass
class JsonToolServer:
    """The HTTP side every recorded tool server shares (``POST /<tool>`` with
    ``{"arguments": {...}}``, JSON answers): requests kept, failures on demand, the bearer key
    checked, redirects. A subclass answers with ``answer(tool, arguments, body)``."""

    api_key: str = ""
    #: When set, every request is answered with a 302 to this URL.
    redirect_to: str = ""
    requests: list[Request] = field(default_factory=list)
    #: The next requests' failures, in order: a status, or (status, headers).
    failures: list[int | tuple[int, dict[str, str]]] = field(default_factory=list)
    _httpd: ThreadingHTTPServer | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def base_url(self) -> str:
        assert self._httpd is not None, "the server is not started"
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def answer(
        self, tool: str, arguments: dict[str, Any], body: dict[str, Any]
    ) -> tuple[int, dict[str, Any]]:
        raise NotImplementedError

    def start(self) -> Any:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                tool = self.path.strip("/").split("/")[-1]
                arguments = body.get("arguments", {})
                with server._lock:
                    server.requests.append(Request(tool, arguments, dict(self.headers), body))
                    failure = server.failures.pop(0) if server.failures else None
                if server.redirect_to:
                    self.send_response(302)
                    self.send_header("Location", server.redirect_to)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                extra: dict[str, str] = {}
                if isinstance(failure, tuple):
                    failure, extra = failure
                if failure is not None:
                    status, answer = failure, {"error": "recorded failure"}
                elif (
                    server.api_key
                    and self.headers.get("Authorization") != f"Bearer {server.api_key}"
                ):
                    status, answer = 401, {"error": "bad key"}
                else:
                    status, answer = server.answer(tool, arguments, body)
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for header, value in extra.items():
                    self.send_header(header, value)
                self.end_headers()
                self.wfile.write(data)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None


@dataclass
class RecordedWeb(JsonToolServer):
    #: query -> list of {"title", "link", "snippet"}
    searches: dict[str, list[dict[str, str]]] = field(default_factory=dict)
    #: image sha256 -> list of {"title", "link", "source"}
    lens: dict[str, list[dict[str, str]]] = field(default_factory=dict)
    #: url -> page text
    pages: dict[str, str] = field(default_factory=dict)
    #: url -> image bytes
    images: dict[str, bytes] = field(default_factory=dict)

    def answer(
        self, tool: str, arguments: dict[str, Any], body: dict[str, Any] | None = None
    ) -> tuple[int, dict[str, Any]]:
        if tool == "google_search":
            query = str(arguments.get("query", ""))
            if query not in self.searches:
                return 404, {"error": f"no recorded search for {query!r}"}
            organic = self.searches[query]
            lines = [
                f"{i}. {r['title']}\n   {r['link']}\n   {r['snippet']}"
                for i, r in enumerate(organic, 1)
            ]
            context = "[Organic]\n" + "\n".join(lines)
            return 200, {
                "output": {
                    "tool": tool,
                    "query": query,
                    "context": context,
                    "raw": {"organic": organic},
                }
            }
        if tool == "google_lens_search":
            digest = str(arguments.get("image_sha256", ""))
            if digest not in self.lens:
                return 404, {"error": f"no recorded Lens result for image {digest[:12]}"}
            organic = self.lens[digest]
            lines = [
                f"{i}. {r['title']} [{r.get('source', '')}]\n   {r['link']}"
                for i, r in enumerate(organic, 1)
            ]
            context = "[Lens Organic]\n" + "\n".join(lines)
            return 200, {"output": {"tool": tool, "context": context, "raw": {"organic": organic}}}
        url = str(arguments.get("url", ""))
        if tool == "fetch_webpage":
            if url not in self.pages:
                return 404, {"error": f"no recorded page {url}"}
            limit = int(arguments.get("max_chars", 12000))
            return 200, {"output": {"url": url, "text": self.pages[url][:limit]}}
        if tool == "download_image":
            if url not in self.images:
                return 404, {"error": f"no recorded image {url}"}
            data = base64.b64encode(self.images[url]).decode("ascii")
            return 200, {"output": {"url": url}, "files": {"image.png": data}}
        return 404, {"error": f"unknown tool {tool}"}
