"""The replication-free WITHIN path for three elements with predicates (udafs.kernels.predicates.triples).

``SEQ(E1, E2, E3) WITHIN w`` with a predicate step on either or both adjacent pairs
(every operator, offsets, INT / FLOAT columns with NaN and -0.0, NULLs), extra
predicates enumerated by value (the condensed-composition paper's ``A.name = C.name``), ties, rows bound to
several symbols: the path, forced, equals the brute-force oracle; and on groups beyond
the oracle's reach it equals the anchored path it replaces.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests import oracle
from tests.doubles import doubles
from tests.test_kernel_oracle import as_rows, assert_same
from tests.test_kernel_predicates import COLUMNS3, SPECIAL, offsets, run_kernel
from udafs.kernels.options import KernelOptions, WithinPath
from udafs.kernels.predicates import methods as predicates
from udafs.kernels.predicates import predpass, triples
from udafs.plan import CmpOp, CountType, Element, Measure, MeasureKind, Plan, Predicate, Strategy, ValueType


@st.composite
def triple_plans(draw: st.DrawFn, max_within: int = 10) -> Plan:
    """SEQ of three plain elements WITHIN w, COUNT(*) only, 0-2 steps reading one E2 column,
    sometimes an extra (enumerated) predicate between E1 and E3."""
    n_sym = draw(st.sampled_from([1, 2, 3, 3]))
    syms = [draw(st.integers(0, n_sym - 1)) for _ in range(3)]
    g_col = draw(st.integers(0, 2))
    preds = []
    for left, right in ((0, 1), (1, 2)):
        if draw(st.integers(0, 3)) == 0:
            continue
        other = draw(st.sampled_from([g_col, g_col, draw(st.integers(0, 2))]))
        lc, rc = (other, g_col) if left == 0 else (g_col, other)
        as_float = ValueType.FLOAT in (COLUMNS3[lc], COLUMNS3[rc])
        op, off = draw(st.sampled_from(list(CmpOp))), draw(offsets(as_float))
        if draw(st.booleans()):  # written the other way round: G.x OP A.y
            preds.append(Predicate(right, rc, op.mirrored(), left, lc, -off if not isinstance(off, float) else off))
        else:
            preds.append(Predicate(left, lc, op, right, rc, off))
    if draw(st.integers(0, 3)) == 0:
        preds.append(Predicate(0, 0, draw(st.sampled_from([CmpOp.EQ, CmpOp.LT])), 2, 0, 0))
    return Plan(symbols=tuple(f"S{i}" for i in range(n_sym)), elements=tuple(Element(s) for s in syms),
                negations=(0, 0, 0, 0), within=draw(st.integers(1, max_within)),
                measures=(Measure(MeasureKind.COUNT_STAR, name="n"),), columns=COLUMNS3,
                count_type=draw(st.sampled_from(list(CountType))), predicates=tuple(preds),
                strategy=Strategy.SKIP_TILL_ANY_MATCH)


@st.composite
def triple_events(draw: st.DrawFn, plan: Plan, max_rows: int = 28) -> oracle.Events:
    """Enough rows over a few windows that matches cross block boundaries: ties, rows of
    several symbols, rare NULLs, small ints, special doubles."""
    n = draw(st.integers(0, max_rows))
    span = plan.within * draw(st.sampled_from([1, 2, 3, 4]))
    top = (1 << len(plan.symbols)) - 1
    single = st.integers(0, top.bit_length() - 1).map(lambda k: 1 << k)
    ts = [draw(st.integers(-3, span)) for _ in range(n)]
    mask = [draw(st.one_of(single, single, single, single, st.integers(0, top))) for _ in range(n)]
    nulls = draw(st.sampled_from([0, 0, 1]))

    def value(values: st.SearchStrategy) -> object:
        return None if draw(st.integers(0, 15)) < nulls else draw(values)

    ints = [value(st.integers(-3, 3)) for _ in range(n)]
    floats = [value(doubles(st.sampled_from([0.5, 1.0, 2.5, -1.0, 3.0]), nulls=False)) for _ in range(n)]
    special = [value(st.sampled_from(SPECIAL)) for _ in range(n)]
    return oracle.Events(ts, mask, (ints, floats, special), seq=list(range(n)))


#: The triples path wherever it applies.
TRIPLES = KernelOptions(within_path=WithinPath.TRIPLES)

SETTINGS = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                              HealthCheck.filter_too_much])


@SETTINGS
@given(data=st.data())
def test_triples_equal_the_oracle(data: st.DataObject) -> None:
    plan = data.draw(triple_plans())
    ev = data.draw(triple_events(plan))
    assert_same(plan, run_kernel(plan, ev, TRIPLES), oracle.evaluate(ev, plan))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(data=st.data())
def test_triples_exact_number_systems(data: st.DataObject) -> None:
    """The exact / float fallbacks (as if int64 overflowed) take the same path."""
    plan = data.draw(triple_plans())
    ev = data.draw(triple_events(plan))
    options = dataclasses.replace(TRIPLES, int64_first=False)
    assert_same(plan, run_kernel(plan, ev, options), oracle.evaluate(ev, plan))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(data=st.data())
def test_triples_equal_anchored_on_larger_groups(data: st.DataObject) -> None:
    """Beyond the oracle's reach (hundreds of rows, windows of dozens): both WITHIN paths agree."""
    plan = data.draw(triple_plans(max_within=60))
    ev = data.draw(triple_events(plan, max_rows=400))
    fast = run_kernel(plan, ev, TRIPLES)
    slow = run_kernel(plan, ev, KernelOptions(within_path=WithinPath.ANCHORED))
    assert_same(plan, fast, as_rows(slow))


def test_path_choice_by_replication() -> None:
    """Small windows anchor (cheap replication); large ones take the triples path; measures
    that need per-row pair counts, Kleene and negation always anchor."""
    rng = np.random.default_rng(3)
    n = 4000
    ts = np.arange(n, dtype=np.int64)
    mask = rng.choice([1, 2, 4], size=n).astype(np.int64)
    plan = Plan(symbols=("A", "G", "C"), elements=(Element(0), Element(1), Element(2)), negations=(0, 0, 0, 0),
                within=4, measures=(Measure(MeasureKind.COUNT_STAR, name="n"),), columns=(ValueType.INT,),
                predicates=(Predicate(0, 0, CmpOp.GE, 1, 0, 2), Predicate(2, 0, CmpOp.LT, 1, 0, 0)))
    pp = predpass.PredPattern.of(plan, None)
    assert predicates.within_path(plan, ts, mask, pp, False) is WithinPath.ANCHORED
    wide = dataclasses.replace(plan, within=500)
    assert predicates.within_path(wide, ts, mask, pp, False) is WithinPath.TRIPLES
    assert predicates.within_path(wide, ts, mask, pp, True) is WithinPath.ANCHORED  # SUM / MIN / ... need pairs
    kleene = dataclasses.replace(wide, elements=(Element(0), Element(1), Element(2, True)),
                                 predicates=wide.predicates[:1])
    assert predicates.within_path(kleene, ts, mask, predpass.PredPattern.of(kleene, None), False) \
        is WithinPath.ANCHORED
    negated = dataclasses.replace(wide, negations=(0, 1, 0, 0))
    assert predicates.within_path(negated, ts, mask, predpass.PredPattern.of(negated, None), False) \
        is WithinPath.ANCHORED
    other_column = dataclasses.replace(wide, columns=(ValueType.INT, ValueType.INT),
                                       predicates=(Predicate(0, 0, CmpOp.GE, 1, 0, 2),
                                                   Predicate(2, 0, CmpOp.LT, 1, 1, 0)))
    pp_other = predpass.PredPattern.of(other_column, None)
    assert not triples.fits(other_column, pp_other, False)
