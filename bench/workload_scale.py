"""A workload over one huge key: the shared pass in one task against each member's own path.

One local[2] session; bench/scale.py's parquet table of N events (the same rows), read
as one key. The workload is two statements over it, SEQ(S0, S1, S2) and SEQ(S2, S0, S1),
both WITHIN 10 minutes and COUNT(*): one sharing group. Runs, each timed around
:func:`sparkseq.collect_workload` (every statement's rows from one job):

* ``shared pass``: ``sparkseq.path = grouped`` — what every workload did before members
  took the path choice: both members in one engine call, the whole key in one worker;
* ``auto``: the default — one statistics job for the group; each member over the split
  threshold leaves the pass and runs time-split.

For each run: wall time, peak RSS of one Python worker and busy cores, measured as in
bench/scale.py (:class:`bench.scale.Monitor`). The shared pass runs last: Python workers
are reused and keep some of what it grew to.

Usage: .venv/bin/python bench/workload_scale.py [--events 10000000] [--repeat 2]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import sparkseq  # noqa: E402
from bench.scale import Monitor  # noqa: E402
from sparkseq.running.execution_paths import PATH_CONF  # noqa: E402
from sparkseq.spark.session import scratch_dir  # noqa: E402
from sparkseq.statements.workloads import release_workload  # noqa: E402

OPERATOR = ("SELECT * FROM one_key MATCH_AGGREGATE (PARTITION BY k ORDER BY ts PATTERN SEQ({pattern}) "
            "DEFINE S0 AS s = 0, S1 AS s = 1, S2 AS s = 2 MEASURES COUNT(*) AS n WITHIN 600000000) AS m")
SCRIPT = ";\n".join(OPERATOR.format(pattern=p) for p in ("S0, S1, S2", "S2, S0, S1"))


def timed(spark, path: str) -> tuple[float, int, float, list[int]]:  # noqa: ANN001
    """(wall s, peak worker RSS bytes, busy cores, each statement's matches) of one run."""
    spark.conf.set(PATH_CONF, path)
    with Monitor() as monitor:
        t0 = time.perf_counter()
        results = sparkseq.collect_workload(spark, SCRIPT)
        wall = time.perf_counter() - t0
    release_workload(spark, SCRIPT)
    matches = [sum(r.arrow.column("n").to_pylist()) for r in results if r.arrow is not None]
    return wall, monitor.peak_worker, monitor.cpu_seconds() / wall, matches


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    n = args.events
    spark = sparkseq.session("local[2]")
    path = str(scratch_dir() / f"scale-{n}.parquet")
    if not Path(path).exists():  # bench/scale.py's rows
        spark.range(n).selectExpr(f"pmod(xxhash64(id), {n * 6_000_000}) AS ts",
                                  "CAST(pmod(xxhash64(id, 7), 3) AS INT) AS s",
                                  "CAST(pmod(xxhash64(id, 3), 1000) AS INT) AS k1000").write.parquet(path)
    spark.read.parquet(path).selectExpr("0 AS k", "ts", "s").createOrReplaceTempView("one_key")
    spark.read.parquet(path).selectExpr("k1000 AS k", "ts", "s").createOrReplaceTempView("warm_up")
    spark.conf.set(PATH_CONF, "grouped")  # warm up, untimed: JIT, workers, functions registered
    sparkseq.collect_workload(spark, SCRIPT.replace("one_key", "warm_up"))
    release_workload(spark, SCRIPT.replace("one_key", "warm_up"))
    print(f"{'events':>11} {'run':<12} {'wall s':>8} {'worker RSS MB':>14} {'busy cores':>11}  matches")
    for _ in range(args.repeat):
        for name, mode in (("auto", "auto"), ("shared pass", "grouped")):
            wall, rss, busy, matches = timed(spark, mode)
            print(f"{n:>11,} {name:<12} {wall:>8.1f} {rss / 2**20:>14,.0f} {busy:>11.2f}  "
                  f"{', '.join(f'{m:,}' for m in matches)}", flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
