"""End to end on local Spark: the grouped-aggregate engine functions against the oracle.

Each hypothesis example puts many groups into one table and runs one query (a Spark
query costs about a second), so a few dozen examples cover hundreds of groups.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.errors import PythonException, SparkRuntimeException

import sparkseq
from tests import oracle
from tests.spark_cases import assert_same, events_frame, expected, got
from tests.test_kernel_oracle import events, plans
from udafs.plan import CountType, Element, Measure, MeasureKind, Plan, Strategy, ValueType

SPARK_SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))


@st.composite
def cases(draw: st.DrawFn, window: str) -> tuple[Plan, list[oracle.Events]]:
    """One random plan and up to 25 random groups of events for it."""
    plan = draw(plans(window=window))
    groups = draw(st.lists(events(plan), min_size=1, max_size=25))
    return plan, [ev for ev in groups if oracle.cheap(plan, ev)]


def run_udaf(spark, plan: Plan, groups: list[oracle.Events]) -> None:
    events_frame(spark, groups).createOrReplaceTempView("cases")
    sql = sparkseq.udaf_query(spark, plan, "cases", keys=["g"], values=["i", "f"])
    assert_same(plan, got(plan, spark.sql(sql).collect()), expected(plan, groups))


@pytest.mark.parametrize("window", ["none", "within", "slide"])
def test_udaf_matches_oracle(spark, window: str) -> None:
    @SPARK_SETTINGS
    @given(cases(window))
    def check(case: tuple[Plan, list[oracle.Events]]) -> None:
        run_udaf(spark, *case)

    check()


# Sharon, Fig. 7 (SEMANTICS section 8): a1 b2 a3 c3 b4 b5 d5 c7 d8, SEQ(A, B, C, D) -> 7.
FIG7 = [(1, "a"), (2, "b"), (3, "a"), (3, "c"), (4, "b"), (5, "b"), (5, "d"), (7, "c"), (8, "d")]
ABCD = Plan(symbols=("A", "B", "C", "D"), elements=tuple(Element(k) for k in range(4)), negations=(0,) * 5)


def fig7_view(spark, name: str = "fig7") -> None:
    rows = [("p1", t, 1 << "abcd".index(c)) for t, c in FIG7] + [("p2", 1, 1)]
    spark.createDataFrame(rows, "k string, ts bigint, mask bigint").createOrReplaceTempView(name)


def test_fixed_signature_functions(spark) -> None:
    fig7_view(spark)
    slide = dataclasses.replace(ABCD, within=6, slide=2)
    rows = spark.sql(
        "SELECT k, sparkseq_count(:plan, ts, mask) AS n, sparkseq_count(:plan, ts, mask, k) AS named, "
        "sparkseq_count_windows(:slide, ts, mask) AS w FROM fig7 GROUP BY k ORDER BY k",
        args={"plan": ABCD.to_json(), "slide": slide.to_json()}).collect()
    assert [(r.k, r.n, r.named) for r in rows] == [("p1", 7, 7), ("p2", 0, 0)]
    ev = oracle.Events([t for t, _ in FIG7], [1 << "abcd".index(c) for _, c in FIG7])
    assert [(w.window_start, w.window_end, w["count"]) for w in rows[0].w] == \
        [(a, b, vals[0]) for a, b, vals in oracle.evaluate(ev, slide)]


def test_fixed_function_refuses_the_wrong_window_kind(spark) -> None:
    fig7_view(spark)
    slide = dataclasses.replace(ABCD, within=6, slide=2)
    with pytest.raises(PythonException, match="sparkseq_count needs a plan without SLIDE"):
        spark.sql("SELECT sparkseq_count(:p, ts, mask) FROM fig7 GROUP BY k", args={"p": slide.to_json()}).collect()


KLEENE = Plan(symbols=("A",), elements=(Element(0, kleene=True),), negations=(0, 0))


def overflow_view(spark) -> None:
    """70 distinct times: SEQ(A+) has 2**70 - 1 matches, more than BIGINT holds."""
    spark.range(70).selectExpr("'eu' AS region", "'cust-42' AS customer", "id AS ts", "1L AS mask") \
        .union(spark.range(3).selectExpr("'eu'", "'small'", "id", "1L")).createOrReplaceTempView("many")


def test_overflow_names_the_partition(spark) -> None:
    overflow_view(spark)
    sql = sparkseq.udaf_query(spark, KLEENE, "many", keys=["region", "customer"])
    with pytest.raises(SparkRuntimeException) as err:
        spark.sql(sql).collect()
    message = str(err.value)
    assert 'in partition {"region":"eu","customer":"cust-42"}' in message
    assert "does not fit BIGINT; write COUNT TYPE DECIMAL (exact, DECIMAL(38, 0))" in message


@pytest.mark.parametrize(("count_type", "want"), [(CountType.DECIMAL, 2**70 - 1), (CountType.DOUBLE, 2.0**70)])
def test_wide_count_types(spark, count_type: CountType, want: object) -> None:
    overflow_view(spark)
    plan = dataclasses.replace(KLEENE, count_type=count_type)
    rows = sparkseq.aggregate(spark, plan, "many", keys=["customer"]).orderBy("customer").collect()
    assert [(r.customer, r["count"]) for r in rows] == [("cust-42", want), ("small", 7)]


def test_identifiers_and_literals_are_quoted(spark) -> None:
    """Odd names survive: quotes, backticks and backslashes in keys, symbols, measures."""
    fig7_view(spark)
    spark.sql("CREATE OR REPLACE TEMP VIEW `odd view` AS SELECT k AS `we``ird key`, ts AS `t's`, mask, "
              "CAST(ts AS DOUBLE) AS price FROM fig7")
    plan = Plan(symbols=("A'1", 'B"2', "C\\3", "D`4"), elements=ABCD.elements, negations=ABCD.negations,
                measures=(Measure(MeasureKind.COUNT_STAR, name="it's"),
                          Measure(MeasureKind.SUM, symbol=3, column=0, name='"sum"')),
                columns=(ValueType.FLOAT,))
    df = sparkseq.aggregate(spark, plan, "odd view", keys=["we`ird key"], ts="`t's`", values=["price * 1"])
    assert df.columns == ["we`ird key", "it's", '"sum"']
    assert sorted(map(tuple, df.collect())) == [("p1", 7, 5.0 * 1 + 8.0 * 6), ("p2", 0, None)]


@pytest.mark.parametrize("bad", ["mask; DROP TABLE fig7", "(SELECT 1)", "mask)) FROM x --"])
def test_expressions_that_are_not_one_expression_are_refused(spark, bad: str) -> None:
    with pytest.raises(sparkseq.QueryError, match="mask expression"):
        sparkseq.udaf_query(spark, ABCD, "fig7", keys=["k"], mask=bad)


def test_without_partition_by(spark) -> None:
    fig7_view(spark)
    rows = sparkseq.aggregate(spark, ABCD, "fig7", mask="CASE WHEN k = 'p1' THEN mask ELSE 0 END").collect()
    assert [tuple(r) for r in rows] == [(7,)]
    assert sparkseq.aggregate(spark, ABCD, "fig7", mask="0").collect() == []


def test_registration_is_cached_per_session(spark) -> None:
    a = sparkseq.engine_function(spark, ABCD)
    b = sparkseq.engine_function(spark, dataclasses.replace(ABCD))  # an equal plan
    c = sparkseq.engine_function(spark, dataclasses.replace(ABCD, within=3))  # the plan is bound into the function
    assert a == b != c
    assert spark.catalog.functionExists(a) and spark.catalog.functionExists(c)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(plan=plans(window="any"), count_type=st.sampled_from(list(CountType)))
def test_result_types_built_in_python_are_those_spark_parses(spark, plan: Plan, count_type: CountType) -> None:
    """Functions are registered with result types built in Python, not parsed by the JVM:
    the same types, for every fixed function and every engine function's result."""
    from sparkseq.spark import registration
    from udafs.workers import grouped as spark_udfs

    ddls = [spec.return_type for spec in registration.FUNCTIONS]
    ddls += [spark_udfs.output_ddl(dataclasses.replace(plan, count_type=count_type)), "binary",
             "ARRAY<STRUCT<m0: DECIMAL(38, 0), m1: DECIMAL(28, 4), t: TIMESTAMP_NTZ, `a b`: MAP<STRING, DOUBLE>>>"]
    for ddl in ddls:
        assert registration.return_type(ddl) == spark.sparkContext._parse_ddl(ddl), ddl


def test_contiguity_strategies_rank_every_source_row(spark) -> None:
    """udaf_query with a contiguity strategy passes the rank of every source row (also rows
    of no symbol, here mask 0): SEQ(A, B) over a1 x2 b3 | a1 b3 (two keys). PARTITION:
    only the second key's pair is contiguous; STRICT ranks the whole table, where the
    first key's x2 also lies between the second key's rows."""
    rows = [("p1", 1, 1), ("p1", 2, 0), ("p1", 3, 2), ("p2", 1, 1), ("p2", 3, 2)]
    spark.createDataFrame(rows, "k string, ts bigint, mask bigint").createOrReplaceTempView("contig_udaf")
    ab = Plan(symbols=("A", "B"), elements=(Element(0), Element(1)), negations=(0, 0, 0))
    got_counts = {}
    for strategy in (Strategy.PARTITION_CONTIGUITY, Strategy.STRICT_CONTIGUITY, Strategy.SKIP_TILL_ANY_MATCH):
        plan = dataclasses.replace(ab, strategy=strategy)
        result = sparkseq.aggregate(spark, plan, "contig_udaf", keys=["k"]).collect()
        got_counts[strategy] = {r.k: r[-1] for r in result}
    assert got_counts == {Strategy.PARTITION_CONTIGUITY: {"p1": 0, "p2": 1},
                          Strategy.STRICT_CONTIGUITY: {"p1": 0, "p2": 0},
                          Strategy.SKIP_TILL_ANY_MATCH: {"p1": 1, "p2": 1}}
