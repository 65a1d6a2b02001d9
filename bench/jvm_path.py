"""The JVM path against the kernel path and Spark's own ``count(*)``, same-round ratios.

Same data as bench/sequence_events.py (its ``generate``: ``--events`` events over ``--keys`` keys,
``--per-window`` events per key per 10 minutes). Each round times, interleaved so that
the machine's load hits all alike, ``sparkseq.sql`` of one statement per key, by
``--shape`` (:data:`SHAPES`): ``within`` SEQ(A, B, C) WITHIN 10 minutes, COUNT(*) (the
default); ``open`` SEQ(A, B, !D, C) without a window; ``negation-within`` SEQ(A, B, !D, C)
WITHIN 10 minutes; ``measure-within`` SEQ(A, B, C) WITHIN 10 minutes with MAX(B.ts)
beside COUNT(*) (the JVM path's pair counts by time blocks); ``edge-within`` SEQ(!D, A, B,
C) WITHIN 10 minutes; ``slide`` SEQ(A, B, C) WITHIN 10 minutes SLIDE 5 minutes (COUNT(*)
summed over a key's windows; each row in 2 windows); ``slide-many`` the same with SLIDE 10
seconds (each row in 60 windows); ``double`` SEQ(A, B, C) WITHIN 10 minutes, COUNT TYPE DOUBLE:

* ``count``: Spark's ``SELECT k, count(*) FROM events GROUP BY k`` (the JVM floor);
* ``kernel``: ``sparkseq.path=grouped`` (the Python kernel path);
* ``jvm``: ``sparkseq.path=jvm`` (sparkseq/jvm/SparkSeqAggregates.java);
* ``auto``: ``sparkseq.path=auto``, what the planner runs (EXPLAIN's path is printed);
* ``split`` (with ``--split``): ``sparkseq.path=time-split``, every key cut into time chunks
  (the big-key path, against which the JVM path is weighed for one huge key).

The counts of ``kernel``, ``jvm``, ``auto`` (and ``split``) must agree key by key. Prints each round's
times, the medians, and the median over rounds of each path's time over the kernel
path's and over ``count``'s.

Usage: .venv/bin/python bench/jvm_path.py [--events 1000000] [--keys 1000] [--rounds 3]
       [--shape within|open|negation-within|measure-within|edge-within|slide|slide-many|double] [--split]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from pyspark.sql import SparkSession

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import sparkseq  # noqa: E402
from sequence_events import FLOOR, MATCH, generate, spark_counts  # noqa: E402  (bench/ is on sys.path as a script)
from sparkseq.running.execution_paths import PATH_CONF  # noqa: E402
from timing import interleaved_rounds, print_ratios_to_kernel_and_count  # noqa: E402

WITHIN = "\n  WITHIN INTERVAL 10 MINUTES"
#: --shape: the statement's pattern and window (bench/sequence_events.py's MATCH: COUNT(*) AS n per key)
SHAPES = {
    "within": MATCH.format(pattern="A, B, C", within=WITHIN),
    "open": MATCH.format(pattern="A, B, !D, C", within=""),
    "negation-within": MATCH.format(pattern="A, B, !D, C", within=WITHIN),
    "measure-within": MATCH.format(pattern="A, B, C", within=WITHIN).replace("COUNT(*) AS n",
                                                                              "COUNT(*) AS n, MAX(B.ts) AS last_b"),
    "edge-within": MATCH.format(pattern="!D, A, B, C", within=WITHIN),
    "slide": MATCH.format(pattern="A, B, C", within=WITHIN + " SLIDE INTERVAL 5 MINUTES"),
    "slide-many": MATCH.format(pattern="A, B, C", within=WITHIN + " SLIDE INTERVAL 10 SECONDS"),
    "double": MATCH.format(pattern="A, B, C", within=" COUNT TYPE DOUBLE" + WITHIN),
}


def totals(spark: SparkSession, text: str, path: str | None) -> Callable[[], dict[int, int]]:
    """:func:`native.spark_counts` summing ``n`` over a key's rows (one per SLIDE window)."""
    def run() -> dict[int, int]:
        if path is not None:
            spark.conf.set(PATH_CONF, path)
        out: dict[int, int] = {}
        for row in (spark.sql(text) if path is None else sparkseq.sql(spark, text)).collect():
            out[row.k] = out.get(row.k, 0) + row.n
        return out
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=1_000)
    parser.add_argument("--per-window", type=int, default=100, help="events per key per 10 minutes")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--shape", choices=SHAPES, default="within")
    parser.add_argument("--split", action="store_true", help="also time the time-split path (sparkseq.path=time-split)")
    args = parser.parse_args()
    spark = sparkseq.session()
    generate(spark, args.events, args.keys, args.per_window)
    text = SHAPES[args.shape]
    runs: dict[str, Callable[[], dict[int, int]]] = {
        "count": spark_counts(spark, FLOOR, None), "kernel": totals(spark, text, "grouped"),
        "jvm": totals(spark, text, "jvm"), "auto": totals(spark, text, "auto"),
        **({"split": totals(spark, text, "time-split")} if args.split else {})}
    results = {name: run() for name, run in runs.items()}  # warm-up, and the answers
    assert all(results[name] == results["kernel"] for name in runs if name != "count"), "the paths' counts differ"
    spark.conf.set(PATH_CONF, "auto")
    explained = sparkseq.explain(spark, text).splitlines()
    chosen = next(line.strip() for line in explained if line.strip().startswith("path"))
    print(f"{spark.sparkContext.master}, Spark {spark.version}; {args.events:,} events, {args.keys:,} keys, "
          f"{sum(results['kernel'].values()):,} matches of {text.split('PATTERN ')[1].split(' TYPE')[0]}; "
          f"{args.rounds} interleaved rounds; auto: {chosen[:160]}")
    times = interleaved_rounds(runs, args.rounds)
    print_ratios_to_kernel_and_count(times, 7)
    spark.stop()


if __name__ == "__main__":
    main()
