"""Writing a release's Parquet copy (benchmark.formats.hf_parquet) for ATP-Bench-shaped items
with images, and loading it with ``datasets``.

    python tests/perf/bench_release_parquet.py                  # 1,000 items, 3 images each
    python tests/perf/bench_release_parquet.py --items 3000 --shard-mb 64

Each item has a 1,300-character document, a 2,800-character answer and 3 distinct noise PNGs
of 160x120, about 58 KB each, so images dominate as in a real release. Prints the write time,
the files and their size, the peak memory of this process, and the time
``datasets.load_dataset`` takes to load them (offline, into a fresh cache). Prints figures;
asserts nothing about time.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--images", type=int, default=3)
    parser.add_argument("--shard-mb", type=int, default=256)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-parquet-"))
    try:
        run(args, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run(args: argparse.Namespace, tmp: Path) -> None:
    from PIL import Image

    from benchmark.formats import ItemRecord, get_format
    from benchmark.formats.hf_parquet import write_parquet

    rng = random.Random(7)
    data = tmp / "data"
    (data / "images").mkdir(parents=True)

    def noise_png() -> bytes:  # distinct noise, so compression cannot shrink it
        img = Image.frombytes("RGB", (160, 120), rng.randbytes(160 * 120 * 3))
        out = io.BytesIO()
        img.save(out, format="PNG")
        return out.getvalue()

    lines = []
    for i in range(args.items):
        paths = [f"images/{i}_{k}.png" for k in range(args.images)]
        for path in paths:
            (data / path).write_bytes(noise_png())
        lines.append(
            json.dumps(
                {
                    "trace_id": f"atp_{i:05d}",
                    "query": f"Question {i} about the framework?",
                    "image_query": None,
                    "doc": [{"text": "word " * 260, "images": paths}],
                    "images": paths,
                    "gt": "answer " * 400,
                    "category": rng.choice(["Academic", "Travel", "Product"]),
                    "intent": "Framework",
                }
            )
        )
    (data / "data.jsonl").write_text("\n".join(lines) + "\n")
    items = [r for r in get_format("atp").read(data) if isinstance(r, ItemRecord)]
    image_mb = sum(p.stat().st_size for p in (data / "images").iterdir()) / 1e6

    start = time.perf_counter()
    result = write_parquet(
        "atp",
        items,
        data_root=data,
        out_dir=tmp / "parquet",
        max_shard_bytes=args.shard_mb * 1024 * 1024,
    )
    took = time.perf_counter() - start
    size_mb = sum(f.stat().st_size for f in result.files) / 1e6
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"items: {result.rows}, images: {args.items * args.images} ({image_mb:.1f} MB of PNG)")
    print(f"write_parquet: {took:.2f} s, {len(result.files)} file(s), {size_mb:.1f} MB")
    print(f"peak RSS of this process (items + images + pyarrow): {rss_mb:.0f} MB")

    os.environ["HF_DATASETS_OFFLINE"] = "1"
    os.environ["HF_HUB_OFFLINE"] = "1"
    import datasets

    datasets.disable_progress_bars()
    start = time.perf_counter()
    ds = datasets.load_dataset(
        "parquet",
        data_dir=str(tmp / "parquet"),
        split="train",
        cache_dir=str(tmp / "cache"),
    )
    took = time.perf_counter() - start
    first = ds[0]["images"][0]
    print(f"datasets.load_dataset: {took:.2f} s, {ds.num_rows} rows, first image {first.size}")


if __name__ == "__main__":
    main()
