"""Workloads whose source has a big key, on local Spark: members take the path a statement
alone takes (time split, streaming) from one statistics job per group, those left grouped
share the pass, and every result equals the statement run alone and the shared pass run
with the thresholds off."""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest

import sparkseq
from sparkseq.running.execution_paths import CHUNK_ROWS_CONF, PATH_CONF, SPLIT_ROWS_CONF, STREAM_ROWS_CONF
from sparkseq.statements.workloads import explain_workload, release_workload
from sql_rewrites.syntax.statements import split_statements
from tests.spark.test_spark_timesplit import assert_same_rows

SOURCE = "SELECT * FROM paths_events MATCH_AGGREGATE (PARTITION BY k ORDER BY ts "
#: Two members with WITHIN (split over 50 rows), two without (streamed over the stream threshold).
SCRIPT = ";\n".join([
    f"CREATE OR REPLACE TEMP VIEW p1 AS {SOURCE}PATTERN SEQ(A, !N, B) TYPE BY type "
    "MEASURES COUNT(*) AS n, SUM(B.v) AS sv WITHIN 60) m",
    f"CREATE OR REPLACE TEMP VIEW p2 AS {SOURCE}PATTERN SEQ(A, C) TYPE BY type MEASURES COUNT(*) AS n) m",
    f"CREATE OR REPLACE TEMP VIEW p3 AS {SOURCE}PATTERN SEQ(B+, C) TYPE BY type "
    "MEASURES COUNT(*) AS n, MAX(C.v) AS mx WITHIN 40 SLIDE 20) m",
    f"CREATE OR REPLACE TEMP VIEW p4 AS {SOURCE}PATTERN SEQ(C, !N, A) TYPE BY type "
    "MEASURES COUNT(*) AS n, MIN(A.v) AS mi) m",
])
VIEWS = ("p1", "p2", "p3", "p4")


@pytest.fixture(scope="module")
def events(spark) -> Iterator[str]:  # noqa: ANN001
    """One key of 400 rows, four keys of 20, a NULL key of 15."""
    rng = random.Random(16)
    rows = [(key, rng.randint(0, 2000), rng.choice("ABBCN"), None if rng.random() < 0.1 else rng.randint(-5, 9))
            for key, n in [("big", 400), *((f"s{k}", 20) for k in range(4)), (None, 15)] for _ in range(n)]
    spark.createDataFrame(rows, "k string, ts bigint, type string, v int").createOrReplaceTempView("paths_events")
    yield "paths_events"
    release_workload(spark, SCRIPT)
    for key in (SPLIT_ROWS_CONF, CHUNK_ROWS_CONF, STREAM_ROWS_CONF, PATH_CONF):
        spark.conf.unset(key)


def views(spark) -> dict[str, list]:  # noqa: ANN001
    return {v: spark.sql(f"SELECT * FROM {v} ORDER BY k NULLS FIRST, 2").collect() for v in VIEWS}


def plans(spark) -> dict[str, str]:  # noqa: ANN001
    return {v: spark.table(v)._jdf.queryExecution().analyzed().toString() for v in VIEWS}


def thresholds(spark, split: str, stream: str) -> None:  # noqa: ANN001
    spark.conf.set(SPLIT_ROWS_CONF, split)
    spark.conf.set(CHUNK_ROWS_CONF, "40")
    spark.conf.set(STREAM_ROWS_CONF, stream)


def test_a_big_key_takes_members_out_of_the_shared_pass(spark, events: str) -> None:  # noqa: ANN001
    for key in (SPLIT_ROWS_CONF, CHUNK_ROWS_CONF, STREAM_ROWS_CONF, PATH_CONF):
        spark.conf.unset(key)
    for statement in split_statements(SCRIPT):  # each statement alone, no key big
        sparkseq.sql(spark, statement.text)
    alone = views(spark)
    sparkseq.workload(spark, SCRIPT)  # thresholds off: all four in one pass
    assert all("__sparkseq_shared_" in p for p in plans(spark).values())
    assert views(spark) == alone

    thresholds(spark, split="50", stream="1000")  # split the windowed, share the others
    sparkseq.workload(spark, SCRIPT)
    ran = plans(spark)
    assert "_chunk" in ran["p1"] and "_chunk" in ran["p3"]
    assert "__sparkseq_shared_" in ran["p2"] and "__sparkseq_shared_" in ran["p4"]
    for view, rows in views(spark).items():
        assert_same_rows(alone[view], rows)

    thresholds(spark, split="50", stream="100")  # and stream the unwindowed: no pass left
    sparkseq.workload(spark, SCRIPT)
    ran = plans(spark)
    assert "sparkseq_stream_" in ran["p2"] and "sparkseq_stream_" in ran["p4"]
    assert not any("__sparkseq_shared_" in p for p in ran.values())
    for view, rows in views(spark).items():
        assert_same_rows(alone[view], rows)


def test_explain_workload_names_each_members_path(spark, events: str) -> None:  # noqa: ANN001
    thresholds(spark, split="50", stream="1000")
    text = explain_workload(spark, SCRIPT)
    assert "path: time-split, on its own (1 partition key(s) over 50 rows (largest 400)" in text
    assert "path: grouped, shared pass (" in text
    assert "members 1, 3; members 0, 2 run on their own paths" in text
    spark.conf.set(PATH_CONF, "grouped")
    try:
        text = explain_workload(spark, SCRIPT)
        assert text.count("path: grouped, shared pass (forced by sparkseq.path)") == 4
        assert "for all members" in text
    finally:
        spark.conf.unset(PATH_CONF)
