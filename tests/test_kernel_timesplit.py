"""Time split: the chunks of a partition, evaluated apart and combined, equal the oracle
on the whole partition (random cut points, chunks shorter and longer than WITHIN)."""

from __future__ import annotations

import math

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
from udafs.kernels.timesplit import (
    chunk_regions,
    combine_chunks,
    decode_chunk,
    encode_chunk,
    evaluate_chunk,
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
