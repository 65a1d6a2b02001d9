"""Kernel throughput: COUNT with WITHIN, against one plain numpy cumsum pass.

For pattern lengths 2, 5, 10 and 10 / 100 / 1,000 / 10,000 events per window,
prints events per second of ``evaluate_group`` and its time relative to the floor
(one ``np.cumsum`` over the same events), all measured in this one run, single
process. Time per event should stay flat as windows grow (no loop over active
start events).

Usage: .venv/bin/python bench/kernels.py [--events N] [--repeat R]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from timing import median_time  # noqa: E402  (bench/ is on sys.path when run as a script)
from udafs.kernels import evaluate_group  # noqa: E402
from udafs.plan import CountType, Element, Plan  # noqa: E402

WINDOW = 600_000_000  # 10 minutes in microseconds


def make_events(n: int, per_window: int, n_symbols: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` events, unsorted, averaging ``per_window`` events per window, one symbol each."""
    rng = np.random.default_rng(seed)
    span = max(1, int(n / per_window * WINDOW))
    ts = rng.integers(0, span, size=n, dtype=np.int64)
    mask = np.left_shift(np.int64(1), rng.integers(0, n_symbols, size=n, dtype=np.int64))
    return ts, mask


def count_plan(length: int) -> Plan:
    """SEQ(S0, ..., S{length-1}) WITHIN 10 minutes, COUNT(*) as DOUBLE.

    DOUBLE keeps the large-window cases (whose exact counts exceed BIGINT at
    length 10) on the same code path as the rest; exactness is tested elsewhere.
    """
    return Plan(
        symbols=tuple(f"S{i}" for i in range(length)),
        elements=tuple(Element(i) for i in range(length)),
        negations=(0,) * (length + 1),
        within=WINDOW,
        count_type=CountType.DOUBLE,
    )



def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    n = args.events
    print(f"events per run: {n:,}; median of {args.repeat} runs; one process, one core")
    print(f"{'length':>6} {'ev/window':>9} {'kernel s':>9} {'M events/s':>10} {'floor s':>8} {'x floor':>8} "
          f"{'ns/event':>8}")
    for length in (2, 5, 10):
        plan = count_plan(length)
        per_event = []
        for per_window in (10, 100, 1_000, 10_000):
            ts, mask = make_events(n, per_window, length, seed=length * 7919 + per_window)
            kernel = median_time(lambda: evaluate_group(plan, ts, mask), args.repeat)
            floor = median_time(lambda: np.cumsum(ts), args.repeat)
            per_event.append(kernel / n * 1e9)
            print(f"{length:>6} {per_window:>9,} {kernel:>9.3f} {n / kernel / 1e6:>10.2f} "
                  f"{floor:>8.4f} {kernel / floor:>8.1f} {kernel / n * 1e9:>8.1f}")
        print(f"{'':>6} flatness (max/min ns per event over window sizes): {max(per_event) / min(per_event):.2f}")


if __name__ == "__main__":
    main()
