"""Time split: the chunks of a partition, evaluated apart and combined, equal the oracle
on the whole partition (random cut points, chunks shorter and longer than WITHIN)."""

from __future__ import annotations

import dataclasses
import math
import tracemalloc
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tests import oracle
from tests.doubles import same_double
from tests.test_kernel_oracle import assert_same, events, plans, to_arrays
from tests.test_kernel_predicates import ext_events, ext_plans
from tests.test_kernel_predicates import to_arrays as ext_arrays
from udafs.errors import CountOverflowError, PlanError
from udafs.kernels.evaluate import GroupResult, evaluate_group
from udafs.kernels.incremental.timesplit import (
    chunk_regions,
    combine_chunks,
    decode_chunk,
    encode_chunk,
    evaluate_chunk,
    evaluate_chunk_in_parts,
    evaluate_in_chunks,
)
from udafs.plan import (
    CountType,
    Element,
    Measure,
    MeasureKind,
    Plan,
    Strategy,
    ValueType,
    splittable,
)

SETTINGS = settings(max_examples=300, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


def cuts(data: st.DataObject, ts: list[int]) -> list[tuple[int, int]]:
    """Random chunks [lo, hi) covering every time in ``ts`` (lengths 1 and up)."""
    first, last = (min(ts), max(ts)) if ts else (0, 0)
    inner = sorted(set(data.draw(st.lists(st.integers(first - 2, last + 2), max_size=5))))
    points = [first - data.draw(st.integers(0, 3))] + [p for p in inner if p > first - 3] + [last + 1]
    points = sorted(set(points))
    points[0] = min(points[0], first)
    points[-1] = max(points[-1], last + 1)
    return list(zip(points[:-1], points[1:]))


def split_evaluation(plan: Plan, ts: np.ndarray, mask: np.ndarray, cols: list, chunks: list[tuple[int, int]]
                     ) -> GroupResult:
    """Each chunk sees only the rows :func:`chunk_regions` names; its partials travel as bytes."""
    parts = []
    for lo, hi in chunks:
        full, neg = chunk_regions(plan, ts, lo, hi)
        keep = full | neg
        chunk = evaluate_chunk(plan, ts[keep], mask[keep], [(v[keep], ok[keep]) for v, ok in cols], lo, hi)
        parts.append(decode_chunk(encode_chunk(chunk)))
    return combine_chunks(plan, parts)


def check(plan: Plan, ev: oracle.Events, chunks: list[tuple[int, int]], arrays=to_arrays) -> None:
    """With SLIDE, windows start up to ``w`` before the first row: one more chunk owns them."""
    ts, mask, cols = arrays(ev)
    if plan.slide is not None:
        chunks = [(chunks[0][0] - plan.within, chunks[0][0])] + chunks
    assert_same(plan, split_evaluation(plan, ts, mask, cols, chunks), oracle.evaluate(ev, plan))


@pytest.mark.parametrize("window", ["within", "slide"])
@SETTINGS
@given(data=st.data())
def test_chunks_equal_oracle(window: str, data: st.DataObject) -> None:
    plan = data.draw(plans(window=window, middle_negation=data.draw(st.booleans()), edges=data.draw(st.booleans())))
    ev = data.draw(events(plan, max_rows=10, max_ts=14, non_finite=3))
    assume(oracle.cheap(plan, ev))
    check(plan, ev, cuts(data, list(ev.ts)))


@SETTINGS
@given(data=st.data())
def test_chunks_with_predicates_and_next_match(data: st.DataObject) -> None:
    strategy = data.draw(st.sampled_from([Strategy.SKIP_TILL_ANY_MATCH, Strategy.SKIP_TILL_NEXT_MATCH]))
    plan = data.draw(ext_plans(window=data.draw(st.sampled_from(["within", "slide"])), strategy=strategy,
                               n_pred=1, middle_negation=data.draw(st.booleans()), edges=data.draw(st.booleans())))
    ev = data.draw(ext_events(plan, max_rows=9, max_ts=12, non_finite=3))
    assume(oracle.cheap(plan, ev))
    check(plan, ev, cuts(data, list(ev.ts)), ext_arrays)


def test_symbol_both_positive_and_negated() -> None:
    """SEQ(B, A, !A) WITHIN 5 over b2 a5, cut at 4: a5 reaches the first chunk only as a
    negation (its trailing region); it must not bind there, or (b2, a5) counts twice."""
    plan = Plan(symbols=("A", "B"), elements=(Element(1), Element(0)), negations=(0, 0, 1), within=5)
    ts, mask = np.array([2, 5]), np.array([2, 1])
    got = split_evaluation(plan, ts, mask, [], [(0, 4), (4, 10)])
    assert int(got.values[0][0]) == int(evaluate_group(plan, ts, mask).values[0][0]) == 1


@pytest.mark.parametrize(("values", "want"), [
    ([math.inf, 2.0, 3.0], math.inf),
    ([-math.inf, 2.0, 3.0], -math.inf),
    ([2.0, math.inf, 3.0], math.inf),
    ([math.inf, 2.0, -math.inf], math.nan),
    ([math.nan, 2.0, 3.0], math.nan),
    ([1.0, 2.0, 3.0], 6.0),
])
def test_non_finite_value_in_a_chunks_context(values: list[float], want: float) -> None:
    """SEQ(A, B) WITHIN 5, SUM(A.x) and AVG(A.x) over a1 b2 a5 b6 a9 b10 cut at 4 and 8: the
    rows of a chunk's matches lie in the next chunk's context, where ``T1`` and ``T0`` both
    bind them. Their difference must not turn an infinity into NaN."""
    plan = Plan(symbols=("A", "B"), elements=(Element(0), Element(1)), negations=(0, 0, 0), within=5,
                columns=(ValueType.FLOAT,),
                measures=(Measure(MeasureKind.COUNT_STAR, name="n"), Measure(MeasureKind.SUM, 0, 0, "s"),
                          Measure(MeasureKind.AVG, 0, 0, "a")))
    ts, mask = np.array([1, 2, 5, 6, 9, 10]), np.array([1, 2, 1, 2, 1, 2])
    x = np.array([values[0], 0.0, values[1], 0.0, values[2], 0.0])
    cols = [(x, np.ones(6, dtype=bool))]
    got = split_evaluation(plan, ts, mask, cols, [(0, 4), (4, 8), (8, 12)])
    whole = evaluate_group(plan, ts, mask, cols)
    assert int(got.values[0][0]) == int(whole.values[0][0]) == 3  # (a1,b2) (a5,b6) (a9,b10): spans under 5
    for k in (1, 2):
        assert same_double(float(got.values[k][0]), float(whole.values[k][0]))
    assert same_double(float(got.values[1][0]), want)


@SETTINGS
@given(data=st.data())
def test_whole_partition_as_one_chunk(data: st.DataObject) -> None:
    """Keys too small to split are one chunk without bounds: the same result."""
    plan = data.draw(plans(window=data.draw(st.sampled_from(["within", "slide"])), edges=data.draw(st.booleans())))
    ev = data.draw(events(plan, non_finite=3))
    assume(oracle.cheap(plan, ev))
    ts, mask, cols = to_arrays(ev)
    chunk = decode_chunk(encode_chunk(evaluate_chunk(plan, ts, mask, cols, None, None)))
    assert_same(plan, combine_chunks(plan, [chunk]), oracle.evaluate(ev, plan))


def test_huge_counts_stay_exact() -> None:
    """Chunk partials beyond int64 combine exactly; BIGINT overflow still raises."""
    n = 70
    plan = Plan(symbols=("A",), elements=(Element(0, True),), negations=(0, 0), within=1000,
                count_type=CountType.DECIMAL)
    ts, mask = np.arange(n), np.ones(n, dtype=np.int64)
    got = split_evaluation(plan, ts, mask, [], [(0, 30), (30, 50), (50, 70)])
    assert int(got.values[0][0]) == 2**n - 1
    with pytest.raises(CountOverflowError):
        split_evaluation(Plan(symbols=("A",), elements=(Element(0, True),), negations=(0, 0), within=1000),
                         ts, mask, [], [(0, 30), (30, 70)])


def test_unsplittable_plans() -> None:
    base = dict(symbols=("A", "B"), elements=(Element(0), Element(1)), negations=(0, 0, 0))
    assert splittable(Plan(**base)) is not None  # no WITHIN
    assert splittable(Plan(**base, within=5, strategy=Strategy.STRICT_CONTIGUITY)) is not None
    assert splittable(Plan(**base, within=5)) is None
    with pytest.raises(PlanError):
        evaluate_chunk(Plan(**base), np.array([1]), np.array([1]), [], 0, 5)


def same_result(got: GroupResult, want: GroupResult) -> None:
    """Bit-identical results: window bounds, values (NaN equal to NaN), validity and dtypes."""
    for g, w in ((got.window_start, want.window_start), (got.window_end, want.window_end)):
        assert (g is None) == (w is None) and (g is None or g.tolist() == w.tolist())
    for gv, wv, gok, wok in zip(got.values, want.values, got.valid, want.valid):
        assert gv.dtype == wv.dtype and gok.tolist() == wok.tolist()
        assert all(same_double(float(a), float(b)) if gv.dtype.kind == "f" else a == b
                   for a, b, ok in zip(gv.tolist(), wv.tolist(), wok.tolist()) if ok)


def counts_only(plan: Plan) -> Plan:
    """``plan`` without value columns (the packed-key sort of :func:`evaluate_in_chunks`)."""
    measures = tuple(m for m in plan.measures if m.column is None)
    return dataclasses.replace(plan, measures=measures, columns=())


@SETTINGS
@given(data=st.data())
def test_group_in_chunks_equals_whole_group(data: st.DataObject) -> None:
    """A group evaluated as time chunks of a few rows gives evaluate_group's result, bit for
    bit, and the oracle's; with and without value columns, WITHIN and SLIDE, edge and middle
    negation; plans whose result could change (DOUBLE sums, COUNT TYPE DOUBLE) stay whole."""
    plan = data.draw(plans(window=data.draw(st.sampled_from(["within", "slide"])),
                           middle_negation=data.draw(st.booleans()), edges=data.draw(st.booleans())))
    if data.draw(st.booleans()):
        plan = counts_only(plan)
    ev = data.draw(events(plan, max_rows=24, max_ts=60, non_finite=3))
    ts, mask, cols = to_arrays(ev, plan.columns)
    whole = evaluate_group(plan, ts, mask, cols)
    got = evaluate_in_chunks(plan, ts, mask, cols, chunk_rows=data.draw(st.integers(1, 6)))
    floats = plan.count_type is CountType.DOUBLE or any(
        m.column is not None and plan.columns[m.column] is ValueType.FLOAT
        and m.kind not in (MeasureKind.MIN, MeasureKind.MAX, MeasureKind.COUNT) for m in plan.measures)
    if floats:
        assert got is None
        return
    # a time-split task's chunk cut into smaller chunks: the same partials as the chunk whole
    lo, hi = data.draw(st.sampled_from(cuts(data, list(ev.ts))))
    full, neg = chunk_regions(plan, ts, lo, hi)
    keep = full | neg
    args = (ts[keep], mask[keep], [(v[keep], ok[keep]) for v, ok in cols], lo, hi)
    parts = evaluate_chunk_in_parts(plan, *args, chunk_rows=data.draw(st.integers(1, 6)))
    same_result(combine_chunks(plan, [decode_chunk(encode_chunk(parts))]),
                combine_chunks(plan, [evaluate_chunk(plan, *args)]))
    if got is None:  # too few rows, or too dense to cut (test_big_group_in_chunks asserts that big ones are cut)
        return
    same_result(got, whole)
    if oracle.cheap(plan, ev) and len(ev.ts) <= 12:
        assert_same(plan, got, oracle.evaluate(ev, plan))


@SETTINGS
@given(data=st.data())
def test_group_in_chunks_with_predicates_and_next_match(data: st.DataObject) -> None:
    strategy = data.draw(st.sampled_from([Strategy.SKIP_TILL_ANY_MATCH, Strategy.SKIP_TILL_NEXT_MATCH]))
    plan = data.draw(ext_plans(window=data.draw(st.sampled_from(["within", "slide"])), strategy=strategy,
                               n_pred=1, middle_negation=data.draw(st.booleans()), edges=data.draw(st.booleans())))
    ev = data.draw(ext_events(plan, max_rows=16, max_ts=40, non_finite=3))
    ts, mask, cols = ext_arrays(ev)
    got = evaluate_in_chunks(plan, ts, mask, cols, chunk_rows=data.draw(st.integers(1, 5)))
    if got is not None:
        same_result(got, evaluate_group(plan, ts, mask, cols))


def big_group(n: int, seed: int = 3) -> tuple[np.ndarray, np.ndarray, list]:
    """``n`` events over three symbols, ~100 in a window of 600 (random times, ties)."""
    rng = np.random.default_rng(seed)
    ts = rng.integers(-n * 3, n * 3, n)
    mask = (1 << rng.integers(0, 3, n)).astype(np.int64)
    vals = rng.integers(-1000, 1000, n)
    ok = rng.random(n) > 0.1
    return ts, mask, [(vals, ok), (vals * 0.5, ok)]


@pytest.mark.parametrize("negations", [(0, 0, 0, 0), (4, 2, 0, 1), (0, 0, 1, 2)])
def test_big_group_in_chunks(negations: tuple[int, ...]) -> None:
    """20,000 rows in chunks of 1,000: evaluate_group's counts, INT sums, MIN/MAX of a
    DOUBLE; negative times; the packed-key and the argsort order both."""
    ts, mask, cols = big_group(20_000)
    plan = Plan(symbols=("A", "B", "C"), elements=(Element(0), Element(1), Element(2)), negations=negations,
                within=600, columns=(ValueType.INT, ValueType.FLOAT),
                measures=(Measure(MeasureKind.COUNT_STAR, name="n"), Measure(MeasureKind.SUM, 1, 0, "s"),
                          Measure(MeasureKind.COUNT, 2, 0, "c"), Measure(MeasureKind.MAX, 0, 1, "x"),
                          Measure(MeasureKind.AVG, 2, 0, "a")))
    for p, c in ((plan, cols), (counts_only(plan), [])):
        got = evaluate_in_chunks(p, ts, mask, c, chunk_rows=1_000)
        assert got is not None
        whole = evaluate_group(p, ts, mask, c)
        assert int(whole.values[0][0]) > 0
        same_result(got, whole)
    float_sum = dataclasses.replace(plan, measures=(Measure(MeasureKind.SUM, 1, 1, "s"),))
    assert evaluate_in_chunks(float_sum, ts, mask, cols, chunk_rows=1_000) is None
    assert evaluate_in_chunks(dataclasses.replace(plan, count_type=CountType.DOUBLE), ts, mask, cols, 1_000) is None
    assert evaluate_in_chunks(plan, ts, mask, cols, chunk_rows=20_000) is None  # small enough: whole


def test_group_in_chunks_too_dense_stays_whole() -> None:
    """Every row within 2 * WITHIN: no chunk boundary can be placed; the group stays whole."""
    ts, mask, _ = big_group(5_000)
    plan = Plan(symbols=("A", "B"), elements=(Element(0), Element(1)), negations=(0, 0, 0), within=10**6)
    assert evaluate_in_chunks(plan, ts, mask, [], chunk_rows=100) is None


def test_group_in_chunks_holds_a_chunks_memory() -> None:
    """The point of chunking: the kernel's peak allocation is a chunk's, not the group's
    (tracemalloc sees numpy's buffers)."""
    ts, mask, _ = big_group(300_000)
    plan = Plan(symbols=("A", "B", "C"), elements=(Element(0), Element(1), Element(2)), negations=(0,) * 4,
                within=600)

    def peak(f: Callable[[], object]) -> int:
        tracemalloc.start()
        try:
            f()
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    whole = peak(lambda: evaluate_group(plan, ts, mask))
    chunked = peak(lambda: evaluate_in_chunks(plan, ts, mask, [], chunk_rows=30_000))
    assert chunked < whole / 3, (chunked, whole)
