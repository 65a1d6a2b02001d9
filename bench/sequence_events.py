"""The event table of the path benchmarks (bench/peers.py, bench/jvm_path.py, bench/jvm_floor.py).

One Parquet file written once (``events`` events over ``keys`` keys, ~``per_window``
events per key per 10 minutes, ``type`` one of A..E, ``ts`` TIMESTAMP) and registered as
the view ``events``; the statement the benchmarks time (:data:`MATCH`, COUNT(*) per key),
Spark's own floor over the same file (:data:`FLOOR`), and a runner returning the count
of each key, so that every engine's answer is compared key by key.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pyspark.sql import SparkSession  # noqa: E402

from spark_e2e import write_events  # noqa: E402  (bench/ is on sys.path as a script)
from sparkseq.running.execution_paths import PATH_CONF  # noqa: E402
from sparkseq.statements.sql_api import sql  # noqa: E402

SYMBOLS = "ABCDE"
MATCH = """SELECT k, n FROM events MATCH_AGGREGATE (
  PARTITION BY k ORDER BY ts PATTERN SEQ({pattern}) TYPE BY type
  MEASURES COUNT(*) AS n{within}) AS m"""
FLOOR = "SELECT k, count(*) AS n FROM events GROUP BY k"


def generate(spark: SparkSession, events: int, keys: int, per_window: int) -> str:
    """Write the event table once (module docstring), register it as ``events``; return its path."""
    path = write_events(spark, events, keys, per_window, symbols=SYMBOLS, label="sequence")
    spark.read.parquet(str(path)).createOrReplaceTempView("events")
    return str(path)


def spark_counts(spark: SparkSession, text: str, path: str | None) -> Callable[[], dict[int, int]]:
    """A run of ``text`` returning each key's count: plain Spark SQL when ``path`` is None,
    else ``sparkseq.sql`` with ``sparkseq.path`` set to ``path``."""
    def run() -> dict[int, int]:
        if path is None:
            return {r.k: r.n for r in spark.sql(text).collect()}
        spark.conf.set(PATH_CONF, path)
        return {r.k: r.n for r in sql(spark, text).collect()}
    return run
