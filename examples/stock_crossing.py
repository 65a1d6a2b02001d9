"""Cross-event predicates on a tick stream: the condensed-composition paper's Query 1 and Query 3 as MATCH_AGGREGATE.

The condensed-composition paper monitors a stock stream
``(timestamp, name, price)`` with two sequence queries whose predicates compare
*different* events of the match:

* **Query 1** — a stock whose price is at least Google's plus 2.0, and later (within
  500 ticks of time) below Google's::

      PATTERN T1;T2;T3 WHERE T1.name = T3.name AND T2.name = 'Google'
        AND T1.price >= T2.price + 2.0 AND T3.price < T2.price WITHIN 500

* **Query 3** — a stock below the reference stock '600210' minus 0.02 at first, and
  later above it plus 0.02::

      PATTERN T1;T2;T3;T4 WHERE T1.code = T3.code AND T2.code = T4.code
        AND T2.code = '600210' AND T1.price < T2.price - 0.02
        AND T3.price > T4.price + 0.02 WITHIN windowsize

Here both run over one synthetic tick stream (``ticks``: ``ts`` BIGINT, ``name``
STRING, ``price`` DECIMAL(10, 2)). ``T1.name = T3.name`` compares strings — exact via
a per-partition dense rank (docs/sql-reference.md section 14); the price predicates
are exact in cents. ``T2.name = 'Google'`` is a local predicate: it joins G's DEFINE.
The counts are exact aggregates over all matches, which the paper's engine enumerates
one by one. Run: ``python examples/stock_crossing.py [--events N]``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable from a source checkout

import numpy as np  # noqa: E402
from pyspark.sql import DataFrame, SparkSession  # noqa: E402

import sparkseq  # noqa: E402

NAMES = ("Google", "IBM", "Sun", "Oracle", "600210", "600000")

QUERY_1 = """
SELECT crossings, entry_total FROM ticks MATCH_AGGREGATE (
  ORDER BY ts
  PATTERN SEQ(T1, T2, T3)
  DEFINE T1 AS TRUE, T2 AS TRUE, T3 AS TRUE
  WHERE T1.name = T3.name AND T2.name = 'Google'
    AND T1.price >= T2.price + 2.0 AND T3.price < T2.price
  MEASURES COUNT(*) AS crossings, SUM(T1.price) AS entry_total
  WITHIN {within}
) AS q1"""

QUERY_3 = """
SELECT reversals FROM ticks MATCH_AGGREGATE (
  ORDER BY ts
  PATTERN SEQ(T1, T2, T3, T4)
  DEFINE T1 AS TRUE, T2 AS name = '600210', T3 AS TRUE, T4 AS name = '600210'
  WHERE T1.name = T3.name AND T1.price < T2.price - 0.02 AND T3.price > T4.price + 0.02
  MEASURES COUNT(*) AS reversals
  WITHIN {within}
) AS q3"""


def tick_frame(spark: SparkSession, events: int, seed: int = 7) -> DataFrame:
    """``events`` ticks: one per time unit, a random stock, a random-walk price per stock (cents)."""
    rng = np.random.default_rng(seed)
    names = rng.integers(0, len(NAMES), events)
    steps = rng.integers(-150, 151, events)
    level = {k: 10_000 + 300 * k for k in range(len(NAMES))}
    rows = []
    for t, (k, step) in enumerate(zip(names.tolist(), steps.tolist())):
        level[k] = max(100, level[k] + step)
        rows.append((t, NAMES[k], f"{level[k] / 100:.2f}"))
    return spark.createDataFrame(rows, "ts bigint, name string, p string").selectExpr(
        "ts", "name", "CAST(p AS DECIMAL(10, 2)) AS price")


def run(spark: SparkSession, events: int = 2_000, within: int = 500, seed: int = 7) -> dict[str, object]:
    """Both queries over ``events`` synthetic ticks; returns their results as a dict."""
    tick_frame(spark, events, seed).createOrReplaceTempView("ticks")
    [q1] = sparkseq.sql(spark, QUERY_1.format(within=within)).collect()
    [q3] = sparkseq.sql(spark, QUERY_3.format(within=within)).collect()
    return {"query1_crossings": q1.crossings, "query1_entry_total": q1.entry_total,
            "query3_reversals": q3.reversals}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=2_000)
    parser.add_argument("--within", type=int, default=500)
    args = parser.parse_args()
    spark = sparkseq.session("local[2]", app_name="stock-crossing")
    try:
        for name, value in run(spark, args.events, args.within).items():
            print(f"{name}: {value}")
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
