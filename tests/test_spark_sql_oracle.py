"""``sparkseq.sql`` end to end: MATCH_AGGREGATE text on local Spark against the oracle.

Each hypothesis example is one random plan written as MATCH_AGGREGATE text (symbol
``S<k>`` DEFINEd as bit k of the table's ``mask``) over one table holding many
partitions, run through :func:`sparkseq.sql`, and compared with
:func:`tests.oracle.evaluate` partition by partition. The event time is BIGINT,
TIMESTAMP or TIMESTAMP_NTZ (WITHIN / SLIDE then in microseconds). A Spark query costs
about a second, so examples are few and each covers up to 25 partitions.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparkseq.statements.sql_api import sql
from tests import oracle
from tests.spark_cases import assert_same, events_frame, expected, got
from tests.sql_cases import match_aggregate
from tests.test_kernel_oracle import events, plans
from udafs.plan import Plan

SETTINGS = settings(max_examples=5, deadline=None, suppress_health_check=list(HealthCheck))
EPOCH_NTZ = "TIMESTAMP_NTZ'1970-01-01 00:00:00'"
TIME_KINDS = {  # ORDER BY column from the BIGINT ``ts``, and the window bound back to engine micros
    "bigint": ("ts", "{}"),
    "timestamp": ("timestamp_micros(ts)", "unix_micros({})"),
    "timestamp_ntz": (f"timestampadd(MICROSECOND, ts, {EPOCH_NTZ})", f"timestampdiff(MICROSECOND, {EPOCH_NTZ}, {{}})"),
}


@st.composite
def cases(draw: st.DrawFn, **plan_options: object) -> tuple[Plan, list[oracle.Events], str]:
    """A random plan, up to 25 partitions of random events, and an event-time type."""
    plan = draw(plans(**plan_options, sql=True))
    groups = draw(st.lists(events(plan), min_size=1, max_size=25))
    return plan, [ev for ev in groups if oracle.cheap(plan, ev)], draw(st.sampled_from(sorted(TIME_KINDS)))


def run(spark, plan: Plan, groups: list[oracle.Events], time_kind: str) -> None:
    to_time, from_time = TIME_KINDS[time_kind]
    events_frame(spark, groups).createOrReplaceTempView("cases_raw")
    spark.sql(f"CREATE OR REPLACE TEMP VIEW cases AS SELECT g, {to_time} AS ts, mask, i, f FROM cases_raw")
    bounds = [f"{from_time.format(b)} AS {b}" for b in ("window_start", "window_end")] if plan.slide else []
    measures = [f"`{m.name}`" for m in plan.measures]
    text = (f"SELECT {', '.join(['g', *bounds, *measures])} "
            f"FROM {match_aggregate(plan, timestamp=time_kind != 'bigint')}")
    assert_same(plan, got(plan, sql(spark, text).collect()), expected(plan, groups))


@pytest.mark.parametrize("window", ["none", "within", "slide"])
def test_match_aggregate_matches_oracle(spark, window: str) -> None:
    @SETTINGS
    @given(cases(window=window))
    def check(case: tuple[Plan, list[oracle.Events], str]) -> None:
        run(spark, *case)

    check()


@pytest.mark.parametrize("window", ["within", "slide"])
def test_negation_in_every_gap_matches_oracle(spark, window: str) -> None:
    """Leading, middle and trailing negations (edge negation needs WITHIN), with Kleene."""
    @settings(SETTINGS, max_examples=4)
    @given(cases(window=window, edges=True, middle_negation=True))
    def check(case: tuple[Plan, list[oracle.Events], str]) -> None:
        run(spark, *case)

    check()
