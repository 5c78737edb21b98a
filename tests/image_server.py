"""A real HTTP server on 127.0.0.1 standing in for the services that execute tool calls, for
rendering tests: an OpenAI-compatible images API (``POST /v1/images/generations`` answers a
PNG as ``b64_json``; ``POST /v1/images/edits`` takes the multipart upload and answers a PNG)
and an image search (``GET /search?q=...`` answers ``{"results": [{"image_url", "title",
"source_url"}]}`` whose URLs point at ``GET /img/<name>.png`` on the same server).

Each PNG differs by what was asked (prompt, query), so tests can tell results apart. The
server counts and records requests, can fail the next requests with a status, answer
something that is not an image, or delay answers (to hit a client's timeout).

``fake_run_code`` stands in for ``benchmark.sandbox.run_code``: a figure for most programs, a
failure for one that raises, a timeout for one that loops, no figure for one that prints."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import threading
import time
import urllib.parse
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace
from typing import Any


def png_for(text: str, size: tuple[int, int] = (20, 12)) -> bytes:
    """A small PNG whose colour follows ``text``."""
    from PIL import Image

    digest = hashlib.sha256(text.encode("utf-8")).digest()
    img = Image.new("RGB", size, (digest[0], digest[1], digest[2]))
    img.putpixel((0, 0), (digest[3], digest[4], digest[5]))
    out = io.BytesIO()
    img.save(out, format="PNG")
    return out.getvalue()


def fake_run_code(code: str, *, limits: Any = None) -> SimpleNamespace:
    """Stands in for benchmark.sandbox.run_code (same result shape)."""
    if "raise" in code:
        return SimpleNamespace(
            ok=False, images=[], stdout="", stderr="Traceback: boom", reason="ValueError: boom",
            kind="error",
        )  # fmt: skip
    if "while True" in code:
        return SimpleNamespace(
            ok=False, images=[], stdout="", stderr="", reason="ran past its 10 s wall-clock limit",
            kind="timeout",
        )  # fmt: skip
    if "no figure" in code:
        return SimpleNamespace(ok=True, images=[], stdout="hi", stderr="", reason="", kind="")
    return SimpleNamespace(
        ok=True, images=[png_for("code:" + code)], stdout="", stderr="", reason="", kind=""
    )


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class FakeImageServer:
    requests: list[Seen] = field(default_factory=list)
    delay: float = 0.0
    #: Search results per query (default: two hits whose images are on this server).
    results: dict[str, Any] = field(default_factory=dict)
    _failures: deque[int] = field(default_factory=deque)
    _not_image: deque[bool] = field(default_factory=deque)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _httpd: ThreadingHTTPServer | None = None

    # ------------------------------------------------------------------ control

    def fail_next(self, status: int, times: int = 1) -> None:
        with self._lock:
            self._failures.extend([status] * times)

    def answer_not_an_image(self, times: int = 1) -> None:
        with self._lock:
            self._not_image.extend([True] * times)

    def paths(self, prefix: str = "") -> list[str]:
        return [r.path for r in self.requests if r.path.startswith(prefix)]

    @property
    def url(self) -> str:
        assert self._httpd is not None
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    # ------------------------------------------------------------------ serving

    def start(self) -> FakeImageServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                return None

            def _send(self, status: int, body: bytes, kind: str = "application/json") -> None:
                self.send_response(status)
                self.send_header("content-type", kind)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _handle(self, method: str) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else b""
                with server._lock:
                    server.requests.append(
                        Seen(
                            method, self.path, {k.lower(): v for k, v in self.headers.items()}, body
                        )
                    )
                    failure = server._failures.popleft() if server._failures else None
                    not_image = server._not_image.popleft() if server._not_image else False
                if server.delay:
                    time.sleep(server.delay)
                if failure is not None:
                    error = {"error": {"message": f"failing on purpose with {failure}"}}
                    self._send(failure, json.dumps(error).encode())
                    return
                parts = urllib.parse.urlsplit(self.path)
                if parts.path.endswith("/images/generations"):
                    prompt = json.loads(body or b"{}").get("prompt", "")
                    data = b"not an image" if not_image else png_for("generate:" + prompt)
                    self._send(200, _images_answer(data))
                elif parts.path.endswith("/images/edits"):
                    prompt = _multipart_field(self.headers.get("content-type", ""), body, "prompt")
                    data = b"not an image" if not_image else png_for("edit:" + prompt)
                    self._send(200, _images_answer(data))
                elif parts.path == "/search":
                    query = urllib.parse.parse_qs(parts.query).get("q", [""])[0]
                    results = server.results.get(query)
                    if results is None:
                        slug = urllib.parse.quote(query, safe="")
                        results = {
                            "results": [
                                {
                                    "image_url": f"{server.url}/img/{slug}.png",
                                    "title": f"A picture of {query}",
                                    "source_url": f"https://example.org/{slug}",
                                }
                            ]
                        }
                    self._send(200, json.dumps(results).encode())
                elif parts.path.startswith("/img/"):
                    name = urllib.parse.unquote(parts.path[len("/img/") : -len(".png")])
                    data = b"<html>not an image</html>" if not_image else png_for("search:" + name)
                    self._send(200, data, "image/png")
                else:
                    self._send(404, b'{"error": {"message": "no such path"}}')

            def do_GET(self) -> None:  # noqa: N802
                self._handle("GET")

            def do_POST(self) -> None:  # noqa: N802
                self._handle("POST")

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None


def _images_answer(data: bytes) -> bytes:
    return json.dumps(
        {"created": 0, "data": [{"b64_json": base64.b64encode(data).decode("ascii")}]}
    ).encode()


def _multipart_field(content_type: str, body: bytes, name: str) -> str:
    """The value of a text field in a multipart/form-data body."""
    marker = "boundary="
    if marker not in content_type:
        return ""
    boundary = content_type.split(marker, 1)[1].strip().strip('"').encode()
    for part in body.split(b"--" + boundary):
        head, _, value = part.partition(b"\r\n\r\n")
        if f'name="{name}"'.encode() in head and b"filename=" not in head:
            return value.rstrip(b"\r\n").decode("utf-8", "replace")
    return ""
