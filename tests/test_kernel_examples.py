"""Worked examples (SEMANTICS section 8), exact overflow behaviour, edge cases, input errors."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from tests import oracle
from tests.test_kernel_oracle import assert_same, check_dtypes
from udafs.errors import CountOverflowError, InputDataError
from udafs.kernels import evaluate_group, evaluate_rows
from udafs.plan import CountType, Element, Measure, MeasureKind, Plan, ValueType

A, B, C, D = 1, 2, 4, 8


def seq(*elements: str, negations: tuple[int, ...] | None = None, **kw: object) -> Plan:
    """Plan over symbols A..D from element names like "A" or "B+"."""
    syms = ("A", "B", "C", "D")
    els = tuple(Element(syms.index(e[0]), e.endswith("+")) for e in elements)
    return Plan(symbols=syms, elements=els, negations=negations or (0,) * (len(els) + 1), **kw)


def count(plan: Plan, ts: list[int], mask: list[int]) -> object:
    res = evaluate_group(plan, np.array(ts, dtype=np.int64), np.array(mask, dtype=np.int64))
    assert res.window_start is None and len(res.values[0]) == 1
    return res.values[0][0]


def test_sharon_fig7() -> None:
    # a1 b2 a3 c3 b4 b5 d5 c7 d8; a3 and c3 share time 3
    ts = [1, 2, 3, 3, 4, 5, 5, 7, 8]
    mask = [A, B, A, C, B, B, D, C, D]
    assert count(seq("A", "B", "C", "D"), ts, mask) == 7


def test_aseq_fig31() -> None:
    # a1 b1 c1 a2 b2 c2 (the index is the arrival), evaluated after the last c
    assert count(seq("A", "B", "C"), [1, 2, 3, 4, 5, 6], [A, B, C, A, B, C]) == 4


def test_aseq_example5_negation() -> None:
    plan = seq("A", "B", "D", negations=(0, 0, C, 0))
    assert count(plan, [1, 2, 3, 4], [A, B, C, D]) == 0  # the C removes a1 b2 d4
    # the A prefix survives the C: a1 b4 d5 and a0 b4 d5 count, b2 does not
    assert count(plan, [0, 1, 2, 3, 4, 5], [A, A, B, C, B, D]) == 2


def test_count_of_repeated_symbol_is_per_position() -> None:
    plan = seq("A", "B", "A", measures=(Measure(MeasureKind.COUNT_STAR, name="n"),
                                        Measure(MeasureKind.COUNT, 0, name="a")))
    res = evaluate_group(plan, np.array([1, 2, 3, 4]), np.array([A, B, A, A]))
    assert int(res.values[0][0]) == 2 and int(res.values[1][0]) == 4


def test_empty_group() -> None:
    ms = (Measure(MeasureKind.COUNT_STAR, name="n"), Measure(MeasureKind.SUM, 0, 0, "s"),
          Measure(MeasureKind.MIN, 0, 1, "lo"), Measure(MeasureKind.AVG, 0, 0, "avg"))
    cols = (ValueType.INT, ValueType.FLOAT)
    empty = np.zeros(0, dtype=np.int64)
    columns = [(empty, empty.astype(bool)), (empty.astype(float), empty.astype(bool))]
    plan = seq("A", "B", measures=ms, columns=cols)
    res = evaluate_group(plan, empty, empty, columns)
    assert [int(res.values[0][0])] == [0] and [v[0] for v in res.valid] == [True, False, False, False]
    check_dtypes(plan, res)
    slid = seq("A", "B", measures=ms, columns=cols, within=5, slide=2)
    res = evaluate_group(slid, empty, empty, columns)
    assert len(res.window_start) == 0 and all(len(v) == 0 for v in res.values)
    check_dtypes(slid, res)


def test_rows_of_no_pattern_symbol_are_nothing() -> None:
    plan = Plan(symbols=("A", "B", "X"), elements=(Element(0), Element(1)), negations=(0, 0, 0),
                within=4, slide=2)
    res = evaluate_group(plan, np.array([0, 1, 20]), np.array([1, 2, 4]))  # X at 20: no window
    assert res.window_start.tolist() == [-2, 0] and res.values[0].tolist() == [1, 1]


def test_unsorted_input_with_columns() -> None:
    ms = (Measure(MeasureKind.COUNT_STAR, name="n"), Measure(MeasureKind.SUM, 1, 0, "s"),
          Measure(MeasureKind.MAX, 0, 0, "mx"))
    plan = seq("A", "B", measures=ms, columns=(ValueType.INT,), within=3)
    rng = np.random.default_rng(7)
    ts = rng.integers(0, 30, 40)
    mask = rng.choice([A, B, A | B, 0], 40)
    vals = rng.integers(-9, 9, 40)
    ok = rng.random(40) < 0.8
    ev = oracle.Events(ts.tolist(), mask.tolist(), ([int(v) if o else None for v, o in zip(vals, ok)],))
    got = evaluate_group(plan, ts, mask, [(vals, ok)])
    assert_same(plan, got, oracle.evaluate(ev, plan))


# -- exact counts and overflow -------------------------------------------------

def _a_chain(length: int, n: int, count_type: CountType, within: int | None = None) -> tuple:
    ms = (Measure(MeasureKind.COUNT_STAR, name="n"), Measure(MeasureKind.COUNT, 0, name="a"),
          Measure(MeasureKind.SUM, 0, 0, "s"))
    plan = Plan(symbols=("A",), elements=(Element(0),) * length, negations=(0,) * (length + 1),
                within=within, measures=ms, columns=(ValueType.INT,), count_type=count_type)
    ts = np.arange(n, dtype=np.int64)
    return plan, ts, np.ones(n, dtype=np.int64), [(np.full(n, 3, dtype=np.int64), np.ones(n, dtype=bool))]


@pytest.mark.parametrize("within", [None, 10_000])
def test_bigint_overflow_raises(within: int | None) -> None:
    plan, ts, mask, cols = _a_chain(10, 1000, CountType.BIGINT, within)
    assert math.comb(1000, 10) > 2**63 - 1
    with pytest.raises(CountOverflowError, match="BIGINT"):
        evaluate_group(plan, ts, mask, cols)


@pytest.mark.parametrize("within", [None, 10_000, 700])
def test_decimal_is_exact(within: int | None) -> None:
    plan, ts, mask, cols = _a_chain(10, 1000, CountType.DECIMAL, within)
    res = evaluate_group(plan, ts, mask, cols)
    n_matches = math.comb(1000, 10) if within != 700 else None
    if n_matches is None:  # windows of 700 consecutive rows: starts a, ends <= a + 699
        n_matches = sum(math.comb(min(699, 999 - a), 9) for a in range(1000))
    assert res.values[0].dtype == object and res.values[0][0] == n_matches
    assert res.values[1][0] == 10 * n_matches and res.values[2][0] == 30 * n_matches
    assert type(res.values[0][0]) is int


def test_double_is_close() -> None:
    plan, ts, mask, cols = _a_chain(10, 1000, CountType.DOUBLE)
    res = evaluate_group(plan, ts, mask, cols)
    assert res.values[0].dtype == np.float64
    assert math.isclose(res.values[0][0], math.comb(1000, 10), rel_tol=1e-9)


def test_decimal_overflow_raises() -> None:
    plan, ts, mask, cols = _a_chain(20, 1000, CountType.DECIMAL)
    assert math.comb(1000, 20) > 10**38
    with pytest.raises(CountOverflowError, match="DECIMAL"):
        evaluate_group(plan, ts, mask, cols)


def test_kleene_astronomical_intermediates_small_answer() -> None:
    # SEQ(A, B+, C): 300 B rows make 2**300 B-sets, but no C follows them.
    ms = (Measure(MeasureKind.COUNT_STAR, name="n"), Measure(MeasureKind.COUNT, 1, name="b"))
    for within in (None, 1000):
        plan = seq("A", "B+", "C", within=within, measures=ms)
        ts = np.arange(303)
        mask = np.array([A, B, C] + [B] * 300)
        res = evaluate_group(plan, ts, mask)
        assert res.values[0].dtype == np.int64
        assert int(res.values[0][0]) == 1 and int(res.values[1][0]) == 1
        mask[2] = B  # no C at all: 0
        assert int(evaluate_group(plan, ts, mask).values[0][0]) == 0


def test_kleene_exact_power_of_two() -> None:
    plan = seq("B+", count_type=CountType.DECIMAL)
    assert count(plan, list(range(100)), [B] * 100) == 2**100 - 1
    with pytest.raises(CountOverflowError):
        count(seq("B+"), list(range(64)), [B] * 64)
    assert count(seq("B+"), list(range(62)), [B] * 62) == 2**62 - 1


def test_large_int_sums_are_exact() -> None:
    ms = (Measure(MeasureKind.SUM, 0, 0, "s"), Measure(MeasureKind.AVG, 0, 0, "avg"))
    plan = Plan(symbols=("A",), elements=(Element(0),), negations=(0, 0), measures=ms,
                columns=(ValueType.INT,), count_type=CountType.DECIMAL)
    big = 2**62 + 1
    vals = np.array([big, big, big, -5], dtype=np.int64)
    res = evaluate_group(plan, np.arange(4), np.ones(4, dtype=np.int64), [(vals, np.ones(4, dtype=bool))])
    assert res.values[0][0] == 3 * big - 5 and res.values[1][0] == (3 * big - 5) / 4
    with pytest.raises(CountOverflowError):
        evaluate_group(dataclasses.replace(plan, count_type=CountType.BIGINT),
                       np.arange(4), np.ones(4, dtype=np.int64), [(vals, np.ones(4, dtype=bool))])


# -- helpers and input errors ----------------------------------------------------

def test_evaluate_rows() -> None:
    ms = (Measure(MeasureKind.COUNT_STAR, name="n"), Measure(MeasureKind.AVG, 1, 0, "avg"))
    plan = seq("A", "B", measures=ms, columns=(ValueType.FLOAT,))
    res = evaluate_rows(plan, [(1, A, None), (2, B, 4.0), (3, B, None), (0, A, 1.0)])
    assert int(res.values[0][0]) == 4 and res.values[1][0] == 4.0


@pytest.mark.parametrize("bad", [
    dict(ts=np.zeros(3, dtype=np.int64), mask=np.zeros(2, dtype=np.int64)),
    dict(ts=np.zeros((2, 2), dtype=np.int64), mask=np.zeros((2, 2), dtype=np.int64)),
    dict(ts=np.zeros(2), mask=np.zeros(2, dtype=np.int64)),
    dict(columns=[]),
    dict(columns=[(np.zeros(3), np.ones(3, dtype=bool))]),
    dict(columns=[(np.zeros(2), np.ones(2))]),
    dict(columns=[(np.array(["x", "y"]), np.ones(2, dtype=bool))]),
])
def test_bad_input(bad: dict) -> None:
    plan = seq("A", measures=(Measure(MeasureKind.SUM, 0, 0, "s"),), columns=(ValueType.FLOAT,))
    args = dict(ts=np.zeros(2, dtype=np.int64), mask=np.zeros(2, dtype=np.int64),
                columns=[(np.zeros(2), np.ones(2, dtype=bool))])
    args.update(bad)
    with pytest.raises(InputDataError):
        evaluate_group(plan, **args)


@pytest.mark.parametrize("window", [None, 10])
def test_nan_follows_spark_order(window: int | None) -> None:
    """NaN sorts above +inf (as in Spark): MAX is NaN, MIN skips NaN unless all are NaN."""
    from udafs.kernels.incremental.streaming import StreamEvaluator

    ms = (Measure(MeasureKind.MIN, 0, 0, "lo"), Measure(MeasureKind.MAX, 0, 0, "hi"),
          Measure(MeasureKind.SUM, 0, 0, "s"))
    plan = seq("A", measures=ms, columns=(ValueType.FLOAT,), within=window)
    for vals, want in (([np.nan, 1.0, np.inf], (1.0, np.nan)), ([np.nan, np.nan], (np.nan, np.nan)),
                       ([-np.inf, 2.0], (-np.inf, 2.0))):
        n = len(vals)
        args = (np.arange(n), np.ones(n, dtype=np.int64), [(np.array(vals), np.ones(n, dtype=bool))])
        se = StreamEvaluator(plan)
        se.push(*args)
        for res in (evaluate_group(plan, *args), se.finish()):
            got = (res.values[0][0], res.values[1][0])
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("within", [None, 1000])
def test_count_of_symbol_can_overflow_alone(within: int | None) -> None:
    # SEQ(A+) on 61 rows: 2**61 - 1 sets fit BIGINT, but COUNT(A) = 61 * 2**60 does not
    ms = (Measure(MeasureKind.COUNT_STAR, name="n"), Measure(MeasureKind.COUNT, 0, name="a"))
    args = (np.arange(61), np.ones(61, dtype=np.int64))
    with pytest.raises(CountOverflowError, match="'a'"):
        evaluate_group(seq("A+", measures=ms, within=within), *args)
    res = evaluate_group(seq("A+", measures=ms, within=within, count_type=CountType.DECIMAL), *args)
    assert res.values[0][0] == 2**61 - 1 and res.values[1][0] == 61 * 2**60


@pytest.mark.parametrize("within", [None, 2000, 10**6])
@pytest.mark.parametrize("count_type", [CountType.BIGINT, CountType.DECIMAL, CountType.DOUBLE])
def test_kleene_beyond_exact_cap(count_type: CountType, within: int | None) -> None:
    """2**3000 pending B+ sets: answers stay exact (batch prunes them, streaming clamps them),
    and truly astronomic answers raise instead of exhausting memory."""
    from udafs.kernels.incremental.streaming import StreamEvaluator

    ms = (Measure(MeasureKind.COUNT_STAR, name="n"), Measure(MeasureKind.COUNT, 1, name="b"))
    plan = seq("A", "B+", "C", measures=ms, count_type=count_type, within=within)
    n = 3000
    ts = np.arange(n)
    small = np.full(n, B)
    small[[0, 2]] = [A, C]  # a0 b1 c2, then only B rows: answer 1
    huge = np.tile([A] + [B] * 1498 + [C], 2)  # 2**1498 sets per match window
    for mask, want in ((small, 1), (huge, None)):
        se = StreamEvaluator(plan)
        for a in range(0, n, 700):
            se.push(ts[a:a + 700], mask[a:a + 700])
        for run in (lambda: evaluate_group(plan, ts, mask), se.finish):
            if want is not None:
                res = run()
                assert res.values[0][0] == want and res.values[1][0] == want
            elif count_type is CountType.DOUBLE:
                assert run().values[0][0] == np.inf
            else:
                with pytest.raises(CountOverflowError):
                    run()


@pytest.mark.parametrize("span", [2**59, 2**60 - 1, 2**60, 2**61, 2**62])
def test_wide_time_ranges(span: int) -> None:
    """Unsorted COUNT-only input is sorted through a packed (ts, mask) key when the range
    allows (here 2 mask bits: below 2**60), by argsort otherwise: same answers."""
    plan = seq("A", "B")
    ts = np.array([span, 0, span // 2, span - 1, 1], dtype=np.int64) - span // 2
    mask = np.array([B, A, B, A, B])
    assert count(plan, ts, mask) == 4  # a(0) -> b(1), b(mid), b(span); a(span-1) -> b(span)
