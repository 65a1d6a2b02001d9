"""Time split on local Spark: a statement whose big key is cut into time chunks returns
exactly what the grouped path returns (floats within rounding), and the path is chosen
from the data."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest
from pyspark.errors import PySparkException

import sparkseq
from sparkseq.running.execution_paths import CHUNK_ROWS_CONF, PATH_CONF, SPLIT_ROWS_CONF, STREAM_ROWS_CONF
from sql_rewrites.errors import SqlRewriteError
from tests.support.doubles import same_double

MEASURES = ("COUNT(*) AS n, SUM(B.v) AS sv, MIN(A.v) AS mi, MAX(C.f) AS mx, AVG(B.f) AS af, COUNT(B) AS nb, "
            "SUM(C.f) AS sf, AVG(A.v) AS ai")


@pytest.fixture(scope="module")
def events(spark) -> str:
    """One key of 600 rows (split into chunks of about 40), five keys of 20, a NULL key of 30;
    integer and timestamp times; NULL values."""
    rng = random.Random(19)
    rows = []
    for key, n in [("big", 600), *((f"s{k}", 20) for k in range(5)), (None, 30)]:
        for _ in range(n):
            ts = rng.randint(0, 3000)
            v = None if rng.random() < 0.1 else rng.randint(-5, 9)
            rows.append((key, ts, rng.choice("ABBCN"), v, rng.random()))
    frame = spark.createDataFrame(rows, "k string, ts bigint, type string, v int, f double")
    frame.selectExpr("*", "timestamp_seconds(ts) AS at").createOrReplaceTempView("split_events")
    return "split_events"


def run(spark, text: str, path: str) -> tuple[list, str]:
    spark.conf.set(PATH_CONF, path)
    frame = sparkseq.sql(spark, text)
    return frame.collect(), frame._jdf.queryExecution().analyzed().toString()


@pytest.fixture(scope="module")
def grouped(spark, events: str) -> Callable[[str], list]:
    """The rows of a statement over ``events`` with ``sparkseq.path=grouped``, the reference,
    run once per statement in the module (two tests compare other paths with the same one)."""
    done: dict[str, list] = {}

    def reference(text: str) -> list:
        if text not in done:
            done[text] = run(spark, text, "grouped")[0]
        return done[text]

    return reference


def assert_same_rows(want: list, got: list) -> None:
    assert len(want) == len(got)
    for a, b in zip(want, got):
        assert a.asDict().keys() == b.asDict().keys()
        for name, x in a.asDict().items():
            y = b[name]
            if isinstance(x, float):
                assert same_double(x, y), (name, x, y)
            else:
                assert x == y, (name, x, y)


STATEMENTS = {
    "negation everywhere": "PATTERN SEQ(!N, A, B+, !N, C, !N) TYPE BY type MEASURES {m} WITHIN 60",
    "leading negation": "PATTERN SEQ(!N, A, B) TYPE BY type MEASURES COUNT(*) AS n, SUM(B.v) AS sv WITHIN 45",
    "trailing negation, a symbol both positive and negated": (
        "PATTERN SEQ(A, B, !A) TYPE BY type MEASURES COUNT(*) AS n, MAX(B.f) AS mx WITHIN 30"),
    "Kleene, no negation": "PATTERN SEQ(A+, C) TYPE BY type MEASURES {m2} WITHIN 25",
    "slide": "PATTERN SEQ(A, !N, B, C) TYPE BY type MEASURES {m} WITHIN 90 SLIDE 30",
    "slide with edge negation": "PATTERN SEQ(!C, A, B, !C) TYPE BY type MEASURES COUNT(*) AS n WITHIN 50 SLIDE 50",
}


@pytest.mark.parametrize("name", list(STATEMENTS))
def test_split_equals_grouped(spark, events: str, small_thresholds: None, name: str) -> None:
    body = STATEMENTS[name].format(m=MEASURES, m2="COUNT(*) AS n, COUNT(A) AS na, SUM(A.v) AS sa, MIN(A.f) AS mi")
    text = f"SELECT * FROM {events} MATCH_AGGREGATE (PARTITION BY k ORDER BY ts {body}) AS m ORDER BY ALL"
    want, grouped_plan = run(spark, text, "grouped")
    got, split_plan = run(spark, text, "time-split")
    assert "_chunk" in split_plan and "_chunk" not in grouped_plan
    assert sum(r["n"] for r in want) > 0
    assert_same_rows(want, got)


def test_no_partition_by_and_timestamps(spark, events: str, small_thresholds: None) -> None:
    """One partition of all 730 rows, ORDER BY a timestamp (microseconds in the engine)."""
    text = (f"SELECT * FROM {events} MATCH_AGGREGATE (ORDER BY at PATTERN SEQ(A, B, !N, C) TYPE BY type "
            f"MEASURES {MEASURES} WITHIN INTERVAL 40 SECONDS) AS m")
    want, _ = run(spark, text, "grouped")
    got, split_plan = run(spark, text, "time-split")
    assert "_chunk" in split_plan
    assert want[0]["n"] > 0
    assert_same_rows(want, got)


def test_auto_path_splits_only_when_a_key_is_big(spark, events: str, small_thresholds: None, grouped) -> None:
    # MAX under WITHIN keeps the statement off the JVM path
    text = (f"SELECT * FROM {events} MATCH_AGGREGATE (PARTITION BY k ORDER BY ts PATTERN SEQ(A, B) TYPE BY type "
            "MEASURES COUNT(*) AS n, MAX(B.v) AS mv WITHIN 20) AS m ORDER BY ALL")
    want = grouped(text)
    got, auto_plan = run(spark, text, "auto")
    assert "_chunk" in auto_plan
    assert_same_rows(want, got)
    from tests.spark.test_spark_jobs_before_rows import executed  # which imports this module

    # the source's size is unknown: the statement counts its keys as it runs, and splits none
    spark.conf.set(SPLIT_ROWS_CONF, "1000")  # no key has 1000 rows
    frame = sparkseq.sql(spark, text)
    assert_same_rows(want, frame.collect())
    assert "_chunk" not in executed(frame)
    no_window = text.replace("WITHIN 20", "")
    spark.conf.set(SPLIT_ROWS_CONF, "50")
    spark.conf.set(STREAM_ROWS_CONF, "1000")
    frame = sparkseq.sql(spark, no_window)
    frame.collect()
    assert "_chunk" not in executed(frame) and "EmptyRelation" in executed(frame)  # no key streamed: none over 1000


@pytest.mark.parametrize("keys", ["PARTITION BY k", ""])
def test_huge_keys_without_window_stream(spark, events: str, small_thresholds: None, keys: str) -> None:
    """No WITHIN: a key over sparkseq.streaming.rows (100 here; the big key has 600) takes the
    bounded-memory streaming path, with the grouped path's answer."""
    text = (f"SELECT * FROM {events} MATCH_AGGREGATE ({keys} ORDER BY ts PATTERN SEQ(A, !N, B, C) TYPE BY type "
            "MEASURES COUNT(*) AS n, SUM(B.v) AS sv, MIN(A.v) AS mi, MAX(C.f) AS mx, AVG(B.f) AS af) AS m "
            "ORDER BY ALL")
    want, _ = run(spark, text, "grouped")
    got, auto_plan = run(spark, text, "auto")
    assert "sparkseq_stream_" in auto_plan
    assert sum(r["n"] for r in want) > 0
    assert_same_rows(want, got)


def test_overflow_names_the_partition(spark, small_thresholds: None) -> None:
    """2**70 - 1 matches of A+ over 70 rows of one key split in chunks: BIGINT overflow
    raised naming the key, as on the grouped path."""
    spark.range(70).selectExpr("'hot' AS k", "id AS ts").createOrReplaceTempView("split_overflow")
    text = ("SELECT * FROM split_overflow MATCH_AGGREGATE (PARTITION BY k ORDER BY ts PATTERN SEQ(A+) "
            "DEFINE A AS true MEASURES COUNT(*) AS n WITHIN 1000) AS m")
    spark.conf.set(CHUNK_ROWS_CONF, "10")
    with pytest.raises(PySparkException, match='hot'):
        run(spark, text, "time-split")
    got, _ = run(spark, text.replace("SEQ(A+)", "SEQ(A, A)"), "time-split")
    assert got[0]["n"] == 70 * 69 // 2


def test_forcing_a_split_of_an_unsplittable_plan_is_an_error(spark, events: str, small_thresholds: None) -> None:
    text = (f"SELECT * FROM {events} MATCH_AGGREGATE (PARTITION BY k ORDER BY ts PATTERN SEQ(A, B) TYPE BY type "
            "MEASURES COUNT(*) AS n) AS m")
    with pytest.raises((ValueError, SqlRewriteError), match="no WITHIN"):
        run(spark, text, "time-split")


def test_explain_lists_every_path_a_key_may_take_and_the_big_key_runs_time_split(spark, events: str,
                                                                                small_thresholds: None,
                                                                                grouped) -> None:
    """A source with one key over the split threshold (600 rows, threshold 50). EXPLAIN from
    the schemas alone (no session: no estimate, no settings) used to say ``grouped`` — a path
    the big key never takes; now, with or without the session, it names the big keys' path
    and the others', and the statement runs the big key time-split as said."""
    from tests.spark.test_spark_jobs_before_rows import executed  # which imports this module

    text = (f"SELECT * FROM {events} MATCH_AGGREGATE (PARTITION BY k ORDER BY ts PATTERN SEQ(A, B) TYPE BY type "
            "MEASURES COUNT(*) AS n, MAX(B.v) AS mv WITHIN 20) AS m ORDER BY ALL")
    schema = {events: {f.name: f.dataType.simpleString() for f in spark.table(events).schema}}

    def path_line(source: object) -> str:
        [line] = [x.strip() for x in sparkseq.explain(source, text).splitlines() if x.strip().startswith("path ")]
        return line.split(None, 1)[1]

    # the other keys: grouped, or the JVM path (COUNT(*) and MAX of one column under WITHIN) where it loads
    without_session = path_line(schema)
    assert without_session.startswith(
        "per key, counted when the statement runs: time-split for keys over 4,000,000 rows, grouped, or jvm where "
        "the session loads the JVM path"), without_session
    assert "only when Spark's size estimate of the source leaves room for such keys, else every key grouped, or jvm " \
        "where the session loads the JVM path" in without_session, without_session
    assert path_line(spark).startswith(
        "per key, counted when the statement runs: time-split for keys over 50 rows, jvm for the others (cut "
        "into time chunks of about 40 rows; Spark's size estimate of the source")
    want = grouped(text)
    spark.conf.set(PATH_CONF, "auto")
    frame = sparkseq.sql(spark, text)
    assert_same_rows(want, frame.collect())
    assert "_chunk" in executed(frame)  # the big key ran time-split


def test_explain_names_the_path(spark, events: str, small_thresholds: None) -> None:
    text = (f"SELECT * FROM {events} MATCH_AGGREGATE (PARTITION BY k ORDER BY ts PATTERN SEQ(A, B) TYPE BY type "
            "MEASURES COUNT(*) AS n, MAX(B.v) AS mv WITHIN 20) AS m")
    spark.conf.set(PATH_CONF, "time-split")
    assert "time-split (forced by sparkseq.path)" in sparkseq.explain(spark, text)
    spark.conf.set(PATH_CONF, "auto")
    # the other keys: the JVM path, which counts COUNT(*) and MAX of one column under WITHIN
    assert "per key, counted when the statement runs: time-split for keys over 50 rows, jvm for the others (cut " \
        "into time chunks" in sparkseq.explain(spark, text)
    spark.conf.set(PATH_CONF, "grouped")
    assert "grouped (forced by sparkseq.path)" in sparkseq.explain(spark, text.replace("WITHIN 20", ""))
    spark.conf.set(PATH_CONF, "auto")
    strict = text.replace("MEASURES", "STRATEGY STRICT CONTIGUITY MEASURES")
    assert "not splittable by time: contiguity" in sparkseq.explain(spark, strict)
    spark.conf.set(PATH_CONF, "native")  # the window-function path is gone: the error names the valid values
    with pytest.raises(ValueError, match="sparkseq.path must be one of auto, grouped, time-split, streaming, jvm, "
                                         "got 'native'"):
        sparkseq.explain(spark, text)


def test_cluster_case_splits_and_equals_the_grouped_answer(spark) -> None:
    """The local-cluster case ``time_split`` (tests/spark/cluster_cases.py) really splits its keys
    and equals ``match_aggregate`` (the grouped path) here; test_spark_local_cluster.py
    checks the cluster gives the same rows."""
    from tests.spark import cluster_cases

    cluster_cases.setup(spark)
    assert cluster_cases.CASES["time_split"](spark) == cluster_cases.CASES["match_aggregate"](spark)


def test_spark_sql_through_the_parser_extension_chooses_the_path_too(spark, events: str,
                                                                     small_thresholds: None) -> None:
    """``spark.sql`` (the parser extension hands the statement to the compiler) picks the
    path as ``sparkseq.sql`` does: the big key runs time-split, with the same rows."""
    text = (f"SELECT * FROM {events} MATCH_AGGREGATE (PARTITION BY k ORDER BY ts PATTERN SEQ(A, !N, B) TYPE BY type "
            "MEASURES COUNT(*) AS n, SUM(B.v) AS sv WITHIN 40) AS m ORDER BY ALL")
    want, _ = run(spark, text, "grouped")
    spark.conf.set(PATH_CONF, "auto")
    frame = spark.sql(text)
    assert "_chunk" in frame._jdf.queryExecution().analyzed().toString()
    assert_same_rows(want, frame.collect())


@pytest.mark.parametrize("keys", ["PARTITION BY k", "PARTITION BY k, even", ""])
def test_auto_split_counts_its_keys_as_it_runs(spark, events: str, small_thresholds: None, keys: str) -> None:
    """The automatic path counts the keys as the statement runs (by the hash of their values)
    and cuts those over 50 rows: the grouped path's rows, with one key, two keys (both over
    50 rows) or none."""
    text = (f"SELECT * FROM (SELECT *, ts % 2 = 0 AS even FROM {events}) MATCH_AGGREGATE ({keys} ORDER BY ts "
            f"PATTERN SEQ(!N, A, B, !N, C) TYPE BY type MEASURES {MEASURES} WITHIN 40) AS m ORDER BY ALL")
    want, _ = run(spark, text, "grouped")
    got, auto_plan = run(spark, text, "auto")
    assert "__sparkseq_key_hash" in auto_plan and "_chunk" in auto_plan
    assert sum(r["n"] for r in want) > 0
    assert_same_rows(want, got)


def test_task_keys_land_in_their_tasks(spark) -> None:
    """Spark's hash partitioning into n tasks sends ``task_keys(spark, n)[p]`` to task p."""
    from sparkseq.running.execution_paths import task_keys

    keys = task_keys(spark, 7)
    assert keys is not None and len(set(keys)) == 7
    spark.createDataFrame([(k,) for k in keys], "t bigint").createOrReplaceTempView("split_task_keys")
    rows = spark.sql("SELECT t, spark_partition_id() AS p FROM (SELECT /*+ REPARTITION(7, t) */ * "
                     "FROM split_task_keys)").collect()
    assert sorted((r["p"], r["t"]) for r in rows) == list(enumerate(keys))


@pytest.mark.parametrize("path", ["time-split", "auto"])
def test_split_over_a_concept_hierarchy_equals_grouped(spark, events: str, small_thresholds: None,
                                                       isolated_hierarchies: None, path: str) -> None:
    """Symbols that are inner nodes of a hierarchy: a row is an instance of several symbols
    (an N row of N and of CN, negated in one role and bound in the other) and the chunks
    still add up to the grouped path's rows."""
    sparkseq.register_hierarchy(spark, "split_kinds", [("A", "AB"), ("B", "AB"), ("C", "CN"), ("N", "CN"),
                                                       ("AB", "ALL"), ("CN", "ALL")])
    text = (f"SELECT * FROM {events} MATCH_AGGREGATE (PARTITION BY k ORDER BY ts PATTERN SEQ(!C, AB, !N, CN, !A) "
            "TYPE BY type HIERARCHY split_kinds MEASURES COUNT(*) AS n, SUM(AB.v) AS sv, MAX(CN.f) AS mx, "
            "COUNT(CN) AS nc WITHIN 35) AS m ORDER BY ALL")
    want, _ = run(spark, text, "grouped")
    got, split_plan = run(spark, text, path)
    assert "_chunk" in split_plan
    assert sum(r["n"] for r in want) > 0
    assert_same_rows(want, got)


def test_a_group_over_a_million_rows_runs_in_chunks_with_the_same_answer(spark) -> None:
    """One key of 1.2 M rows: the grouped path's worker evaluates it in time chunks
    (udafs.kernels.incremental.timesplit.evaluate_in_chunks, over GROUP_CHUNK_ROWS rows); its
    answer, and the time split's whose tasks cut their chunks too, equal the kernel's
    on the whole group, and the ones of a DOUBLE sum (never chunked) still agree."""
    import numpy as np

    from udafs.kernels.evaluate import evaluate_group
    from udafs.kernels.incremental.timesplit import GROUP_CHUNK_ROWS
    from udafs.plan import Element, Measure, MeasureKind, Plan, ValueType

    n = 1_200_000
    assert n > GROUP_CHUNK_ROWS
    spark.range(n).selectExpr("0 AS k", f"pmod(xxhash64(id), {n * 6}) AS ts",
                              "CAST(pmod(xxhash64(id, 7), 3) AS INT) AS s",
                              "CAST(pmod(xxhash64(id, 5), 100) AS INT) AS v").createOrReplaceTempView("one_big_key")
    text = ("SELECT * FROM one_big_key MATCH_AGGREGATE (PARTITION BY k ORDER BY ts PATTERN SEQ(A, B, C) "
            "DEFINE A AS s = 0, B AS s = 1, C AS s = 2 MEASURES COUNT(*) AS n, SUM(B.v) AS sv, MAX(C.v) AS mx "
            "WITHIN 600) AS m")
    table = spark.table("one_big_key").toArrow()
    ts, s, v = (table.column(c).to_numpy() for c in ("ts", "s", "v"))
    plan = Plan(symbols=("A", "B", "C"), elements=(Element(0), Element(1), Element(2)), negations=(0,) * 4,
                within=600, columns=(ValueType.INT,),
                measures=(Measure(MeasureKind.COUNT_STAR, name="n"), Measure(MeasureKind.SUM, 1, 0, "sv"),
                          Measure(MeasureKind.MAX, 2, 0, "mx")))
    ok = np.ones(n, dtype=bool)
    whole = evaluate_group(plan, ts, (1 << s).astype(np.int64), [(v.astype(np.int64), ok)])
    want = [int(x[0]) for x in whole.values]
    assert want[0] > 0
    try:
        for path in ("grouped", "time-split"):
            rows, _ = run(spark, text, path)
            assert [(r["k"], r["n"], r["sv"], r["mx"]) for r in rows] == [(0, *want)], path
    finally:
        spark.conf.unset(PATH_CONF)  # the session is shared with the tests after this one
