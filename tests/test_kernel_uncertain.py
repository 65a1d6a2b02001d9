"""Imprecise timestamps: expected aggregates equal the possible-worlds oracle, exactly.

Every feature (SEQ with ties, WITHIN on the uncertain times, negation with the negated
events' own uncertainty, leading / trailing negation, Kleene, SLIDE, COUNT / SUM
measures) is drawn at random; the kernel runs in exact fractions
(``Arith(Kind.RATIONAL)``) and must equal ``tests.possible_worlds`` exactly, and in
float64 closely. Input outside the exact method's conditions must raise
``UncertainTimeError`` — exactly then (an independent brute-force test of the
conditions). Point intervals reproduce today's answers on larger inputs.
"""

from __future__ import annotations

import dataclasses
import math
import re
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from tests import oracle, possible_worlds
from tests.doubles import doubles, same_double
from tests.test_kernel_oracle import COLUMNS, plans, to_arrays
from udafs.errors import PlanError, UncertainTimeError
from udafs.kernels import evaluate_group
from udafs.kernels.imprecise import possible_times, uncertain
from udafs.kernels.values.arith import Arith, Kind
from udafs.plan import CmpOp, CountType, Element, IteratorPredicate, Measure, MeasureKind, Plan, ValueType

LINEAR = (MeasureKind.COUNT_STAR, MeasureKind.COUNT, MeasureKind.SUM)
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                           HealthCheck.filter_too_much])


def imprecise(plan: Plan, step: int) -> Plan:
    """``plan`` over imprecise timestamps: linear measures only, DOUBLE counts."""
    measures = tuple(m for m in plan.measures if m.kind in LINEAR) or (Measure(MeasureKind.COUNT_STAR, name="n"),)
    return dataclasses.replace(plan, measures=measures, count_type=CountType.DOUBLE, uncertain=step)


@st.composite
def uncertain_plans(draw: st.DrawFn, window: str) -> Plan:
    return imprecise(draw(plans(max_len=3, max_kleene=1, window=window, middle_negation=draw(st.booleans()))),
                     draw(st.sampled_from([1, 1, 2])))


@st.composite
def uncertain_events(draw: st.DrawFn, plan: Plan, max_rows: int = 6) -> tuple[oracle.Events, list, list]:
    """Events with possible-time ranges of 0..4 units (mostly narrow), ties, multi-symbol
    masks, rows of no symbol and NULL values."""
    n = draw(st.integers(0, max_rows))
    top = (1 << len(plan.symbols)) - 1
    lo = [draw(st.integers(-2, 8)) for _ in range(n)]
    hi = [x + draw(st.sampled_from([0, 0, 0, 1, 1, 2, 3, 4])) for x in lo]
    mask = [draw(st.integers(0, top)) if draw(st.integers(0, 6)) == 0
            else 1 << draw(st.integers(0, top.bit_length() - 1)) for _ in range(n)]
    ints = [draw(st.one_of(st.none(), st.integers(-50, 50))) for _ in range(n)]
    floats = [draw(doubles()) for _ in range(n)]
    return oracle.Events(lo, mask, (ints, floats)), lo, hi


def kernel(plan: Plan, ev: oracle.Events, lo: list, hi: list, ar: Arith) -> list:
    """The kernel's partials as oracle-shaped rows."""
    ts, mask, cols = to_arrays(ev)
    parts, starts = uncertain.evaluate_uncertain(plan, ts, mask, cols, np.array(lo, dtype=np.int64),
                                                 np.array(hi, dtype=np.int64), ar)
    rows = []
    for k in range(len(parts[0].value)):
        ws = None if starts is None else int(starts[k])
        vals = []
        for m, p in zip(plan.measures, parts):
            has = p.nn[k] > 0 if m.kind is MeasureKind.SUM else True
            vals.append(p.value[k] if has else None)
        rows.append((ws, None if ws is None else ws + plan.within, vals))
    return rows


def violates(plan: Plan, ev: oracle.Events, lo: list, hi: list) -> bool:
    """The exact method's conditions (udafs.kernels.imprecise.uncertain), tested by brute force."""
    s, pat = plan.uncertain, plan.pattern_symbols_mask
    rows = [r for r in range(len(lo)) if ev.mask[r] & pat]
    times = {r: possible_worlds.possible_times(lo[r], hi[r], s) for r in rows}
    wide = [r for r in rows if len(times[r]) > 1]
    pos = [1 << el.symbol for el in plan.elements]
    negated = [g for g in plan.negations if g]
    for r in wide:
        m = ev.mask[r]
        if any(m & b for b in pos) and any(m & g for g in negated):
            return True
        if sum(1 for g in plan.negations if g and m & g) > 1:
            return True
        inside = [any(ev.mask[q] & b and any(times[r][0] < t < times[r][-1] for t in times[q]) for q in rows)
                  for b in pos]
        for i in range(len(pos)):
            for j in range(i + 1, len(pos)):
                if m & pos[i] and m & pos[j] and all(inside[k] for k in range(i + 1, j)):
                    return True
    for el in plan.elements:
        if el.kleene:
            inst = [r for r in rows if ev.mask[r] & (1 << el.symbol)]
            for a in inst:
                for b in inst:
                    overlap = times[a][0] <= times[b][-1] and times[b][0] <= times[a][-1]
                    if a < b and (a in wide or b in wide) and overlap:
                        return True
    return False


def check(plan: Plan, ev: oracle.Events, lo: list, hi: list) -> None:
    assume(possible_worlds.world_count(plan, ev, lo, hi) <= 400)
    bad = violates(plan, ev, lo, hi)
    event("refused" if bad else "compared")
    if not bad:
        wide = [r for r in range(len(lo)) if len(possible_worlds.possible_times(lo[r], hi[r], plan.uncertain)) > 1]
        negated = sum(plan.negations[1:-1]) and any(ev.mask[r] & g for r in wide for g in plan.negations[1:-1])
        edge = any(ev.mask[r] & (plan.negations[0] | plan.negations[-1]) for r in wide)
        kleene = any(ev.mask[r] & (1 << el.symbol) for r in wide for el in plan.elements if el.kleene)
        for name, hit in (("imprecise middle negation", negated), ("imprecise edge negation", edge),
                          ("imprecise Kleene instance", kleene), ("imprecise rows", bool(wide)),
                          ("iterator predicate", kleene and bool(plan.iterator_predicates))):
            if hit:
                event(name)
    if bad:
        with pytest.raises(UncertainTimeError):
            kernel(plan, ev, lo, hi, Arith(Kind.RATIONAL))
        return
    want = possible_worlds.expected(plan, ev, lo, hi)
    got = kernel(plan, ev, lo, hi, Arith(Kind.RATIONAL))
    assert [r[:2] for r in got] == [r[:2] for r in want]
    for (_, _, g), (_, _, e) in zip(got, want):
        for m, gv, ev_ in zip(plan.measures, g, e):
            if ev_ is None or gv is None:
                assert gv is None and ev_ is None, (m, gv, ev_)
            elif m.kind is MeasureKind.SUM and plan.columns[m.column] is ValueType.FLOAT:
                assert same_double(float(gv), float(ev_)), (m, gv, ev_)
            else:
                assert Fraction(gv) == ev_, (m, gv, ev_)
    floats = kernel(plan, ev, lo, hi, Arith(Kind.FLOAT, prune=False))
    for (_, _, g), (_, _, e) in zip(floats, want):
        for gv, ev_ in zip(g, e):
            assert (gv is None) == (ev_ is None)
            if gv is not None:
                assert same_double(float(gv), float(ev_))


@pytest.mark.parametrize("window", ["none", "within", "slide"])
@SETTINGS
@given(data=st.data())
def test_expected_equals_possible_worlds(window: str, data: st.DataObject) -> None:
    plan = data.draw(uncertain_plans(window))
    ev, lo, hi = data.draw(uncertain_events(plan))
    check(plan, ev, lo, hi)


@SETTINGS
@given(data=st.data())
def test_edge_negation_equals_possible_worlds(data: st.DataObject) -> None:
    plan = data.draw(uncertain_plans("within"))
    lead, trail = data.draw(st.integers(0, 3)), data.draw(st.integers(0, 3))
    negs = list(plan.negations)
    negs[0], negs[-1] = lead & ((1 << len(plan.symbols)) - 1), trail & ((1 << len(plan.symbols)) - 1)
    plan = dataclasses.replace(plan, negations=tuple(negs), slide=data.draw(st.sampled_from([None, None, 2])))
    ev, lo, hi = data.draw(uncertain_events(plan))
    check(plan, ev, lo, hi)


@st.composite
def distinct_plans(draw: st.DrawFn, window: str) -> Plan:
    """Positions with distinct symbols and negations of other symbols (so that imprecise
    rows are rarely refused): SEQ of 1..3 elements, at most one Kleene, negation anywhere
    WITHIN allows, WITHIN / SLIDE as asked."""
    length = draw(st.integers(1, 3))
    kleene = draw(st.integers(-1, length - 1))
    n_sym = length + 2
    negs = [0] * (length + 1)
    for g in range(length + 1):
        if draw(st.booleans()):
            negs[g] = 1 << draw(st.integers(length, n_sym - 1))
    within = slide = None
    if window != "none":
        within = draw(st.integers(2, 9))
        slide = draw(st.integers(1, min(4, within))) if window == "slide" else None  # SQL refuses SLIDE > WITHIN
    if within is None:
        negs[0] = negs[-1] = 0
    sym = draw(st.integers(0, length - 1))
    measures = [Measure(MeasureKind.COUNT_STAR, name="n"), Measure(MeasureKind.COUNT, sym, None, "c"),
                Measure(MeasureKind.SUM, sym, draw(st.integers(0, 1)), "s")]
    iterators = ()
    if kleene >= 0 and draw(st.booleans()):  # b[i].c OP b[i-1].c + offset (SASE++ Q6 option 1)
        column = draw(st.integers(0, 1))
        offset = draw(st.sampled_from([0, 0, 1, -2]))
        left_offset = draw(st.sampled_from([0, 0, 0, -1] + ([0.5] if COLUMNS[column] is ValueType.FLOAT else [])))
        iterators = (IteratorPredicate(kleene, column, draw(st.sampled_from(list(CmpOp))), offset, left_offset),)
    return Plan(symbols=tuple(f"S{i}" for i in range(n_sym)),
                elements=tuple(Element(i, i == kleene) for i in range(length)), negations=tuple(negs),
                within=within, slide=slide, measures=tuple(measures), columns=COLUMNS,
                count_type=CountType.DOUBLE, uncertain=draw(st.sampled_from([1, 1, 2])),
                iterator_predicates=iterators)


@st.composite
def wide_events(draw: st.DrawFn, plan: Plan, max_rows: int = 6, last: int = 12) -> tuple[oracle.Events, list, list]:
    """Single-symbol events starting in 0..last, most with 2..4 possible times."""
    n = draw(st.integers(1, max_rows))
    lo = [draw(st.integers(0, last)) for _ in range(n)]
    hi = [x + draw(st.sampled_from([0, 1, 2, 3])) * plan.uncertain for x in lo]
    mask = [1 << draw(st.integers(0, len(plan.symbols) - 1)) for _ in range(n)]
    ints = [draw(st.one_of(st.none(), st.integers(-50, 50))) for _ in range(n)]
    floats = [draw(doubles()) for _ in range(n)]
    return oracle.Events(lo, mask, (ints, floats)), lo, hi


@pytest.mark.parametrize("window", ["none", "within", "slide"])
@SETTINGS
@given(data=st.data())
def test_imprecise_features_equal_possible_worlds(window: str, data: st.DataObject) -> None:
    """Imprecise negated, Kleene and bound events in most examples."""
    plan = data.draw(distinct_plans(window))
    ev, lo, hi = data.draw(wide_events(plan))
    check(plan, ev, lo, hi)


@SETTINGS
@given(plan=plans(max_len=4, max_kleene=2, window="any", middle_negation=True, edges=True).map(
    lambda p: imprecise(p, 1)), data=st.data())
def test_point_intervals_give_todays_answers(plan: Plan, data: st.DataObject) -> None:
    """lo = hi for every row: the expected values are today's exact answers."""
    from tests.test_kernel_oracle import events

    ev = data.draw(events(plan, max_rows=40, max_ts=30))
    ts, mask, cols = to_arrays(ev)
    got = evaluate_group(plan, ts, mask, cols, bounds=(ts, ts))
    today = evaluate_group(dataclasses.replace(plan, uncertain=None), ts, mask, cols)
    assert got.window_start is None and today.window_start is None or (
        np.array_equal(got.window_start, today.window_start) and np.array_equal(got.window_end, today.window_end))
    for m, g, t, gok, tok in zip(plan.measures, got.values, today.values, got.valid, today.valid):
        assert np.array_equal(gok, tok), m
        assert np.allclose(g[gok], t[tok], rtol=1e-12, atol=0, equal_nan=True), (m, g, t)


def _prepared(plan: Plan, ev: oracle.Events, lo: list, hi: list, ar: Arith):
    ts, mask, _ = to_arrays(ev)
    events = uncertain.group_events(plan, mask, np.array(lo, dtype=np.int64), np.array(hi, dtype=np.int64))
    uncertain.check_exact(plan, events)
    return events, uncertain.expand(plan, events, ar)


@SETTINGS
@given(data=st.data())
def test_blocks_equal_anchored_on_larger_groups(data: st.DataObject) -> None:
    """The two WITHIN paths agree (counts and per-row pair counts) where both apply, on
    groups too large for the possible-worlds oracle."""
    plan = data.draw(distinct_plans("within"))
    plan = dataclasses.replace(plan, negations=(0,) + plan.negations[1:-1] + (0,))
    ev, lo, hi = data.draw(wide_events(plan, max_rows=40, last=200))
    ar = Arith(Kind.FLOAT, prune=False)
    try:
        events, ex = _prepared(plan, ev, lo, hi, ar)
    except UncertainTimeError:
        assume(False)
    assume(uncertain._blocks_apply(plan, events))
    _, _, cols = to_arrays(ev)
    per_event = [(v[events.row], ok[events.row]) for v, ok in cols]
    runner = uncertain.Runner(plan, per_event if ex.event is None
                              else [(v[ex.event], ok[ex.event]) for v, ok in per_event])
    a, b = uncertain._blocks(plan, events, ex, ar), uncertain._anchored(plan, events, ex, ar, runner)
    assert math.isclose(float(a.counts[0]), float(b.counts[0]), rel_tol=1e-9, abs_tol=1e-9)
    for sym in a.pairs:
        assert np.allclose(a.pairs[sym], b.pairs[sym], rtol=1e-9, atol=1e-9)


def _plan(elements: tuple[Element, ...], negations: tuple[int, ...], symbols: int = 3, within: int | None = 10,
          step: int = 1) -> Plan:
    return Plan(symbols=tuple("ABCDE"[:symbols]), elements=elements, negations=negations, within=within,
                count_type=CountType.DOUBLE, uncertain=step)


def _evaluate(plan: Plan, rows: list[tuple[int, int, int]]):
    mask = np.array([m for m, _, _ in rows], dtype=np.int64)
    lo = np.array([a for _, a, _ in rows], dtype=np.int64)
    hi = np.array([b for _, _, b in rows], dtype=np.int64)
    return evaluate_group(plan, lo, mask, [], bounds=(lo, hi))


@pytest.mark.parametrize("plan, rows, message", [
    (_plan((Element(0), Element(1)), (0, 0, 0)), [(1, 5, 3)], "lower bound is above the upper bound"),
    (_plan((Element(0), Element(1, True)), (0, 0, 0)), [(1, 0, 0), (2, 1, 4), (2, 3, 3)],
     "Kleene element B+: instances with possible times [1, 4] and [3, 3] overlap"),
    (_plan((Element(0), Element(0)), (0, 0, 0), symbols=1), [(1, 0, 3)],
     "instance of positions 1 and 2 of SEQ(A, A)"),
    (_plan((Element(0), Element(1)), (0, 1, 0)), [(1, 0, 3), (2, 5, 5)],
     "instance of both a positive and a negated symbol"),
    (_plan((Element(0), Element(1), Element(2)), (0, 8, 8, 0), symbols=4), [(8, 0, 3)],
     "negated in two gaps of SEQ(A, !D, B, !D, C)"),
])
def test_refusals_name_the_event_and_the_rule(plan: Plan, rows: list, message: str) -> None:
    with pytest.raises(UncertainTimeError, match=re.escape(message)):
        _evaluate(plan, rows)


def test_an_event_between_repeated_positions_that_cannot_fit_is_accepted() -> None:
    """SEQ(A, B, A) with an imprecise A: taking both A positions needs a B strictly inside
    its range; without one the event is accepted (SASE++ Q5's Balance events)."""
    plan = _plan((Element(0), Element(1), Element(0)), (0, 0, 0, 0), within=None)
    got = _evaluate(plan, [(1, 0, 2), (2, 5, 5), (1, 6, 9)])
    assert float(got.values[0][0]) == 1.0
    with pytest.raises(UncertainTimeError, match="positions 1 and 3"):
        _evaluate(plan, [(1, 0, 6), (2, 5, 5), (1, 6, 9)])


def test_too_many_possible_times_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """Copies beyond MAX_ROWS are refused; merged rows (no Kleene) take a compact grid of any width."""
    monkeypatch.setattr(possible_times, "MAX_ROWS", 1500)
    with pytest.raises(UncertainTimeError, match="coarser STEP"):
        _evaluate(_plan((Element(0, True),), (0, 0)), [(1, 0, 2000)])
    assert math.isclose(float(_evaluate(_plan((Element(0),), (0, 0)), [(1, 0, 1000)]).values[0][0]), 1.0)


def test_plan_refuses_non_linear_measures_and_other_strategies() -> None:
    base = _plan((Element(0),), (0, 0))
    for change, message in (({"count_type": CountType.BIGINT}, "count type must be DOUBLE"),
                            ({"measures": (Measure(MeasureKind.MAX, 0, 0, "m"),), "columns": (ValueType.INT,)},
                             "MAX is not an expectation"),
                            ({"uncertain": 0}, "positive integer"),
                            # a DECIMAL SUM is exact; expected values are DOUBLE (SQL carries the column as FLOAT)
                            ({"measures": (Measure(MeasureKind.SUM, 0, 0, "s"),), "columns": (ValueType.DECIMAL,)},
                             "over a DECIMAL column is exact and needs an exact count type")):
        with pytest.raises(PlanError, match=message):
            dataclasses.replace(base, **change)
    assert Plan.from_json(base.to_json()) == base
    assert '"v":3' in base.to_json()


def test_windows_holding_only_imprecise_negated_events_report_zero() -> None:
    """The last windows hold only a negated event's possible times (no timeline rows):
    they report 0 and the windows before them keep all their pairs."""
    plan = dataclasses.replace(_plan((Element(0),), (4, 0), within=6), slide=4,
                               measures=(Measure(MeasureKind.COUNT_STAR, name="n"),
                                         Measure(MeasureKind.COUNT, 0, None, "c")))
    ev, lo, hi = oracle.Events([10, 0], [4, 1], ()), [10, 0], [13, 2]
    assert kernel(plan, ev, lo, hi, Arith(Kind.RATIONAL)) == possible_worlds.expected(plan, ev, lo, hi)


@SETTINGS
@given(data=st.data())
def test_merged_rows_equal_copies_on_larger_groups(data: st.DataObject) -> None:
    """Rows merged by (time, mask) give the counts and per-event pair counts of one row per
    (event, possible time), with several interval widths and steps in one group."""
    plan = data.draw(distinct_plans(data.draw(st.sampled_from(["none", "within"]))))
    plan = dataclasses.replace(plan, elements=tuple(Element(e.symbol) for e in plan.elements), iterator_predicates=())
    ev, lo, hi = data.draw(wide_events(plan, max_rows=60, last=80))
    ts, mask, cols = to_arrays(ev)
    lo_a, hi_a = np.array(lo, dtype=np.int64), np.array(hi, dtype=np.int64)
    ar = Arith(Kind.FLOAT, prune=False)
    try:
        merged = uncertain.evaluate_uncertain(plan, ts, mask, cols, lo_a, hi_a, ar)[0]
    except UncertainTimeError:
        assume(False)
    saved = possible_times.mergeable
    possible_times.mergeable = lambda p: False
    try:
        copied = uncertain.evaluate_uncertain(plan, ts, mask, cols, lo_a, hi_a, ar)[0]
    finally:
        possible_times.mergeable = saved
    for a, b in zip(merged, copied):
        assert np.allclose(a.value.astype(float), b.value.astype(float), rtol=1e-9, atol=1e-9, equal_nan=True)
        assert np.allclose(a.nn.astype(float), b.nn.astype(float), rtol=1e-9, atol=1e-9)
