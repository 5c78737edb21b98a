"""Latency and CPU time of one small plot in the code sandbox (benchmark/sandbox), warm zygote
and one-shot jail, with the load.

    python tests/perf/bench_sandbox.py
    python tests/perf/bench_sandbox.py --runs 9 --rounds 3

Each round runs `--runs` programs per mode and prints its median wall time; the figure to
compare is the median of the rounds' medians. CPU per run counts every process (this one, the
jails, zygotes, managers and programs, once they have ended), less a zygote's start: it moves
less with the machine's load than wall time. Prints figures only; asserts nothing about time.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmark.sandbox import SandboxLimits, run_code  # noqa: E402
from benchmark.sandbox.run import ZYGOTE_ENV, shutdown  # noqa: E402

PLOT = (
    "import matplotlib.pyplot as plt\n"
    "fig, ax = plt.subplots(figsize=(3, 2), dpi=50)\n"
    "ax.bar(['a', 'b', 'c'], [{n}, 2, 3])\n"
    "plt.show()\n"
)


def one_round(runs: int) -> list[float]:
    times = []
    for n in range(runs):
        started = time.perf_counter()
        result = run_code(PLOT.format(n=n + 1), limits=SandboxLimits())
        times.append(time.perf_counter() - started)
        if not result.ok:
            raise SystemExit(f"the plot failed: {result.kind}: {result.reason}")
    return times


def cpu_seconds() -> float:
    """CPU time of this process and of every child it has waited for (with their children)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def measure(mode: str, runs: int, rounds: int) -> None:
    one_round(1)  # a first zygote start, the one-shot font cache
    shutdown()
    started = cpu_seconds()
    one_round(1)
    shutdown()
    start_only = cpu_seconds() - started
    started = cpu_seconds()
    one_round(1)
    medians = []
    for _ in range(rounds):
        times = one_round(runs)
        medians.append(statistics.median(times))
        print(
            f"{mode:9} median {medians[-1] * 1000:7.1f} ms"
            f"  min {min(times) * 1000:7.1f}  max {max(times) * 1000:7.1f}"
        )
    shutdown()
    per_run = (cpu_seconds() - started - start_only) / (runs * rounds)
    print(
        f"{mode:9} median of {rounds} rounds: {statistics.median(medians) * 1000:.1f} ms,"
        f" CPU per run {per_run * 1000:.1f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="programs per round and mode")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per mode")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}, {os.cpu_count()} CPUs")
    for mode, env in (("zygote", "1"), ("one-shot", "0")):
        os.environ[ZYGOTE_ENV] = env
        measure(mode, args.runs, args.rounds)
    print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}")


if __name__ == "__main__":
    main()
