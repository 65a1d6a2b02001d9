"""Cross-event and Kleene iterator predicates: ``evaluate_group`` equals the oracle.

Property tests over random plans (every operator, constants, NULLs, NaN / -0.0, ties,
WITHIN, SLIDE, negation, Kleene, all measures) and hand-checked worked examples. The
hypothesis strategies for extended plans (predicates, strategies) and events defined here (``ext_plans``,
``ext_events``, ``run_kernel``, ``vectorisable``) are shared with
tests/test_kernel_strategies.py. Plans come from ``test_kernel_oracle.plans`` with a
third value column (FLOAT, holding NaN, -0.0, 0.0 and inf) that only predicates read;
events use small value ranges so that equalities happen.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tests import oracle
from tests.doubles import doubles
from tests.test_kernel_oracle import as_rows, assert_same, plans
from tests.test_kernel_oracle import to_arrays as oracle_arrays
from udafs.kernels import GroupResult, evaluate_group
from udafs.kernels.options import DEFAULT, KernelOptions, Method
from udafs.kernels.predicates import methods as predicates
from udafs.plan import (
    CmpOp,
    CountType,
    Element,
    IteratorPredicate,
    Measure,
    MeasureKind,
    Plan,
    Predicate,
    Strategy,
    ValueType,
)

COLUMNS3 = (ValueType.INT, ValueType.FLOAT, ValueType.FLOAT)
MEASURED = st.sampled_from([0.5, 1.0, 2.5, -1.0, 3.0, -2.3, -2.0, 0.2])
SPECIAL = [0.0, -0.0, 1.0, 1.5, 2.0, -1.0, float("inf"), float("nan")]


@st.composite
def offsets(draw: st.DrawFn, as_float: bool) -> int | float:
    """Small offsets, floats only where a FLOAT column takes part; 0.3 and 0.1 round
    differently on either side of a comparison (-2.3 + 0.3 != -2.0 but -2.3 == -2.0 - 0.3)."""
    if as_float and draw(st.booleans()):
        return draw(st.sampled_from([0.5, -1.0, 2.0, -0.5, 0.3, -0.3, 0.1]))
    return draw(st.sampled_from([0, 0, 0, 1, -1, 2, -2]))


@st.composite
def predicate(draw: st.DrawFn, plan: Plan, adjacent: bool = False) -> Predicate | None:
    """A cross-event predicate between two non-Kleene positions (None if there are no two);
    with ``adjacent``, between neighbours i and i+1 only."""
    plain = [i for i, e in enumerate(plan.elements) if not e.kleene]
    pairs = [(i, i + 1) for i in plain if i + 1 in plain]
    if len(plain) < 2 or (adjacent and not pairs):
        return None
    if adjacent:
        left, right = draw(st.permutations(draw(st.sampled_from(pairs))))
    else:
        left, right = draw(st.permutations(plain))[:2]
    lc, rc = draw(st.integers(0, 2)), draw(st.integers(0, 2))
    if draw(st.integers(0, 2)) == 0:
        lc = rc = 0  # integer comparisons, exact
    as_float = COLUMNS3[lc] is ValueType.FLOAT or COLUMNS3[rc] is ValueType.FLOAT
    left_offset = draw(offsets(as_float)) if draw(st.booleans()) else 0
    return Predicate(left, lc, draw(st.sampled_from(list(CmpOp))), right, rc, draw(offsets(as_float)), left_offset)


@st.composite
def ext_plans(draw: st.DrawFn, window: str = "any", strategy: Strategy | None = None, n_pred: int = 2,
              iterators: bool = True, max_len: int = 4, need_pred: bool = False,
              need_kleene: bool = False, adjacent: bool = False, **kw: object) -> Plan:
    """Random plans with predicates, iterator predicates and a strategy."""
    base = draw(plans(window=window, max_len=max_len, **kw))
    base = dataclasses.replace(base, columns=COLUMNS3)
    els, negs = list(base.elements), list(base.negations)
    if need_pred:  # at least two (adjacent) non-Kleene elements
        if len(els) < 2:
            els.append(Element(draw(st.integers(0, len(base.symbols) - 1))))
            negs.insert(1, 0)
        if not any(not a.kleene and not b.kleene for a, b in zip(els, els[1:])):
            k = draw(st.integers(0, len(els) - 2))
            els[k], els[k + 1] = Element(els[k].symbol), Element(els[k + 1].symbol)
    if need_kleene and not any(e.kleene for e in els):
        k = draw(st.integers(0, len(els) - 1))
        els[k] = Element(els[k].symbol, True)
    base = dataclasses.replace(base, elements=tuple(els), negations=tuple(negs))
    preds = [draw(predicate(base, adjacent)) for _ in range(draw(st.integers(int(need_pred), n_pred)))]
    its = []
    if iterators:
        for i, e in enumerate(base.elements):
            if e.kleene and (draw(st.booleans()) or (need_kleene and not its)):
                col = draw(st.integers(0, 2))
                as_float = COLUMNS3[col] is ValueType.FLOAT
                its.append(IteratorPredicate(i, col, draw(st.sampled_from(list(CmpOp))), draw(offsets(as_float)),
                                             draw(offsets(as_float)) if draw(st.booleans()) else 0,
                                             first=draw(st.integers(0, 3)) == 0))  # b[i] OP b[1]
    strat = strategy if strategy is not None else draw(st.sampled_from(list(Strategy)))
    return dataclasses.replace(base, predicates=tuple(p for p in preds if p is not None),
                               iterator_predicates=tuple(its), strategy=strat)


@st.composite
def ext_events(draw: st.DrawFn, plan: Plan, max_rows: int = 9, max_ts: int = 8, non_finite: int = 1) -> oracle.Events:
    """Events with ties, mask-0 rows, NULLs, small ints, special doubles and a stream seq."""
    n = draw(st.sampled_from([0, 1, 2, 3] + [max(0, max_rows - k) for k in range(5)] * 3))
    top = (1 << len(plan.symbols)) - 1
    hi = draw(st.sampled_from([3, 5, max_ts]))
    ts = [draw(st.integers(-2, hi)) for _ in range(n)]
    single = st.integers(0, top.bit_length() - 1).map(lambda k: 1 << k)
    mask = [draw(st.one_of(single, single, single, st.integers(0, top), st.just(0))) for _ in range(n)]
    nulls = draw(st.sampled_from([0, 1, 4]))  # NULLs in about nulls/8 of the values
    ints = [None if draw(st.integers(0, 7)) < nulls else draw(st.integers(-3, 3)) for _ in range(n)]
    double = doubles(MEASURED, nulls=False, non_finite=non_finite)
    floats = [None if draw(st.integers(0, 7)) < nulls else draw(double) for _ in range(n)]
    special = [None if draw(st.integers(0, 7)) < nulls else draw(st.sampled_from(SPECIAL)) for _ in range(n)]
    distinct = sorted(set(ts))
    gaps = [draw(st.integers(1, 2)) for _ in distinct]  # other partitions' rows between ours
    seq_of = dict(zip(distinct, np.cumsum(gaps).tolist()))
    return oracle.Events(ts, mask, (ints, floats, special), seq=[seq_of[t] for t in ts])


def to_arrays(ev: oracle.Events) -> tuple[np.ndarray, np.ndarray, list[tuple[np.ndarray, np.ndarray]]]:
    """The events as kernel input arrays (three columns)."""
    return oracle_arrays(ev, COLUMNS3)


def run_kernel(plan: Plan, ev: oracle.Events, options: KernelOptions = DEFAULT) -> GroupResult:
    """``evaluate_group`` on the events: seq (the stream rank) for STRICT_CONTIGUITY; for
    PARTITION_CONTIGUITY all rows (mask 0 included), the kernel derives the rank."""
    ts, mask, cols = to_arrays(ev)
    seq = np.array(ev.seq, dtype=np.int64) if plan.strategy is Strategy.STRICT_CONTIGUITY else None
    return evaluate_group(plan, ts, mask, cols, seq=seq, options=options)


def vectorisable(plan: Plan) -> Plan:
    """Keep adjacent predicates (one per pair) and one lag-1 iterator predicate per element."""
    seen, preds = set(), []
    for p in plan.predicates:
        if abs(p.left - p.right) == 1 and min(p.left, p.right) not in seen:
            seen.add(min(p.left, p.right))
            preds.append(p)
    its, els = [], set()
    for q in plan.iterator_predicates:
        if q.element not in els and not q.first:
            els.add(q.element)
            its.append(q)
    return dataclasses.replace(plan, predicates=tuple(preds), iterator_predicates=tuple(its))


SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
ANY = Strategy.SKIP_TILL_ANY_MATCH


def check(plan: Plan, ev: oracle.Events, options: KernelOptions = DEFAULT) -> None:
    assert_same(plan, run_kernel(plan, ev, options), oracle.evaluate(ev, plan))


@pytest.mark.parametrize("window", ["none", "within", "slide"])
@SETTINGS
@given(data=st.data())
def test_cross_event_predicates(window: str, data: st.DataObject) -> None:
    plan = data.draw(ext_plans(window=window, strategy=ANY, iterators=False, n_pred=3, need_pred=True))
    assume(plan.predicates)
    ev = data.draw(ext_events(plan))
    assume(oracle.cheap(plan, ev))
    check(plan, ev)


@pytest.mark.parametrize("op", list(CmpOp))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(data=st.data())
def test_every_operator(op: CmpOp, data: st.DataObject) -> None:
    """One predicate with the given operator, also with negation and edge negation."""
    plan = data.draw(ext_plans(strategy=ANY, iterators=False, n_pred=1, need_pred=True,
                               middle_negation=data.draw(st.booleans()), edges=data.draw(st.booleans())))
    assume(plan.predicates)
    p = plan.predicates[0]
    plan = Plan(**{**_fields(plan), "predicates": (Predicate(p.left, p.left_column, op, p.right, p.right_column,
                                                             p.offset),)})
    ev = data.draw(ext_events(plan))
    assume(oracle.cheap(plan, ev))
    check(plan, ev)


@pytest.mark.parametrize("window", ["none", "within", "slide"])
@SETTINGS
@given(data=st.data())
def test_iterator_predicates(window: str, data: st.DataObject) -> None:
    plan = data.draw(ext_plans(window=window, strategy=ANY, n_pred=1, max_kleene=2, need_kleene=True))
    assume(plan.iterator_predicates)
    ev = data.draw(ext_events(plan))
    assume(oracle.cheap(plan, ev))
    check(plan, ev)


def _fields(plan: Plan) -> dict:
    return {f: getattr(plan, f) for f in ("symbols", "elements", "negations", "within", "slide", "measures",
                                          "columns", "count_type", "strategy", "predicates", "iterator_predicates")}


# -- worked examples with hand-checked answers ---------------------------------------

def test_seed_002_query_1() -> None:
    """SEQ(T1, G, T3): T1.name = T3.name, T1.price >= G.price + 2, T3.price < G.price, WITHIN 500.

    Columns: name (INT code: IBM=1, Sun=2), price (INT). Events (ts, type, name, price):
    1 T 1 6 | 2 T 2 7 | 3 G - 4 | 4 T 1 3 | 5 T 2 5 | 6 G - 5 | 7 T 1 2.
    Matches: (1,3,4) (1,3,7) (2,3,5)?  T3.price 5 < 4 fails; (2,3,7) names differ;
    (1,6,7): 6 >= 5+2 fails; (2,6,?) 7 >= 7 ok, T3 with name Sun after 6: none.
    So COUNT = 2, SUM(T3.price) = 3 + 2 = 5.
    """
    t, g = 1, 2
    plan = Plan(symbols=("T", "G"), elements=(Element(0), Element(1), Element(0)), negations=(0, 0, 0, 0),
                within=500, columns=(ValueType.INT, ValueType.INT),
                measures=(Measure(MeasureKind.COUNT_STAR, name="n"), Measure(MeasureKind.SUM, 0, 1, "s")),
                predicates=(Predicate(0, 0, CmpOp.EQ, 2, 0), Predicate(0, 1, CmpOp.GE, 1, 1, 2),
                            Predicate(2, 1, CmpOp.LT, 1, 1)))
    rows = [(1, t, 1, 6), (2, t, 2, 7), (3, g, None, 4), (4, t, 1, 3), (5, t, 2, 5), (6, g, None, 5), (7, t, 1, 2)]
    ts = np.array([r[0] for r in rows])
    mask = np.array([r[1] for r in rows])
    name = (np.array([r[2] or 0 for r in rows]), np.array([r[2] is not None for r in rows]))
    price = (np.array([r[3] for r in rows]), np.ones(len(rows), dtype=bool))
    res = evaluate_group(plan, ts, mask, [name, price])
    # SUM(T.price) sums over both T positions: (6+3) + (6+2) = 17
    assert [int(v[0]) for v in res.values] == [2, 17]
    ev = oracle.Events(ts.tolist(), mask.tolist(), ([r[2] for r in rows], [r[3] for r in rows]))
    assert oracle.evaluate(ev, plan)[0][2] == [2, 17]


def test_query_6_rising_runs() -> None:
    """SASE++ Query 6: SEQ(A, B+, C) with b[i].val >= b[i-1].val over 0.1 0.2 0.15 0.19 0.25.

    Non-decreasing subsequences: ending at 0.1: 1, 0.2: 2, 0.15: 2, 0.19: 4, 0.25: 10 → 19
    (skip-till-any-match); skip-till-next-match takes only (0.1, 0.2, 0.25) → 1.
    """
    vals = [None, 0.1, 0.2, 0.15, 0.19, 0.25, None]
    ts = np.arange(7)
    mask = np.array([1, 2, 2, 2, 2, 2, 4])
    col = (np.array([0.0 if v is None else v for v in vals]), np.array([v is not None for v in vals]))
    for strategy, want in ((ANY, 19), (Strategy.SKIP_TILL_NEXT_MATCH, 1)):
        plan = Plan(symbols=("A", "B", "C"), elements=(Element(0), Element(1, True), Element(2)),
                    negations=(0, 0, 0, 0), columns=(ValueType.FLOAT,), strategy=strategy,
                    iterator_predicates=(IteratorPredicate(1, 0, CmpOp.GE),))
        assert int(evaluate_group(plan, ts, mask, [col]).values[0][0]) == want


def test_null_attribute_never_matches() -> None:
    """A NULL on either side makes the predicate not TRUE, also for <> ."""
    plan = Plan(symbols=("A", "B"), elements=(Element(0), Element(1)), negations=(0, 0, 0),
                columns=(ValueType.INT,), predicates=(Predicate(0, 0, CmpOp.NE, 1, 0),))
    col = (np.array([1, 0, 2, 5]), np.array([True, False, True, True]))
    res = evaluate_group(plan, np.array([1, 2, 3, 4]), np.array([1, 2, 2, 2]), [col])
    assert int(res.values[0][0]) == 2  # (1, 2) and (1, 5); the NULL B is out


def test_nan_and_negative_zero() -> None:
    """Doubles compare in Spark's order: NaN = NaN, NaN above +inf, -0.0 = 0.0."""
    plan = Plan(symbols=("A", "B"), elements=(Element(0), Element(1)), negations=(0, 0, 0),
                columns=(ValueType.FLOAT,), predicates=(Predicate(0, 0, CmpOp.EQ, 1, 0),))
    vals = np.array([np.nan, -0.0, np.nan, 0.0, np.inf])
    res = evaluate_group(plan, np.arange(5), np.array([1, 1, 2, 2, 2]), [(vals, np.ones(5, dtype=bool))])
    assert int(res.values[0][0]) == 2
    gt = Plan(**{**_fields(plan), "predicates": (Predicate(1, 0, CmpOp.GT, 0, 0),)})
    res = evaluate_group(gt, np.arange(5), np.array([1, 1, 2, 2, 2]), [(vals, np.ones(5, dtype=bool))])
    # B > A: NaN > -0.0 (row 2), inf > -0.0 (row 4); NaN > NaN no; 0.0 > -0.0 no → 2
    assert int(res.values[0][0]) == 2




# -- the vectorised paths (condensed / sorted predicate steps, Fenwick chains) ------------

@pytest.mark.parametrize("method", [Method.CONDENSED, Method.SORTED], ids=lambda m: m.value)
@pytest.mark.parametrize("window", ["none", "within", "slide"])
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(data=st.data())
def test_vectorised_paths(method: Method, window: str, data: st.DataObject) -> None:
    """Both predicate-step methods, forced, on every window mode, with negation, edges, Kleene."""
    plan = data.draw(ext_plans(window=window, strategy=ANY, n_pred=2, need_pred=data.draw(st.integers(0, 3)) > 0,
                               adjacent=True, middle_negation=data.draw(st.booleans()),
                               edges=data.draw(st.booleans())))
    plan = vectorisable(plan)
    assume(plan.extended)
    assert predicates.vectorised(plan) is None
    ev = data.draw(ext_events(plan))
    assume(oracle.cheap(plan, ev))
    check(plan, ev, KernelOptions(predicate_method=method))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(data=st.data())
def test_vectorised_fallback_number_systems(data: st.DataObject) -> None:
    """The exact / float fallbacks of the vectorised paths, as if int64 overflowed."""
    import dataclasses

    plan = vectorisable(data.draw(ext_plans(strategy=ANY, n_pred=2, edges=data.draw(st.booleans()), adjacent=True,
                                            need_pred=data.draw(st.booleans()))))
    assume(plan.extended)
    plan = dataclasses.replace(plan, count_type=data.draw(st.sampled_from([CountType.DECIMAL, CountType.DOUBLE])))
    ev = data.draw(ext_events(plan))
    assume(oracle.cheap(plan, ev))
    check(plan, ev, KernelOptions(int64_first=False))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(data=st.data())
def test_vectorised_equals_state_dp_on_larger_groups(data: st.DataObject) -> None:
    """Beyond the oracle's reach (Kleene over 40 rows): the two exact methods agree."""
    plan = data.draw(ext_plans(window=data.draw(st.sampled_from(["none", "within", "slide"])), strategy=ANY,
                               n_pred=3, need_kleene=True, adjacent=data.draw(st.booleans())))
    if data.draw(st.booleans()):
        plan = vectorisable(plan)  # else extra predicates are enumerated by value
    assume(plan.extended)
    ev = data.draw(ext_events(plan, max_rows=40, max_ts=30))
    fast = run_kernel(plan, ev)
    slow = run_kernel(plan, ev, KernelOptions(state_dp=True))
    assert_same(plan, fast, as_rows(slow))


def test_choice_reports_condensation_degree() -> None:
    """Few distinct prices: condensed; all distinct: sorted; enumeration; the state DP."""
    plan = Plan(symbols=("A", "G"), elements=(Element(0), Element(1)), negations=(0, 0, 0), columns=(ValueType.INT,),
                predicates=(Predicate(0, 0, CmpOp.GE, 1, 0, 2),))
    mask = np.array([1, 2] * 50)
    few = [(np.arange(100) % 4, np.ones(100, dtype=bool))]
    many = [(np.arange(100), np.ones(100, dtype=bool))]
    got = predicates.choose(plan, np.arange(100), mask, few)
    # A rows (even) hold 0, 2; G rows (odd) hold 1, 3, compared as G.price + 2: 3, 5 -> 4 keys / 100 rows
    assert got.method is Method.CONDENSED and got.degree == pytest.approx(4 / 100)
    got = predicates.choose(plan, np.arange(100), mask, many)
    assert got.method is Method.SORTED and got.degree == 1.0
    # a non-adjacent predicate is enumerated by value (condensed): 50 values of A -> 50 passes
    far = Plan(symbols=("A", "G"), elements=(Element(0), Element(1), Element(0)), negations=(0, 0, 0, 0),
               columns=(ValueType.INT,), predicates=(Predicate(0, 0, CmpOp.GT, 2, 0),))
    got = predicates.choose(far, np.arange(100), mask, many)
    assert got.method is Method.CONDENSED and got.degree == 1.0 and got.reason.startswith("50 enumerated")
    # two of them: 50 x 50 combinations > MAX_COMBOS -> the state DP
    two = Plan(**{**_fields(far), "predicates": far.predicates + (Predicate(2, 0, CmpOp.NE, 0, 0, 1),)})
    assert predicates.choose(two, np.arange(100), mask, many).method is Method.STATE_DP
    s2 = Plan(**{**_fields(plan), "strategy": Strategy.SKIP_TILL_NEXT_MATCH})
    assert predicates.choose(s2, np.arange(100), mask, many) == (
        Method.STATE_DP, None, "skip-till-next-match with predicates")


@pytest.mark.parametrize("state_dp", [False, True])
def test_exact_counts_never_wrap(state_dp: bool) -> None:
    """SEQ(A+) with b[i] >= b[i-1] over 70 equal values: 2**70 - 1 sets, in every count type."""
    from udafs.errors import CountOverflowError

    base = dict(symbols=("A",), elements=(Element(0, True),), negations=(0, 0), columns=(ValueType.INT,),
                iterator_predicates=(IteratorPredicate(0, 0, CmpOp.GE),),
                measures=(Measure(MeasureKind.COUNT_STAR, name="n"), Measure(MeasureKind.SUM, 0, 0, "s")))
    n = 70
    args = (np.arange(n), np.ones(n, dtype=np.int64), [(np.full(n, 3), np.ones(n, dtype=bool))])
    options = KernelOptions(state_dp=state_dp)
    with pytest.raises(CountOverflowError):
        evaluate_group(Plan(**base), *args, options=options)
    res = evaluate_group(Plan(**base, count_type=CountType.DECIMAL), *args, options=options)
    assert res.values[0][0] == 2**n - 1
    assert res.values[1][0] == 3 * n * 2 ** (n - 1)  # each row lies in 2**(n-1) sets
    res = evaluate_group(Plan(**base, count_type=CountType.DOUBLE), *args, options=options)
    assert res.values[0][0] == float(2**n - 1)


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_dominance_boxes(data: st.DataObject) -> None:
    """Box sums of the merge-sort tree (full and range-limited) and per-value prefix counters."""
    from udafs.kernels.predicates.dominance import Dominance, equal_prefix
    from udafs.kernels.values.arith import Arith, Kind

    m = data.draw(st.integers(1, 40))
    n_r = data.draw(st.integers(1, 6))
    rank = np.array(data.draw(st.lists(st.integers(0, n_r - 1), min_size=m, max_size=m)))
    w = np.array(data.draw(st.lists(st.integers(0, 9), min_size=m, max_size=m)), dtype=np.int64)
    q = data.draw(st.integers(1, 10))
    lo = np.array(data.draw(st.lists(st.integers(0, m), min_size=q, max_size=q)))
    hi = np.minimum(lo + np.array(data.draw(st.lists(st.integers(0, m), min_size=q, max_size=q))), m)
    a = np.array(data.draw(st.lists(st.integers(0, n_r), min_size=q, max_size=q)))
    b = np.maximum(a, np.array(data.draw(st.lists(st.integers(0, n_r), min_size=q, max_size=q))))
    want = [sum(int(w[x]) for x in range(s, e) if a_ <= rank[x] < b_) for s, e, a_, b_ in zip(lo, hi, a, b)]
    for max_range in (None, max(int((hi - lo).max()), 1)):
        got = Dominance(rank, w, n_r, Arith(Kind.INT), max_range).box(lo, hi, a, b)
        assert got.tolist() == want
    eq = equal_prefix(rank, w, Arith(Kind.INT))
    got = (eq(hi, a) - eq(lo, a)).tolist()
    assert got == [sum(int(w[x]) for x in range(s, e) if rank[x] == a_) for s, e, a_ in zip(lo, hi, a)]


# -- first-element iterator predicates (b[i] OP b[1]): the state DP keeps the set's first value --

@pytest.mark.parametrize("window", ["none", "within", "slide"])
@SETTINGS
@given(data=st.data())
def test_first_element_iterator_predicates(window: str, data: st.DataObject) -> None:
    """Long Kleene sets whose first value differs from the previous row's, every strategy."""
    op = data.draw(st.sampled_from(list(CmpOp)))
    col = data.draw(st.integers(0, 2))
    lag1 = data.draw(st.booleans())  # also a lag-1 predicate on another column of the same set
    as_float = COLUMNS3[col] is ValueType.FLOAT
    left_offset = data.draw(offsets(as_float)) if data.draw(st.booleans()) else 0
    its = (IteratorPredicate(1, col, op, data.draw(offsets(as_float)), left_offset, first=True),)
    if lag1:
        its += (IteratorPredicate(1, (col + 1) % 3, data.draw(st.sampled_from(list(CmpOp)))),)
    within = data.draw(st.integers(2, 9)) if window != "none" else None
    plan = Plan(symbols=("A", "B", "C"), elements=(Element(0), Element(1, True), Element(2)), negations=(0, 0, 0, 0),
                within=within, slide=data.draw(st.integers(1, 3)) if window == "slide" else None,
                measures=(Measure(MeasureKind.COUNT_STAR, name="n"), Measure(MeasureKind.SUM, 1, 0, "s"),
                          Measure(MeasureKind.MAX, 1, 1, "x")),
                columns=COLUMNS3, iterator_predicates=its, strategy=data.draw(st.sampled_from(list(Strategy))))
    n = data.draw(st.integers(3, 8))
    ts = sorted(data.draw(st.integers(0, 9)) for _ in range(n))
    mask = [1] + [2] * (n - 2) + [4]
    ints = [data.draw(st.one_of(st.none(), st.integers(-3, 3))) for _ in range(n)]
    floats = [data.draw(st.sampled_from([0.5, 1.0, 2.5, -1.0, 3.0])) for _ in range(n)]
    special = [data.draw(st.sampled_from(SPECIAL)) for _ in range(n)]
    seq = list(range(n))
    check(plan, oracle.Events(ts, mask, (ints, floats, special), seq=seq))


def test_first_element_example() -> None:
    """SEQ(B+) with b[i].v >= b[1].v over values 2, 1, 3, 2 at times 1..4: a set is its first
    row plus any subset of the later rows at least as large. First 2: any subset of {3, 2'}
    (4 sets); first 1: any subset of {3, 2'} (4); first 3: {3} only (2' < 3); first 2': 1.
    Total 10. The lag-1 form b[i].v >= b[i-1].v counts non-decreasing subsequences
    instead: 4 singletons + (2,3) (2,2') (1,3) (1,2') = 8."""
    base = Plan(symbols=("B",), elements=(Element(0, True),), negations=(0, 0), columns=(ValueType.INT,),
                iterator_predicates=(IteratorPredicate(0, 0, CmpOp.GE, 0, first=True),))
    vals = (np.array([2, 1, 3, 2]), np.ones(4, dtype=bool))
    assert int(evaluate_group(base, np.arange(1, 5), np.ones(4, dtype=np.int64), [vals]).values[0][0]) == 10
    lag = dataclasses.replace(base, iterator_predicates=(IteratorPredicate(0, 0, CmpOp.GE),))
    assert int(evaluate_group(lag, np.arange(1, 5), np.ones(4, dtype=np.int64), [vals]).values[0][0]) == 8
    assert Plan.from_json(base.to_json()) == base and '"ip":[[0,0,">=",0,0,1]]' in base.to_json()


@pytest.mark.parametrize("path", ["state-dp", "vectorised"])
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(data=st.data())
def test_decimal_measures_with_predicates_and_strategies(path: str, data: st.DataObject) -> None:
    """Measures over a DECIMAL column of 38-digit unscaled integers next to predicates and
    strategies: SUM, MIN, MAX exact, AVG rounded half up (4 more places), on both extended paths."""
    plan = data.draw(ext_plans(window=data.draw(st.sampled_from(["none", "within", "slide"])), n_pred=1,
                               strategy=None if path == "state-dp" else ANY, adjacent=path == "vectorised"))
    plan = vectorisable(plan) if path == "vectorised" else plan
    measures = tuple(dataclasses.replace(m, column=3, places=4 if m.kind is MeasureKind.AVG else 0,
                                         digits=38 if m.kind is MeasureKind.AVG else 0)
                     if m.column is not None else m for m in plan.measures)
    plan = dataclasses.replace(plan, columns=(*COLUMNS3, ValueType.DECIMAL), measures=measures,
                               count_type=data.draw(st.sampled_from([CountType.BIGINT, CountType.DECIMAL])))
    ev = data.draw(ext_events(plan))
    assume(oracle.cheap(plan, ev))
    wide = [None if v is None else v * 10**33 - 3 for v in ev.values[0]]  # |v| <= 3: 34 digits, AVG's 38 with 4 places
    ev = oracle.Events(ev.ts, ev.mask, (*ev.values, wide), seq=ev.seq)
    ts, mask, cols = oracle_arrays(ev, plan.columns)
    seq = np.array(ev.seq, dtype=np.int64) if plan.strategy is Strategy.STRICT_CONTIGUITY else None
    options = KernelOptions(state_dp=path == "state-dp")
    assert_same(plan, evaluate_group(plan, ts, mask, cols, seq=seq, options=options), oracle.evaluate(ev, plan))
