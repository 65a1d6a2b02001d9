"""Property tests: ``evaluate_group`` equals the brute-force oracle on small random groups."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from tests import oracle
from tests.doubles import doubles, same_double
from udafs.errors import CountOverflowError
from udafs.kernels import GroupResult, evaluate_group
from udafs.kernels.options import DEFAULT, KernelOptions
from udafs.plan import CountType, Element, Measure, MeasureKind, Plan, ValueType

COLUMNS = (ValueType.INT, ValueType.FLOAT)


@st.composite
def plans(draw: st.DrawFn, max_len: int = 4, max_kleene: int = 2, window: str = "any",
          middle_negation: bool = False, edges: bool = False, sql: bool = False) -> Plan:
    """Random plans: repeated symbols, Kleene, negation in any gap, WITHIN/SLIDE, all measures.

    ``sql``: only windows SQL accepts, SLIDE <= WITHIN (Spark's window() rule); the engine
    itself also evaluates longer slides (windows with gaps)."""
    n_sym = draw(st.sampled_from([1, 2, 2, 3, 3, 4]))
    length = draw(st.one_of(st.integers(1, max_len), st.integers(1, 3)))
    syms = [draw(st.integers(0, n_sym - 1)) for _ in range(length)]
    kleene = [draw(st.booleans()) for _ in range(length)]
    while sum(kleene) > max_kleene:
        kleene[kleene.index(True)] = False
    within = slide = None
    if window in ("any", "within", "slide"):
        if window != "any" or draw(st.booleans()):
            within = draw(st.integers(1, 10))
            if window == "slide" or (window == "any" and draw(st.booleans())):
                slide = draw(st.integers(1, min(5, within) if sql else 5))
    neg_mask = st.integers(1, (1 << n_sym) - 1)
    negs = [draw(neg_mask) if draw(st.integers(0, 3)) == 0 else 0 for _ in range(length + 1)]
    if within is None:
        negs[0] = negs[-1] = 0
    if edges and within is not None:
        negs[0], negs[-1] = draw(neg_mask), draw(neg_mask)
    if middle_negation and length > 1:
        negs[draw(st.integers(1, length - 1))] = draw(neg_mask)
    measures = [Measure(MeasureKind.COUNT_STAR, name="n")]
    for k in range(draw(st.integers(0, 3))):
        kind = draw(st.sampled_from([m for m in MeasureKind if m is not MeasureKind.COUNT_STAR and not m.funnel]))
        sym = draw(st.sampled_from(syms))
        col = None if kind is MeasureKind.COUNT else draw(st.integers(0, 1))
        measures.append(Measure(kind, sym, col, f"m{k}"))
    return Plan(
        symbols=tuple(f"S{i}" for i in range(n_sym)),
        elements=tuple(Element(s, k) for s, k in zip(syms, kleene)),
        negations=tuple(negs),
        within=within,
        slide=slide,
        measures=tuple(draw(st.permutations(measures))),
        columns=COLUMNS,
        count_type=draw(st.sampled_from(list(CountType))),
    )


@st.composite
def events(draw: st.DrawFn, plan: Plan, max_rows: int = 9, max_ts: int = 8, non_finite: int = 1) -> oracle.Events:
    """Random events with ties, multi-symbol masks, irrelevant rows, NULLs, and NaN and
    infinities in about ``non_finite`` of ten DOUBLE values."""
    n = draw(st.one_of(st.integers(0, max_rows), st.integers(max_rows - 3, max_rows)))
    top = (1 << len(plan.symbols)) - 1
    hi = draw(st.sampled_from([3, 5, max_ts]))
    ts = [draw(st.integers(-2, hi)) for _ in range(n)]
    mask = [draw(st.integers(0, top)) if draw(st.integers(0, 5)) == 0
            else 1 << draw(st.integers(0, top.bit_length() - 1)) for _ in range(n)]
    ints = [draw(st.one_of(st.none(), st.integers(-50, 50))) for _ in range(n)]
    floats = [draw(doubles(non_finite=non_finite)) for _ in range(n)]
    return oracle.Events(ts, mask, (ints, floats))


def to_arrays(ev: oracle.Events, columns: tuple[ValueType, ...] = COLUMNS
              ) -> tuple[np.ndarray, np.ndarray, list[tuple[np.ndarray, np.ndarray]]]:
    """The oracle's events as kernel input arrays (value columns of types ``columns``)."""
    ts = np.array(ev.ts, dtype=np.int64)
    mask = np.array(ev.mask, dtype=np.int64)
    cols = []
    for vals, vt in zip(ev.values, columns):
        ok = np.array([v is not None for v in vals], dtype=bool)
        dt = {ValueType.INT: np.int64, ValueType.FLOAT: np.float64, ValueType.DECIMAL: object}[vt]
        cols.append((np.array([0 if v is None else v for v in vals] + [0], dtype=dt)[:-1], ok))
    return ts, mask, cols


def as_rows(res: GroupResult) -> list[tuple[int | None, int | None, list[object]]]:
    """A GroupResult in the oracle's shape (None for NULL)."""
    n_rows = len(res.values[0])
    out = []
    for k in range(n_rows):
        ws = None if res.window_start is None else int(res.window_start[k])
        we = None if res.window_end is None else int(res.window_end[k])
        vals = [v[k] if ok[k] else None for v, ok in zip(res.values, res.valid)]
        out.append((ws, we, vals))
    return out


def assert_same(plan: Plan, got: GroupResult, want: list) -> None:
    """Exact equality for exact values, close for floats, and the declared dtypes."""
    rows = as_rows(got)
    assert [r[:2] for r in rows] == [r[:2] for r in want]
    for (_, _, g), (_, _, e) in zip(rows, want):
        for m, gv, ev in zip(plan.measures, g, e):
            if ev is None or gv is None:
                assert gv is None and ev is None, (m, gv, ev)
            elif isinstance(gv, (float, np.floating)):
                assert same_double(float(gv), float(ev)), (m, gv, ev)
            else:
                assert int(gv) == ev and type(gv) is not bool, (m, gv, ev)
    check_dtypes(plan, got)


def check_dtypes(plan: Plan, got: GroupResult) -> None:
    """Value dtypes promised by the API contract."""
    counts = {CountType.BIGINT: np.int64, CountType.DECIMAL: object, CountType.DOUBLE: np.float64}
    for m, v, ok in zip(plan.measures, got.values, got.valid):
        assert ok.dtype == bool
        column = None if m.column is None else plan.columns[m.column]
        if m.kind in (MeasureKind.COUNT_STAR, MeasureKind.COUNT) or (
                m.kind is MeasureKind.SUM and column is ValueType.INT):
            assert v.dtype == counts[plan.count_type], (m, v.dtype)
        elif column is ValueType.DECIMAL:  # exact: Python ints (or int64 minima / maxima)
            assert v.dtype == object or (m.kind in (MeasureKind.MIN, MeasureKind.MAX) and v.dtype == np.int64)
        elif m.kind is MeasureKind.AVG or m.kind is MeasureKind.SUM:
            assert v.dtype == np.float64
        else:
            want = np.int64 if plan.columns[m.column] is ValueType.INT else np.float64
            assert v.dtype == want


def check(plan: Plan, ev: oracle.Events, options: KernelOptions = DEFAULT) -> None:
    ts, mask, cols = to_arrays(ev)
    assert_same(plan, evaluate_group(plan, ts, mask, cols, options=options), oracle.evaluate(ev, plan))


SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("window", ["none", "within", "slide"])
@SETTINGS
@given(data=st.data())
def test_window_mode(window: str, data: st.DataObject) -> None:
    plan = data.draw(plans(window=window))
    ev = data.draw(events(plan))
    assume(oracle.cheap(plan, ev))
    check(plan, ev)


@SETTINGS
@given(st.data())
def test_middle_negation(data: st.DataObject) -> None:
    plan = data.draw(plans(window=data.draw(st.sampled_from(["none", "within", "slide"])), middle_negation=True))
    ev = data.draw(events(plan))
    assume(oracle.cheap(plan, ev))
    check(plan, ev)


@SETTINGS
@given(st.data())
def test_both_edge_negations(data: st.DataObject) -> None:
    plan = data.draw(plans(window=data.draw(st.sampled_from(["within", "slide"])), edges=True))
    ev = data.draw(events(plan, max_rows=10, max_ts=12))
    assume(oracle.cheap(plan, ev))
    check(plan, ev)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_tiny_batches(data: st.DataObject) -> None:
    """Replicated timelines (windows, negation intervals) split into many batches."""
    import udafs.kernels.counting.segments as segments

    plan = data.draw(plans(window=data.draw(st.sampled_from(["within", "slide"])), edges=data.draw(st.booleans())))
    ev = data.draw(events(plan))
    assume(oracle.cheap(plan, ev))
    saved = segments.BATCH_ROWS
    segments.BATCH_ROWS = data.draw(st.integers(1, 4))
    try:
        check(plan, ev)
    finally:
        segments.BATCH_ROWS = saved


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_large_and_negative_timestamps(data: st.DataObject) -> None:
    """Results move with the timestamps (by whole slides): microsecond-scale epochs, negatives."""
    plan = data.draw(plans())
    ev = data.draw(events(plan))
    assume(oracle.cheap(plan, ev))
    unit = plan.slide or 1
    shift = data.draw(st.integers(-(2**52) // unit, 2**52 // unit)) * unit
    ts, mask, cols = to_arrays(ev)
    got = evaluate_group(plan, ts + shift, mask, cols)
    want = [(None if a is None else a + shift, None if b is None else b + shift, v)
            for a, b, v in oracle.evaluate(ev, plan)]
    assert_same(plan, got, want)


DECIMAL_COLUMNS = (ValueType.DECIMAL, ValueType.FLOAT)
WIDE = 10**36  # unscaled DECIMAL(38, s) values: far beyond int64


@SETTINGS
@given(st.data())
def test_decimal_columns_are_exact(data: st.DataObject) -> None:
    """Unscaled DECIMAL(38, s) integers (up to 38 digits, of both signs): SUM, MIN, MAX
    exact, AVG rounded half up to ``places`` more places, on every path; results past 38
    digits overflow."""
    import dataclasses

    plan = data.draw(plans(window=data.draw(st.sampled_from(["none", "within", "slide"])),
                           middle_negation=data.draw(st.booleans())))
    places = data.draw(st.integers(0, 4))  # AVG rounded half up to 0..4 more places (Spark: 4, or fewer near 38)
    measures = tuple(dataclasses.replace(m, places=places, digits=38) if m.kind is MeasureKind.AVG and m.column == 0
                     else m for m in plan.measures)
    plan = dataclasses.replace(plan, columns=DECIMAL_COLUMNS, measures=measures,
                               count_type=data.draw(st.sampled_from([CountType.BIGINT, CountType.DECIMAL])))
    ev = data.draw(events(plan))
    assume(oracle.cheap(plan, ev))
    scale = data.draw(st.sampled_from([1, WIDE, (10**38 - 1) // 50]))  # |values| <= 50: 38 digits at most
    wide = [None if v is None else v * scale + (v % 7) for v in ev.values[0]]
    ev = oracle.Events(ev.ts, ev.mask, (wide, ev.values[1]))
    ts, mask, cols = to_arrays(ev, DECIMAL_COLUMNS)
    want = oracle.evaluate(ev, plan)
    as_sums = dataclasses.replace(plan, measures=tuple(  # AVG first sums (into 38 digits here)
        dataclasses.replace(m, kind=MeasureKind.SUM, places=0, digits=0) if m.kind is MeasureKind.AVG else m
        for m in plan.measures))
    results = [v for rows in (want, oracle.evaluate(ev, as_sums)) for _, _, vals in rows
               for m, v in zip(plan.measures, vals)
               if m.kind in (MeasureKind.SUM, MeasureKind.AVG) and m.column == 0 and v is not None]
    event("overflow" if any(abs(v) >= 10**38 for v in results) else "exact")
    if any(abs(v) >= 10**38 for v in results):
        with pytest.raises(CountOverflowError, match=r"does not fit DECIMAL\(38, (0|s)\); Spark's own SUM / AVG"):
            evaluate_group(plan, ts, mask, cols)
        return
    assert_same(plan, evaluate_group(plan, ts, mask, cols), want)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_fallback_number_systems(data: st.DataObject) -> None:
    """The exact / float fallbacks (with dead-match pruning) on every path, as if int64 overflowed."""
    import dataclasses

    plan = data.draw(plans(edges=data.draw(st.booleans()), middle_negation=data.draw(st.booleans())))
    plan = dataclasses.replace(plan, count_type=data.draw(st.sampled_from([CountType.DECIMAL, CountType.DOUBLE])))
    ev = data.draw(events(plan))
    assume(oracle.cheap(plan, ev))
    check(plan, ev, KernelOptions(int64_first=False))


def with_double_measures(plan: Plan, symbol: int) -> Plan:
    """``plan`` with SUM, AVG, MIN and MAX of the DOUBLE column (column 1) of ``symbol`` added."""
    import dataclasses

    extra = tuple(Measure(kind, symbol, 1, f"d{kind.value}") for kind in
                  (MeasureKind.SUM, MeasureKind.AVG, MeasureKind.MIN, MeasureKind.MAX))
    return dataclasses.replace(plan, measures=plan.measures + extra)


@SETTINGS
@given(st.data())
def test_non_finite_doubles(data: st.DataObject) -> None:
    """NaN and ±inf in many DOUBLE values: sums over the pairs that bind them (IEEE), rows
    no match binds change nothing, MIN/MAX in Spark's order (NaN above every number)."""
    plan = data.draw(plans(window=data.draw(st.sampled_from(["none", "within", "slide"])),
                           middle_negation=data.draw(st.booleans())))
    plan = with_double_measures(plan, data.draw(st.sampled_from([e.symbol for e in plan.elements])))
    ev = data.draw(events(plan, non_finite=5))
    assume(oracle.cheap(plan, ev))
    check(plan, ev, KernelOptions(int64_first=data.draw(st.booleans())))


@pytest.mark.parametrize("a, b", [(math.nan, 3.0), (math.inf, 3.0), (-math.inf, 3.0)])
def test_unbound_non_finite_value_changes_no_sum(a: float, b: float) -> None:
    """SEQ(A, B): the A row's NaN / inf is bound to no measured symbol; a B row before
    every A is bound by no match: SUM(B.x) = AVG(B.x) = 3.0 (Spark's sum over the matches)."""
    plan = Plan(symbols=("A", "B"), elements=(Element(0), Element(1)), negations=(0, 0, 0), columns=COLUMNS,
                measures=(Measure(MeasureKind.SUM, 1, 1, "s"), Measure(MeasureKind.AVG, 1, 1, "a")))
    for ts, mask, x in (([0, 1], [1, 2], [a, b]), ([0, 1, -1], [1, 2, 2], [1.0, b, a])):
        ints = [None] * len(ts)
        got = evaluate_group(plan, np.array(ts), np.array(mask), to_arrays(oracle.Events(ts, mask, (ints, x)))[2])
        assert [float(v[0]) for v in got.values] == [3.0, 3.0]
