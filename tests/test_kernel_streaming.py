"""StreamEvaluator == evaluate_group == oracle, for random streams cut into random chunks."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tests import oracle
from tests.doubles import with_non_finite
from tests.test_kernel_oracle import assert_same, events, plans, to_arrays, with_double_measures
from udafs.errors import CountOverflowError, InputDataError
from udafs.kernels import GroupResult, evaluate_group
from udafs.kernels.incremental.streaming import StreamEvaluator
from udafs.kernels.options import DEFAULT, KernelOptions
from udafs.plan import CountType, Element, Measure, MeasureKind, Plan


def stream(plan: Plan, ev: oracle.Events, cuts: list[int], options: KernelOptions = DEFAULT) -> GroupResult:
    """Push the events sorted by time in chunks cut at ``cuts``; concatenate all results."""
    ts, mask, cols = to_arrays(ev)
    order = np.argsort(ts, kind="stable")
    ts, mask, cols = ts[order], mask[order], [(v[order], ok[order]) for v, ok in cols]
    se = StreamEvaluator(plan, options)
    outs = []
    bounds = [0, *sorted(c % (len(ts) + 1) for c in cuts), len(ts)]
    for a, b in zip(bounds[:-1], bounds[1:]):
        outs.append(se.push(ts[a:b], mask[a:b], [(v[a:b], ok[a:b]) for v, ok in cols]))
    outs.append(se.finish())
    return _concat(outs)


def _concat(rs: list[GroupResult]) -> GroupResult:
    def cat(xs: list[np.ndarray]) -> np.ndarray:
        return np.concatenate(xs) if xs[0].dtype != object else np.array([x for a in xs for x in a], dtype=object)

    ws = None if rs[0].window_start is None else cat([r.window_start for r in rs])
    we = None if rs[0].window_end is None else cat([r.window_end for r in rs])
    values = tuple(cat([r.values[j] for r in rs]) for j in range(len(rs[0].values)))
    valid = tuple(cat([r.valid[j] for r in rs]) for j in range(len(rs[0].valid)))
    return GroupResult(ws, we, values, valid)


SETTINGS = settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(st.data())
def test_stream_equals_batch_and_oracle(data: st.DataObject) -> None:
    window = data.draw(st.sampled_from(["none", "within", "slide"]))
    plan = data.draw(plans(window=window, middle_negation=data.draw(st.booleans())))
    ev = data.draw(events(plan, max_rows=10))
    assume(oracle.cheap(plan, ev))
    cuts = data.draw(st.lists(st.integers(0, 20), max_size=5))
    options = KernelOptions(int64_first=data.draw(st.sampled_from([True, True, False])))  # False: fallbacks
    got = stream(plan, ev, cuts, options)
    assert_same(plan, got, oracle.evaluate(ev, plan))
    ts, mask, cols = to_arrays(ev)
    assert_results_close(got, evaluate_group(plan, ts, mask, cols, options=options))


@SETTINGS
@given(st.data())
def test_stream_non_finite_doubles(data: st.DataObject) -> None:
    """NaN and ±inf in many DOUBLE values: the carried sums (no WITHIN) and the window
    paths give the oracle's IEEE sums, whatever the chunks."""
    plan = data.draw(plans(window=data.draw(st.sampled_from(["none", "none", "within", "slide"]))))
    plan = with_double_measures(plan, data.draw(st.sampled_from([e.symbol for e in plan.elements])))
    ev = data.draw(events(plan, max_rows=10, non_finite=5))
    assume(oracle.cheap(plan, ev))
    cuts = data.draw(st.lists(st.integers(0, 20), max_size=5))
    options = KernelOptions(int64_first=data.draw(st.booleans()))
    assert_same(plan, stream(plan, ev, cuts, options), oracle.evaluate(ev, plan))


@SETTINGS
@given(st.data())
def test_stream_long_within(data: st.DataObject) -> None:
    """Long streams (many folds of the WITHIN buffer), checked against the batch engine."""
    plan = data.draw(plans(window=data.draw(st.sampled_from(["within", "slide", "none"])), max_kleene=1))
    n = data.draw(st.integers(0, 300))
    seed = data.draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    ts = np.sort(rng.integers(0, max(1, n // 2), n))
    mask = rng.integers(0, 1 << len(plan.symbols), n)
    doubles = with_non_finite(rng, rng.normal(size=n))
    cols = [(rng.integers(-5, 5, n), rng.random(n) < 0.8), (doubles, rng.random(n) < 0.8)]
    cuts = np.sort(rng.integers(0, n + 1, data.draw(st.integers(0, 30))))

    def run_stream() -> GroupResult:
        se = StreamEvaluator(plan)
        outs = [se.push(ts[a:b], mask[a:b], [(v[a:b], ok[a:b]) for v, ok in cols])
                for a, b in zip([0, *cuts], [*cuts, n])]
        return _concat([*outs, se.finish()])

    try:
        want = evaluate_group(plan, ts, mask, cols)
    except CountOverflowError:
        with pytest.raises(CountOverflowError):
            run_stream()
        return
    assert_results_close(run_stream(), want)


def assert_results_close(got: GroupResult, want: GroupResult) -> None:
    assert (got.window_start is None) == (want.window_start is None)
    if want.window_start is not None:
        assert got.window_start.tolist() == want.window_start.tolist()
        assert got.window_end.tolist() == want.window_end.tolist()
    for g, w, gok, wok in zip(got.values, want.values, got.valid, want.valid):
        assert gok.tolist() == wok.tolist()
        assert g.dtype == w.dtype
        if g.dtype.kind == "f":
            np.testing.assert_allclose(g[wok], w[wok], rtol=1e-9, atol=1e-9)  # NaN equal to NaN
        else:
            assert g[wok].tolist() == w[wok].tolist()


def test_out_of_order_push_is_rejected() -> None:
    plan = Plan(symbols=("A",), elements=(Element(0),), negations=(0, 0))
    se = StreamEvaluator(plan)
    se.push(np.array([5]), np.array([1]))
    with pytest.raises(InputDataError):
        se.push(np.array([4]), np.array([1]))
    with pytest.raises(InputDataError):
        StreamEvaluator(plan).push(np.array([2, 1]), np.array([1, 1]))


def test_stream_state_stays_small() -> None:
    """WITHIN: the buffer keeps about two windows of rows, not the stream."""
    plan = Plan(symbols=("A", "B"), elements=(Element(0), Element(1)), negations=(0, 0, 0), within=100)
    se = StreamEvaluator(plan)
    for k in range(200):
        ts = np.arange(k * 50, (k + 1) * 50)
        se.push(ts, np.where(ts % 2 == 0, 1, 2))
        assert len(se._mode.buf.view()[0]) <= 400
    total = int(se.finish().values[0][0])
    ts = np.arange(200 * 50)
    assert total == int(evaluate_group(plan, ts, np.where(ts % 2 == 0, 1, 2)).values[0][0])


@SETTINGS
@given(st.data())
def test_stream_no_window_measures(data: st.DataObject) -> None:
    """No WITHIN: every measure kind on every symbol, negation and Kleene, many chunks."""
    base = data.draw(plans(window="none", middle_negation=data.draw(st.booleans()), max_kleene=2))
    syms = sorted({e.symbol for e in base.elements})
    measures = [Measure(MeasureKind.COUNT_STAR, name="n")] + [
        Measure(kind, s, col, f"{kind.value}{s}{col}")
        for s in syms for kind in (MeasureKind.MIN, MeasureKind.MAX, MeasureKind.SUM, MeasureKind.COUNT)
        for col in ((None,) if kind is MeasureKind.COUNT else (0, 1))]
    plan = dataclasses.replace(base, measures=tuple(measures), count_type=CountType.DECIMAL)
    n = data.draw(st.integers(0, 40))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    ts = np.sort(rng.integers(0, max(1, n), n))
    mask = rng.integers(0, 1 << len(plan.symbols), n)
    doubles = with_non_finite(rng, rng.normal(size=n))
    cols = [(rng.integers(-9, 9, n), rng.random(n) < 0.7), (doubles, rng.random(n) < 0.7)]
    cuts = np.sort(rng.integers(0, n + 1, data.draw(st.integers(0, 12))))
    se = StreamEvaluator(plan)
    outs = [se.push(ts[a:b], mask[a:b], [(v[a:b], ok[a:b]) for v, ok in cols])
            for a, b in zip([0, *cuts], [*cuts, n])]
    assert_results_close(_concat([*outs, se.finish()]), evaluate_group(plan, ts, mask, cols))


def test_split_plan_keeps_measures_in_place() -> None:
    """The carried plan of SUM/AVG over a DOUBLE column: the user's measures first, in
    order, then one set of hidden indicator sums per (symbol, column)."""
    from udafs.kernels.values import nonfinite
    from udafs.plan import ValueType

    plan = Plan(symbols=("A", "B"), elements=(Element(0), Element(1)), negations=(0, 0, 0),
                columns=(ValueType.INT, ValueType.FLOAT),
                measures=(Measure(MeasureKind.SUM, 1, 1, "s"), Measure(MeasureKind.COUNT_STAR, name="n"),
                          Measure(MeasureKind.AVG, 1, 1, "a"), Measure(MeasureKind.MAX, 1, 1, "x")))
    s = nonfinite.split(plan)
    assert s is not None
    assert [m.name for m in s.plan.measures] == ["s", "n", "a", "x", "s:nan", "s:+inf", "s:-inf"]
    assert s.indicators == ((4, 5, 6), None, (4, 5, 6), None)
    assert s.plan.measures[3].column == 1  # MAX reads the column itself
