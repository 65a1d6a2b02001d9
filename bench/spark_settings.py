"""One Spark setting, two values, alternating in one session: what sparkseq's session defaults were chosen by.

Times, for each value of ``--setting KEY=A,B`` (a runtime SQL setting, e.g.
``spark.sql.execution.arrow.maxRecordsPerBatch=10000,100000`` or
``spark.sql.adaptive.coalescePartitions.initialPartitionNum=4,16``), set in turn before
every round:

* the E-Cube roll-up cube of ``examples/stock_sectors.py`` (bench/ecube.py's data) and one
  single cuboid statement (``--single``), each summed per pattern as bench/ecube.py does;
* a 20-query workload of bench/sharing.py's ``funnels`` stream: the shared run
  (:func:`sparkseq.statements.workloads.collect_workload`) and its first five statements alone.

All pieces run once untimed first; then ``--rounds`` rounds, each value in turn. Prints
the median seconds per piece and value and the ratio B / A. Streaming is not covered:
bench/streaming.py --operators (run it once per value in the session's defaults).

Usage: .venv/bin/python bench/spark_settings.py --setting KEY=A,B [--rounds 5] [--single "SEQ(...)"]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import sparkseq  # noqa: E402
from ecube import ticks_table, totals  # noqa: E402  (bench/ is on sys.path when run as a script)
from examples.stock_sectors import CUBE, HIERARCHY, patterns_statement  # noqa: E402
from sharing import make_stream, queries, statement  # noqa: E402
from sparkseq.statements.workloads import collect_workload, release_workload  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--setting", required=True, help="KEY=A,B: a runtime SQL setting and its two values")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--single", default="SEQ(Computer, Services, Services)",
                        help="the single cuboid statement timed beside the cube")
    args = parser.parse_args()
    key, _, values_text = args.setting.partition("=")
    values = values_text.split(",")
    if not key or len(values) != 2:
        parser.error("--setting takes KEY=A,B")
    spark = sparkseq.session()
    ticks_table(spark, 2_000_000)
    sparkseq.register_hierarchy(spark, "companies", HIERARCHY)
    make_stream(spark, "funnels", 2_000_000, 200)
    patterns = queries("funnels", 20, 10)
    script = ";\n".join(statement("funnels", p) for p in patterns)
    single = patterns_statement([args.single])

    def shared() -> None:
        collect_workload(spark, script)
        release_workload(spark, script)

    def alone() -> None:
        for p in patterns[:5]:
            sparkseq.sql(spark, statement("funnels", p)).toArrow()

    pieces: dict[str, Callable[[], object]] = {
        "E-Cube roll-up cube": lambda: totals(spark, CUBE),
        f"single {args.single}": lambda: totals(spark, single),
        "funnels 20 queries shared": shared,
        "funnels 5 statements alone": alone,
    }
    for run in pieces.values():  # one untimed run each: code generation, Python workers
        run()
    times: dict[tuple[str, str], list[float]] = {}
    for _ in range(args.rounds):
        for value in values:
            spark.conf.set(key, value)
            for name, run in pieces.items():
                began = time.perf_counter()
                run()
                times.setdefault((name, value), []).append(time.perf_counter() - began)
    a, b = values
    print(f"{spark.sparkContext.master}, Spark {spark.version}; {key}: {a} against {b}, "
          f"medians of {args.rounds} alternating rounds")
    for name in pieces:
        ma, mb = statistics.median(times[(name, a)]), statistics.median(times[(name, b)])
        print(f"  {name:<44} {ma:7.2f} s {mb:7.2f} s   {b} / {a} = {mb / ma:.2f}")
    spark.stop()


if __name__ == "__main__":
    main()
