"""Timing shared by the bench scripts: medians, because the machine is shared."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def median_time(run: Callable[[], object], repeat: int) -> float:
    """Median wall time in seconds of ``repeat`` calls of ``run``."""
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return statistics.median(times)
