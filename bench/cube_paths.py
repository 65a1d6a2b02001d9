"""E-Cube over one huge key: one grouped engine call for every cuboid vs each cuboid on its own path.

One local[2] session; the events of bench/scale.py (written once to parquet: times
uniform over N * 6 seconds in microseconds, three symbols) read as one key. The
statement is the roll-up cube of SEQ(S0, S1, S2) WITHIN 10 minutes with PATTERN ROLLUP
of positions 1 and 3 (4 cuboids), COUNT(*) and MAX(S1.ts). Runs, each timed around
``collect()``:

* ``grouped``: ``sparkseq.path = grouped`` (the whole key in one worker, every cuboid in
  one engine call),
* ``auto``: the default path choice (statistics job included; with a key over
  ``--split-rows`` rows each cuboid runs time-split, chunks of ``--chunk-rows``, UNION ALL).

The split threshold is lowered from its default (4 M rows) so that 5 M events split:
Spark estimates this parquet file at ~9.5 bytes per row, under the 16 bytes per row of
a 4 M-row key, so at the default no statistics job would run below ~6.7 M events.

For each run: wall time, peak RSS of one Python worker process and busy cores (as
bench/scale.py measures them); the two runs' rows must agree.

Usage: .venv/bin/python bench/cube_paths.py [--events 5000000] [--repeat 1] [--split-rows 1000000]
       [--chunk-rows 500000]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import sparkseq  # noqa: E402
from scale import Monitor  # noqa: E402  (bench/ is on sys.path when run as a script)
from sparkseq.running.execution_paths import CHUNK_ROWS_CONF, PATH_CONF, SPLIT_ROWS_CONF  # noqa: E402
from sparkseq.spark.session import scratch_dir  # noqa: E402

STATEMENT = ("SELECT * FROM one_key MATCH_AGGREGATE (PARTITION BY k ORDER BY ts PATTERN SEQ(S0, S1, S2) "
             "CUBE (PATTERN ROLLUP 1, PATTERN ROLLUP 3) DEFINE S0 AS s = 0, S1 AS s = 1, S2 AS s = 2 "
             "MEASURES COUNT(*) AS n, MAX(S1.ts) AS last_s1 WITHIN 600000000) AS m")


def timed(spark, path: str) -> tuple[float, int, float, list, bool]:  # noqa: ANN001
    """(wall s, peak worker RSS bytes, busy cores, rows, whether the cuboids ran time-split)
    of one run of the statement (the path choice and its statistics job included)."""
    spark.conf.set(PATH_CONF, path)
    with Monitor() as monitor:
        t0 = time.perf_counter()
        frame = sparkseq.sql(spark, STATEMENT)
        rows = frame.collect()
        wall = time.perf_counter() - t0
    split = "_chunk" in frame._jdf.queryExecution().analyzed().toString()
    return wall, monitor.peak_worker, monitor.cpu_seconds() / wall, sorted(map(tuple, rows)), split


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=5_000_000)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--split-rows", type=int, default=1_000_000)
    parser.add_argument("--chunk-rows", type=int, default=500_000)
    args = parser.parse_args()
    n = args.events
    spark = sparkseq.session("local[2]")
    spark.conf.set(SPLIT_ROWS_CONF, str(args.split_rows))
    spark.conf.set(CHUNK_ROWS_CONF, str(args.chunk_rows))
    path = str(scratch_dir() / f"scale-{n}.parquet")
    if not Path(path).exists():  # the rows of bench/scale.py
        spark.range(n).selectExpr(f"pmod(xxhash64(id), {n * 6_000_000}) AS ts",
                                  "CAST(pmod(xxhash64(id, 7), 3) AS INT) AS s",
                                  "CAST(pmod(xxhash64(id, 3), 1000) AS INT) AS k1000").write.parquet(path)
    spark.read.parquet(path).selectExpr("0 AS k", "ts", "s").createOrReplaceTempView("one_key")
    print(f"{'events':>11} {'run':<8} {'cuboids':<11} {'wall s':>8} {'worker RSS MB':>14} {'busy cores':>11} "
          f"{'matches':>14}")
    for _ in range(args.repeat):
        results = {}
        for mode in ("auto", "grouped"):  # grouped last: Python workers are reused and keep what it grew to
            wall, rss, busy, rows, split = timed(spark, mode)
            results[mode] = rows
            how = "time-split" if split else "one call"
            print(f"{n:>11,} {mode:<8} {how:<11} {wall:>8.1f} {rss / 2**20:>14,.0f} {busy:>11.2f} "
                  f"{sum(r[3] for r in rows):>14,}", flush=True)
        assert results["auto"] == results["grouped"], "the cuboid statements and the grouped cube disagree"
    spark.stop()


if __name__ == "__main__":
    main()
