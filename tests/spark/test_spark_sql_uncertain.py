"""MATCH_AGGREGATE ... UNCERTAIN BETWEEN on local Spark: expected aggregates equal the
possible-worlds oracle (many random groups per query), point intervals give today's
answers, TIMESTAMP bounds with STEP, errors naming the partition."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import SparkSession

import sparkseq
from tests.kernels.test_kernel_uncertain import distinct_plans, violates, wide_events
from tests.support import possible_worlds
from tests.support.doubles import same_double
from tests.support.sql_cases import match_aggregate
from udafs.plan import Plan

SCHEMA = "g int, ts bigint, lo bigint, hi bigint, mask bigint, i bigint, f double"


def uncertain_sql(plan: Plan, bounds: str = "lo AND hi") -> str:
    """``plan`` as MATCH_AGGREGATE over ``cases`` with UNCERTAIN BETWEEN (and its STEP)."""
    text = match_aggregate(dataclasses.replace(plan, uncertain=None))
    step = f" STEP {plan.uncertain}" if plan.uncertain != 1 else ""
    iterators = " AND ".join(
        f"{plan.symbols[plan.elements[q.element].symbol]}[i].{('i', 'f')[q.column]} + {q.left_offset} {q.op.value} "
        f"{plan.symbols[plan.elements[q.element].symbol]}[i-1].{('i', 'f')[q.column]} + {q.offset}"
        for q in plan.iterator_predicates)
    text = text.replace("ORDER BY ts\n", f"ORDER BY ts UNCERTAIN BETWEEN {bounds}{step}\n")
    if iterators:
        text = text.replace("\n  MEASURES", f"\n  WHERE {iterators}\n  MEASURES")
    columns = ["g"] + (["window_start", "window_end"] if plan.slide else []) + [f"`{m.name}`" for m in plan.measures]
    return f"SELECT {', '.join(columns)} FROM {text}"


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(data=st.data())
@pytest.mark.parametrize("window", ["none", "within", "slide"])
def test_expected_aggregates_equal_possible_worlds(spark: SparkSession, window: str, data: st.DataObject) -> None:
    """Twelve random groups of one plan per query; refused groups are left out of the table."""
    plan = data.draw(distinct_plans(window))
    groups, rows = [], []
    while len(groups) < 12:
        ev, lo, hi = data.draw(wide_events(plan, max_rows=5))
        if violates(plan, ev, lo, hi) or possible_worlds.world_count(plan, ev, lo, hi) > 300:
            continue
        g = len(groups)
        groups.append((ev, lo, hi))
        ints, floats = ev.values
        rows += [(g, t, a, b, m, i, f) for t, a, b, m, i, f in zip(ev.ts, lo, hi, ev.mask, ints, floats)]
        rows.append((g, None, 0, 0, -1, 7, 7.0))  # a NULL time takes part in nothing
    spark.createDataFrame(rows, SCHEMA).createOrReplaceTempView("cases")
    got = {(r["g"], r["window_start"] if plan.slide else None): r
           for r in sparkseq.sql(spark, uncertain_sql(plan)).collect()}
    want = {}
    for g, (ev, lo, hi) in enumerate(groups):
        if any(m & plan.pattern_symbols_mask for m in ev.mask):
            for ws, _, vals in possible_worlds.expected(plan, ev, lo, hi):
                want[(g, ws)] = vals
    assert sorted(got) == sorted(want)
    for key, vals in want.items():
        for m, v in zip(plan.measures, vals):
            have = got[key][m.name]
            assert (have is None) == (v is None), (key, m, have, v)
            if v is not None:
                assert same_double(have, float(v)), (key, m, have, v)


def test_point_intervals_and_null_bounds_give_todays_answers(spark: SparkSession) -> None:
    """NULL bounds (and lo = hi = ts) are point events: the same numbers as without UNCERTAIN."""
    rng = np.random.default_rng(7)
    rows = [(g, t, None if t % 3 else t, None if t % 3 else t, int(rng.choice([1, 1, 2, 2, 2, 4])), t, float(t))
            for g in range(4) for t in rng.integers(0, 20, 14).tolist()]
    spark.createDataFrame(rows, SCHEMA).createOrReplaceTempView("cases")
    base = ("SELECT g, n, s FROM cases MATCH_AGGREGATE (PARTITION BY g ORDER BY ts {u} PATTERN SEQ(A, B+, !C, A) "
            "DEFINE A AS (mask & 1) <> 0, B AS (mask & 2) <> 0, C AS (mask & 4) <> 0 "
            "MEASURES COUNT(*) AS n, SUM(B.i) AS s WITHIN 6 {c}) AS m ORDER BY g")
    today = sparkseq.sql(spark, base.format(u="", c="COUNT TYPE DOUBLE")).collect()
    expected = sparkseq.sql(spark, base.format(u="UNCERTAIN BETWEEN lo AND hi", c="")).collect()
    assert [tuple(r) for r in expected] == [tuple(r) for r in today]
    assert any(r["n"] > 0 for r in today)


def test_timestamps_with_a_step_equal_the_same_events_in_seconds(spark: SparkSession) -> None:
    """TIMESTAMP event times, bounds and STEP INTERVAL 5 SECONDS equal BIGINT seconds with STEP 5."""
    rows = [(0, 100, 90, 110, 1, 1, 1.0), (0, 104, 104, 104, 2, 2, 2.0), (0, 107, 100, 115, 2, 3, 3.0),
            (0, 120, 118, 118, 4, 4, 4.0), (1, 50, 40, 60, 1, 5, 5.0), (1, 55, 55, 55, 2, 6, 6.0)]
    frame = spark.createDataFrame(rows, SCHEMA)
    frame.createOrReplaceTempView("secs")
    frame.selectExpr("g", "timestamp_seconds(ts) AS ts", "timestamp_seconds(lo) AS lo", "timestamp_seconds(hi) AS hi",
                     "mask", "i", "f").createOrReplaceTempView("stamps")
    query = ("SELECT g, n, s FROM {t} MATCH_AGGREGATE (PARTITION BY g ORDER BY ts UNCERTAIN BETWEEN lo AND hi STEP {s} "
             "PATTERN SEQ(A, B) DEFINE A AS (mask & 1) <> 0, B AS (mask & 2) <> 0 MEASURES COUNT(*) AS n, "
             "SUM(B.f) AS s WITHIN {w}) AS m ORDER BY g")
    secs = sparkseq.sql(spark, query.format(t="secs", s="5", w="12")).collect()
    stamps = sparkseq.sql(spark, query.format(t="stamps", s="INTERVAL 5 SECONDS", w="INTERVAL 12 SECONDS")).collect()
    assert [tuple(r) for r in secs] == [tuple(r) for r in stamps]
    # group 0 by hand: A in {90, 95, ..., 110}; B at 104 and in {100, 105, 110, 115}; a match needs A < B < A + 12
    a, b2 = range(90, 111, 5), range(100, 116, 5)
    n0 = sum(1 for x in a if x < 104 < x + 12) / 5 + sum(1 for x in a for y in b2 if x < y < x + 12) / 20
    assert math.isclose(secs[0]["n"], n0, rel_tol=1e-12)


def test_bad_bounds_name_the_partition(spark: SparkSession) -> None:
    spark.createDataFrame([(3, 5, 9, 2, 1, 0, 0.0)], SCHEMA).createOrReplaceTempView("bad")
    with pytest.raises(Exception, match=r'imprecise timestamps in partition \{"g":3\}: an event\'s possible times '
                                        r'run from 9 to 2'):
        sparkseq.sql(spark, "SELECT * FROM bad MATCH_AGGREGATE (PARTITION BY g ORDER BY ts UNCERTAIN BETWEEN lo AND "
                            "hi PATTERN SEQ(A) DEFINE A AS mask = 1) AS m").collect()
