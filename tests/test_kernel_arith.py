"""Unit tests of the number systems and scans under the kernels."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from udafs.errors import CountOverflowError
from udafs.kernels import evaluate_group
from udafs.kernels.counting.scan import affine_scan, seg_accumulate
from udafs.kernels.values.arith import EXACT_CAP, LIMIT, Arith, Kind, Overflow, TooLarge
from udafs.kernels.values.measures import float_key, key_float
from udafs.plan import CountType, Element, Plan

INT, EXACT = Arith(Kind.INT), Arith(Kind.EXACT)


@pytest.mark.parametrize("n", [2, 3, 5, 9])
def test_cumsum_wrap_is_detected(n: int) -> None:
    x = np.full(n, LIMIT - 1, dtype=np.int64)
    if (LIMIT - 1) * n < LIMIT:
        assert INT.excl_cumsum(x)[-1] == (LIMIT - 1) * n
    else:
        with pytest.raises(Overflow):
            INT.excl_cumsum(x)


def test_products_and_sums_are_checked() -> None:
    big = np.array([2**31, 3], dtype=np.int64)
    with pytest.raises(Overflow):
        INT.mul(big, big)
    with pytest.raises(Overflow):
        INT.add(np.array([LIMIT - 1]), np.array([1]))
    assert INT.mul(np.array([2**30]), np.array([2**31])).tolist() == [2**61]
    with pytest.raises(Overflow):
        INT.mul(np.array([-(2**40)]), np.array([2**30]), signed=True)


def test_exact_cap() -> None:
    with pytest.raises(TooLarge):
        EXACT.excl_cumsum(np.array([EXACT_CAP // 2, EXACT_CAP // 2], dtype=object))
    assert Arith(Kind.EXACT, capped=False).excl_cumsum(np.array([EXACT_CAP], dtype=object))[-1] == EXACT_CAP


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 5), st.integers(0, 50), st.booleans()), max_size=40))
def test_affine_scan_matches_loop(groups: list[tuple[int, int, bool]]) -> None:
    """P[g] = value before group g of P -> a·P + b, restarting at segment starts."""
    a = np.array([g[0] for g in groups], dtype=np.int64)
    b = np.array([g[1] for g in groups], dtype=np.int64)
    new_seg = np.array([i == 0 or g[2] for i, g in enumerate(groups)], dtype=bool)
    seg_first = np.maximum.accumulate(np.where(new_seg, np.arange(len(groups)), 0)) if groups else new_seg
    want, p = [], 0
    for i, (ai, bi, _) in enumerate(groups):
        p = 0 if new_seg[i] else p
        want.append(p)
        p = ai * p + bi
    for ar in (INT, EXACT):
        try:
            got = affine_scan(ar.asarray(a), ar.asarray(b), seg_first, ar).tolist()
        except Overflow:
            assert max(want) >= 2**61 or ar is not INT
            continue
        assert got == want


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(-50, 50), st.booleans()), max_size=40))
def test_seg_accumulate_matches_loop(items: list[tuple[int, bool]]) -> None:
    x = np.array([v for v, _ in items], dtype=np.int64)
    new_seg = np.array([i == 0 or s for i, (_, s) in enumerate(items)], dtype=bool)
    seg_first = np.maximum.accumulate(np.where(new_seg, np.arange(len(items)), 0)) if items else new_seg
    want, m = [], 0
    for i, (v, _) in enumerate(items):
        m = v if new_seg[i] else min(m, v)
        want.append(m)
    assert seg_accumulate(np.minimum, x, seg_first).tolist() == want


def test_float_keys_follow_spark_order() -> None:
    x = np.array([-np.inf, -1e300, -1.0, -5e-324, -0.0, 0.0, 5e-324, 1.0, 1e300, np.inf, np.nan])
    k = float_key(x)
    assert (np.diff(k) > 0).all()
    np.testing.assert_array_equal(key_float(k), x)
    assert float_key(np.array([-np.nan]))[0] == k[-1]


@pytest.mark.parametrize(("count_type", "advice", "never"), [
    (CountType.BIGINT, "does not fit BIGINT; write COUNT TYPE DECIMAL (exact, DECIMAL(38, 0)) or COUNT TYPE DOUBLE",
     "count_type='"),
    (CountType.DECIMAL, "does not fit DECIMAL(38,0); only COUNT TYPE DOUBLE (approximate", "COUNT TYPE DECIMAL"),
])
def test_overflow_advice_is_sql_and_never_the_type_that_overflowed(count_type: CountType, advice: str,
                                                                   never: str) -> None:
    """SEQ(A+) over n distinct times has 2**n - 1 matches: 70 overflow BIGINT, 130 DECIMAL(38, 0)."""
    plan = Plan(symbols=("A",), elements=(Element(0, kleene=True),), negations=(0, 0), count_type=count_type)
    n = 70 if count_type is CountType.BIGINT else 130
    with pytest.raises(CountOverflowError) as caught:
        evaluate_group(plan, np.arange(n), np.ones(n, dtype=np.int64))
    assert advice in str(caught.value) and never not in str(caught.value)
