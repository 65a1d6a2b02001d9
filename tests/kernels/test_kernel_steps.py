"""Funnel steps: STEPS(*) and MAX_STEP() of ``evaluate_group`` against the brute-force oracle."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tests.kernels.test_kernel_live import check_windows, streams
from tests.kernels.test_kernel_oracle import events, plans, to_arrays
from tests.kernels.test_kernel_predicates import ext_events, ext_plans, run_kernel
from tests.kernels.test_kernel_quantifiers import cheap as quantified_cheap
from tests.kernels.test_kernel_quantifiers import quantified_plans
from tests.support import oracle
from udafs.errors import CountOverflowError, PlanError
from udafs.kernels import GroupResult, evaluate_group
from udafs.kernels.counting.steps import prefix_plan
from udafs.kernels.incremental.live import LiveEvaluator, advance_all
from udafs.kernels.incremental.streaming import StreamEvaluator
from udafs.kernels.incremental.timesplit import evaluate_chunk
from udafs.kernels.options import DEFAULT, KernelOptions
from udafs.kernels.values.measures import Tally, partials
from udafs.plan import CountType, Element, Measure, MeasureKind, Plan, Strategy, splittable, streamable

SETTINGS = settings(max_examples=250, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
FUNNEL = (Measure(MeasureKind.STEPS, name="steps"), Measure(MeasureKind.MAX_STEP, name="max_step"))


def with_funnel(plan: Plan, order: list[Measure] | None = None) -> Plan:
    """``plan`` measuring STEPS(*) and MAX_STEP() besides its own measures."""
    return dataclasses.replace(plan, measures=tuple(order) if order else (*FUNNEL, *plan.measures))


def rows(plan: Plan, res: GroupResult) -> list[tuple[int | None, int | None, list[object]]]:
    """The result in the oracle's shape: STEPS as a list of ints, every other measure as is."""
    out = []
    for k in range(len(res.values[0])):
        bounds = tuple(None if b is None else int(b[k]) for b in (res.window_start, res.window_end))
        vals: list[object] = []
        for m, v, ok in zip(plan.measures, res.values, res.valid):
            if m.kind in (MeasureKind.STEPS, MeasureKind.MAX_STEP, MeasureKind.COUNT_STAR):
                assert ok[k], "counts are never NULL"
            vals.append([_exact(x) for x in v[k]] if m.kind is MeasureKind.STEPS else _exact(v[k]) if ok[k] else None)
        out.append((*bounds, vals))
    return out


def _exact(x: object) -> object:
    return float(x) if isinstance(x, (float, np.floating)) else int(x)  # type: ignore[call-overload]


def check(plan: Plan, got: GroupResult, ev: oracle.Events) -> None:
    """The funnel measures and COUNT(*) equal the oracle's exactly (counts never approximate here)."""
    want = oracle.evaluate(ev, plan)
    have = rows(plan, got)
    assert [r[:2] for r in have] == [r[:2] for r in want]
    keep = [j for j, m in enumerate(plan.measures) if m.kind in (MeasureKind.STEPS, MeasureKind.MAX_STEP,
                                                                  MeasureKind.COUNT_STAR)]
    for (_, _, g), (_, _, e) in zip(have, want):
        assert [g[j] for j in keep] == [e[j] for j in keep], plan.describe()
        steps = g[plan.measures.index(FUNNEL[0])] if FUNNEL[0] in plan.measures else None
        if steps is not None:
            assert len(steps) == plan.length
    steps_at = [j for j, m in enumerate(plan.measures) if m.kind is MeasureKind.STEPS]
    for j in steps_at:
        v = got.values[j]
        assert v.ndim == 2 and v.shape[1] == plan.length
        assert v.dtype == {CountType.BIGINT: np.int64, CountType.DECIMAL: object,
                           CountType.DOUBLE: np.float64}[plan.count_type]


def run(plan: Plan, ev: oracle.Events, options: KernelOptions = DEFAULT) -> GroupResult:
    ts, mask, cols = to_arrays(ev)
    return evaluate_group(plan, ts, mask, cols, options=options)


# -- hand-worked examples -----------------------------------------------------------

A, B, C, D = 1, 2, 4, 8
SHARON = [(1, A), (2, B), (3, A), (3, C), (4, B), (5, B), (5, D), (7, C), (8, D)]


def _plan(length: int, negations: tuple[int, ...] | None = None, **kw: object) -> Plan:
    return Plan(("A", "B", "C", "D"), tuple(Element(i) for i in range(length)),
                negations or (0,) * (length + 1), measures=(*FUNNEL, Measure(MeasureKind.COUNT_STAR, name="n")),
                **kw)  # type: ignore[arg-type]


def _eval(plan: Plan, events: list[tuple[int, int]]) -> GroupResult:
    return evaluate_group(plan, np.array([t for t, _ in events], dtype=np.int64),
                          np.array([m for _, m in events], dtype=np.int64))


def test_sharon_figure_7_prefixes() -> None:
    """a1 b2 a3 c3 b4 b5 d5 c7 d8: A 2 (a1, a3); AB 5; ABC 6 (c3 after b2 of a1, c7 after all five); ABCD 7."""
    res = _eval(_plan(4), SHARON)
    assert res.values[0].tolist() == [[2, 5, 6, 7]]
    assert res.values[1].tolist() == [4] and res.values[2].tolist() == [7]


def test_negation_removes_only_the_later_steps() -> None:
    """A-Seq Example 5: SEQ(A, B, !C, D) over a1 b2 c3 d4: the C between b and d removes the
    match, the prefixes (A) and (A, B) survive, so the customer stopped at step 2."""
    plan = Plan(("A", "B", "C", "D"), (Element(0), Element(1), Element(3)), (0, 0, C, 0), measures=FUNNEL)
    res = _eval(plan, [(1, A), (2, B), (3, C), (4, D)])
    assert res.values[0].tolist() == [[1, 1, 0]] and res.values[1].tolist() == [2]


def test_trailing_negation_belongs_to_the_whole_pattern_only() -> None:
    """SEQ(A, B, !C) WITHIN 10 over a1 b2 c3: the trailing !C removes the whole match; the
    prefix (A) keeps its count (a trailing negation belongs to the n-th prefix only)."""
    plan = Plan(("A", "B", "C"), (Element(0), Element(1)), (0, 0, C), within=10, measures=FUNNEL)
    assert _eval(plan, [(1, A), (2, B), (3, C)]).values[0].tolist() == [[1, 0]]


def test_leading_negation_applies_to_every_prefix() -> None:
    """SEQ(!C, A, B) WITHIN 10 over c1 a2 b3 a4: the c at 1 is within 10 before a2 and a4."""
    plan = Plan(("A", "B", "C"), (Element(0), Element(1)), (C, 0, 0), within=10, measures=FUNNEL)
    res = _eval(plan, [(1, C), (2, A), (3, B), (4, A)])
    assert res.values[0].tolist() == [[0, 0]] and res.values[1].tolist() == [0]


def test_ties_never_follow_each_other() -> None:
    """a1 b1: equal timestamps are never ordered, so only step 1 is reached."""
    res = _eval(_plan(2), [(1, A), (1, B)])
    assert res.values[0].tolist() == [[1, 0]] and res.values[1].tolist() == [1]


def test_empty_input() -> None:
    """No rows: one output row of zeros without SLIDE, no windows with SLIDE."""
    res = _eval(_plan(3), [])
    assert res.values[0].tolist() == [[0, 0, 0]] and res.values[1].tolist() == [0]
    res = _eval(_plan(3, within=5, slide=2), [])
    assert res.values[0].shape == (0, 3) and len(res.values[1]) == 0


def test_sliding_windows_report_zero_steps_where_no_prefix_matches() -> None:
    """A window holding only a D (last element) reports STEPS [0, 0, 0, 0] and MAX_STEP 0."""
    plan = _plan(4, within=3, slide=3)
    res = _eval(plan, [(1, A), (2, B), (7, D)])
    assert res.window_start.tolist() == [0, 6]
    assert res.values[0].tolist() == [[1, 1, 0, 0], [0, 0, 0, 0]] and res.values[1].tolist() == [2, 0]


# -- overflow and number systems ----------------------------------------------------

def _kleene_prefix(count_type: CountType) -> Plan:
    return Plan(("A", "B"), (Element(0, True), Element(1)), (0, 0, 0), measures=FUNNEL, count_type=count_type)


ROWS_70 = [(t, A) for t in range(70)]  # SEQ(A+, B): prefix (A+) has 2**70 - 1 matches, no B


def test_step_overflow_names_the_measure() -> None:
    with pytest.raises(CountOverflowError, match="steps") as info:
        _eval(_kleene_prefix(CountType.BIGINT), ROWS_70)
    assert "BIGINT" in str(info.value)


def test_step_counts_exact_beyond_bigint() -> None:
    res = _eval(_kleene_prefix(CountType.DECIMAL), ROWS_70)
    assert res.values[0].tolist() == [[2**70 - 1, 0]] and res.values[1].tolist() == [1]
    res = _eval(_kleene_prefix(CountType.DOUBLE), ROWS_70)
    assert res.values[0].tolist() == [[float(2**70 - 1), 0.0]]


# -- properties -----------------------------------------------------------------------

@pytest.mark.parametrize("window", ["none", "within", "slide"])
@SETTINGS
@given(data=st.data())
def test_funnel_equals_oracle(window: str, data: st.DataObject) -> None:
    """Repeated symbols, Kleene, ties, negation in any gap (edges too), every count type."""
    plan = data.draw(plans(window=window, middle_negation=data.draw(st.booleans()), edges=data.draw(st.booleans())))
    plan = with_funnel(plan, data.draw(st.permutations([*FUNNEL, *plan.measures])))
    ev = data.draw(events(plan))
    assume(oracle.cheap(plan, ev))
    check(plan, run(plan, ev), ev)


@SETTINGS
@given(data=st.data())
def test_funnel_fallback_number_systems(data: st.DataObject) -> None:
    """Exact and float fallbacks (with their dead-match pruning, which must not prune prefixes)."""
    plan = data.draw(plans(edges=data.draw(st.booleans()), middle_negation=data.draw(st.booleans())))
    plan = dataclasses.replace(with_funnel(plan), count_type=data.draw(st.sampled_from(list(CountType))))
    ev = data.draw(events(plan))
    assume(oracle.cheap(plan, ev))
    check(plan, run(plan, ev, KernelOptions(int64_first=False)), ev)


@pytest.mark.parametrize("strategy", list(Strategy))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(data=st.data())
def test_funnel_with_predicates_and_strategies(strategy: Strategy, data: st.DataObject) -> None:
    """A prefix keeps the predicates among its elements and the strategy."""
    plan = data.draw(ext_plans(window=data.draw(st.sampled_from(["none", "within", "slide"])), strategy=strategy,
                               n_pred=1))
    plan = with_funnel(plan)
    ev = data.draw(ext_events(plan))
    assume(oracle.cheap(plan, ev))
    check(plan, run_kernel(plan, ev), ev)


# -- plans and paths -------------------------------------------------------------------

def test_plan_json_round_trip_and_checks() -> None:
    plan = _plan(3, within=5, slide=1)
    assert Plan.from_json(plan.to_json()) == plan
    with pytest.raises(PlanError, match="takes no symbol and no column"):
        Plan(("A",), (Element(0),), (0, 0), measures=(Measure(MeasureKind.STEPS, 0, name="s"),))
    with pytest.raises(PlanError, match="malformed plan field"):  # what an engine without funnel steps says
        Plan.from_json(plan.to_json().replace('"steps"', '"stepz"'))


def test_prefix_plan() -> None:
    plan = Plan(("A", "B", "N"), (Element(0), Element(1, True), Element(0)), (4, 4, 4, 4), within=9)
    assert prefix_plan(plan, 2).describe() == "SEQ(!N, A, !N, B+)"
    assert prefix_plan(plan, 3) == dataclasses.replace(plan, measures=prefix_plan(plan, 3).measures)
    with pytest.raises(PlanError, match="prefixes are 1..3"):
        prefix_plan(plan, 0)


def test_other_paths_refuse_funnel_plans() -> None:
    """Time split, streaming and the low-level tallies count the whole pattern only: they say so."""
    plan = _plan(2, within=5)
    assert "grouped path only" in (splittable(plan) or "")
    assert "STEPS(*)" in (streamable(plan) or "")
    with pytest.raises(PlanError, match="streaming path"):
        StreamEvaluator(plan)
    with pytest.raises(PlanError, match="cannot be evaluated by time split: STEPS"):
        evaluate_chunk(plan, np.array([1]), np.array([1]), [], None, None)
    tally = Tally(np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int64), np.array([0, 0]), {})
    with pytest.raises(PlanError, match="grouped path"):
        partials(plan, tally, [], None)  # type: ignore[arg-type]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_live_windows_equal_batch_windows(data: st.DataObject) -> None:
    """Streams: each final SLIDE window's STEPS and MAX_STEP equal the batch window's
    (rows out of order, state saved and restored between batches)."""
    plan = with_funnel(data.draw(plans(window="slide", middle_negation=data.draw(st.booleans()),
                                       edges=data.draw(st.booleans()))))
    check_windows(plan, data.draw(streams(plan)))


def test_live_running_funnel_needs_slide() -> None:
    with pytest.raises(PlanError, match="per SLIDE window"):
        LiveEvaluator(_plan(2, within=5))


def test_live_advance_all_takes_funnel_plans() -> None:
    """The Spark operator advances all partitions of a micro-batch at once: same windows."""
    plan = _plan(3, within=4, slide=2)
    rows = [(1, A), (2, B), (3, C), (5, A), (6, B), (9, C)]
    ts, mask = np.array([t for t, _ in rows]), np.array([m for _, m in rows])
    one, together = LiveEvaluator(plan), [LiveEvaluator(plan), LiveEvaluator(plan)]
    one.add(ts, mask)
    together[0].add(ts, mask)
    [res, other] = advance_all(together, 20)
    want = one.advance(20)
    assert other is None and isinstance(res, GroupResult) and want is not None
    assert res.window_start.tolist() == want.window_start.tolist()
    assert res.values[0].tolist() == want.values[0].tolist() == _eval(plan, rows).values[0].tolist()


# -- quantified and optional elements ------------------------------------------------------

@pytest.mark.parametrize("window", ["none", "within", "slide"])
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(data=st.data())
def test_funnel_with_quantified_and_optional_elements(window: str, data: st.DataObject) -> None:
    """X{n,m}, X{n}, X{n,}, X?, X* anywhere but first-optional, negation next to them, vs the oracle."""
    plan = data.draw(quantified_plans(window=window, middle_negation=data.draw(st.booleans()),
                                      edges=window != "none" and data.draw(st.booleans())))
    first = plan.elements[0]
    if first.optional:  # the funnel's first prefix must bind a row (refused otherwise, below)
        plan = dataclasses.replace(plan, elements=(Element(first.symbol, first.kleene), *plan.elements[1:]))
    plan = with_funnel(plan)
    ev = data.draw(events(plan))
    assume(quantified_cheap(plan, ev))
    check(plan, run(plan, ev), ev)


def test_optional_step_counts_both_ways() -> None:
    """SEQ(A, B?, C) over a1 b2 c3: step 2 (A, B?) has 2 matches (a1 alone, a1 b2), step 3
    has 2 (a1 c3, a1 b2 c3)."""
    plan = Plan(("A", "B", "C"), (Element(0), Element(1, False, 0), Element(2)), (0, 0, 0, 0), measures=FUNNEL)
    res = _eval(plan, [(1, A), (2, B), (3, C)])
    assert res.values[0].tolist() == [[1, 2, 2]] and res.values[1].tolist() == [3]


def test_funnel_refuses_an_optional_first_element() -> None:
    with pytest.raises(PlanError, match="needs a first element that binds a row"):
        Plan(("A", "B"), (Element(0, False, 0), Element(1)), (0, 0, 0), measures=FUNNEL)
