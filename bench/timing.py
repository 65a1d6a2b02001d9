"""Timing shared by the bench scripts: medians, because the machine is shared."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def median_time(run: Callable[[], object], repeat: int) -> float:
    """Median wall time in seconds of ``repeat`` calls of ``run``."""
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def timed_after_warmup(run: Callable[[], T], warm_up: bool = True) -> tuple[T, float]:
    """``run``'s result and the wall time in seconds of one call, after one untimed call
    (``warm_up``) so that first-run costs (code generation, caches) are not measured."""
    if warm_up:
        run()
    started = time.perf_counter()
    result = run()
    return result, time.perf_counter() - started


def interleaved_rounds(runs: dict[str, Callable[[], object]], rounds: int) -> dict[str, list[float]]:
    """Wall times in seconds of each of ``runs`` over ``rounds`` rounds, each round calling
    every run once in turn, so that the machine's load hits them alike; each round's times are
    printed as it ends."""
    times: dict[str, list[float]] = {name: [] for name in runs}
    for round_ in range(rounds):
        for name, run in runs.items():
            started = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - started)
        print(f"  round {round_}: " + "  ".join(f"{name} {times[name][-1]:6.2f}" for name in runs), flush=True)
    return times


def print_ratios_to_kernel_and_count(times: dict[str, list[float]], width: int) -> None:
    """Each run's median time and, for every run but ``count`` and ``kernel``, the medians of
    its per-round ratios to those two (from :func:`interleaved_rounds`)."""
    for name in times:
        line = f"  {name:{width}s} median {statistics.median(times[name]):7.2f} s"
        if name not in ("count", "kernel"):
            over_kernel = statistics.median(t / k for t, k in zip(times[name], times["kernel"], strict=True))
            over_count = statistics.median(t / c for t, c in zip(times[name], times["count"], strict=True))
            line += f"  ({over_kernel:4.2f}x kernel, {over_count:5.2f}x count, medians of per-round ratios)"
        print(line)
