"""E-Cube end to end on local Spark: every cuboid of a generated statement equals the oracle.

One engine call per partition computes all cuboids (:mod:`udafs.kernels.many`); the rows
of cuboid ``i`` must be exactly what the oracle says for its plan, its measures that
do not apply must be NULL, and ``levels`` must name its concepts' depths.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings

import sparkseq
from sql_rewrites.analysis import analyze_sql
from sql_rewrites.errors import EdgeNegationWithoutWindowError
from tests import oracle
from tests.cube_cases import CubeCase, cube_cases, masks
from tests.spark_cases import assert_same, expected, got
from tests.sql_cases import jobs_started

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
    import pytest

    from sql_rewrites.errors import CubeError

    spark.createDataFrame([(1, 1, "a", 1)], "k int, ts bigint, tp string, v bigint").createOrReplaceTempView("ev")
    sparkseq.register_hierarchy(spark, "h", [("a", "X"), ("b", "X")])
    before = jobs_started(spark)
    with pytest.raises(CubeError, match="'b' is not an ancestor of a"):
        sparkseq.sql(spark, "SELECT * FROM ev MATCH_AGGREGATE (PARTITION BY k ORDER BY ts PATTERN SEQ(a, b) "
                            "CUBE (CONCEPT ROLLUP 1 TO b) TYPE BY tp HIERARCHY h) AS m")
    assert jobs_started(spark) == before
