"""The slowest single step the recipe limits allow, on this machine.

    python tests/perf/bench_recipe_limits.py
    python tests/perf/bench_recipe_limits.py --repeat 3 --step-mp 40 --mode RGBA

Deriving stops between steps once the time limit has passed (:mod:`benchmark.imaging.recipe`),
so the longest a derivation can run is the limit plus one step; this measures that one step.
For every operation it builds the largest (and dearest) step :func:`recipe.plan` accepts under
the default limits (40 MP per step, a denoise or Canny held to 40 MP divided by its factor),
checks that the plan accepts it and that one pixel more would be refused, and times the
operation (min and median of ``--repeat`` runs). Also times decoding, encoding (render_bytes)
and the preview's thumbnail of a 40 MP result, which the clock does not cover.

Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import math
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
from benchmark.imaging import recipe as recipes  # noqa: E402

SHA = hashlib.sha256(b"bench").hexdigest()


def make_image(pixels: int, mode: str, aspect: float = 1.5) -> Image.Image:
    """Noise (the median filter's and PNG's worst case) of about ``pixels`` pixels."""
    width = int(math.sqrt(pixels * aspect))
    height = pixels // width
    rng = np.random.default_rng(0)
    bands = len(mode)
    data = rng.integers(0, 256, (height, width, bands), dtype=np.uint8)
    return Image.fromarray(data if bands > 1 else data[:, :, 0], mode)


def timed(fn: Callable[[], Any], repeat: int) -> tuple[list[float], Any]:
    result = None
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return times, result


def side_for(pixels: int, aspect: float = 1.5) -> tuple[int, int]:
    width = int(math.sqrt(pixels * aspect))
    return width, pixels // width


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--step-mp", type=float, default=40.0, help="Limits.step_pixels in MP")
    parser.add_argument("--mode", default="RGB", choices=["L", "LA", "RGB", "RGBA"])
    args = parser.parse_args()
    step = int(args.step_mp * 1e6)
    limits = recipes.Limits.for_image_pixels(step, seconds=None)
    print(f"Pillow {Image.__version__}, NumPy {np.__version__}, Python {sys.version.split()[0]}")
    print(f"limits: {step / 1e6:g} MP per step, {limits.total_pixels / 1e6:g} MP per recipe")

    full = make_image(step, args.mode)
    # (label, input image size, op, params): the largest input each step accepts.
    cases: list[tuple[str, tuple[int, int], str, dict[str, Any]]] = []
    for op in ("grayscale", "autocontrast", "invert", "equalize", "threshold", "sharpen", "flip"):
        cases.append((op, full.size, op, {}))
    cases += [
        ("blur radius 100", full.size, "blur", {"radius": 100}),
        ("blur radius 2", full.size, "blur", {"radius": 2}),
        (
            "enhance all four factors",
            full.size,
            "enhance",
            {"brightness": 1.2, "contrast": 1.2, "sharpness": 2.0, "color": 1.3},
        ),
        ("edge_detect sobel", full.size, "edge_detect", {"method": "sobel"}),
        ("edge_detect simple", full.size, "edge_detect", {"method": "simple"}),
        ("rotate 90 (transpose)", full.size, "rotate", {"angle": 90}),
        ("rotate 33, no expand", full.size, "rotate", {"angle": 33, "expand": False}),
        ("resize to half (reads 40 MP)", full.size, "resize", {"scale": 0.5}),
        ("resize to 1 % (reads 40 MP)", full.size, "resize", {"scale": 0.01}),
        (
            "resize transposed aspect",
            full.size,
            "resize",
            {"width": full.height, "height": full.width},
        ),
        ("crop whole, no zoom", full.size, "crop", {"bbox_2d": [0, 0, 1000, 1000]}),
    ]
    # Enlarging steps: the input that makes just under the limit.
    small = side_for(step // 25)
    cases.append(
        ("crop zoom 5 to 40 MP", small, "crop", {"bbox_2d": [0, 0, 1000, 1000], "zoom_scale": 5})
    )
    cases.append(("resize x10 to 40 MP", side_for(step // 100), "resize", {"scale": 10}))
    rot_in = side_for(int(step / 2.1))
    cases.append(("rotate 45 expanding to ~40 MP", rot_in, "rotate", {"angle": 45}))
    canny_side = side_for(step // ops.CANNY_COST)
    cases.append(("edge_detect canny (factor 10)", canny_side, "edge_detect", {"method": "canny"}))
    for strength in (1, 6, 9, 12, 15, 18, 21, 24, 27, 30):
        size = 2 * max(1, strength // 3) + 1
        cases.append(
            (
                f"denoise strength {strength} ({size}x{size}, factor {size * size})",
                side_for(step // (size * size)),
                "denoise",
                {"strength": strength},
            )
        )

    worst = ("", 0.0)
    for label, size, op, params in cases:
        recipe = recipes.Recipe.build(SHA, [{"op": op, "params": params}])
        try:
            [estimate] = recipes.plan(recipe, size, limits=limits)
        except recipes.RecipeError as exc:
            print(f"{label:<44} refused by the plan: {exc}")
            continue
        image = (
            full
            if size == full.size
            else make_image(size[0] * size[1], args.mode, size[0] / size[1])
        )
        times, out = timed(lambda i=image, o=op, p=params: ops.apply(i, o, p), args.repeat)
        best, median = min(times), statistics.median(times)
        if median > worst[1]:
            worst = (label, median)
        print(
            f"{label:<44} in {image.width}x{image.height} out {out.width}x{out.height} "
            f"cost {estimate.cost / 1e6:5.1f} MP   min {best:6.2f} s   median {median:6.2f} s",
            flush=True,
        )
    print(f"slowest allowed single step: {worst[0]}, {worst[1]:.2f} s median")

    buf = io.BytesIO()
    full.save(buf, format="PNG", compress_level=1)
    data = buf.getvalue()
    times, _ = timed(lambda: ops.load(data, max_pixels=step), args.repeat)
    print(
        f"decode {step / 1e6:g} MP PNG (not on the clock)          median {statistics.median(times):6.2f} s"
    )
    times, _ = timed(lambda: recipes.render_bytes(full), args.repeat)
    print(
        f"render_bytes of {step / 1e6:g} MP (not on the clock)      median {statistics.median(times):6.2f} s"
    )

    def thumb() -> None:
        copy = full.copy()
        copy.thumbnail((2048, 2048), Image.Resampling.LANCZOS)

    times, _ = timed(thumb, args.repeat)
    print(
        f"preview thumbnail of {step / 1e6:g} MP (not on the clock) median {statistics.median(times):6.2f} s"
    )


if __name__ == "__main__":
    main()
