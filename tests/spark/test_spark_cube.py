"""E-Cube end to end on local Spark: every cuboid of a generated statement equals the oracle.

One engine call per partition computes all cuboids (:mod:`udafs.kernels.multiplan.many`); the rows
of cuboid ``i`` must be exactly what the oracle says for its plan, its measures that
do not apply must be NULL, and ``levels`` must name its concepts' depths.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings

import sparkseq
from sql_rewrites.analysis.analyzer import analyze_sql
from sql_rewrites.errors import CubeError, EdgeNegationWithoutWindowError
from tests.support import oracle
from tests.support.cube_cases import CubeCase, cube_cases, masks
from tests.support.spark_cases import assert_same, expected, got
from tests.support.sql_cases import jobs_started

SCHEMA = {"ev": {"k": "int", "ts": "bigint", "tp": "string", "v": "bigint"}}
SETTINGS = settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))


def run_case(spark, case: CubeCase) -> None:  # noqa: ANN001
    try:
        [q] = analyze_sql(case.sql(), SCHEMA, hierarchies={"h": case.pairs})
    except EdgeNegationWithoutWindowError:
        return
    # partition 0 holds every event, partition 1 every other one
    parts = [list(range(len(case.ts))), list(range(0, len(case.ts), 2))]
    rows = [(k, case.ts[r], case.types[r], case.values[r]) for k, idx in enumerate(parts) for r in idx]
    rows.append((0, None, "a", 1))  # a NULL time takes part in nothing
    spark.createDataFrame(rows, "k int, ts bigint, tp string, v bigint").createOrReplaceTempView("ev")
    sparkseq.register_hierarchy(spark, "h", list(case.pairs))
    result = sparkseq.sql(spark, case.sql()).collect()
    groups = []
    for idx in parts:
        types = [case.types[r] for r in idx]
        groups.append(oracle.Events([case.ts[r] for r in idx], masks(q.symbols, types),
                                    [[case.values[r] for r in idx]]))
    measure_names = [m.name for m in q.measures]
    for i in q.cube.reported:
        plan = q.plan.plans[i]
        if not all(oracle.cheap(plan, ev) for ev in groups):
            continue
        mine = [r for r in result if r["pattern"] == q.cube.texts[i]]
        assert all(r["levels"] == list(q.cube.levels[i]) for r in mine)
        own = {m.name for m in plan.measures}
        assert all(r[n] is None for r in mine for n in measure_names if n not in own)
        assert_same(plan, got(plan, mine, key="k"), expected(plan, groups))
    assert {r["pattern"] for r in result} <= {q.cube.texts[i] for i in q.cube.reported}


@SETTINGS
@given(case=cube_cases(max_events=7))
def test_rollup_cube_on_spark_equals_oracle(spark, case: CubeCase) -> None:  # noqa: ANN001
    run_case(spark, case)


@SETTINGS
@given(case=cube_cases(listed=True, max_events=7))
def test_listed_cube_on_spark_equals_oracle(spark, case: CubeCase) -> None:  # noqa: ANN001
    run_case(spark, case)


def test_cube_errors_start_no_job(spark) -> None:  # noqa: ANN001
    spark.createDataFrame([(1, 1, "a", 1)], "k int, ts bigint, tp string, v bigint").createOrReplaceTempView("ev")
    sparkseq.register_hierarchy(spark, "h", [("a", "X"), ("b", "X")])
    before = jobs_started(spark)
    with pytest.raises(CubeError, match="'b' is not an ancestor of a"):
        sparkseq.sql(spark, "SELECT * FROM ev MATCH_AGGREGATE (PARTITION BY k ORDER BY ts PATTERN SEQ(a, b) "
                            "CUBE (CONCEPT ROLLUP 1 TO b) TYPE BY tp HIERARCHY h) AS m")
    assert jobs_started(spark) == before


TICKS = [(d, t, tk, float(p)) for d in (1, 2) for t, tk, p in
         [(1, "DELL", 10), (2, "IBM", 11), (3, "QQQ", 5), (4, "EFC", 3), (5, "GS", 6), (6, "ANAT", 7), (7, "INTC", 8),
          (8, "QQQ", 9), (9, "ANAT", 2)][: 9 - d]]
COMPANIES = [("DELL", "Computer"), ("IBM", "Computer"), ("INTC", "Computer"), ("QQQ", "Finance"), ("GS", "Finance"),
             ("EFC", "Education"), ("ANAT", "Education"), ("Computer", "Tech"), ("Finance", "Services"),
             ("Education", "Services")]
CUBE = """SELECT * FROM ticks MATCH_AGGREGATE (PARTITION BY day ORDER BY ts
  PATTERN SEQ(DELL, QQQ, ANAT) CUBE (CONCEPT ROLLUP 1, CONCEPT ROLLUP 2, PATTERN ROLLUP 2)
  TYPE BY ticker HIERARCHY companies MEASURES COUNT(*) AS n, SUM(QQQ.price) AS s WITHIN 100) AS m"""


@pytest.fixture(scope="module")
def singles(spark) -> Callable[[str], dict[int, tuple]]:  # noqa: ANN001
    """:func:`single` over :data:`TICKS`, run once per pattern in the module (both navigation
    tests compare the cube with SEQ(Computer, QQQ, ANAT) alone)."""
    done: dict[str, dict[int, tuple]] = {}

    def reference(pattern: str) -> dict[int, tuple]:
        if pattern not in done:
            done[pattern] = single(spark, pattern)
        return done[pattern]

    return reference


def ticks_view(spark) -> None:  # noqa: ANN001
    """The view ``ticks`` of :data:`TICKS` and the hierarchy ``companies``."""
    spark.createDataFrame(TICKS, "day int, ts bigint, ticker string, price double").createOrReplaceTempView("ticks")
    sparkseq.register_hierarchy(spark, "companies", COMPANIES)


def single(spark, pattern: str) -> dict[int, tuple]:  # noqa: ANN001
    """The pattern as its own plain MATCH_AGGREGATE (no cube) over :data:`TICKS`: day -> (n, s).
    The cube's SUM(QQQ.price) follows QQQ's base position 2 through roll-ups; NULL once it is deleted."""
    elements = pattern[4:-1].split(", ")
    measured = len(elements) == 3
    measures = "COUNT(*) AS n" + (f", SUM({elements[1]}.price) AS s" if measured else "")
    rows = sparkseq.sql(spark, f"""SELECT * FROM ticks MATCH_AGGREGATE (PARTITION BY day ORDER BY ts
        PATTERN {pattern} TYPE BY ticker HIERARCHY companies MEASURES {measures} WITHIN 100) AS m""").collect()
    return {r["day"]: (r["n"], r["s"] if measured else None) for r in rows}


def test_rollup_and_drilldown_navigate_the_cube(spark, singles) -> None:  # noqa: ANN001
    ticks_view(spark)
    cube = sparkseq.cube(spark, CUBE)
    assert len(cube.patterns) == 12  # 3 levels of DELL x (3 levels of QQQ + deleted)
    at = cube.at("SEQ(DELL, QQQ, ANAT)")
    steps = [
        (lambda v: sparkseq.rollup(v, position=1, to="Computer"), "SEQ(Computer, QQQ, ANAT)", True),
        (lambda v: sparkseq.rollup(v, position=2, to="Services"), "SEQ(Computer, Services, ANAT)", True),
        (lambda v: sparkseq.rollup(v, drop=2), "SEQ(Computer, ANAT)", True),
        (lambda v: sparkseq.drilldown(v, position=1, to="INTC"), "SEQ(INTC, ANAT)", False),
        (lambda v: sparkseq.drilldown(v, insert=2, symbol="QQQ"), "SEQ(INTC, QQQ, ANAT)", False),
        (lambda v: sparkseq.rollup(v, position=1, to="Tech"), "SEQ(Tech, QQQ, ANAT)", True),
    ]
    for step, pattern, from_cube in steps:
        at = step(at)
        assert (at.pattern, at.from_cube) == (pattern, from_cube)
        rows = at.df.collect()
        assert {r["pattern"] for r in rows} <= {pattern}
        got = {r["day"]: (r["n"], r["s"]) for r in rows}
        assert got == singles(pattern), pattern
    with pytest.raises(CubeError, match=r"'Finance' is not an ancestor of Tech \(its ancestors: none\)"):
        sparkseq.rollup(at, position=1, to="Finance")


def test_sql_navigation_over_a_cached_cube(spark, singles) -> None:  # noqa: ANN001
    ticks_view(spark)
    sparkseq.sql(spark, f"CACHE TABLE cube AS {CUBE}")
    rows = sparkseq.sql(spark, "SELECT day, n FROM cube WHERE pattern = 'SEQ(Computer, QQQ, ANAT)'").collect()
    assert {r.day: r.n for r in rows} == {d: n for d, (n, _) in singles("SEQ(Computer, QQQ, ANAT)").items()}
    sector = sparkseq.sql(spark, "SELECT DISTINCT pattern FROM cube WHERE levels[0] = 1").collect()
    assert {r.pattern for r in sector} == {"SEQ(Computer, QQQ, ANAT)", "SEQ(Computer, Finance, ANAT)",
                                           "SEQ(Computer, Services, ANAT)", "SEQ(Computer, ANAT)"}
    spark.sql("UNCACHE TABLE cube")
