"""Flink SQL MATCH_RECOGNIZE over the events of bench/streaming.py: streaming events/s.

Runs in its own interpreter with PyFlink (``apache-flink`` from PyPI, NOT a sparkseq
dependency), e.g. a bench-only venv::

    python3 -m venv /tmp/flink-bench-venv && /tmp/flink-bench-venv/bin/pip install apache-flink
    .venv/bin/python bench/streaming.py --flink /tmp/flink-bench-venv/bin/python

``bench/streaming.py --flink`` writes the events as CSV and runs this script; it can
also run alone: ``python bench/flink_match_recognize.py DIR EVENTS``.

The job: a CSV filesystem source read in streaming mode (TIMESTAMP(3) event time, the
same 5 s watermark), the funnel as MATCH_RECOGNIZE per ``k`` with WITHIN 1 MINUTE,
every match to a blackhole sink, parallelism 2 (the 2 local cores). The pattern is the
closest Flink can say, not the same question: ``V A*? C N*? B`` with ``N`` any action
but ``rec`` and ``AFTER MATCH SKIP TO NEXT ROW`` finds one (the shortest) match per
starting ``view`` row, while sparkseq counts every match of ``SEQ(view, cart, !rec,
buy)`` per 1-minute window sliding by 10 s (Flink has no sliding-window count of all
matches; enumerating them would be slower still). So Flink does less work than
sparkseq here; the ratio flatters Flink.

Printed: wall seconds of the job over all files and over the first file only (after a
warm-up job: start-up and shutdown of the local cluster dominate it), and the events/s
of the other files over the difference.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from pyflink.table import EnvironmentSettings, TableEnvironment

SOURCE = """CREATE TABLE clicks (k INT, ts TIMESTAMP(3), action STRING, price DECIMAL(10, 2),
  WATERMARK FOR ts AS ts - INTERVAL '5' SECOND)
WITH ('connector' = 'filesystem', 'path' = '{path}', 'format' = 'csv')"""
SINK = ("CREATE TABLE funnel_matches (k INT, vt TIMESTAMP(3), bt TIMESTAMP(3), price DECIMAL(10, 2)) "
        "WITH ('connector' = 'blackhole')")
FUNNEL = """INSERT INTO funnel_matches SELECT k, vt, bt, price FROM clicks MATCH_RECOGNIZE (
  PARTITION BY k ORDER BY ts
  MEASURES V.ts AS vt, B.ts AS bt, B.price AS price
  ONE ROW PER MATCH AFTER MATCH SKIP TO NEXT ROW
  PATTERN (V A*? C N*? B) WITHIN INTERVAL '1' MINUTE
  DEFINE V AS V.action = 'view', A AS A.action <> 'cart', C AS C.action = 'cart',
         N AS N.action NOT IN ('rec', 'buy'), B AS B.action = 'buy')"""


def run(path: Path) -> float:
    """Wall seconds of the job over the CSV file or directory ``path``."""
    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    env.get_config().set("parallelism.default", "2")
    env.execute_sql(SOURCE.format(path=path.as_posix()))
    env.execute_sql(SINK)
    started = time.perf_counter()
    env.execute_sql(FUNNEL).wait()
    return time.perf_counter() - started


def main() -> None:
    directory, events = Path(sys.argv[1]), int(sys.argv[2])
    first = sorted(directory.glob("*.csv"))[0]
    with first.open() as f:
        first_events = sum(1 for _ in f)
    run(first)  # warm-up: the first job in the JVM pays for class loading and code generation
    small = run(first)
    full = run(directory)
    if full <= small:
        sys.exit(f"too few events to measure: all files {full:.1f} s, the first alone {small:.1f} s")
    rate = (events - first_events) / (full - small)
    print(f"flink MATCH_RECOGNIZE: {events} events in {full:.1f} s (first file alone {small:.1f} s); "
          f"events/s without start-up {rate:,.0f}")
    print(f"FLINK_EVENTS_PER_SECOND {rate:.0f}")


if __name__ == "__main__":
    main()
