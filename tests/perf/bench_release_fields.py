"""What per-field fingerprints add to a release of N items (default 10,000): the time to
compute them next to the item fingerprints a release already computes, the size of the JSON
stored on the release, and the time to name the changed fields of every item when all
changed (the worst case of a comparison). No database: the records are synthetic, shaped
like an ATP-Bench item with a response and an m&m's plan.

    BENCHWRIGHT_SHARED_DATA=/work/shared/data python tests/perf/bench_release_fields.py [N]
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchmark.settings")

import django  # noqa: E402

django.setup()

import orjson  # noqa: E402

from review.releases.services import (  # noqa: E402
    RECORD_FIELDS,
    field_fingerprints_of,
    field_prints,
    fields_changed,
    record_fingerprint,
)


def record(n: int, edit: str = "") -> dict:
    row: dict = {key: None for key in RECORD_FIELDS}
    row.update(
        external_id=f"item_{n:05d}",
        query=f"How does widget {n} work?{edit}",
        category="Academic",
        intent="Framework",
        documents=[{"text": "Background text. " * 40, "images": [f"images/{n}.png"]}],
        image_refs=[{"sha256": f"{n:064x}", "role": "document", "path": "", "position": 0}],
        status="verified",
        responses=[{"key": "gt", "text": "An answer. " * 60, "origin": "ground_truth"}],
        plans=[
            {
                "key": "p0",
                "steps": [{"id": 0, "name": "image captioning", "args": {"image": f"{n}.jpg"}}],
                "is_alternative": False,
            }
        ],
        trajectories=[],
    )
    return row


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    pairs = [(pk, record(pk)) for pk in range(1, n + 1)]
    t0 = time.perf_counter()
    [record_fingerprint(r) for _, r in pairs]
    t_item = time.perf_counter() - t0
    t0 = time.perf_counter()
    stored = field_fingerprints_of(pairs)
    t_fields = time.perf_counter() - t0
    size = len(orjson.dumps(stored))
    after = field_fingerprints_of([(pk, record(pk, " edited")) for pk in range(1, n + 1)])
    t0 = time.perf_counter()
    named = [
        fields_changed(field_prints(stored, pk) or {}, field_prints(after, pk) or {})
        for pk in range(1, n + 1)
    ]
    t_compare = time.perf_counter() - t0
    assert all(f == ["query"] for f in named)
    print(f"items: {n}")
    print(f"item fingerprints (already in a release): {t_item:.3f} s")
    print(f"field fingerprints (added):               {t_fields:.3f} s")
    print(f"field_fingerprints JSON on the release:   {size / 1e6:.2f} MB")
    print(f"naming changed fields, all {n} changed:   {t_compare:.3f} s")


if __name__ == "__main__":
    main()
