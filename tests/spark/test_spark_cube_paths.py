"""E-Cube statements over a big key on local Spark: each cuboid its own statement on its own
path, UNION ALL (:mod:`sql_rewrites.planning.cube_paths`), with exactly the grouped cube's rows.

Small thresholds set in the session make the one key of 600 rows "big" (split over 50
rows, chunks of about 40, streamed over 100); the grouped cube (``sparkseq.path=grouped``:
one engine call per key for every cuboid) is the reference.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator

import pytest

import sparkseq
from sparkseq.running.execution_paths import PATH_CONF, SPLIT_ROWS_CONF, STREAM_ROWS_CONF
from sql_rewrites.errors import SqlRewriteError
from tests.spark.test_spark_timesplit import assert_same_rows

SECTORS = [("DELL", "Computer"), ("IBM", "Computer"), ("GS", "Finance"), ("QQQ", "Finance"),
           ("EFC", "Education")]
#: Hierarchy cube, roll-up form: a negation (at the edge once DELL is deleted), a measure of
#: DELL, NULL in the cuboids that delete it, and an AVG of doubles (rounding may differ).
ROLLUP = ("PATTERN SEQ(DELL, !EFC, GS) CUBE (CONCEPT ROLLUP 1, PATTERN ROLLUP 1, PATTERN ROLLUP 2) "
          "TYPE BY company HIERARCHY sectors MEASURES COUNT(*) AS n, SUM(DELL.price) AS sp, AVG(GS.f) AS ag "
          "WITHIN 30")
#: List form with SLIDE: SEQ(Computer, GS) is derived from DELL, IBM and a hidden part in the cube.
LISTED = ("PATTERNS (SEQ(Computer, GS), SEQ(DELL, GS), SEQ(IBM, GS)) TYPE BY company HIERARCHY sectors "
          "MEASURES COUNT(*) AS n, MAX(IBM.price) AS mp WITHIN 40 SLIDE 20")
#: No WITHIN: not splittable, so the big key streams.
NO_WINDOW = ("PATTERN SEQ(DELL, !EFC, GS) CUBE (CONCEPT ROLLUP 1, PATTERN ROLLUP 2) TYPE BY company "
             "HIERARCHY sectors MEASURES COUNT(*) AS n, MIN(DELL.price) AS mi")


@pytest.fixture(scope="module")
def events(spark) -> str:
    """One key of 600 rows, four keys of 20, a NULL key of 30."""
    rng = random.Random(16)
    rows = []
    for key, n in [("hot", 600), *((f"s{k}", 20) for k in range(4)), (None, 30)]:
        for _ in range(n):
            company = rng.choice(["DELL", "IBM", "GS", "QQQ", "EFC", "Computer"])
            rows.append((key, rng.randint(0, 3000), company, None if rng.random() < 0.1 else rng.randint(1, 50),
                         rng.random()))
    spark.createDataFrame(rows, "k string, ts bigint, company string, price int, f double"
                          ).createOrReplaceTempView("cube_path_events")
    return "cube_path_events"


@pytest.fixture()
def small_thresholds(spark, small_thresholds: None, isolated_hierarchies: None) -> Iterator[None]:
    """conftest's small path thresholds, with the sectors hierarchy registered."""
    sparkseq.register_hierarchy(spark, "sectors", SECTORS)
    yield


def statement(events: str, body: str) -> str:
    return f"SELECT * FROM {events} MATCH_AGGREGATE (PARTITION BY k ORDER BY ts {body}) AS m"


def ordered(rows: list) -> list:
    """Rows in a fixed order (by key, window, pattern: floats never decide it)."""
    return sorted(rows, key=lambda r: tuple((v is None, str(v)) for v in r))


def run(spark, text: str, path: str) -> tuple[list, str, list[str]]:
    """Rows (sorted), the analysed plan and the column types of ``text`` on ``path``."""
    spark.conf.set(PATH_CONF, path)
    frame = sparkseq.sql(spark, text)
    types = [f.simpleString() for f in frame.schema.fields]
    return ordered(frame.collect()), frame._jdf.queryExecution().analyzed().toString(), types


@pytest.fixture(scope="module")
def grouped(spark) -> Callable[[str], tuple[list, str, list[str]]]:
    """:func:`run` of a statement with ``sparkseq.path=grouped``, the reference, run once per
    statement in the module (the tests that share it compare other paths with it)."""
    done: dict[str, tuple[list, str, list[str]]] = {}

    def reference(text: str) -> tuple[list, str, list[str]]:
        if text not in done:
            done[text] = run(spark, text, "grouped")
        return done[text]

    return reference


@pytest.mark.parametrize("body, path, marker, absent", [
    (ROLLUP, "auto", "_chunk", "sp"),
    (LISTED, "time-split", "_chunk", "mp"),
    (NO_WINDOW, "auto", "sparkseq_stream_", "mi"),
])
def test_big_key_cube_runs_per_cuboid_with_the_grouped_rows(spark, events: str, small_thresholds: None, grouped,
                                                            body: str, path: str, marker: str, absent: str) -> None:
    text = statement(events, body)
    want, grouped_plan, grouped_types = grouped(text)
    got, plan, types = run(spark, text, path)
    assert "Union" in plan and marker in plan and "Union" not in grouped_plan
    assert types == grouped_types  # same columns, names, types and order
    assert {r["pattern"] for r in want} == {r["pattern"] for r in got} and len(want) > 8
    assert sum(r["n"] for r in want) > 0
    assert any(r[absent] is None for r in want)  # NULL in the cuboids without its symbol
    assert_same_rows(want, got)


def test_moderate_keys_keep_one_grouped_call(spark, events: str, small_thresholds: None) -> None:
    """The source's size is unknown, so the statement counts its keys as it runs: none over
    1,000 rows, and only the one grouped call runs."""
    from tests.spark.test_spark_jobs_before_rows import executed

    spark.conf.set(SPLIT_ROWS_CONF, "1000")
    spark.conf.set(STREAM_ROWS_CONF, "1000")
    spark.conf.set(PATH_CONF, "auto")
    frame = sparkseq.sql(spark, statement(events, ROLLUP))
    frame.collect()
    ran = executed(frame)
    assert "sparkseq_agg_" in ran and "_chunk" not in ran and "sparkseq_stream_" not in ran


def test_every_surface_takes_the_cuboid_paths(spark, events: str, small_thresholds: None, grouped) -> None:
    """spark.sql (parser extension), the DataFrame API and sparkseq.cube split the big key too."""
    text = statement(events, ROLLUP)
    want, _, _ = grouped(text)
    spark.conf.set(PATH_CONF, "auto")
    by_sql = spark.sql(text)
    assert "_chunk" in by_sql._jdf.queryExecution().analyzed().toString()
    assert_same_rows(want, ordered(by_sql.collect()))
    by_api = spark.table(events).transform(lambda df: sparkseq.match_aggregate(
        df, partition_by="k", order_by="ts", pattern="SEQ(DELL, !EFC, GS)",
        cube=["CONCEPT ROLLUP 1", "PATTERN ROLLUP 1", "PATTERN ROLLUP 2"], type_by="company", hierarchy="sectors",
        measures={"n": "COUNT(*)", "sp": "SUM(DELL.price)", "ag": "AVG(GS.f)"}, within=30))
    assert "_chunk" in by_api._jdf.queryExecution().analyzed().toString()
    assert_same_rows(want, ordered(by_api.collect()))
    cube = sparkseq.cube(spark, text)
    assert "_chunk" in cube.df._jdf.queryExecution().analyzed().toString()
    base = cube.at("SEQ(DELL, !EFC, GS)")
    assert base.from_cube
    assert_same_rows([r for r in want if r["pattern"] == "SEQ(DELL, !EFC, GS)"], ordered(base.df.collect()))


def test_explain_names_each_cuboids_path(spark, events: str, small_thresholds: None) -> None:
    text = statement(events, ROLLUP)
    spark.conf.set(PATH_CONF, "time-split")
    explained = sparkseq.explain(spark, text)
    assert "path          each cuboid its own statement, UNION ALL (forced by sparkseq.path: each cuboid " \
           "time-split)" in explained
    assert "SEQ(Computer, GS)" in explained and explained.count("time-split (forced by sparkseq.path)") == 6
    spark.conf.set(PATH_CONF, "auto")
    assert "every cuboid in one engine call per key, and for the keys over 50 rows, counted when the statement " \
           "runs, each cuboid its own statement, UNION ALL" in sparkseq.explain(spark, text)
    spark.conf.set(PATH_CONF, "grouped")
    assert "grouped, every cuboid in one engine call per key (forced by sparkseq.path)" in sparkseq.explain(
        spark, text)


def test_forcing_a_path_a_cuboid_cannot_take_names_it(spark, events: str, small_thresholds: None) -> None:
    spark.conf.set(PATH_CONF, "time-split")
    with pytest.raises((ValueError, SqlRewriteError), match=r"cuboid SEQ\(DELL, !EFC, GS\): .*no WITHIN"):
        sparkseq.sql(spark, statement(events, NO_WINDOW))
