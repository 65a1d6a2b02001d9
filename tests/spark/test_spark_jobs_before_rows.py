"""No Spark job before the caller asks for rows: a statement is analysed completely, and
its path chosen, without running anything (:mod:`sparkseq.running.execution_paths`); a workload's
DataFrames likewise (:mod:`sparkseq.statements.workloads`), but for the one job that counts the keys of
a source that may hold a key too big for the shared pass, which EXPLAIN names.

The source is a ``createDataFrame`` of a Python list, whose size Spark cannot estimate:
such a statement counts its keys as it runs (``sql_rewrites.planning.path_queries.by_key_size``).
Small thresholds (``small_thresholds`` in conftest: keys over 50 rows split, over 100
streamed) make the 600-row key big, so the big-key path really runs; the reference rows
come from the grouped path (``sparkseq.path=grouped``). Jobs are counted with the status
tracker: the ids of the jobs outside any job group, before and after.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession

import sparkseq
from sparkseq.running import statistics
from sparkseq.running.execution_paths import PATH_CONF, SPLIT_ROWS_CONF, STREAM_ROWS_CONF
from sql_rewrites.syntax.dialect import SparkSeq, parse_statement
from tests.spark.test_spark_cube_paths import ROLLUP, SECTORS, ordered
from tests.spark.test_spark_timesplit import assert_same_rows
from tests.support.sql_cases import jobs_started

WITHIN = ("SELECT * FROM jobs_events AS e MATCH_AGGREGATE (PARTITION BY e.k ORDER BY ts PATTERN SEQ(A, !N, B) "
          "DEFINE A AS kind = 'A', N AS kind = 'N', B AS kind = 'B' MEASURES COUNT(*) AS n, SUM(B.v) AS sv, "
          "MAX(A.f) AS mx WITHIN 40) AS m ORDER BY k")
NO_WINDOW = WITHIN.replace(" WITHIN 40", "")
TYPO = WITHIN.replace("A AS kind = 'A'", "A AS lowr(kind) = 'a'")
CHUNK, STREAM = "_chunk", "sparkseq_stream_"


@pytest.fixture(scope="module")
def events(spark: SparkSession) -> str:
    """One key of 600 rows, five keys of 20 and a NULL key of 30, from a Python list."""
    rng = random.Random(23)
    rows = [(key, rng.randint(0, 3000), rng.choice("ABBN"), rng.randint(-5, 9), rng.random())
            for key, n in [("big", 600), *((f"s{i}", 20) for i in range(5)), (None, 30)] for _ in range(n)]
    frame = spark.createDataFrame(rows, "k string, ts bigint, kind string, v int, f double")
    frame.createOrReplaceTempView("jobs_events")
    return "jobs_events"


def jobs_during(spark: SparkSession, action: Callable[[], Any]) -> tuple[Any, int]:
    """``action()``'s value (or the exception it raised) and how many Spark jobs it started,
    counted once the listener bus has caught up before and after it (a job of an earlier
    action is not counted late, nor one of this action missed)."""
    before = jobs_started(spark)
    try:
        value = action()
    except Exception as exc:  # noqa: BLE001 - the caller asserts on it
        value = exc
    return value, jobs_started(spark) - before


def by_api(spark: SparkSession, text: str) -> DataFrame:
    """``text`` (one of this module's statements) through the DataFrame API."""
    define = {"A": "kind = 'A'", "N": "kind = 'N'", "B": "kind = 'B'"}
    if "lowr(" in text:
        define["A"] = "lowr(kind) = 'a'"
    return sparkseq.match_aggregate(spark.table("jobs_events"), partition_by="k", order_by="ts",
                                    pattern="SEQ(A, !N, B)", define=define,
                                    measures={"n": "COUNT(*)", "sv": "SUM(B.v)", "mx": "MAX(A.f)"},
                                    within=40 if "WITHIN" in text else None).orderBy("k")


SURFACES: dict[str, Callable[[SparkSession, str], DataFrame]] = {
    "spark.sql": lambda spark, text: spark.sql(text),
    "sparkseq.sql": lambda spark, text: sparkseq.sql(spark, text),
    "script": lambda spark, text: sparkseq.sql(spark, f"SET spark.sql.ansi.enabled = true; {text}"),
    "match_aggregate": by_api,
}


def grouped_rows(spark: SparkSession, text: str) -> list:
    spark.conf.set(PATH_CONF, "grouped")
    try:
        return sparkseq.sql(spark, text).collect()
    finally:
        spark.conf.unset(PATH_CONF)


@pytest.fixture(scope="module")
def grouped(spark: SparkSession, events: str) -> Callable[[str], list]:
    """:func:`grouped_rows` of a statement over ``events``, the reference, run once per
    statement in the module (eight parametrized cases and two other tests compare their
    paths with the same two statements' grouped rows)."""
    done: dict[str, list] = {}

    def reference(text: str) -> list:
        if text not in done:
            done[text] = grouped_rows(spark, text)
        return done[text]

    return reference


def executed(frame: DataFrame) -> str:
    """The operators that ran: adaptive execution's final plan, once the rows were
    collected, without the logical plans of the branches it found empty and dropped."""
    text = frame._jdf.queryExecution().executedPlan().toString()
    final = text.split("== Final Plan ==", 1)[1].split("== Initial Plan ==", 1)[0]
    kept, dropped_at = [], None
    for line in final.splitlines():
        depth = len(line) - len(line.lstrip(" :|+-"))
        if dropped_at is not None and depth > dropped_at:
            continue
        dropped_at = depth if "EmptyRelation" in line else None
        kept.append(line)
    return "\n".join(kept)


def test_the_job_count_sees_a_collect(spark: SparkSession, events: str) -> None:
    _, jobs = jobs_during(spark, lambda: spark.table(events).groupBy("k").count().collect())
    assert jobs > 0


@pytest.mark.parametrize("surface", ["spark.sql", "sparkseq.sql", "match_aggregate"])  # a script's check is Spark's
def test_an_analysis_error_comes_before_any_job(spark: SparkSession, events: str, small_thresholds: None,
                                                surface: str) -> None:
    """A misspelled function in DEFINE: Spark's analysis error, and no job before it (the
    source's size is unknown, so a statistics job used to count its keys first)."""
    error, jobs = jobs_during(spark, lambda: SURFACES[surface](spark, TYPO))
    assert isinstance(error, Exception) and "lowr" in str(error) and "UNRESOLVED_ROUTINE" in str(error)
    assert jobs == 0


@pytest.mark.parametrize("surface", list(SURFACES))
@pytest.mark.parametrize("text, marker", [(WITHIN, CHUNK), (NO_WINDOW, STREAM)], ids=["time-split", "streaming"])
def test_no_job_until_rows_are_asked_then_the_big_key_path_runs(spark: SparkSession, events: str,
                                                                small_thresholds: None, grouped: Callable[[str], list],
                                                                surface: str, text: str, marker: str) -> None:
    want = grouped(text)
    frame, jobs = jobs_during(spark, lambda: SURFACES[surface](spark, text))
    assert isinstance(frame, DataFrame) and jobs == 0
    got, jobs = jobs_during(spark, frame.collect)
    assert jobs > 0 and marker in executed(frame)  # the big key took its path
    assert sum(r["n"] for r in want) > 0
    assert_same_rows(want, got)


def test_without_a_big_key_the_big_key_branch_never_runs(spark: SparkSession, events: str, small_thresholds: None,
                                                         grouped: Callable[[str], list]) -> None:
    """Keys of at most 1,000 rows: the statement still counts them (the source's size is
    unknown), but adaptive execution drops the big-key branch once the count is empty."""
    spark.conf.set(SPLIT_ROWS_CONF, "1000")
    spark.conf.set(STREAM_ROWS_CONF, "1000")
    want = grouped(WITHIN)
    frame, jobs = jobs_during(spark, lambda: sparkseq.sql(spark, WITHIN))
    assert jobs == 0 and CHUNK in frame._jdf.queryExecution().analyzed().toString()
    assert_same_rows(want, frame.collect())
    assert CHUNK not in executed(frame) and "sparkseq_agg_" in executed(frame)


def test_a_cube_runs_no_job_until_rows_are_asked(spark: SparkSession, events: str, small_thresholds: None,
                                                 isolated_hierarchies: None) -> None:
    """An E-Cube over the same source: its big key runs each cuboid time-split, the other
    keys stay in one grouped call; the grouped cube's rows."""
    sparkseq.register_hierarchy(spark, "sectors", SECTORS)
    rows = [(r["k"], r["ts"], {"A": "DELL", "B": "GS", "N": "EFC"}[r["kind"]], r["v"], r["f"])
            for r in spark.table(events).collect()]
    spark.createDataFrame(rows, "k string, ts bigint, company string, price int, f double"
                          ).createOrReplaceTempView("jobs_ticks")
    text = f"SELECT * FROM jobs_ticks MATCH_AGGREGATE (PARTITION BY k ORDER BY ts {ROLLUP}) AS m"
    want = ordered(grouped_rows(spark, text))
    for run in (lambda: spark.sql(text), lambda: sparkseq.sql(spark, text)):
        frame, jobs = jobs_during(spark, run)
        assert jobs == 0
        assert_same_rows(want, ordered(frame.collect()))
        assert CHUNK in executed(frame)


def test_positional_markers_keep_the_statement_grouped(spark: SparkSession, events: str,
                                                      small_thresholds: None, grouped: Callable[[str], list]) -> None:
    """Counting the keys as it runs would read DEFINE's ``?`` markers twice (binding other
    values): such a statement runs grouped, says why, and still runs no job before rows."""
    text = WITHIN.replace("kind = 'A'", "kind = ?").replace("kind = 'B'", "kind = ?")
    frame, jobs = jobs_during(spark, lambda: sparkseq.sql(spark, text, args=["A", "B"]))
    assert isinstance(frame, DataFrame) and jobs == 0
    assert_same_rows(grouped(WITHIN), frame.collect())
    assert CHUNK not in frame._jdf.queryExecution().analyzed().toString()
    assert "its positional parameter markers (?) would be read twice" in sparkseq.explain(spark, text)


SHARED = ("SELECT k, n FROM {source} MATCH_AGGREGATE (PARTITION BY k ORDER BY ts PATTERN {pattern} "
          "DEFINE A AS kind = 'A', N AS kind = 'N', B AS kind = 'B' MEASURES COUNT(*) AS n) AS m")


def rows_of(frame: DataFrame) -> list[tuple]:
    """The frame's rows as tuples, in an order that NULL keys do not upset."""
    return sorted(map(tuple, frame.collect()), key=repr)


def shared_script(source: str) -> str:
    """Two COUNT(*) statements over ``source`` without a window: one sharing group, whose
    members could share a timeline (what the statistics job decides)."""
    return ";\n".join(SHARED.format(source=source, pattern=p) for p in ("SEQ(A, N, B)", "SEQ(N, A, B)"))


def test_a_workload_runs_no_job_until_rows_are_asked(spark: SparkSession, events: str) -> None:
    """Over a source whose size Spark knows (so no key can be too big for the shared pass):
    ``sparkseq.workload`` neither collects the statistics of its timelines nor fills its
    cache; the rows are each statement's own."""
    spark.range(400).selectExpr("CAST(id % 3 AS STRING) AS k", "id * 7 % 400 AS ts",  # sized, unlike a list
                                "element_at(array('A', 'N', 'B'), CAST(id * 13 % 7 % 3 AS INT) + 1) AS kind"
                                ).createOrReplaceTempView("jobs_known")
    script = shared_script("jobs_known")
    want = [rows_of(sparkseq.sql(spark, text)) for text in script.split(";\n")]
    try:
        frames, jobs = jobs_during(spark, lambda: sparkseq.workload(spark, script))
        assert jobs == 0 and len(sparkseq.plan_workload(spark, script).groups) == 1
        got, jobs = jobs_during(spark, lambda: [rows_of(frame) for frame in frames])
        assert jobs > 0 and got == want and sum(n for rows in got for _, n in rows) > 0
        explained = sparkseq.statements.workloads.explain_workload(spark, script)
        assert "workload() (DataFrames read later) runs no statistics job before rows are asked for" in explained
        assert "paths from one job counting the source's keys" not in explained
    finally:
        sparkseq.release_workload(spark, script)
        spark.catalog.dropTempView("jobs_known")


def test_a_workload_over_a_source_of_unknown_size_counts_its_keys_when_called(spark: SparkSession, events: str,
                                                                             small_thresholds: None) -> None:
    """Which members share the pass fixes every statement's SQL, so over a source Spark
    cannot size the workload counts its keys when it is called (one job, no other) — and
    EXPLAIN says so. The big key (over 100 rows: streamed) takes each member out of the pass;
    the rows are right."""
    script = shared_script(events)
    spark.conf.set(PATH_CONF, "grouped")
    try:
        want = [rows_of(sparkseq.sql(spark, text)) for text in script.split(";\n")]
    finally:
        spark.conf.unset(PATH_CONF)
    explained = sparkseq.statements.workloads.explain_workload(spark, script)
    assert ("paths from one job counting the source's keys, run by every way of running the workload — workload() "
            "too, when called, before any rows are asked for: Spark's size estimate of the source (unknown) leaves "
            "room for a key over 100 rows") in explained
    group = sparkseq.plan_workload(spark, script).groups[0]
    _, counting = jobs_during(spark, lambda: statistics.measure(spark, group, reuse=False, big_key_rows=100))
    try:
        frames, jobs = jobs_during(spark, lambda: sparkseq.workload(spark, script))
        assert jobs == counting
        got = [rows_of(frame) for frame in frames]
        assert got == want
    finally:
        sparkseq.release_workload(spark, script)


def test_explain_prints_the_statement_that_runs(spark: SparkSession, events: str, small_thresholds: None) -> None:
    """EXPLAIN's path and Spark SQL are those of the run (``sparkseq.rewrite`` gives the SQL
    that ``spark.sql`` runs); nothing runs for either."""
    from sparkseq.statements.sql_api import rewrite

    explained, jobs = jobs_during(spark, lambda: sparkseq.explain(spark, WITHIN))
    assert jobs == 0
    [path] = [line.strip() for line in explained.splitlines() if line.strip().startswith("path ")]
    assert path == ("path          per key, counted when the statement runs: time-split for keys over 50 rows, "
                    "grouped for the others (cut into time chunks of about 40 rows; Spark's size estimate of the "
                    "source (unknown) leaves room for a key over 50 rows)")
    shown = explained.split("Spark SQL:\n", 1)[1]
    [runs], jobs = jobs_during(spark, lambda: rewrite(spark, WITHIN))
    assert jobs == 0
    assert parse_statement(shown).sql(dialect=SparkSeq) == parse_statement(runs).sql(dialect=SparkSeq)
