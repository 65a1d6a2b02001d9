"""SUM / AVG / MIN / MAX over DECIMAL(p, s) columns — up to 38 digits — through
``sparkseq.sql``, against Spark itself.

The reference is Spark's own ``sum`` / ``avg`` / ``min`` / ``max`` over the multiset the
measures are defined on (SEMANTICS section 5): every (match, row bound to X) pair the
oracle enumerates, one row per pair, in a column of the same DECIMAL type. So the result
types, every digit (including Spark's rounding of the average) and the overflow
behaviour (an error, with ANSI mode on) are Spark's.
"""

from __future__ import annotations

import dataclasses
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession

from sparkseq.statements.sql_api import sql
from tests import oracle
from tests.sql_cases import match_aggregate
from tests.test_kernel_oracle import events, plans
from udafs.plan import CountType, Measure, MeasureKind, Plan, ValueType

SETTINGS = settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
# up to 18 digits ((10, 2), (18, 18), (18, 0)) the engine gets the unscaled BIGINTs
TYPES = [(38, 0), (38, 10), (38, 36), (30, 30), (20, 4), (10, 2), (18, 18), (18, 0)]
KINDS = (MeasureKind.SUM, MeasureKind.AVG, MeasureKind.MIN, MeasureKind.MAX)


@st.composite
def cases(draw: st.DrawFn) -> tuple[Plan, list[oracle.Events], tuple[int, int]]:
    """A random plan measuring one symbol's DECIMAL(p, s) ``d``, and up to 12 partitions whose
    values use every digit (and stay far enough below 10^p that sums rarely overflow)."""
    plan = draw(plans(window=draw(st.sampled_from(["none", "within", "slide"])), sql=True))
    symbol = draw(st.sampled_from([e.symbol for e in plan.elements]))
    precision, scale = draw(st.sampled_from(TYPES))
    places, digits = min(38, scale + 4) - scale, min(38, precision + 10)  # AVG, as the compiler sets it
    measures = (Measure(MeasureKind.COUNT_STAR, name="n"),
                *(Measure(kind, symbol, 0, kind.value, *((places, digits) if kind is MeasureKind.AVG else (0, 0)))
                  for kind in KINDS))
    plan = dataclasses.replace(plan, measures=measures, columns=(ValueType.DECIMAL,),
                               count_type=draw(st.sampled_from([CountType.BIGINT, CountType.DECIMAL])))
    top = 10**precision // 1000  # a thousand values of this size fit, also in Spark's SUM of DECIMAL(38, s)
    value = st.one_of(st.none(), st.integers(-top, top), st.sampled_from([top, -top, 0, 1, -1]))
    groups = []
    for ev in draw(st.lists(events(plan), min_size=1, max_size=12)):
        if oracle.cheap(plan, ev):
            groups.append(oracle.Events(ev.ts, ev.mask, ([draw(value) for _ in ev.ts],)))
    return plan, groups, (precision, scale)


def decimal(unscaled: int | None, scale: int) -> Decimal | None:
    return None if unscaled is None else Decimal(unscaled).scaleb(-scale)


def events_view(spark: SparkSession, groups: list[oracle.Events], dtype: str) -> None:
    rows = [(g, t, m, decimal(v, int(dtype.split(",")[1][:-1])))
            for g, ev in enumerate(groups) for t, m, v in zip(ev.ts, ev.mask, ev.values[0])]
    spark.createDataFrame(rows, f"g int, ts bigint, mask bigint, d {dtype}").createOrReplaceTempView("dec_cases")


def pairs_view(spark: SparkSession, plan: Plan, groups: list[oracle.Events], dtype: str) -> None:
    """One row per (match, row bound to the measured symbol), per partition and window."""
    symbol = plan.measures[1].symbol
    positions = [i for i, e in enumerate(plan.elements) if e.symbol == symbol]
    scale = int(dtype.split(",")[1][:-1])
    rows = []
    for g, ev in enumerate(groups):
        spans = [(None, oracle.matches(ev, plan))] if plan.slide is None else \
            [(a, oracle.window_matches(ev, plan, a, b)) for a, b in oracle.windows(ev, plan)]
        rows += [(g, start, decimal(ev.values[0][r], scale)) for start, ms in spans for m in ms
                 for i in positions for r in m[i]]
    spark.createDataFrame(rows, f"g int, ws bigint, d {dtype}").createOrReplaceTempView("dec_pairs")


def check(spark: SparkSession, plan: Plan, groups: list[oracle.Events], precision: int, scale: int) -> None:
    dtype = f"decimal({precision},{scale})"
    events_view(spark, groups, dtype)
    pairs_view(spark, plan, groups, dtype)
    bounds = "window_start AS ws" if plan.slide else "CAST(NULL AS BIGINT) AS ws"
    ours = sql(spark, f"SELECT g, {bounds}, sum, avg, min, max FROM "
                      f"{match_aggregate(plan, 'dec_cases', columns=('d',))}")
    sparks = spark.sql("SELECT g, ws, sum(d) AS sum, avg(d) AS avg, min(d) AS min, max(d) AS max FROM dec_pairs "
                       "GROUP BY g, ws")
    assert [f.dataType for f in ours.schema.fields[2:]] == [f.dataType for f in sparks.schema.fields[2:]]
    try:
        want = {(r.g, r.ws): tuple(r)[2:] for r in sparks.collect()}
    except PySparkException as spark_error:  # Spark's SUM overflows: so does ours
        with pytest.raises(PySparkException, match="NUMERIC_VALUE_OUT_OF_RANGE|does not fit DECIMAL"):
            ours.collect()
        assert "NUMERIC_VALUE_OUT_OF_RANGE" in str(spark_error) or "ARITHMETIC_OVERFLOW" in str(spark_error)
        return
    have = {(r.g, r.ws): tuple(r)[2:] for r in ours.collect()}
    assert all(v == (None,) * 4 for k, v in have.items() if k not in want)  # windows without matches
    assert {k: v for k, v in have.items() if k in want} == want


def test_decimal_measures_are_sparks(spark) -> None:
    @SETTINGS
    @given(cases())
    def run(case: tuple[Plan, list[oracle.Events], tuple[int, int]]) -> None:
        plan, groups, (precision, scale) = case
        check(spark, plan, groups, precision, scale)

    run()


def test_38_digit_values_and_overflow_like_sparks(spark) -> None:
    """Worked cases: 38-digit values exactly (a DOUBLE would keep 17 digits); the average
    rounded half up as Spark's; a sum past 38 digits fails as Spark's does."""
    big = "12345678901234567890123456789.123456789"  # DECIMAL(38, 9)
    spark.sql(f"""CREATE OR REPLACE TEMP VIEW dec38 AS SELECT * FROM VALUES
        (1, 1L, 'a', CAST('{big}' AS DECIMAL(38, 9))), (1, 2L, 'b', CAST('-{big}' AS DECIMAL(38, 9))),
        (1, 3L, 'b', CAST('0.000000001' AS DECIMAL(38, 9))), (1, 4L, 'b', CAST('{big}' AS DECIMAL(38, 9)))
        AS t(k, ts, kind, d)""")
    text = """SELECT {} FROM {} MATCH_AGGREGATE (PARTITION BY k ORDER BY ts PATTERN SEQ(x, y+)
        DEFINE x AS kind = 'a', y AS kind = 'b' MEASURES SUM(y.d) AS s, AVG(y.d) AS a, MIN(y.d) AS lo,
        MAX(y.d) AS hi WITHIN 10) AS m"""
    frame = sql(spark, text.format("s, a, lo, hi", "dec38"))
    assert [f.dataType.simpleString() for f in frame.schema.fields] == [
        "decimal(38,9)", "decimal(38,13)", "decimal(38,9)", "decimal(38,9)"]
    [row] = frame.collect()
    # y+ binds every non-empty subset of the three b rows: each row in 4 of the 7 matches
    assert row.s == 4 * Decimal("0.000000001")
    assert (row.lo, row.hi) == (Decimal(f"-{big}"), Decimal(big))
    assert str(row.a) == "3.333E-10"  # 4e-9 / 12 rounded half up to 13 places: 0.0000000003333
    spark.sql("CREATE OR REPLACE TEMP VIEW dec38_over AS SELECT k, ts, kind, "
              "CAST('99999999999999999999999999999.999999999' AS DECIMAL(38, 9)) AS d FROM dec38")
    with pytest.raises(PySparkException, match="does not fit DECIMAL"):  # 12 such values: 40 digits
        sql(spark, text.format("s", "dec38_over")).collect()
    with pytest.raises(PySparkException, match="ARITHMETIC_OVERFLOW"):  # Spark's own SUM, likewise
        spark.sql("SELECT sum(d) FROM (SELECT d FROM dec38_over CROSS JOIN range(3))").collect()
