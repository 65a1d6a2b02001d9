"""The peers of bench/peers.py outside Spark: DuckDB and ClickHouse (chdb), each with an exact
hand-written SEQ(A, B, C) WITHIN w, COUNT(*) per key, over the bench's Parquet files.

Imports neither pyspark nor sparkseq: bench/peers.py runs this file with the Python of the
bench's own environment (``.venv-bench``, bench/peers-requirements.txt), as a worker that
reads one JSON request per line on stdin (``{"engine": "duckdb" | "chdb", "path": glob,
"within": w}``) and answers one JSON line: the wall time of the query (executed and every
row fetched) and its counts ``[[key, count], ...]``.

Both formulations count, for each C row at time ``t`` with ``L = t - w + 1`` (WITHIN w:
``t_C - t_A < w``), the pairs A before B before C with ``L <= t_A``:

    sum over B in [L, t) of (A before B - A before L)
      = AB(< t) - AB(< L) - A(< L) * B in [L, t)

where ``AB(< x)`` sums, over the B rows before ``x``, the A rows strictly before each.
"Before" is always strictly earlier: rows with equal times never order (docs/SEMANTICS).
"""

from __future__ import annotations

import json
import sys
import time


def duckdb_sql(path: str, within: int) -> str:
    """As a DuckDB user writes it: one row per (key, time) with its A, B and C counts (so
    ties are one row), running sums over those rows, and an as-of join for the values
    before ``L``: the last row of the key at or before ``t - w``. The running sums are cast
    back to BIGINT (DuckDB's ``sum`` returns HUGEINT, whose window sums cost about ten
    times as much at 10 M events; a cast that overflows raises, so counts stay exact)."""
    return f"""
WITH per_time AS (
  SELECT k, epoch_us(ts) AS t,
         count(*) FILTER (WHERE type = 'A') AS a,
         count(*) FILTER (WHERE type = 'B') AS b,
         count(*) FILTER (WHERE type = 'C') AS c
  FROM read_parquet('{path}') WHERE type IN ('A', 'B', 'C') GROUP BY k, t
), running AS (
  SELECT *, (sum(a) OVER upto)::BIGINT AS a_upto, (sum(b) OVER upto)::BIGINT AS b_upto
  FROM per_time WINDOW upto AS (PARTITION BY k ORDER BY t ROWS UNBOUNDED PRECEDING)
), pairs AS (
  SELECT *, (sum(b * (a_upto - a)) OVER (PARTITION BY k ORDER BY t ROWS UNBOUNDED PRECEDING))::BIGINT AS ab_upto
  FROM running
)
SELECT now.k,
       sum(now.c * ((now.ab_upto - now.b * (now.a_upto - now.a)) - coalesce(early.ab_upto, 0)
                    - coalesce(early.a_upto, 0) * ((now.b_upto - now.b) - coalesce(early.b_upto, 0))))::BIGINT AS n
FROM (SELECT * FROM pairs WHERE c > 0) AS now
ASOF LEFT JOIN pairs AS early ON early.k = now.k AND early.t <= now.t - {within}
GROUP BY now.k"""


def chdb_sql(path: str, within: int) -> str:
    """As a ClickHouse user writes it: window functions with RANGE frames over the
    microsecond time (``1 PRECEDING`` ends the frame strictly before the row's time, so
    ties never order), in Int64 (an overflow would show as unequal counts). The columns
    read from Parquet are Nullable, so a sum over an empty frame is NULL: ``coalesce``."""
    def frame(start: str, end: str) -> str:
        return f"OVER (PARTITION BY k ORDER BY t RANGE BETWEEN {start} PRECEDING AND {end} PRECEDING)"

    return f"""
SELECT k, sum(ab_before - ab_early - a_early * b_recent) AS n FROM (
  SELECT k, type,
         coalesce(sum(ab) {frame('UNBOUNDED', '1')}, 0) AS ab_before,
         coalesce(sum(ab) {frame('UNBOUNDED', str(within))}, 0) AS ab_early,
         coalesce(sum(toInt64(type = 'A')) {frame('UNBOUNDED', str(within))}, 0) AS a_early,
         coalesce(sum(toInt64(type = 'B')) {frame(str(within - 1), '1')}, 0) AS b_recent
  FROM (
    SELECT k, t, type, toInt64(type = 'B') * coalesce(sum(toInt64(type = 'A')) {frame('UNBOUNDED', '1')}, 0) AS ab
    FROM (SELECT k, toUnixTimestamp64Micro(ts) AS t, type FROM file('{path}', Parquet)
          WHERE type IN ('A', 'B', 'C'))
  )
) WHERE type = 'C' GROUP BY k
SETTINGS max_threads = 2"""


def main() -> None:
    import chdb
    import duckdb

    con = duckdb.connect()
    con.execute("SET threads TO 2")
    versions = {"duckdb": duckdb.__version__, "chdb": chdb.__version__}
    print(json.dumps(versions), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        started = time.perf_counter()
        if request["engine"] == "duckdb":
            rows = con.execute(duckdb_sql(request["path"], request["within"])).fetchall()
        else:
            text = chdb.query(chdb_sql(request["path"], request["within"]), "TSV").bytes().decode()
            rows = [tuple(int(x) for x in row.split("\t")) for row in text.splitlines()]
        seconds = time.perf_counter() - started
        print(json.dumps({"seconds": seconds, "counts": [[int(k), int(n)] for k, n in rows]}), flush=True)


if __name__ == "__main__":
    main()
