"""Spark paths: native aggregate vs the grouped-aggregate UDF vs the streaming UDTF.

One local session; a parquet table of N events over K keys (times spread over a day
in microseconds, three symbols); SEQ(S0, S1, S2) WITHIN 10 minutes, COUNT(*) and
SUM. Prints wall time and events per second of each path, and its ratio to a native
``GROUP BY`` with ``count(*), sum(ts)`` over the same rows, all measured in this run:

* ``udaf``: :func:`sparkseq.udaf_query` (whole groups in memory),
* ``stream 2-col``: :func:`sparkseq.stream_query`, Spark sorts by (key hash, time),
* ``stream packed``: the same with ``ts_bounds``, Spark sorts one packed 64-bit key.

Usage: .venv/bin/python bench/spark_paths.py [--events N] [--keys K] [--repeat R]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import sparkseq  # noqa: E402
from sparkseq import Element, Measure, MeasureKind, Plan, ValueType  # noqa: E402
from sparkseq.spark.session import scratch_dir  # noqa: E402
from timing import median_time  # noqa: E402  (bench/ is on sys.path when run as a script)

DAY = 86_400_000_000
PLAN = Plan(symbols=("S0", "S1", "S2"), elements=(Element(0), Element(1), Element(2)), negations=(0,) * 4,
            within=600_000_000, measures=(Measure(MeasureKind.COUNT_STAR, name="n"),
                                          Measure(MeasureKind.SUM, 2, 0, "s")), columns=(ValueType.FLOAT,))



def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=4_000_000)
    parser.add_argument("--keys", type=int, default=1_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    spark = sparkseq.session()
    path = str(scratch_dir() / f"bench-{args.events}-{args.keys}.parquet")
    spark.range(args.events).selectExpr(
        f"id % {args.keys} AS k", f"pmod(xxhash64(id), {DAY}) AS ts",
        "shiftleft(1L, CAST(pmod(xxhash64(id, 7), 3) AS INT)) AS mask", "sin(id) AS v",
    ).write.mode("overwrite").parquet(path)
    spark.read.parquet(path).createOrReplaceTempView("events")

    kwargs = dict(keys=["k"], values=["v"])
    paths = {
        "native count": "SELECT k, count(*), sum(ts) FROM events GROUP BY k",
        "udaf": sparkseq.udaf_query(spark, PLAN, "events", **kwargs),
        "stream 2-col": sparkseq.stream_query(spark, PLAN, "events", **kwargs),
        "stream packed": sparkseq.stream_query(spark, PLAN, "events", ts_bounds=(0, DAY - 1), **kwargs),
    }
    for sql in paths.values():  # warm up: Python workers, code generation
        spark.sql(sql).write.format("noop").mode("overwrite").save()
    times = {name: median_time(lambda s=sql: spark.sql(s).write.format("noop").mode("overwrite").save(),
                               args.repeat) for name, sql in paths.items()}
    base = times["native count"]
    print(f"{args.events:,} events, {args.keys:,} keys, median of {args.repeat}, {spark.sparkContext.master}")
    for name, t in times.items():
        print(f"  {name:<14} {t:7.2f} s  {args.events / t / 1e6:6.2f} M events/s  {t / base:5.1f}x native")
    spark.stop()


if __name__ == "__main__":
    main()
