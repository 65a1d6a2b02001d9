"""The JVM path against the kernel path and Spark's own ``count(*)``, same-round ratios.

Same data as bench/sequence_events.py (its ``generate``: ``--events`` events over ``--keys`` keys,
``--per-window`` events per key per 10 minutes). Each round times, interleaved so that
the machine's load hits all alike, ``sparkseq.sql`` of SEQ(A, B, C) WITHIN 10 minutes,
COUNT(*) per key (and with ``--open`` the same pattern with a middle negation and no
window, SEQ(A, B, !D, C)):

* ``count``: Spark's ``SELECT k, count(*) FROM events GROUP BY k`` (the JVM floor);
* ``kernel``: ``sparkseq.path=grouped`` (the Python kernel path);
* ``jvm``: ``sparkseq.path=jvm`` (sparkseq/jvm/SparkSeqAggregates.java);
* ``auto``: ``sparkseq.path=auto``, what the planner runs (EXPLAIN's path is printed).

The counts of ``kernel``, ``jvm`` and ``auto`` must agree key by key. Prints each round's
times, the medians, and the median over rounds of each path's time over the kernel
path's and over ``count``'s.

Usage: .venv/bin/python bench/jvm_path.py [--events 1000000] [--keys 1000] [--rounds 3] [--open]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import sparkseq  # noqa: E402
from sequence_events import FLOOR, MATCH, generate, spark_counts  # noqa: E402  (bench/ is on sys.path as a script)
from sparkseq.running.execution_paths import PATH_CONF  # noqa: E402
from timing import interleaved_rounds, print_ratios_to_kernel_and_count  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=1_000)
    parser.add_argument("--per-window", type=int, default=100, help="events per key per 10 minutes")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--open", action="store_true", help="SEQ(A, B, !D, C) without WITHIN instead")
    args = parser.parse_args()
    spark = sparkseq.spark.session()
    generate(spark, args.events, args.keys, args.per_window)
    if args.open:
        text = MATCH.format(pattern="A, B, !D, C", within="")
    else:
        text = MATCH.format(pattern="A, B, C", within="\n  WITHIN INTERVAL 10 MINUTES")
    runs: dict[str, Callable[[], dict[int, int]]] = {
        "count": spark_counts(spark, FLOOR, None), "kernel": spark_counts(spark, text, "grouped"),
        "jvm": spark_counts(spark, text, "jvm"), "auto": spark_counts(spark, text, "auto")}
    results = {name: run() for name, run in runs.items()}  # warm-up, and the answers
    assert results["jvm"] == results["kernel"] == results["auto"], "the paths' counts differ"
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
