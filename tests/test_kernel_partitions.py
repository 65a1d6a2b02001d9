"""Property tests: partitions laid end to end on one time axis
(:func:`udafs.kernels.multiplan.partitions.evaluate_partitions`) give every partition exactly what
``evaluate_many`` gives it alone — windows, numbers and types — for multi-plans of shared
prefixes, of different windows, with every measure, strategy and predicate, and for
partitions whose times overlap, repeat, run backwards or lie far apart."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests import oracle
from tests.doubles import identical
from tests.test_kernel_oracle import as_rows, events, plans, to_arrays
from tests.test_kernel_predicates import ext_events, ext_plans
from tests.test_kernel_predicates import to_arrays as ext_arrays
from tests.test_kernel_pretree import families, forced_timelines, multi
from udafs.errors import PlanError
from udafs.kernels.multiplan.many import evaluate_many
from udafs.kernels.multiplan.partitions import TIME_LIMIT, evaluate_partitions, laid_end_to_end
from udafs.multiplan import MultiPlan
from udafs.plan import CountType, Element, Measure, MeasureKind, Plan, Strategy

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

BASES = st.one_of(st.integers(-30, 30), st.integers(-(10 ** 15), 10 ** 15), st.just(TIME_LIMIT - 20))
"""Where a partition's times start: overlapping its neighbours', far apart, near the limit."""


def single(plan: Plan) -> MultiPlan:
    return MultiPlan((plan,), plan.measures, (tuple(range(len(plan.measures))),), (None,), (False,))


@st.composite
def partitioned(draw: st.DrawFn, plan: Plan, extended: bool = False
                ) -> tuple[np.ndarray, np.ndarray, list, np.ndarray]:
    """1-5 non-empty partitions of random events (ties, NULLs, several symbols per row),
    each moved to its own base time, concatenated; and each partition's first row."""
    parts = []
    for _ in range(draw(st.integers(1, 5))):
        ev = draw((ext_events if extended else events)(plan).filter(lambda e: len(e.ts) > 0))
        ts, mask, cols = (ext_arrays if extended else to_arrays)(ev)
        parts.append((ts + draw(BASES), mask, cols[:len(plan.columns)]))
    starts = np.cumsum([0] + [len(t) for t, _, _ in parts[:-1]]).astype(np.int64)
    ts = np.concatenate([t for t, _, _ in parts])
    mask = np.concatenate([m for _, m, _ in parts])
    cols = [(np.concatenate([c[j][0] for _, _, c in parts]), np.concatenate([c[j][1] for _, _, c in parts]))
            for j in range(len(parts[0][2]))]
    return ts, mask, cols, starts


def check(mp: MultiPlan, ts: np.ndarray, mask: np.ndarray, cols: list, starts: np.ndarray) -> None:
    """Each partition's rows of the joint evaluation equal its own ``evaluate_many``, plan
    (exactly equal values, floats included), or the joint evaluation declines (times
    beyond the limit) or is refused (DOUBLE counts)."""
    if not laid_end_to_end(mp):
        assert any(p.count_type is CountType.DOUBLE for p in mp.plans)
        with pytest.raises(PlanError, match="exact count type"):
            evaluate_partitions(mp, ts, mask, cols, starts)
        return
    got = evaluate_partitions(mp, ts, mask, cols, starts)
    ends = [*starts[1:], len(ts)]
    if got is None:
        assert any(abs(int(t)) > TIME_LIMIT // 2 for t in ts)
        return
    results, parts = got
    for p, (lo, hi) in enumerate(zip(starts, ends)):
        alone = evaluate_many(mp, ts[lo:hi], mask[lo:hi], [(v[lo:hi], ok[lo:hi]) for v, ok in cols])
        for i, (own, joint, part) in enumerate(zip(alone, results, parts)):
            if own is None:
                assert joint is None and part is None
                continue
            assert joint is not None and part is not None
            mine = part == p
            picked = joint._replace(window_start=joint.window_start[mine], window_end=joint.window_end[mine],
                                    values=tuple(v[mine] for v in joint.values),
                                    valid=tuple(ok[mine] for ok in joint.valid))
            assert identical(as_rows(picked), as_rows(own)), (p, i)


@pytest.mark.parametrize("decided", [False, True])
@SETTINGS
@given(data=st.data())
def test_shared_timelines_per_partition(decided: bool, data: st.DataObject) -> None:
    """Families of COUNT(*) plans sharing prefixes and suffixes (timelines chosen from the
    joint rows, or decided before), some with other WITHIN and SLIDE."""
    plans_ = data.draw(families("slide"))
    if not decided:
        plans_ = [dataclasses.replace(p, within=w, slide=min(s, w)) if data.draw(st.booleans()) else p
                  for p, w, s in ((p, data.draw(st.integers(1, 12)), data.draw(st.integers(1, 7))) for p in plans_)]
    mp = multi(plans_, data.draw(forced_timelines(plans_)) if decided else None)
    check(mp, *data.draw(partitioned(plans_[0])))


@SETTINGS
@given(data=st.data())
def test_every_measure(data: st.DataObject) -> None:
    plan = data.draw(plans(window="slide"))
    check(single(plan), *data.draw(partitioned(plan)))


@SETTINGS
@given(data=st.data())
def test_strategies_and_predicates(data: st.DataObject) -> None:
    """Cross-event and iterator predicates, and every strategy an engine call over a group's
    rows runs (strict contiguity needs the stream's rank, which a shared pass does not have)."""
    strategy = data.draw(st.sampled_from([s for s in Strategy if s is not Strategy.STRICT_CONTIGUITY]))
    plan = data.draw(ext_plans(window="slide", strategy=strategy))
    check(single(plan), *data.draw(partitioned(plan, extended=True)))


def test_far_apart_partitions_decline() -> None:
    """Times whose shifted copies would leave the limit: None (the caller goes one by one)."""
    plan = oracle_plan()
    ts = np.array([0, 1, TIME_LIMIT - 5, TIME_LIMIT - 4], dtype=np.int64)
    mask = np.ones(4, dtype=np.int64)
    assert evaluate_partitions(single(plan), ts[::-1].copy(), mask, [], np.array([0, 2])) is None


def test_plans_without_slide_are_refused() -> None:
    plan = dataclasses.replace(oracle_plan(), slide=None)
    with pytest.raises(PlanError, match="SLIDE"):
        evaluate_partitions(single(plan), np.zeros(1, dtype=np.int64), np.ones(1, dtype=np.int64), [],
                            np.array([0]))


def oracle_plan() -> Plan:
    return Plan(symbols=("A",), elements=(Element(0), Element(0)), negations=(0, 0, 0), within=4, slide=2,
                measures=(Measure(MeasureKind.COUNT_STAR, name="n"),))


def test_oracle_agrees_on_an_example() -> None:
    """Two partitions with the same times: each counts its own pairs, windows shifted back."""
    plan = oracle_plan()
    ts = np.array([0, 1, 2, 0, 3], dtype=np.int64)
    mask = np.ones(5, dtype=np.int64)
    got = evaluate_partitions(single(plan), ts, mask, [], np.array([0, 3]))
    assert got is not None
    (res,), (part,) = got
    assert res is not None and part is not None
    rows = list(zip(part.tolist(), as_rows(res)))
    for p, (lo, hi) in enumerate([(0, 3), (3, 5)]):
        ev = oracle.Events(ts[lo:hi].tolist(), mask[lo:hi].tolist(), ())
        assert [(ws, we, [int(v) for v in vals]) for q, (ws, we, vals) in rows if q == p] == oracle.evaluate(ev, plan)
