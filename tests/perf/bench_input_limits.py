"""What the input limits cost (issue 22, items 4 and 5): the API's JSON parser against DRF's
own, the bracket-depth scan, and the per-record check every import runs.

    python tests/perf/bench_input_limits.py
    python tests/perf/bench_input_limits.py --repeat 5

Prints the median of ``--repeat`` runs per case (and the load average beside them); asserts
nothing.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchmark.settings")

import django  # noqa: E402

django.setup()

from rest_framework.parsers import JSONParser  # noqa: E402

from benchmark import limits  # noqa: E402
from benchmark.api.parsers import LimitedJSONParser  # noqa: E402
from benchmark.datasets.services import record_within_limits  # noqa: E402
from benchmark.formats import atp  # noqa: E402


def _median(run: Callable[[], Any], repeat: int, inner: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(inner):
            run()
        times.append((time.perf_counter() - start) / inner)
    return statistics.median(times)


def _bodies() -> dict[str, bytes]:
    item = {"query": "What does the chart show? " * 20, "category": "Academic",
            "documents": [{"text": "A paragraph of the document. " * 200, "images": []}] * 3,
            "rubric": [{"key": f"r{i}", "text": "The answer names the chart's axis."}
                       for i in range(1, 11)]}  # fmt: skip
    many = {"items": [{"id": i, "tags": [["a", ["b"]]]} for i in range(2_000)]}
    return {
        "item (typical, %d KB)": json.dumps(item).encode(),
        "1 MB document": json.dumps(
            {"query": "q", "documents": [{"text": "x" * 1_000_000}]}
        ).encode(),
        "6,000 brackets, shallow": json.dumps(many).encode(),
        "2,000 levels deep": b"[" * 2000 + b"]" * 2000,
    }


def _parse(parser: Any, body: bytes) -> Callable[[], Any]:
    def run() -> Any:
        try:
            return parser.parse(io.BytesIO(body), "application/json", {})
        except Exception as exc:  # noqa: BLE001  (DRF's parser: RecursionError on the deep one)
            return exc

    return run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}")
    print(f"{'body':32} {'DRF JSONParser':>15} {'LimitedJSONParser':>18} {'depth scan':>11}")
    for name, body in _bodies().items():
        label = name % (len(body) // 1024) if "%d" in name else name
        inner = 3 if len(body) > 100_000 else 50
        outcome = {type(_parse(p, body)()).__name__ for p in (JSONParser(), LimitedJSONParser())}
        drf = _median(_parse(JSONParser(), body), args.repeat, inner)
        ours = _median(_parse(LimitedJSONParser(), body), args.repeat, inner)
        scan = _median(lambda b=body: limits.json_too_deep(b), args.repeat, inner)
        print(
            f"{label:32} {drf * 1e3:>12.3f} ms {ours * 1e3:>15.3f} ms {scan * 1e3:>8.3f} ms"
            f"  ({' / '.join(sorted(outcome))})"
        )
    line = json.dumps({"trace_id": "atp_0001", "query": "q " * 200, "images": [], "gt": "a " * 500,
                       "doc": [{"text": "d " * 2000, "images": []}] * 4,
                       "category": "Academic", "intent": "Framework"})  # fmt: skip
    record = atp.parse_record(line)
    per = _median(lambda: record_within_limits(record), args.repeat, 2_000)
    print(
        f"record_within_limits, one ATP-Bench record of {len(line) // 1024} KB: {per * 1e6:.1f} µs"
    )
    print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}")


if __name__ == "__main__":
    main()
