"""Imprecise timestamps: expected COUNT(*) of SEQ(A, B, C) WITHIN w over 1 M events.

Every event has ``U`` possible times (its interval width, in time units: ``hi - lo + 1``,
step 1; U = 1 is a point time through the same kernel), uniform and independent. Prints,
all measured in this one run (median of ``--repeat`` runs, one process):

* per width U in 1, 10, 100: the kernel's time for the expected count, events per
  second, and the time of today's point-time kernel on the same events (their reported
  times, no uncertainty) with the ratio;
* the possible-worlds enumeration (one point-time evaluation per world, every
  combination of possible times) on the largest input it finishes within
  ``--budget`` seconds at width 10, against the kernel on that input, both results
  printed (they must agree).

Usage: .venv/bin/python bench/imprecise.py [--events N] [--within W] [--repeat R] [--budget S]

On the shared VM the glibc allocator settings of docs/engine.md ("Allocation matters")
speed both kernels up alike; run with them in the environment to see that
(``MALLOC_MMAP_THRESHOLD_=1073741824 MALLOC_TRIM_THRESHOLD_=4294967296
MALLOC_TOP_PAD_=268435456``). The script itself changes no allocator setting.
"""

from __future__ import annotations

import argparse
import itertools
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from timing import median_time  # noqa: E402  (bench/ is on sys.path when run as a script)
from udafs.kernels import evaluate_group  # noqa: E402
from udafs.plan import CountType, Element, Plan  # noqa: E402


def plan(within: int, uncertain: bool) -> Plan:
    """SEQ(A, B, C) WITHIN ``within``, COUNT(*) as DOUBLE (expected values are DOUBLE)."""
    return Plan(symbols=("A", "B", "C"), elements=(Element(0), Element(1), Element(2)), negations=(0, 0, 0, 0),
                within=within, count_type=CountType.DOUBLE, uncertain=1 if uncertain else None)


def make_events(n: int, width: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``n`` events about one per time unit, unsorted, one symbol each; the reported time
    ts is the middle of the interval [lo, lo + width - 1]."""
    rng = np.random.default_rng(seed)
    lo = rng.integers(0, n, size=n, dtype=np.int64)
    mask = np.left_shift(np.int64(1), rng.integers(0, 3, size=n, dtype=np.int64))
    hi = lo + width - 1
    return lo + (width - 1) // 2, mask, lo, hi


def expected_count(p: Plan, ts: np.ndarray, mask: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> float:
    return float(evaluate_group(p, ts, mask, bounds=(lo, hi)).values[0][0])


def enumerate_worlds(p: Plan, mask: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> float:
    """The expected count by brute force: today's kernel in every possible world."""
    point = plan(p.within, uncertain=False)
    choices = [range(a, b + 1) for a, b in zip(lo.tolist(), hi.tolist())]
    total, worlds = 0.0, 0
    for times in itertools.product(*choices):
        total += float(evaluate_group(point, np.array(times, dtype=np.int64), mask).values[0][0])
        worlds += 1
    return total / worlds


def widths_table(n: int, within: int, repeat: int) -> None:
    print(f"SEQ(A, B, C) WITHIN {within} time units, {n:,} events (about one per unit), COUNT(*) expected; "
          f"median of {repeat} runs")
    print(f"{'width U':>7} {'rows':>11} {'kernel s':>9} {'M events/s':>10} {'point s':>8} {'x point':>8} "
          f"{'expected count':>16}")
    for width in (1, 10, 100):
        ts, mask, lo, hi = make_events(n, width, seed=width)
        p_unc, p_pt = plan(within, True), plan(within, False)
        count = expected_count(p_unc, ts, mask, lo, hi)
        kernel = median_time(lambda: expected_count(p_unc, ts, mask, lo, hi), repeat)
        point = median_time(lambda: evaluate_group(p_pt, ts, mask), repeat)
        print(f"{width:>7} {n * width:>11,} {kernel:>9.3f} {n / kernel / 1e6:>10.2f} {point:>8.3f} "
              f"{kernel / point:>8.1f} {count:>16.1f}")


def enumeration_table(within: int, budget: float) -> None:
    print(f"\npossible-worlds enumeration at width 10 (10^n worlds), until one input takes over {budget:.0f} s:")
    print(f"{'events':>6} {'worlds':>10} {'enumeration s':>13} {'kernel s':>9} {'x kernel':>10} "
          f"{'enumerated':>12} {'kernel':>12}")
    n = 1
    while True:
        rng = np.random.default_rng(n)
        lo = np.sort(rng.integers(0, 3 * n, size=n, dtype=np.int64))
        mask = np.array([1, 2, 4] * n, dtype=np.int64)[:n]
        hi = lo + 9
        p = plan(max(within, 30), True)
        started = time.perf_counter()
        brute = enumerate_worlds(p, mask, lo, hi)
        enum_s = time.perf_counter() - started
        kernel_s = median_time(lambda: expected_count(p, lo, mask, lo, hi), 5)
        got = expected_count(p, lo, mask, lo, hi)
        assert math.isclose(brute, got, rel_tol=1e-9, abs_tol=1e-12), (brute, got)
        print(f"{n:>6} {10 ** n:>10,} {enum_s:>13.3f} {kernel_s:>9.5f} {enum_s / kernel_s:>10.0f} "
              f"{brute:>12.6f} {got:>12.6f}")
        if enum_s > budget / 10:  # the next input takes ten times longer
            break
        n += 1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--within", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--budget", type=float, default=120.0)
    args = ap.parse_args()
    widths_table(args.events, args.within, args.repeat)
    enumeration_table(args.within, args.budget)


if __name__ == "__main__":
    main()
