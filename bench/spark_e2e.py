"""End to end on Spark: MATCH_AGGREGATE vs the Spark floor vs the self-join users write today.

One local session, one generated event table (``spark.range``, written to parquet so
every path reads the same files): ``k`` (``--keys`` keys), ``ts`` TIMESTAMP spread so
that a key has about ``--per-window`` events per 10 minutes, ``type`` one of A, B, C.
Pattern SEQ(A, B, C) WITHIN 10 minutes, COUNT(*) per key.

* (a) ``sparkseq.sql`` with MATCH_AGGREGATE over ``--events`` events;
* (b) the Spark floor: the very SQL (a) runs, same input columns and filter, with the
  engine function swapped for a grouped-aggregate UDF that only returns ``len()``;
* (c) what a Spark user writes today: join the A events with the B events of the same
  key within the window, join that with the C events, count. It enumerates every
  match, so it runs on a smaller input (``--join-events``, same keys and density);
  (a) runs on that input too and the two counts must agree key by key.

Prints wall time (median of ``--repeat`` after a warm-up), events per second, and the
ratios a/b (cost over the floor) and c/a (at equal input).

Usage: .venv/bin/python bench/spark_e2e.py [--events N] [--join-events M] [--keys K]
       [--per-window D] [--repeat R]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pyspark import cloudpickle  # noqa: E402
from pyspark.sql import SparkSession  # noqa: E402
from pyspark.sql.functions import arrow_udf  # noqa: E402

import sparkseq  # noqa: E402
from sparkseq.spark.catalog import SessionSchemas  # noqa: E402
from sparkseq.spark.session import scratch_dir  # noqa: E402
from sparkseq.statements.sql_api import sql  # noqa: E402
from sql_rewrites import rewrite as compile_sql  # noqa: E402
from timing import median_time  # noqa: E402  (bench/ is on sys.path when run as a script)
from udafs import contract  # noqa: E402

WINDOW_MICROS = 600_000_000
START = 1_714_521_600_000_000  # 2024-05-01 00:00:00 UTC in microseconds
FLOOR = "bench_length_only"
MATCH = """SELECT k, n FROM {table} MATCH_AGGREGATE (
  PARTITION BY k ORDER BY ts PATTERN SEQ(A, B, C) TYPE BY type
  MEASURES COUNT(*) AS n WITHIN INTERVAL 10 MINUTES) AS m"""
SELF_JOIN = """SELECT a.k, count(*) AS n
FROM {table} AS a
JOIN {table} AS b ON b.k = a.k AND b.ts > a.ts AND b.ts < a.ts + INTERVAL 10 MINUTES
JOIN {table} AS c ON c.k = a.k AND c.ts > b.ts AND c.ts < a.ts + INTERVAL 10 MINUTES
WHERE a.type = 'A' AND b.type = 'B' AND c.type = 'C'
GROUP BY a.k"""


def write_events(spark: SparkSession, events: int, keys: int, per_window: int, *, symbols: str = "ABC",
                 label: str = "e2e") -> Path:
    """Write ``events`` rows ``(k, ts, type)`` once as Parquet in the scratch directory and
    return the path: ``keys`` keys, about ``per_window`` events per key per 10 minutes,
    ``type`` one of the letters of ``symbols`` (``label`` names the file)."""
    span = max(1, events // keys) * WINDOW_MICROS // per_window  # time range of one key
    path = scratch_dir() / f"bench-{label}-{events}-{keys}-{per_window}.parquet"
    if not path.exists():
        types = ", ".join(repr(s) for s in symbols)
        spark.range(events).selectExpr(
            f"id % {keys} AS k",
            f"timestamp_micros({START} + pmod(xxhash64(id), {span})) AS ts",
            f"element_at(array({types}), CAST(pmod(xxhash64(id, 7), {len(symbols)}) AS INT) + 1) AS type",
        ).write.mode("overwrite").parquet(str(path))
    return path


def generate(spark: SparkSession, events: int, keys: int, per_window: int) -> str:
    """Write the event table (see module docstring) and register it as a view; return its name."""
    path = write_events(spark, events, keys, per_window)
    name = f"events_{events}"
    spark.read.parquet(str(path)).createOrReplaceTempView(name)
    return name


def length_only(ts: pa.Array, mask: pa.Array) -> pa.Scalar:
    """The floor: a grouped-aggregate UDF with the engine's arguments that returns only len(ts)."""
    rows = pa.StructArray.from_arrays(
        [pa.nulls(1, pa.int64()), pa.nulls(1, pa.int64()), pa.array([len(ts)], pa.int64()), pa.nulls(1, pa.string())],
        names=["window_start", "window_end", "m0", "error"])
    return pa.ListArray.from_arrays(pa.array([0, 1], pa.int32()), rows)[0]


def floor_sql(spark: SparkSession, table: str) -> str:
    """(a)'s generated SQL with the engine function replaced by :func:`length_only`.

    The function travels to the workers by value: imported as ``spark_e2e`` (by bench/peers.py),
    this module is on no worker's path."""
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    plans: list[sparkseq.Plan] = []
    text = compile_sql(MATCH.format(table=table), SessionSchemas(spark), lambda plan: plans.append(plan) or FLOOR)
    spark.udf.register(FLOOR, arrow_udf(length_only, contract.result_type(plans[0])))
    return text



def drain(spark: SparkSession, text: str, rewrite_match: bool = False) -> Callable[[], object]:
    """Run a query to the end without collecting it (Spark's ``noop`` sink)."""
    def run() -> None:
        df = sql(spark, text) if rewrite_match else spark.sql(text)
        df.write.format("noop").mode("overwrite").save()
    return run


def counts(spark: SparkSession, text: str, rewrite_match: bool, repeat: int) -> tuple[float, dict[int, int]]:
    """Median wall time of computing the per-key counts (1,000 rows: collecting costs nothing), and the counts."""
    result: dict[int, int] = {}

    def run() -> None:
        df = sql(spark, text) if rewrite_match else spark.sql(text)
        result.clear()
        result.update({r.k: r.n for r in df.collect() if r.n})

    return median_time(run, repeat), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--join-events", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=1_000)
    parser.add_argument("--per-window", type=int, default=100, help="events per key per 10 minutes")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()

    spark = sparkseq.session()
    big = generate(spark, args.events, args.keys, args.per_window)
    small = generate(spark, args.join_events, args.keys, args.per_window)
    print(f"{spark.sparkContext.master}, Spark {spark.version}; pattern SEQ(A, B, C) WITHIN 10 minutes, COUNT(*) "
          f"per key; {args.keys:,} keys, ~{args.per_window} events per key per window; median of {args.repeat}")

    drain(spark, MATCH.format(table=small), True)()  # warm-up: Python workers, code generation
    floor = floor_sql(spark, big)
    a = median_time(drain(spark, MATCH.format(table=big), True), args.repeat)
    b = median_time(drain(spark, floor), args.repeat)
    a_small, have = counts(spark, MATCH.format(table=small), True, args.repeat)
    c_small, want = counts(spark, SELF_JOIN.format(table=small), False, args.repeat)
    assert have == want, "MATCH_AGGREGATE and the self-join disagree"
    matches = sum(have.values())

    def line(label: str, events: int, seconds: float) -> str:
        return f"  {label:<44} {events:>12,} events {seconds:8.2f} s {events / seconds / 1e6:8.2f} M events/s"

    print(line("(a) MATCH_AGGREGATE via sparkseq.sql", args.events, a))
    print(line("(b) floor: same SQL, UDAF returning len()", args.events, b))
    print(line("(a) MATCH_AGGREGATE, smaller input", args.join_events, a_small))
    print(line("(c) self-join A-B, then C, count", args.join_events, c_small))
    print(f"  a/b = {a / b:.2f} (MATCH_AGGREGATE over the Spark floor, {args.events:,} events)")
    print(f"  c/a = {c_small / a_small:.1f} (self-join over MATCH_AGGREGATE at {args.join_events:,} events; "
          f"both count {matches:,} matches, equal for all {len(have):,} keys)")
    spark.stop()


if __name__ == "__main__":
    main()
