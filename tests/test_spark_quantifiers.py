"""Quantified and optional pattern elements (``X{n}``, ``X{n,}``, ``X{n,m}``, ``X?``, ``X*``;
SEMANTICS section 10) end to end on local Spark, on every surface that takes a pattern:
MATCH_AGGREGATE through ``sparkseq.sql``, the ``seq_*`` functions, the DataFrame API, a
workload's shared pass, the time-split and streaming paths, and a live stream.

Each hypothesis example is one random quantified plan (:func:`sql_plans`) over up to 25
partitions of random events, compared with the brute-force oracle (:mod:`tests.oracle`)
partition by partition (the stream: with the batch answer over the same rows). A Spark
query costs about a second, so examples are few.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import sparkseq
from sparkseq.running.execution_paths import PATH_CONF
from sql_rewrites import errors as E
from tests import oracle
from tests.spark_cases import assert_same, events_frame, expected, got
from tests.sql_cases import jobs_started, match_aggregate, measure_sql, pattern_symbols
from tests.test_kernel_oracle import COLUMNS, events
from tests.test_kernel_quantifiers import cheap, quantified_plans
from tests.test_spark_live import SETTINGS as LIVE_SETTINGS
from tests.test_spark_live import plain_text, run_case
from tests.test_spark_sql_functions import MEASURES, check_groups, single_symbol
from tests.test_spark_sql_oracle import TIME_KINDS
from tests.test_spark_sql_oracle import run as run_match_aggregate
from tests.test_spark_workload import statement
from udafs.plan import Element, Measure, MeasureKind, Plan

SETTINGS = settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck))


@st.composite
def sql_plans(draw: st.DrawFn, window: str = "any", **options: object) -> Plan:
    """Random plans with at least one quantified or optional element, as SQL writes them: the
    kernel tests' ``X{0,m}`` (which SQL spells ``X?`` or ``X*``, refusing ``X{0,m}``) becomes ``X*``."""
    plan = draw(quantified_plans(window=window, sql=True, **options))
    elements = tuple(Element(e.symbol, True, 0) if e.kleene and e.optional else e for e in plan.elements)
    plan = dataclasses.replace(plan, elements=elements)
    assume(plan.quantified)
    return plan


def cheap_groups(plan: Plan, groups: list[oracle.Events]) -> list[oracle.Events]:
    return [ev for ev in groups if cheap(plan, ev) and oracle.cheap(plan, ev)]


# --- MATCH_AGGREGATE ------------------------------------------------------------------------

@pytest.mark.parametrize("window", ["none", "within", "slide"])
def test_match_aggregate_matches_oracle(spark, window: str) -> None:  # noqa: ANN001
    @SETTINGS
    @given(st.data())
    def check(data: st.DataObject) -> None:
        plan = data.draw(sql_plans(window=window))
        groups = cheap_groups(plan, data.draw(st.lists(events(plan), min_size=1, max_size=25)))
        run_match_aggregate(spark, plan, groups, data.draw(st.sampled_from(sorted(TIME_KINDS))))

    check()


@pytest.mark.parametrize("window", ["within", "slide"])
def test_negations_beside_optional_elements_match_oracle(spark, window: str) -> None:  # noqa: ANN001
    """A negation's gap between the nearest bound elements; leading / trailing negation from
    the first / last bound row."""
    @settings(SETTINGS, max_examples=3)
    @given(st.data())
    def check(data: st.DataObject) -> None:
        plan = data.draw(sql_plans(window=window, middle_negation=True, edges=True))
        groups = cheap_groups(plan, data.draw(st.lists(events(plan, max_rows=8, max_ts=10), min_size=1,
                                                       max_size=25)))
        run_match_aggregate(spark, plan, groups, "bigint")

    check()


def test_a_hand_worked_funnel_with_an_optional_step(spark) -> None:  # noqa: ANN001
    """SEQ(view, cart?, buy) over v1 c2 c3 b4: (v1, b4), (v1, c2, b4), (v1, c3, b4) — three
    matches, two of which bind cart; SUM(cart.price) adds the two carts' prices once each."""
    spark.sql("""SELECT * FROM VALUES (1, 1L, 'view', 1.0D), (1, 2L, 'cart', 10.0D), (1, 3L, 'cart', 20.0D),
                 (1, 4L, 'buy', 5.0D), (2, 1L, 'view', 1.0D), (2, 2L, 'buy', 2.0D) AS t(k, ts, type, price)"""
              ).createOrReplaceTempView("funnel_clicks")
    rows = sparkseq.sql(spark, """SELECT k, n, carts, spent FROM funnel_clicks MATCH_AGGREGATE (
        PARTITION BY k ORDER BY ts PATTERN SEQ(view, cart?, buy) TYPE BY type
        MEASURES COUNT(*) AS n, COUNT(cart) AS carts, SUM(cart.price) AS spent) AS m ORDER BY k""").collect()
    assert [tuple(r) for r in rows] == [(1, 3, 2, 30.0), (2, 1, 0, None)]


def test_a_bad_quantifier_fails_before_any_job_at_its_place(spark) -> None:  # noqa: ANN001
    spark.sql("SELECT 1 AS k, 1L AS ts, 'a' AS type").createOrReplaceTempView("quantifier_mistakes")
    text = ("SELECT * FROM quantifier_mistakes MATCH_AGGREGATE (PARTITION BY k ORDER BY ts\n"
            "  PATTERN SEQ(a, b{3,2}, c) TYPE BY type) AS m")
    before = jobs_started(spark)
    with pytest.raises(E.QuantifierError, match=r"write b\{2,3\} at line 2, column 18") as info:
        sparkseq.sql(spark, text)
    assert "b{3,2}" in str(info.value).splitlines()[-2] and jobs_started(spark) == before
    with pytest.raises(E.QuantifierError, match="at line 1, column 36"):
        spark_functions = "SELECT seq_count(ts, type, 'SEQ(a, b{0})') FROM quantifier_mistakes"
        sparkseq.sql(spark, spark_functions)


# --- seq_* functions ------------------------------------------------------------------------

@pytest.mark.parametrize("window", ["none", "within"])
def test_seq_functions_match_oracle(spark, window: str) -> None:  # noqa: ANN001
    @SETTINGS
    @given(st.data())
    def check(data: st.DataObject) -> None:
        plan = data.draw(sql_plans(window=window))
        quantified = [e.symbol for e in plan.elements if e.quantified]
        symbol = data.draw(st.sampled_from(quantified))
        measures = (Measure(MeasureKind.COUNT_STAR, name="n"),
                    *(Measure(kind, symbol, column, kind.value) for kind, column, _ in MEASURES))
        plan = dataclasses.replace(plan, measures=measures, columns=COLUMNS)
        groups = [single_symbol(ev) for ev in data.draw(st.lists(events(plan), min_size=1, max_size=25))]
        time = data.draw(st.sampled_from(["bigint", "timestamp"]))
        check_groups(spark, plan, cheap_groups(plan, groups), symbol, time)

    check()


# --- the DataFrame API ------------------------------------------------------------------------

def test_dataframe_api_matches_oracle(spark) -> None:  # noqa: ANN001
    @SETTINGS
    @given(st.data())
    def check(data: st.DataObject) -> None:
        plan = data.draw(sql_plans(window=data.draw(st.sampled_from(["none", "within", "slide"]))))
        groups = cheap_groups(plan, data.draw(st.lists(events(plan), min_size=1, max_size=25)))
        frame = events_frame(spark, groups)
        measures = {m.name: measure_sql(plan, m).rsplit(" AS ", 1)[0] for m in plan.measures}
        rows = sparkseq.match_aggregate(
            frame, partition_by="g", order_by="ts", pattern=plan.describe(),
            define={plan.symbols[k]: f"(mask & {1 << k}) <> 0" for k in pattern_symbols(plan)},
            measures=measures,
            within=plan.within, slide=plan.slide, count_type=plan.count_type.value).collect()
        assert_same(plan, got(plan, rows), expected(plan, groups))

    check()


# --- a workload's shared pass -------------------------------------------------------------------

def test_workload_members_with_quantifiers_equal_the_oracle(spark) -> None:  # noqa: ANN001
    """Quantified and plain members of one sharing group (one source, keys and time), run by
    ``workload`` and by ``collect_workload`` (whose statistics job decides shared timelines)."""
    @settings(SETTINGS, max_examples=3)
    @given(st.data())
    def check(data: st.DataObject) -> None:
        window = data.draw(st.sampled_from(["within", "slide", "none"]))
        members = [data.draw(sql_plans(window=window)) for _ in range(2)]
        members.append(dataclasses.replace(members[0], elements=tuple(
            Element(e.symbol, e.kleene and not e.optional) for e in members[0].elements)))  # its plain twin
        widest = max(members, key=lambda p: len(p.symbols))
        groups = data.draw(st.lists(events(widest), min_size=1, max_size=12))
        groups = [ev for ev in groups if all(cheap(p, ev) and oracle.cheap(p, ev) for p in members)]
        events_frame(spark, groups).createOrReplaceTempView("cases")
        script = ";\n".join(statement(i, p) for i, p in enumerate(members))
        assert [len(g.members) for g in sparkseq.plan_workload(spark, script).groups] == [len(members)]
        sparkseq.workload(spark, script)
        for i, p in enumerate(members):
            assert_same(p, got(p, spark.table(f"wl{i}").collect()), expected(p, groups))
        selects = ";\n".join(f"SELECT * FROM {match_aggregate(p, alias=f'm{i}')}" for i, p in enumerate(members))
        for p, result in zip(members, sparkseq.collect_workload(spark, selects)):
            assert result.arrow is not None
            assert_same(p, got(p, result.arrow.to_pylist()), expected(p, groups))

    check()


# --- execution paths --------------------------------------------------------------------------

@pytest.mark.parametrize(("path", "window"), [("time-split", "WITHIN 40"), ("time-split", "WITHIN 60 SLIDE 20"),
                                              ("auto", "")])
def test_time_split_and_streaming_paths_equal_the_grouped_path(spark, small_thresholds: None, path: str,
                                                               window: str) -> None:
    """One key of 300 rows (split in chunks of about 20, or streamed without a window: over the
    conftest thresholds), four small keys; the grouped path is checked against the oracle above."""
    import random

    rng = random.Random(7)
    rows = [(key, rng.randint(0, 1500), rng.choice("ABBCN"), rng.choice([None, *range(-3, 9)]))
            for key, n in (("big", 300), ("s1", 15), ("s2", 15), ("s3", 15), ("s4", 15)) for _ in range(n)]
    spark.createDataFrame(rows, "k string, ts bigint, type string, v int").createOrReplaceTempView("q_paths")
    text = ("SELECT * FROM q_paths MATCH_AGGREGATE (PARTITION BY k ORDER BY ts PATTERN SEQ(A, B{1,2}, !N, C?) "
            f"TYPE BY type MEASURES COUNT(*) AS n, COUNT(B) AS nb, SUM(C.v) AS sc, MAX(B.v) AS mb {window}) AS m "
            "ORDER BY ALL")
    spark.conf.set(PATH_CONF, "grouped")
    want = sparkseq.sql(spark, text).collect()
    spark.conf.set(PATH_CONF, path)
    frame = sparkseq.sql(spark, text)
    executed = frame._jdf.queryExecution().analyzed().toString()
    assert ("_chunk" if path == "time-split" else "sparkseq_stream_") in executed
    assert sum(r["n"] for r in want) > 0 and frame.collect() == want


# --- a live stream ------------------------------------------------------------------------------

@pytest.mark.parametrize("window", ["slide", "within", "none"])
def test_live_equals_batch(spark, tmp_path: Path, window: str) -> None:  # noqa: ANN001
    @LIVE_SETTINGS
    @given(st.data())
    def check(data: st.DataObject) -> None:
        plan = data.draw(sql_plans(window=window, middle_negation=True, edges=window != "none"))
        groups = data.draw(st.lists(events(plan, max_rows=10, max_ts=20), min_size=1, max_size=10))
        run_case(spark, tmp_path, plan, groups, data.draw(st.integers(0, 2**32 - 1)), plain_text(plan))

    check()
