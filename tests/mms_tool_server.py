"""A real HTTP server on 127.0.0.1 that answers m&m's detection, segmentation, speech and
public-API tools from recorded results, in the API
``benchmark.evaluation.mms_provided.MmsToolProvider`` speaks (``POST /<function>`` with
``{"arguments": {...}, "files": {"<sha256>": "<base64>"}}``), for tests: no model, nothing
reaches the web.

A call is answered when its function and arguments match a recording (values compared as
text, so ``2012`` matches ``"2012"``; a file argument is its ``sha256:<hex>``, and the server
checks that the request carries those bytes); anything else gets a 404 naming it, as a real
service would answer an unknown city. ``PUBLIC_API`` holds recorded answers of the public
APIs in their real shapes (Numbers API, love calculator, Nominatim, OMDb, 7Timer, Wikipedia);
detections, segments and transcripts are recorded per test with ``add``, since they depend on
the test's image or audio. The HTTP side (requests kept, failures on demand, the bearer key)
is the retrieval server's (``tests.retrieval_server.JsonToolServer``)."""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from tests.retrieval_server import JsonToolServer

#: Recorded public-API answers: (function, arguments, output).
PUBLIC_API: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    (
        "get_date_fact",
        {"date": "July 20"},
        {
            "text": "the Apollo 11 landing module touches down on the Moon",
            "year": 1969,
            "number": 202,
            "found": True,
            "type": "date",
        },
    ),
    (
        "get_year_fact",
        {"year": "2012"},
        {"text": "the year the Curiosity rover landed on Mars", "number": 2012, "found": True},
    ),
    (
        "get_math_fact",
        {"number": "87"},
        {"text": "the sum of the squares of the first four primes", "number": 87, "found": True},
    ),
    (
        "get_trivia_fact",
        {"number": "87"},
        {"text": "the number of keys on some early pianos", "number": 87, "found": True},
    ),
    (
        "love_calculator",
        {"first_name": "Alice", "second_name": "Bob"},
        {"number": 87, "message": "Can choose someone better."},
    ),
    (
        "get_location",
        {"city": "Seattle"},
        {
            "place_id": 298234,
            "lat": "47.6038321",
            "lon": "-122.330062",
            "display_name": "Seattle, King County, Washington, United States",
        },
    ),
    (
        "get_weather",
        {"lon": "-122.330062", "lat": "47.6038321"},
        {
            "objects": [
                {"timepoint": 3, "cloudcover": 9, "temp2m": 11, "weather": "lightrainday"},
                {"timepoint": 6, "cloudcover": 8, "temp2m": 13, "weather": "cloudyday"},
                {"timepoint": 9, "cloudcover": 2, "temp2m": 9, "weather": "clearnight"},
            ]
        },
    ),
    (
        "search_movie",
        {"movie_title": "Inception", "movie_year": "2010"},
        {
            "text": "Title: Inception\nYear: 2010\nGenre: Action, Adventure, Sci-Fi\n"
            "Director: Christopher Nolan\nPlot: A thief who steals corporate secrets.\n"
        },
    ),
    (
        "wikipedia_simple_search",
        {"text": "Curiosity rover"},
        {"text": "Curiosity is a car-sized Mars rover exploring Gale crater."},
    ),
]


def _key(function: str, arguments: dict[str, Any]) -> str:
    as_text = {str(k): v if isinstance(v, list | dict) else str(v) for k, v in arguments.items()}
    return json.dumps([function, as_text], sort_keys=True)


@dataclass
class RecordedTools(JsonToolServer):
    #: key -> (output, files as bytes)
    recorded: dict[str, tuple[dict[str, Any], dict[str, bytes]]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for function, arguments, output in PUBLIC_API:
            self.add(function, arguments, output)

    def add(
        self,
        function: str,
        arguments: dict[str, Any],
        output: dict[str, Any],
        files: dict[str, bytes] | None = None,
    ) -> RecordedTools:
        self.recorded[_key(function, arguments)] = (output, dict(files or {}))
        return self

    def calls(self, function: str) -> list[dict[str, Any]]:
        """The arguments of every request made to ``function``."""
        return [r.arguments for r in self.requests if r.tool == function]

    def answer(
        self, tool: str, arguments: dict[str, Any], body: dict[str, Any]
    ) -> tuple[int, dict[str, Any]]:
        sent = body.get("files") or {}
        for name, value in arguments.items():
            if isinstance(value, str) and value.startswith("sha256:"):
                digest = value[len("sha256:") :]
                data = base64.b64decode(sent.get(digest, ""))
                if hashlib.sha256(data).hexdigest() != digest:
                    return 400, {"error": f"the file of argument {name!r} was not sent"}
        found = self.recorded.get(_key(tool, arguments))
        if found is None:
            return 404, {"error": f"no recorded answer of {tool} for {json.dumps(arguments)}"}
        output, files = found
        return 200, {
            "output": output,
            "files": {n: base64.b64encode(d).decode("ascii") for n, d in files.items()},
        }
