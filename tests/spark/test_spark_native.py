"""The native path on local Spark: the same rows as the kernel path and the oracle.

Random plans of the native shapes (positive elements, repeated symbols, WITHIN or none,
COUNT measures, every COUNT TYPE) over random events with ties run through
:func:`sparkseq.sql` twice, forced native and forced grouped (the kernel path), and both
are compared with :func:`tests.support.oracle.evaluate` partition by partition.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from math import comb

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.errors import PySparkException

import sparkseq
from sparkseq.running.execution_paths import PATH_CONF
from sparkseq.statements.sql_api import sql
from sql_rewrites.planning.native import native_shape
from tests.conftest import run_property
from tests.kernels.test_kernel_oracle import events, plans
from tests.support import oracle
from tests.support.spark_cases import assert_same, events_frame, expected, got
from tests.support.sql_cases import select_sql
from udafs.plan import Element, Measure, MeasureKind, Plan

SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))


@pytest.fixture()
def path_conf(spark) -> Iterator[None]:
    yield
    spark.conf.unset(PATH_CONF)


@st.composite
def native_plans(draw: st.DrawFn) -> Plan:
    """Random plans cut down to the native shapes: no Kleene, no negation, no SLIDE, counts."""
    plan = draw(plans(max_len=5, max_kleene=0, window=draw(st.sampled_from(["none", "within"])), sql=True))
    counts = [m for m in plan.measures if m.kind in (MeasureKind.COUNT_STAR, MeasureKind.COUNT)]
    plan = dataclasses.replace(plan, negations=(0,) * (plan.length + 1), measures=tuple(counts))
    assert native_shape(plan) is None
    return plan


@st.composite
def cases(draw: st.DrawFn) -> tuple[Plan, list[oracle.Events]]:
    plan = draw(native_plans())
    return plan, draw(st.lists(events(plan), min_size=1, max_size=12))


def run(spark, plan: Plan, groups: list[oracle.Events], path: str, view: str = "native_cases") -> dict:
    events_frame(spark, groups).createOrReplaceTempView(view)
    spark.conf.set(PATH_CONF, path)
    return got(plan, sql(spark, select_sql(plan, view)).collect())


def test_random_native_plans_match_the_kernel_path_and_the_oracle(spark, path_conf: None) -> None:
    @SETTINGS
    @given(cases())
    def check(case: tuple[Plan, list[oracle.Events]]) -> None:
        plan, groups = case
        want = expected(plan, groups)
        assert_same(plan, run(spark, plan, groups, "native"), want)
        assert_same(plan, run(spark, plan, groups, "grouped"), want)

    run_property(check)


def abc(within: int | None = 10) -> Plan:
    """SEQ(A, B, C) with COUNT(*) AS n; A, B, C are mask bits 1, 2, 4."""
    return Plan(symbols=("A", "B", "C"), elements=(Element(0), Element(1), Element(2)), negations=(0, 0, 0, 0),
                within=within, measures=(Measure(MeasureKind.COUNT_STAR, name="n"),))


@pytest.mark.parametrize("gap", [9, 10, 11])
def test_within_boundary_is_strict(spark, path_conf: None, gap: int) -> None:
    """a at 0, b at 1, c at gap: a match only when gap < 10 (WITHIN 10)."""
    ev = oracle.Events([0, 1, gap], [1, 2, 4], ([None] * 3, [None] * 3))
    plan = abc()
    have = run(spark, plan, [ev], "native")
    assert have == {(0, None): [1 if gap < 10 else 0]} == expected(plan, [ev])


def test_ties_never_follow_each_other(spark, path_conf: None) -> None:
    """a, b and c all at time 5, then b and c at 6, c at 7: only a5 b6 c7 is a match."""
    ev = oracle.Events([5, 5, 5, 6, 6, 7], [1, 2, 4, 2, 4, 4], ([None] * 6, [None] * 6))
    plan = abc(within=None)
    assert run(spark, plan, [ev], "native") == expected(plan, [ev]) == {(0, None): [1]}


def test_keys_without_instances_give_no_row_and_keys_without_matches_give_zero(spark, path_conf: None) -> None:
    nothing = oracle.Events([1, 2], [8, 8], ([None] * 2, [None] * 2))  # instances of no pattern symbol
    only_a = oracle.Events([1, 2], [1, 1], ([None] * 2, [None] * 2))
    empty = oracle.Events([], [], ([], []))
    plan = abc()
    assert run(spark, plan, [nothing, only_a, empty], "native") == {(1, None): [0]}


BIG = ("SELECT k, n FROM big MATCH_AGGREGATE (PARTITION BY k ORDER BY ts PATTERN SEQ(A, A, A, A, A, A) "
       "DEFINE A AS TRUE MEASURES COUNT(*) AS n{count_type}) AS m")


@pytest.fixture()
def big(spark) -> str:
    """One key of 2,000 rows with distinct times: C(2000, 6) = 8.8e16 matches fit BIGINT,
    and one of 3,000 (C(3000, 6) = 1.0e18); SEQ of 7 over 3,000 rows is 4.3e20."""
    spark.range(5000).selectExpr("CASE WHEN id < 2000 THEN 'small' ELSE 'large' END AS k",
                                 "id AS ts").createOrReplaceTempView("big")
    return "big"


def test_overflow_raises_the_kernel_message_naming_the_partition(spark, path_conf: None, big: str) -> None:
    seven = BIG.replace("A, A, A, A, A, A", "A, A, A, A, A, A, A").format(count_type="")
    messages = []
    for path in ("native", "grouped"):
        spark.conf.set(PATH_CONF, path)
        with pytest.raises(PySparkException) as info:
            sparkseq.sql(spark, seven).collect()
        text = str(info.value)
        assert "CountType" not in text and "COUNT_STAR" not in text  # SQL words, not Python names
        start = text.index("measure 'n' (COUNT(*))")
        messages.append(text[start:text.index("COUNT TYPE DOUBLE", start)])
    assert messages[0] == messages[1]
    assert '{"k":"large"}' in messages[0] and "21 decimal digits" in messages[0]


@pytest.mark.parametrize("count_type", ["DECIMAL", "DOUBLE"])
def test_count_type_is_honoured_beyond_bigint(spark, path_conf: None, big: str, count_type: str) -> None:
    seven = BIG.replace("A, A, A, A, A, A", "A, A, A, A, A, A, A").format(count_type=f" COUNT TYPE {count_type}")
    rows = {}
    for path in ("native", "grouped"):
        spark.conf.set(PATH_CONF, path)
        rows[path] = {r["k"]: r["n"] for r in sparkseq.sql(spark, seven).collect()}
    assert rows["native"] == rows["grouped"]
    assert rows["native"]["large"] == (comb(3000, 7) if count_type == "DECIMAL" else float(comb(3000, 7)))


def test_explain_names_the_path_and_the_native_plan_has_no_python(spark, path_conf: None, big: str) -> None:
    text = BIG.format(count_type="").replace("A, A, A, A, A, A", "A, A, A")
    spark.conf.set(PATH_CONF, "auto")
    auto = sparkseq.explain(spark, text)  # the cost rule (NATIVE_AUTO_LENGTH) keeps native off: the JVM path
    assert "jvm (" in auto and "native (" not in auto and "sparkseq_jvm_aggregate" in auto
    spark.conf.set(PATH_CONF, "native")
    explained = sparkseq.explain(spark, text)
    assert "native (forced by sparkseq.path)" in explained
    assert "sparkseq_agg_" not in explained and "RANGE BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING" in explained
    frame = sparkseq.sql(spark, text)
    plan = frame._jdf.queryExecution().executedPlan().toString()
    assert "Python" not in plan
    assert plan.count("Exchange hashpartitioning") == 1
    assert {r["k"]: r["n"] for r in frame.collect()} == {"small": comb(2000, 3), "large": comb(3000, 3)}


def test_forcing_native_on_an_unsupported_shape_names_the_reason(spark, path_conf: None, big: str) -> None:
    spark.conf.set(PATH_CONF, "native")
    text = BIG.format(count_type="").replace("A, A, A, A, A, A", "A, B+").replace("TRUE", "TRUE, B AS ts > 3")
    with pytest.raises(Exception, match="cannot run on the native path: the native path does not evaluate a Kleene"):
        sparkseq.sql(spark, text)
