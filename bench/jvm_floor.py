"""Go/no-go for a JVM aggregate: the floors of its candidates, in one run.

Same data as bench/sequence_events.py (its ``generate``: ``--events`` events over ``--keys`` keys).
Each round times, interleaved so that the machine's load hits all alike:

* ``count``: Spark's ``SELECT k, count(*) FROM events GROUP BY k`` (the JVM floor);
* ``kernel``: ``sparkseq.sql`` of SEQ(A, B, C) WITHIN 10 minutes, COUNT(*) per key, on
  the kernel path (``sparkseq.path=grouped``);
* three JVM aggregates with a trivial body (bench/jvm/AggregateFloors.java, compiled
  here with javac against pyspark's jars): each gathers a key's (time, mask) rows of
  A, B or C, sorts the times and returns the row count — what any exact JVM count
  costs before it counts anything:

  - ``typed``: a typed ``Aggregator`` registered with ``functions.udaf``;
  - ``catalyst``: a Catalyst ``TypedImperativeAggregate`` registered as a session function;
  - ``collect``: ``collect_list(struct(ts, mask))`` and a Java UDF returning its size;

* ``counting``: ``catalyst`` with the counting done — sparkseq's own JVM path aggregate
  (``sparkseq_jvm_aggregate``, sparkseq/jvm/SparkSeqAggregates.java) called directly on
  the same rows with the plan literal of SEQ(A, B, C) WITHIN 10 minutes, COUNT(*): the
  finished aggregate without sparkseq's generated SQL around it. Its counts must equal
  the kernel path's.

Prints each round's times, the median of each, and the median over rounds of each
candidate's time over the kernel path's and over ``count``'s. The three floors must
agree key by key (rows of A, B or C per key). Needs a JDK (javac).

Usage: .venv/bin/python bench/jvm_floor.py [--events 10000000] [--keys 1000] [--rounds 3]
       [--candidates typed,catalyst,collect,counting]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from sqlglot import exp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import sparkseq  # noqa: E402
from sequence_events import FLOOR, MATCH, generate, spark_counts  # noqa: E402  (bench/ is on sys.path as a script)
from spark_e2e import WINDOW_MICROS  # noqa: E402
from sparkseq.spark.jars import compile_jar  # noqa: E402
from sparkseq.spark.jvm_path import jvm_path_missing  # noqa: E402
from sparkseq.spark.session import scratch_dir  # noqa: E402
from sql_rewrites.generation.jvm_path import JVM_FUNCTION, plan_literal  # noqa: E402
from sql_rewrites.syntax.dialect import SparkSeq  # noqa: E402
from timing import interleaved_rounds, print_ratios_to_kernel_and_count  # noqa: E402
from udafs.plan import Element, Measure, MeasureKind, Plan  # noqa: E402

SOURCE = Path(__file__).resolve().parent / "jvm" / "AggregateFloors.java"
CLASS = "sparkseq.bench.AggregateFloors"
ROWS = ("SELECT k, unix_micros(ts) AS t, CAST(CASE type WHEN 'A' THEN 1 WHEN 'B' THEN 2 WHEN 'C' THEN 4 "
        "ELSE 0 END AS BIGINT) AS m FROM events")
#: SEQ(A, B, C) WITHIN 10 minutes, COUNT(*), over ROWS's mask bits (A 1, B 2, C 4)
ABC_WITHIN = Plan(symbols=("A", "B", "C"), elements=(Element(0), Element(1), Element(2)), negations=(0, 0, 0, 0),
                  within=WINDOW_MICROS, measures=(Measure(MeasureKind.COUNT_STAR, name="n"),))
#: The product aggregate's call: its one result row's first measure (a BIGINT count; an
#: overflow would leave it NULL and fill the row's error, which no key of this data reaches).
COUNTING = (f"{JVM_FUNCTION}({exp.Literal.string(plan_literal(ABC_WITHIN)).sql(dialect=SparkSeq)}, t, m)"
            "[0].m0")
CANDIDATES = {
    "typed": f"SELECT k, floor_typed(t, m) AS n FROM ({ROWS}) WHERE m <> 0 GROUP BY k",
    "catalyst": f"SELECT k, floor_catalyst(t, m) AS n FROM ({ROWS}) WHERE m <> 0 GROUP BY k",
    "collect": f"SELECT k, floor_size(collect_list(struct(t, m))) AS n FROM ({ROWS}) WHERE m <> 0 GROUP BY k",
    "counting": f"SELECT k, {COUNTING} AS n FROM ({ROWS}) WHERE m <> 0 GROUP BY k",
}
FLOORS = ("typed", "catalyst", "collect")
#: ObjectHashAggregate (every JVM candidate's operator) falls back to a sort-based
#: aggregate past this many keys per task (Spark's default 128); 1,000 keys exceed it.
FALLBACK = "spark.sql.objectHashAggregate.sortBased.fallbackThreshold"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--keys", type=int, default=1_000)
    parser.add_argument("--per-window", type=int, default=100, help="events per key per 10 minutes")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--candidates", default=",".join(CANDIDATES))
    args = parser.parse_args()
    jar = compile_jar((SOURCE,), scratch_dir() / "bench-aggregate-floors.jar")
    spark = sparkseq.session(conf={"spark.driver.extraClassPath": str(jar), FALLBACK: str(1 << 20)})
    floors = getattr(spark.sparkContext._jvm, CLASS)
    floors.register(spark._jsparkSession)
    missing = jvm_path_missing(spark)  # registers sparkseq's aggregate in the session
    if missing is not None and "counting" in args.candidates.split(","):
        raise SystemExit(f"counting: sparkseq's JVM path is unavailable: {missing}")
    generate(spark, args.events, args.keys, args.per_window)
    text = MATCH.format(pattern="A, B, C", within="\n  WITHIN INTERVAL 10 MINUTES")
    runs: dict[str, Callable[[], dict[int, int]]] = {
        "count": spark_counts(spark, FLOOR, None), "kernel": spark_counts(spark, text, "grouped"),
        **{name: spark_counts(spark, CANDIDATES[name], None) for name in args.candidates.split(",")}}
    results = {name: run() for name, run in runs.items()}  # warm-up, and the answers
    floors_run = [name for name in args.candidates.split(",") if name in FLOORS]
    for name in floors_run:
        assert results[name] == results[floors_run[0]], f"{name}: row counts differ from the other floors"
    if "counting" in results:
        assert results["counting"] == results["kernel"], "counting: counts differ from the kernel path's"
    rows = f"{sum(results[floors_run[0]].values()):,} rows of A, B or C, " if floors_run else ""
    print(f"{spark.sparkContext.master}, Spark {spark.version}; {args.events:,} events, {args.keys:,} keys, "
          f"{rows}{sum(results['kernel'].values()):,} matches; {args.rounds} interleaved rounds")
    times = interleaved_rounds(runs, args.rounds)
    print_ratios_to_kernel_and_count(times, 9)
    spark.stop()


if __name__ == "__main__":
    main()
