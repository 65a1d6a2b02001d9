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
