"""The native path against the kernel path, Spark's own floor and DuckDB, on one data set.

One Parquet file written once (``--events`` events, ``--keys`` keys, ~``--per-window``
events per key per 10 minutes, ``type`` one of A..E, ``ts`` TIMESTAMP). For patterns
SEQ(A, B), SEQ(A, B, C) and SEQ(A, B, C, D, E), each WITHIN 10 minutes and without a
window, COUNT(*) per key through

* ``native``: ``sparkseq.sql`` with ``sparkseq.path=native`` (window functions, no Python);
* ``kernel``: ``sparkseq.sql`` with ``sparkseq.path=grouped`` (the Arrow UDAF path);
* ``floor``: Spark's ``SELECT k, count(*) FROM events GROUP BY k`` over the same file;
* ``duckdb``: only when ``import duckdb`` works (it is no dependency of sparkseq): the
  same prefix-count arithmetic written by hand as DuckDB window functions over the file.

Counts must be equal key by key across all engines. Prints median wall times of
``--repeat`` runs (after one warm-up of each path) and the ratios to the native path
and to the floor.

Usage: .venv/bin/python bench/native.py [--events 1000000|10000000] [--keys K] [--repeat R]
       [--lengths 2,3,5] [--windows within,none]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pyspark.sql import SparkSession  # noqa: E402

import sparkseq  # noqa: E402
from spark_e2e import WINDOW_MICROS, write_events  # noqa: E402  (bench/ is on sys.path as a script)
from sparkseq.running.execution_paths import PATH_CONF  # noqa: E402
from sparkseq.statements.sql_api import sql  # noqa: E402
from timing import median_time  # noqa: E402

SYMBOLS = "ABCDE"
MATCH = """SELECT k, n FROM events MATCH_AGGREGATE (
  PARTITION BY k ORDER BY ts PATTERN SEQ({pattern}) TYPE BY type
  MEASURES COUNT(*) AS n{within}) AS m"""
FLOOR = "SELECT k, count(*) AS n FROM events GROUP BY k"
WINDOW_BUFFER_ROWS = "spark.sql.windowExec.buffer.in.memory.threshold"


def generate(spark: SparkSession, events: int, keys: int, per_window: int) -> str:
    """Write the event table once (module docstring), register it as ``events``; return its path."""
    path = write_events(spark, events, keys, per_window, symbols=SYMBOLS, label="native")
    spark.read.parquet(str(path)).createOrReplaceTempView("events")
    return str(path)


def duckdb_sql(path: str, length: int, within: bool) -> str:
    """The hand-written DuckDB formulation: c_j = [S_j] * (sum of c_{j-1} strictly earlier) per key;
    with WITHIN the chains split at L = t - w + 1 (docs/engine.md, "Native path")."""
    syms = SYMBOLS[:length]
    flags = ", ".join(f"(type = '{s}')::HUGEINT AS f{i}" for i, s in enumerate(syms))
    over = "OVER (PARTITION BY k ORDER BY t RANGE BETWEEN UNBOUNDED PRECEDING AND {} PRECEDING)"
    before, early = over.format(1), over.format(WINDOW_MICROS)
    layer = (f"SELECT k, epoch_us(ts) AS t, {flags} FROM read_parquet('{path}') "
             f"WHERE type IN ({', '.join(repr(s) for s in syms)})")
    last = length - 2
    chains = {(a, a): f"f{a}" for a in range(length)}
    for d in range(1, length - 1):
        starts = range(last - d + 1) if within else range(1)
        cols = []
        for a in starts:
            chains[(a, a + d)] = f"c{a}_{a + d}"
            cols.append(f"f{a + d} * coalesce(sum({chains[(a, a + d - 1)]}) {before}, 0) AS c{a}_{a + d}")
        layer = f"SELECT *, {', '.join(cols)} FROM ({layer})"
    f_last = f"f{length - 1}"
    if not within:
        count = f"{f_last} * coalesce(sum({chains[(0, last)]}) {before}, 0)"
    else:
        sums = [f"coalesce(sum({chains[(a, last)]}) {before}, 0) AS p{a}" for a in range(length - 1)]
        sums += [f"coalesce(sum({chains[(a, b)]}) {early}, 0) AS q{a}_{b}"
                 for a in range(length - 1) for b in range(a, length - 1)]
        layer = f"SELECT *, {', '.join(sums)} FROM ({layer})"
        rest = {length - 1: "1"}
        for a in range(length - 2, -1, -1):
            g = f"p{a}" + "".join(f" - q{a}_{b} * {rest[b + 1]}" for b in range(a, length - 1))
            layer = f"SELECT *, {g} AS g{a} FROM ({layer})"
            rest[a] = f"g{a}"
        count = f"{f_last} * g0"
    return f"SELECT k, sum(x)::BIGINT AS n FROM (SELECT k, {count} AS x FROM ({layer})) GROUP BY k"


def spark_counts(spark: SparkSession, text: str, path: str | None) -> Callable[[], dict[int, int]]:
    def run() -> dict[int, int]:
        if path is None:
            return {r.k: r.n for r in spark.sql(text).collect()}
        spark.conf.set(PATH_CONF, path)
        return {r.k: r.n for r in sql(spark, text).collect()}
    return run


def timed(run: Callable[[], dict[int, int]], repeat: int) -> tuple[float, dict[int, int]]:
    out: dict[int, int] = {}

    def once() -> None:
        out.clear()
        out.update(run())

    once()  # warm-up
    return median_time(once, repeat), dict(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=1_000)
    parser.add_argument("--per-window", type=int, default=100, help="events per key per 10 minutes")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--lengths", default="2,3,5")
    parser.add_argument("--windows", default="within,none")
    parser.add_argument("--skip-kernel", action="store_true", help="native, floor and DuckDB only")
    args = parser.parse_args()
    try:
        import duckdb
    except ImportError:
        duckdb = None

    spark = sparkseq.session()
    # window operators keep a key's rows in memory (Spark's default 4,096 spills a 10,000-row
    # key into its external buffer; docs/engine.md "Native path"): not a session default
    spark.conf.set(WINDOW_BUFFER_ROWS, str(1 << 20))
    path = generate(spark, args.events, args.keys, args.per_window)
    print(f"{spark.sparkContext.master}, Spark {spark.version}; {args.events:,} events, {args.keys:,} keys, "
          f"~{args.per_window} events per key per 10 minutes; median of {args.repeat}; DuckDB "
          f"{duckdb.__version__ + ' (threads=2)' if duckdb else 'not installed: skipped'}")
    floor, n_floor = timed(spark_counts(spark, FLOOR, None), args.repeat)
    assert sum(n_floor.values()) == args.events
    print(f"  floor  count(*) GROUP BY k {floor:8.2f} s")
    for length in (int(x) for x in args.lengths.split(",")):
        for window in args.windows.split(","):
            within = window == "within"
            text = MATCH.format(pattern=", ".join(SYMBOLS[:length]),
                                within="\n  WITHIN INTERVAL 10 MINUTES" if within else "")
            label = f"SEQ of {length} {'WITHIN 10 min' if within else 'no window   '}"
            native, want = timed(spark_counts(spark, text, "native"), args.repeat)
            parts = [f"native {native:7.2f} s ({native / floor:5.2f}x floor)"]
            if not args.skip_kernel:
                kernel, have = timed(spark_counts(spark, text, "grouped"), args.repeat)
                assert have == want, f"{label}: kernel and native counts differ"
                parts.append(f"kernel {kernel:7.2f} s ({kernel / native:5.2f}x native)")
            if duckdb is not None:
                con = duckdb.connect()
                con.execute("SET threads TO 2")
                query = duckdb_sql(path + "/*.parquet", length, within)
                duck, have = timed(lambda: {k: n for k, n in con.execute(query).fetchall()}, args.repeat)
                assert {k: n for k, n in have.items()} == want, f"{label}: DuckDB and native counts differ"
                parts.append(f"duckdb {duck:7.2f} s ({duck / native:5.2f}x native)")
            print(f"  {label}  {sum(want.values()):>22,} matches  " + "  ".join(parts), flush=True)
    spark.conf.unset(PATH_CONF)
    spark.stop()


if __name__ == "__main__":
    main()
