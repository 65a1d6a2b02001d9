"""Statements run both on local-cluster (by :mod:`tests.spark.local_cluster_driver`, in its own
driver process) and on the tests' local session; their answers must be equal.

Every case returns its rows as sorted lists of strings (JSON-safe, exact: counts are
integers, sums of integer prices print exactly).
"""

from __future__ import annotations

import random
from collections.abc import Callable

from pyspark.sql import SparkSession

import sparkseq

TYPES = ["view", "cart", "buy", "return", "DELL", "IBM", "QQQ", "GS"]
SECTORS = [("DELL", "Computer"), ("IBM", "Computer"), ("QQQ", "Finance"), ("GS", "Finance"),
           ("Computer", "Tech"), ("Finance", "Services")]

MATCH = """SELECT k, n, revenue FROM clicks MATCH_AGGREGATE (PARTITION BY k ORDER BY ts
  PATTERN SEQ(view, cart, !return, buy) TYPE BY tp
  MEASURES COUNT(*) AS n, SUM(buy.price) AS revenue WITHIN 40) AS m"""
SLIDING = """SELECT k, window_start, n FROM clicks MATCH_AGGREGATE (PARTITION BY k ORDER BY ts
  PATTERN SEQ(view, buy+) TYPE BY tp MEASURES COUNT(*) AS n WITHIN 30 SLIDE 10) AS m"""
HIERARCHY = """SELECT k, seq_count(ts, tp, 'SEQ(Computer, Finance) HIERARCHY sectors', 25) AS n,
  seq_sum(ts, tp, 'SEQ(Tech, QQQ) HIERARCHY sectors', NULL, 'QQQ', price) AS s FROM clicks GROUP BY k"""
WORKLOAD = ";\n".join(
    f"CREATE OR REPLACE TEMP VIEW cluster_wl{i} AS SELECT k, n FROM clicks MATCH_AGGREGATE (PARTITION BY k "
    f"ORDER BY ts PATTERN {pattern} TYPE BY tp MEASURES COUNT(*) AS n WITHIN 50) AS m{i}"
    for i, pattern in enumerate(["SEQ(view, cart, buy)", "SEQ(view, buy)", "SEQ(cart, !view, buy)"]))
#: A shape the JVM path counts (:func:`sql_rewrites.generation.jvm_path.jvm_shape`): ``auto`` runs it there
#: when the executors were given the jar, else on the Python path after one warning.
JVM_SHAPED = """SELECT k, n, c FROM clicks MATCH_AGGREGATE (PARTITION BY k ORDER BY ts
  PATTERN SEQ(view, cart, buy) TYPE BY tp MEASURES COUNT(*) AS n, COUNT(buy) AS c WITHIN 40) AS m"""
CUBE = """SELECT * FROM clicks MATCH_AGGREGATE (PARTITION BY k ORDER BY ts
  PATTERN SEQ(DELL, QQQ, IBM) CUBE (CONCEPT ROLLUP 1, CONCEPT ROLLUP 2) TYPE BY tp HIERARCHY sectors
  MEASURES COUNT(*) AS n, SUM(QQQ.price) AS s WITHIN 60) AS m"""


def events(keys: int = 24, per_key: int = 150, seed: int = 19) -> list[tuple[int, int, str, int]]:
    """``(k, ts, tp, price)`` rows: random types and times, some times shared within a key."""
    rng = random.Random(seed)
    return [(k, rng.randrange(per_key * 2), rng.choice(TYPES), rng.randrange(1, 100))
            for k in range(keys) for _ in range(rng.randrange(per_key // 2, per_key))]


def setup(spark: SparkSession) -> None:
    """The ``clicks`` view and the ``sectors`` hierarchy."""
    spark.createDataFrame(events(), "k int, ts bigint, tp string, price bigint").createOrReplaceTempView("clicks")
    sparkseq.register_hierarchy(spark, "sectors", SECTORS)


def _rows(rows: list) -> list[list[str]]:
    return sorted([str(value) for value in row] for row in rows)


def _workload(spark: SparkSession) -> list[list[str]]:
    sparkseq.workload(spark, WORKLOAD)
    return [[str(i), *row] for i in range(3) for row in _rows(spark.table(f"cluster_wl{i}").collect())]


def _time_split(spark: SparkSession) -> list[list[str]]:
    """MATCH with every key over 60 rows cut into chunks of about 25 rows (the answer must
    equal the grouped path's: ``match_aggregate``)."""
    from sparkseq.running.execution_paths import CHUNK_ROWS_CONF, PATH_CONF, SPLIT_ROWS_CONF

    settings = {PATH_CONF: "time-split", SPLIT_ROWS_CONF: "60", CHUNK_ROWS_CONF: "25"}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        return _rows(sparkseq.sql(spark, MATCH).collect())
    finally:
        for key in settings:
            spark.conf.unset(key)


#: name -> how to run it (spark.sql takes MATCH_AGGREGATE through the parser extension).
CASES: dict[str, Callable[[SparkSession], list[list[str]]]] = {
    "match_aggregate": lambda spark: _rows(spark.sql(MATCH).collect()),
    "jvm_shaped": lambda spark: _rows(sparkseq.sql(spark, JVM_SHAPED).collect()),
    "sliding_kleene": lambda spark: _rows(spark.sql(SLIDING).collect()),
    "seq_functions_hierarchy": lambda spark: _rows(spark.sql(HIERARCHY).collect()),
    "workload": _workload,
    "e_cube": lambda spark: _rows(sparkseq.sql(spark, CUBE).collect()),
    "time_split": _time_split,
}


def on_python_workers(spark: SparkSession, case: str) -> list[list[str]]:
    """``case``'s rows with ``sparkseq.path=grouped``: counted by Python workers even where
    the JVM path covers the shape (a test that kills a worker needs one to run)."""
    from sparkseq.running.execution_paths import PATH_CONF

    spark.conf.set(PATH_CONF, "grouped")
    try:
        return CASES[case](spark)
    finally:
        spark.conf.unset(PATH_CONF)


def run_all(spark: SparkSession) -> dict[str, list[list[str]]]:
    """Every case's rows."""
    setup(spark)
    return {name: case(spark) for name, case in CASES.items()}
