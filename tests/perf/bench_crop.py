"""Crop speed on a 24-megapixel image (6000x4000 RGB), with the PNG encode of the result.

    python tests/perf/bench_crop.py
    python tests/perf/bench_crop.py --repeat 10 --width 8000 --height 6000

Builds a photo-like image with Pillow (gradients plus noise, so PNG cannot cheat), then times,
each over ``--repeat`` runs (min and median):

* decoding the 24 MP PNG with ``ops.load`` (EXIF orientation and the pixel limit included);
* ``ops.crop`` of a large region (the centre half), of a small detail, and of the small
  detail with ``zoom_scale=3``, which adds a Lanczos resize;
* ``render_bytes`` (the deterministic PNG encode) of each crop;
* a whole ``verify`` (hash the source, decode, derive, encode, hash), the check a reviewer runs.

The target is under 300 ms for a crop. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmark.imaging import ops  # noqa: E402
from benchmark.imaging.recipe import Recipe, artifact_sha256, render_bytes, verify  # noqa: E402

TARGET_MS = 300.0


def make_image(width: int, height: int) -> Image.Image:
    rng = np.random.default_rng(0)
    x = np.linspace(0, 1, width, dtype=np.float32)[None, :]
    y = np.linspace(0, 1, height, dtype=np.float32)[:, None]
    base = np.stack(
        [
            180 * x + 40 * y + 20,
            120 * y + 60 * np.sin(8 * x) + 60,
            200 * (1 - x) * y + 30,
        ],
        axis=-1,
    )
    noise = rng.normal(0, 12, (height, width, 3)).astype(np.float32)
    return Image.fromarray(np.clip(base + noise, 0, 255).astype(np.uint8), "RGB")


def timed(fn: Callable[[], Any], repeat: int) -> tuple[list[float], Any]:
    result = None
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append((time.perf_counter() - start) * 1000)
    return times, result


def report(name: str, times: list[float], note: str = "", target: float | None = None) -> None:
    best, median = min(times), statistics.median(times)
    flag = ""
    if target is not None:
        flag = "  ok" if median < target else f"  OVER {target:.0f} ms"
    print(f"{name:<44} min {best:8.1f} ms   median {median:8.1f} ms{flag}  {note}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--width", type=int, default=6000)
    parser.add_argument("--height", type=int, default=4000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    print(f"Pillow {Image.__version__}, NumPy {np.__version__}, Python {sys.version.split()[0]}")
    image = make_image(args.width, args.height)
    buf = io.BytesIO()
    image.save(buf, format="PNG", compress_level=1)
    source = buf.getvalue()
    megapixels = args.width * args.height / 1e6
    print(
        f"source: {args.width}x{args.height} = {megapixels:.1f} MP, PNG {len(source) / 1e6:.1f} MB"
    )

    times, loaded = timed(lambda: ops.load(source, max_pixels=100_000_000), args.repeat)
    report("decode 24 MP PNG (ops.load)", times)

    cases = [
        ("crop centre half (3000x2000)", {"bbox_2d": [250, 250, 750, 750]}),
        ("crop small detail", {"bbox_2d": [769, 403, 850, 452]}),
        ("crop small detail, zoom_scale=3", {"bbox_2d": [769, 403, 850, 452], "zoom_scale": 3}),
    ]
    crop_medians = []
    for name, params in cases:
        times, out = timed(lambda p=params: ops.apply(loaded, "crop", p), args.repeat)
        report(name, times, f"-> {out.width}x{out.height}", target=TARGET_MS)
        crop_medians.append(statistics.median(times))
        enc_times, png = timed(lambda o=out: render_bytes(o), args.repeat)
        report("  + PNG encode (render_bytes)", enc_times, f"{len(png) / 1e6:.2f} MB")
        both = [c + e for c, e in zip(times, enc_times, strict=True)]
        report("  = crop + encode", both)

    worst = max(crop_medians)
    verdict = "ok" if worst < TARGET_MS else "OVER"
    print(
        f"crop of a {megapixels:.0f}-megapixel image: {worst:.1f} ms median, slowest case "
        f"(target < {TARGET_MS:.0f} ms) {verdict}"
    )

    sha = hashlib.sha256(source).hexdigest()
    recipe = Recipe.build(sha, [{"op": "crop", "params": cases[2][1]}])
    digest = artifact_sha256(ops.apply(loaded, "crop", cases[2][1]))
    times, ok = timed(lambda: verify(source, recipe, digest, max_pixels=100_000_000), args.repeat)
    report("verify (hash + decode + crop + encode)", times, f"-> {ok}")


if __name__ == "__main__":
    main()
