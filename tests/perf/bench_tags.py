"""Robustness and speed of the tool-tag parser and validator (benchmark.tags).

    python tests/perf/bench_tags.py                 # everything, with the targets
    python tests/perf/bench_tags.py --fuzz 20000    # fewer fuzz inputs
    python tests/perf/bench_tags.py --fuzz 0 --no-speed   # only the editor figure
    python tests/perf/bench_tags.py --fuzz 0 --profile    # ... and where its time goes

1. Fuzz: 100,000 generated inputs (tag fragments, braces, quotes, escapes, random text, and
   mutated well-formed answers), each parsed and validated in both syntaxes. Any exception is
   reported with its input; the script exits 1 if there was one.
2. Parser throughput in MB of answer text (UTF-8) per second, per syntax, on generated answers
   shaped like the sample data (about 3 kB, 4 tags). Target: >= 20 MB/s.
3. parse + validate of 10,000 answers (5,000 per syntax). Target: < 10 s.
4. parse of one 1 MB answer holding 500 tags. Target: < 300 ms.
5. The review screen (the editor) for that 1 MB ATP answer with 500 tags: GET through Django's
   test client, in-process, on a throwaway SQLite database (migrated in a temporary folder);
   median server time over several runs. Target: < 300 ms.

Timings are the best of several runs (wall clock; CPU time is printed too, since a busy
machine inflates wall time). Prints figures; the exit status reflects the fuzz result only.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmark.tags import make_payload, parse, render_tag, validate  # noqa: E402

# Ordinary answer prose; "photo" makes some windows go through the figure-phrase pattern.
_WORDS = (
    "the model photo answer step press hold water tank descaler light panel kettle "
    "temperature result bar value shows compare quarter revenue roof vault pier buttress "
    "lighthouse rocks colour warm oak linen tile basin cycle rinse container minutes"
)
WORDS = _WORDS.split()

FRAGMENTS = [
    "<tool>", "</tool>", "<imgen>", "</imgen>", "<tool", "imgen>", "{", "}", "[", "]", "'", '"',
    "\\", ":", ",", "\n", "\n\n", " ", '"tool_name"', '"description"', '"params"', '"img_index"',
    "'source'", "'code'", "'params'", "'img_index'", "'prompt'", '"Reference"', "'edit'",
    "0", "-1", "99", "1e5", "True", "null", "As shown below, ", "see the figure", "x = (",
    "\\n", "\\'", "é", "\u2028", "\x00", "\r\n",
]  # fmt: skip


def sentence(rng: random.Random, n_words: int) -> str:
    words = [rng.choice(WORDS) for _ in range(n_words)]
    return " ".join(words).capitalize() + "."


def paragraph(rng: random.Random, size: int) -> str:
    out: list[str] = []
    length = 0
    while length < size:
        s = sentence(rng, rng.randint(6, 16))
        out.append(s)
        length += len(s) + 1
    return " ".join(out)


CODE = (
    "import matplotlib.pyplot as plt\nlabels = ['K3', 'K5']\nvalues = [{a}, {b}]\n"
    "bars = plt.bar(labels, values, color=['#4a7ab4', '#999999'])\n"
    "plt.bar_label(bars, fmt='%.1f')\nplt.ylabel('Temperature (C)')\nplt.title('Kettles')"
)


def tag(rng: random.Random, syntax: str, index: int, images: int) -> str:
    kind = rng.choice(["image", "search", "diffusion", "code", "edit"])
    if kind == "image" and syntax == "atp":
        return render_tag(
            make_payload("atp", "Reference", sentence(rng, 6), {"img_index": index % images}), "atp"
        )
    if kind in ("image", "search"):
        name, params = "search", {"query": sentence(rng, 5)}
    elif kind == "diffusion":
        name, params = "diffusion", {"prompt": paragraph(rng, 250)}
    elif kind == "code":
        name, params = "code", {"code": CODE.format(a=rng.randint(1, 99), b=rng.randint(1, 99))}
    else:
        name, params = "edit", {"img_index": 0, "prompt": sentence(rng, 14)}
    if syntax == "atp":
        name = name.capitalize()
    return render_tag(make_payload(syntax, name, sentence(rng, 6), params), syntax)  # type: ignore[arg-type]


def answer(rng: random.Random, syntax: str, size: int = 3000, tags: int = 4) -> str:
    blocks: list[str] = []
    per_paragraph = max(200, (size - tags * 350) // (tags + 1))
    for i in range(tags):
        blocks.append(paragraph(rng, per_paragraph))
        blocks.append(tag(rng, syntax, i, 5))
    blocks.append(paragraph(rng, per_paragraph))
    return "\n\n".join(blocks)


def fuzz_input(rng: random.Random, seeds: list[str]) -> str:
    mode = rng.random()
    if mode < 0.5:
        parts = []
        for _ in range(rng.randint(0, 60)):
            if rng.random() < 0.8:
                parts.append(rng.choice(FRAGMENTS))
            else:
                parts.append("".join(chr(rng.randint(0, 0x2FFF)) for _ in range(rng.randint(1, 5))))
        return "".join(parts)
    text = rng.choice(seeds)
    for _ in range(rng.randint(1, 6)):  # mutate a well-formed answer
        op = rng.random()
        i = rng.randint(0, len(text))
        j = min(len(text), i + rng.randint(0, 40))
        if op < 0.3:
            text = text[:i] + text[j:]
        elif op < 0.6:
            text = text[:i] + rng.choice(FRAGMENTS) + text[i:]
        elif op < 0.8:
            text = text[:i] + text[i:j] * 2 + text[j:]
        else:
            text = text[:i] + text[j:i:-1] + text[j:]
    return text


def run_fuzz(n: int, seed: int) -> int:
    rng = random.Random(seed)
    seeds = [answer(rng, s, size=800, tags=rng.randint(1, 4)) for s in ("atp", "llmi") * 20]
    failures: list[tuple[str, str, str]] = []
    started = time.perf_counter()
    findings = 0
    for k in range(n):
        text = fuzz_input(rng, seeds)
        for syntax in ("atp", "llmi"):
            try:
                parsed = parse(text, syntax)  # type: ignore[arg-type]
                findings += len(
                    validate(
                        parsed,
                        None,
                        image_count=rng.choice([None, 0, 3]),
                        input_images=rng.randint(0, 2),
                        image_num=rng.choice([None, -1, 0, 2, 99]),
                        placement=True,
                    )
                )
            except Exception:
                failures.append((syntax, text, traceback.format_exc()))
        if (k + 1) % 20000 == 0:
            print(f"  fuzz: {k + 1:,} inputs, {len(failures)} exceptions", flush=True)
    elapsed = time.perf_counter() - started
    print(
        f"fuzz: {n:,} inputs x 2 syntaxes in {elapsed:.1f} s, {findings:,} findings, "
        f"{len(failures)} exceptions"
    )
    for syntax, text, tb in failures[:5]:
        print(f"--- {syntax} input {text[:300]!r}\n{tb}")
    return len(failures)


def best_of(repeats: int, fn: Callable[[], object]) -> tuple[float, float]:
    wall, cpu = float("inf"), float("inf")
    for _ in range(repeats):
        w0, c0 = time.perf_counter(), time.process_time()
        fn()
        wall = min(wall, time.perf_counter() - w0)
        cpu = min(cpu, time.process_time() - c0)
    return wall, cpu


def parse_all(corpus: list[str], syntax: str) -> None:
    for text in corpus:
        parse(text, syntax)  # type: ignore[arg-type]


def verdict(ok: bool) -> str:
    return "ok" if ok else "MISSED"


def run_speed(seed: int) -> None:
    rng = random.Random(seed)
    for syntax in ("atp", "llmi"):
        corpus = [answer(rng, syntax) for _ in range(2000)]
        size = sum(len(t.encode()) for t in corpus) / 1e6
        wall, cpu = best_of(3, lambda corpus=corpus, syntax=syntax: parse_all(corpus, syntax))
        print(
            f"parse {syntax}: {size:.1f} MB in {wall * 1000:.0f} ms -> {size / wall:.1f} MB/s "
            f"(CPU {size / cpu:.1f} MB/s), target >= 20 MB/s: {verdict(size / wall >= 20)}"
        )

    corpus = [answer(rng, "atp") for _ in range(5000)]
    llmi = [answer(rng, "llmi") for _ in range(5000)]

    def validate_all() -> None:
        for text in corpus:
            validate(parse(text, "atp"), None, image_count=5)
        for text in llmi:
            validate(parse(text, "llmi"), None, input_images=1, image_num=4)

    wall, cpu = best_of(2, validate_all)
    print(
        f"parse + validate 10,000 answers: {wall:.2f} s (CPU {cpu:.2f} s), target < 10 s: "
        f"{verdict(wall < 10)}"
    )

    for syntax in ("atp", "llmi"):
        big = big_answer(rng, syntax, 1000)
        parsed = parse(big, syntax)  # type: ignore[arg-type]
        assert len(parsed.tools) == 500
        wall, cpu = best_of(5, lambda big=big, syntax=syntax: parse(big, syntax))
        vwall, _ = best_of(3, lambda parsed=parsed: validate(parsed, None, image_count=1000))
        print(
            f"parse 1 answer of {len(big.encode()) / 1e6:.2f} MB with 500 {syntax} tags: "
            f"{wall * 1000:.0f} ms (CPU {cpu * 1000:.0f} ms), target < 300 ms: "
            f"{verdict(wall < 0.3)}; validate it: {vwall * 1000:.0f} ms"
        )


def big_answer(rng: random.Random, syntax: str, images: int) -> str:
    """About 1 MB of answer text holding 500 tags."""
    blocks = []
    for i in range(500):
        blocks.append(paragraph(rng, 1650))
        blocks.append(tag(rng, syntax, i, images))
    return "\n\n".join(blocks)


def run_editor(seed: int, runs: int, profile: bool) -> None:
    """Server time of the review screen for a 1 MB ATP answer with 500 tags."""
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["DATABASE_URL"] = f"sqlite:///{Path(tmp) / 'editor.sqlite3'}"
        os.environ["MEDIA_ROOT"] = str(Path(tmp) / "media")
        os.environ["DEBUG"] = "false"  # as in production: no query log, cached templates
        os.environ["SECURE_SSL_REDIRECT"] = "false"
        os.environ["DJANGO_SETTINGS_MODULE"] = "benchmark.settings"
        import django

        django.setup()
        from django.conf import settings
        from django.core.management import call_command

        # No collectstatic in a throwaway folder: plain static URLs instead of the manifest.
        settings.STORAGES = {
            **settings.STORAGES,
            "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
        }
        call_command("migrate", verbosity=0)
        from django.contrib.auth import get_user_model
        from django.test import Client

        from benchmark.builtin import toolsets_ensure
        from benchmark.images import services
        from benchmark.models import Item, Membership, Project, Response

        sys.path.insert(0, str(ROOT))
        from tests.factories import png_bytes

        project = Project.objects.create(
            name="editor", kind="interleaved", tag_syntax="atp", data_format="atp",
            toolset=toolsets_ensure()["atp"],
        )  # fmt: skip
        user = get_user_model().objects.create_user("annotator", password="x")
        Membership.objects.create(project=project, user=user, role="annotator")
        n_images = 10
        images = [
            services.image_store(data=png_bytes(k + 1), name="p.png") for k in range(n_images)
        ]
        for image in images:
            image.projects.add(project)
        item = Item.objects.create(
            project=project,
            external_id="big",
            query="A long answer",
            documents=[{"text": "Doc.", "images": [f"{k}.png" for k in range(n_images)]}],
            image_refs=[
                {"sha256": im.sha256, "role": "document", "path": f"{k}.png", "position": k}
                for k, im in enumerate(images)
            ],
        )
        text = big_answer(rng, "atp", n_images)
        response = Response.objects.create(item=item, key="gt", text=text)
        client = Client()
        client.force_login(user)
        url = f"/projects/{project.pk}/tag-review/items/{item.pk}/responses/{response.pk}/review/"

        def get() -> int:
            page = client.get(url)
            assert page.status_code == 200, page.status_code
            return len(page.content)

        size = get()  # warm: imports, template compilation, caches
        times, cpu = [], []
        for _ in range(runs):
            t0, c0 = time.perf_counter(), time.process_time()
            get()
            times.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
        median = statistics.median(times)
        print(
            f"review screen, 1 answer of {len(text.encode()) / 1e6:.2f} MB with 500 atp tags "
            f"({size / 1e6:.1f} MB of HTML): median {median * 1000:.0f} ms (CPU "
            f"{statistics.median(cpu) * 1000:.0f} ms), best {min(times) * 1000:.0f} ms over "
            f"{runs} GETs, target < 300 ms: {verdict(median < 0.3)}"
        )
        if profile:
            import cProfile
            import pstats

            profiler = cProfile.Profile()
            profiler.runcall(get)
            pstats.Stats(profiler).sort_stats(
                os.environ.get("BENCH_SORT", "cumulative")
            ).print_stats(35)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fuzz", type=int, default=100_000, help="fuzz inputs (default 100,000)")
    parser.add_argument("--seed", type=int, default=20250101)
    parser.add_argument("--no-speed", action="store_true", help="skip the parser figures")
    parser.add_argument("--runs", type=int, default=9, help="GETs of the review screen")
    parser.add_argument("--profile", action="store_true", help="profile one review screen GET")
    args = parser.parse_args()
    print(json.dumps({"python": sys.version.split()[0], "fuzz": args.fuzz, "seed": args.seed}))
    if not args.no_speed:
        run_speed(args.seed)
    run_editor(args.seed, args.runs, args.profile)
    failures = run_fuzz(args.fuzz, args.seed) if args.fuzz else 0
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
