"""The shared-timeline decision (``udafs.timelines``) as a value: what a multi-plan may
carry, its JSON, and the cost model's choices. Exactness of any decision is tested in
tests/kernels/test_kernel_pretree.py."""

from __future__ import annotations

import json

import pytest

from udafs.errors import PlanError
from udafs.multiplan import MultiPlan
from udafs.plan import Element, Measure, MeasureKind, Plan
from udafs.timelines import (
    SharedTimeline,
    alone_cost,
    choose_timelines,
    needs_rows,
    shared_prefixes,
    shared_suffixes,
    timeline_cost,
)

COUNT = Measure(MeasureKind.COUNT_STAR, name="n")


def plan(*syms: int, within: int | None = 10, slide: int | None = 5, measure: Measure = COUNT) -> Plan:
    return Plan(symbols=tuple(f"S{i}" for i in range(8)), elements=tuple(Element(s) for s in syms),
                negations=(0,) * (len(syms) + 1), within=within, slide=slide, measures=(measure,))


def multi(plans: list[Plan], timelines: tuple[SharedTimeline, ...] | None) -> MultiPlan:
    n = len(plans)
    return MultiPlan(tuple(plans), (COUNT,), ((0,),) * n, (None,) * n, (False,) * n, timelines)


def uniform(rows_per_symbol: float):  # noqa: ANN201 - udafs.timelines.Rows
    return lambda symbols: rows_per_symbol * symbols.bit_count()


def test_the_decision_round_trips_through_json_and_old_documents_still_read() -> None:
    plans = [plan(0, 1, 2), plan(0, 1, 3), plan(4, 5)]
    mp = multi(plans, (SharedTimeline((0, 1), (2, 1)),))
    assert MultiPlan.from_json(mp.to_json()) == mp
    assert MultiPlan.from_json(multi(plans, None).to_json()).timelines is None
    old = json.loads(multi(plans, None).to_json())
    old["v"] = 1
    del old["t"]
    assert MultiPlan.from_json(json.dumps(old)) == multi(plans, None)  # what E-Cube builds: no decision


def test_the_constructor_without_a_decision_still_works() -> None:
    plans = [plan(0, 1), plan(0, 2)]
    mp = MultiPlan(tuple(plans), (COUNT,), ((0,), (0,)), (None, None), (False, False))
    assert mp.timelines is None


@pytest.mark.parametrize(("timelines", "message"), [
    ((SharedTimeline((0,), (1,)),), "two or more plans"),
    ((SharedTimeline((0, 1), (1, 1)), SharedTimeline((1, 4), (1, 0))), "plan 1 is in two shared timelines"),
    ((SharedTimeline((0, 5), (1, 1)),), "names plan 5; there are 5"),
    ((SharedTimeline((0, 1), (1, 3)),), "cut after element 3; it has 2"),
    ((SharedTimeline((0, 2), (1, 1)),), "different windows"),
    ((SharedTimeline((0, 3), (1, 1)),), "plan 3 cannot share a timeline"),
])
def test_invalid_decisions_are_rejected(timelines: tuple[SharedTimeline, ...], message: str) -> None:
    plans = [plan(0, 1), plan(0, 2), plan(0, 1, slide=2), plan(0, 1, slide=None), plan(1, 2)]
    with pytest.raises(PlanError, match=message):
        multi(plans, timelines)
    with pytest.raises(PlanError, match="names a plan twice"):
        SharedTimeline((0, 0), (1, 1))


def test_a_plan_shares_only_with_plans_of_its_window_shape() -> None:
    plans = [plan(0, 1), plan(0, 1, slide=2), plan(0, 1, within=None, slide=None), plan(0, 1, slide=None),
             plan(0, 1, measure=Measure(MeasureKind.COUNT, symbol=1, name="n"))]
    assert not needs_rows(plans)
    assert choose_timelines(plans, uniform(1e6)) == ()
    assert needs_rows([*plans, plan(2, 3)])


def test_the_per_member_overhead_decides_for_small_partitions() -> None:
    """Disjoint symbols: each row list is built over everybody's rows, which many rows per
    call make too costly, few rows per call cheap against each plan's fixed overhead."""
    plans = [plan(0, 1), plan(2, 3), plan(4, 5)]
    assert choose_timelines(plans, uniform(1e6), calls=1) == ()
    assert [t.members for t in choose_timelines(plans, uniform(10), calls=1)] == [(0, 1, 2)]
    shared = timeline_cost(plans, (1, 1, 1), uniform(10))
    assert shared < sum(alone_cost(p, uniform(10)) for p in plans)


def test_what_a_timeline_counts_once() -> None:
    plans = [plan(0, 1, 2), plan(0, 1, 3), plan(4, 1, 2, 3), plan(5, 1, 2, 3), plan(6, 7)]
    timeline = SharedTimeline((0, 1, 2, 3), (2, 2, 1, 1))
    assert [(who, p.describe()) for who, p in shared_prefixes(plans, timeline)] == [((0, 1), "SEQ(S0, S1)")]
    assert [(who, p.describe()) for who, p in shared_suffixes(plans, timeline)] == [((2, 3), "SEQ(S1, S2, S3)")]
