"""The engine's cost of exact DECIMAL measures, against the same measures over doubles.

SUM, AVG, MIN and MAX of one symbol's values in ``SEQ(A, B) WITHIN 10 minutes`` over
one group of events, the value column carried three ways, timed in this one run:

* ``double``: ``ValueType.FLOAT`` (what a DECIMAL with more than 18 digits used to be);
* ``int(18)``: ``ValueType.INT``, exact int64 (how a DECIMAL(p <= 18, s <= 6) used to
  travel, scaled; AVG then a double);
* ``decimal(18)``: ``ValueType.DECIMAL`` holding int64 unscaled values (p <= 18);
* ``decimal(38)``: ``ValueType.DECIMAL`` holding 30-digit unscaled values (a DECIMAL(38, s)
  column), which need Python integers (object arrays).

Prints the median time of each and its ratio to ``double``.

Usage: .venv/bin/python bench/decimals.py [--events N] [--repeat R]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from timing import median_time  # noqa: E402  (bench/ is on sys.path when run as a script)
from udafs.kernels import evaluate_group  # noqa: E402
from udafs.plan import CountType, Element, Measure, MeasureKind, Plan, ValueType  # noqa: E402

WINDOW = 600_000_000  # 10 minutes in microseconds
KINDS = (MeasureKind.SUM, MeasureKind.AVG, MeasureKind.MIN, MeasureKind.MAX)


def plan(column: ValueType) -> Plan:
    """SEQ(A, B) WITHIN 10 minutes with SUM / AVG / MIN / MAX of B's value (exact counts)."""
    decimal = column is ValueType.DECIMAL
    measures = tuple(Measure(k, 1, 0, k.value, *((4, 38) if decimal and k is MeasureKind.AVG else (0, 0)))
                     for k in KINDS)
    return Plan(symbols=("A", "B"), elements=(Element(0), Element(1)), negations=(0, 0, 0), within=WINDOW,
                measures=measures, columns=(column,), count_type=CountType.DECIMAL)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    rng = np.random.default_rng(7)
    n = args.events
    ts = rng.integers(0, n // 100 * WINDOW, size=n, dtype=np.int64)  # about 100 events per window
    mask = np.left_shift(np.int64(1), rng.integers(0, 2, size=n, dtype=np.int64))
    small = rng.integers(-10**15, 10**15, size=n, dtype=np.int64)  # DECIMAL(18, s) unscaled values
    wide = small.astype(object) * 10**14 + 12345678901234  # about 30 digits: DECIMAL(38, s), sums still fit
    ok = rng.random(n) > 0.1
    cases = {"double": (ValueType.FLOAT, small.astype(np.float64)), "int(18)": (ValueType.INT, small),
             "decimal(18)": (ValueType.DECIMAL, small),
             "decimal(38)": (ValueType.DECIMAL, wide)}
    print(f"{n:,} events, SEQ(A, B) WITHIN 10 minutes, SUM/AVG/MIN/MAX of B's value; median of {args.repeat}")
    base = None
    for name, (column, values) in cases.items():
        p = plan(column)
        seconds = median_time(lambda: evaluate_group(p, ts, mask, [(values, ok)]), args.repeat)
        base = base or seconds
        print(f"  {name:<12} {seconds:8.3f} s   {seconds / base:5.2f}x double")


if __name__ == "__main__":
    main()
