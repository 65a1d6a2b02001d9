"""Quantified and optional elements (``X{n,m}``, ``X{n}``, ``X{n,}``, ``X?``, ``X*``; SEMANTICS
section 10): the plan contract, the oracle on hand-worked examples, and ``evaluate_group``
against the oracle on random groups."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tests import oracle
from tests.test_kernel_live import check_windows, run, streams
from tests.test_kernel_oracle import SETTINGS, assert_same, check, events, plans, to_arrays, with_double_measures
from tests.test_kernel_predicates import check as check_extended
from tests.test_kernel_predicates import ext_events, ext_plans
from tests.test_kernel_streaming import assert_results_close, stream
from tests.test_kernel_timesplit import check as check_split
from tests.test_kernel_timesplit import cuts
from udafs.errors import CountOverflowError, PlanError
from udafs.kernels import evaluate_group
from udafs.kernels.counting.quantifiers import MAX_CLASSES, expand
from udafs.kernels.incremental.live import LiveEvaluator, advance_all
from udafs.kernels.multiplan.many import evaluate_many
from udafs.kernels.options import KernelOptions
from udafs.multiplan import MultiPlan
from udafs.plan import (
    PLAN_VERSION,
    PLAN_VERSION_QUANTIFIED,
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

A, B, C, N = 1, 2, 4, 8
SYMS = ("A", "B", "C", "N")


def el(text: str) -> Element:
    """``"B{2,4}"``, ``"B?"``, ``"B*"``, ``"B+"``, ``"B"``: one element over SYMS."""
    s, rest = SYMS.index(text[0]), text[1:]
    if rest.startswith("{"):
        lo, _, hi = rest[1:-1].partition(",")
        return Element(s, True, int(lo), int(lo) if "," not in rest else (int(hi) if hi else None))
    return {"": Element(s), "+": Element(s, True), "?": Element(s, False, 0), "*": Element(s, True, 0)}[rest]


def seq(*parts: str, **kw: object) -> Plan:
    """``seq("A", "!N", "B?", "C")``: a plan over SYMS, negations written in place."""
    elements: list[Element] = []
    negations = [0]
    for p in parts:
        if p.startswith("!"):
            negations[-1] |= 1 << SYMS.index(p[1])
        else:
            elements.append(el(p))
            negations.append(0)
    return Plan(symbols=SYMS, elements=tuple(elements), negations=tuple(negations), **kw)


def both(plan: Plan, ts: list[int], mask: list[int], values: tuple = ()) -> list:
    """The oracle's rows, after checking that evaluate_group gives the same."""
    ev = oracle.Events(ts, mask, values)
    want = oracle.evaluate(ev, plan)
    cols = to_arrays(ev, plan.columns)[2]
    assert_same(plan, evaluate_group(plan, np.array(ts, dtype=np.int64), np.array(mask, dtype=np.int64), cols), want)
    return want


def count(plan: Plan, ts: list[int], mask: list[int]) -> int:
    ((_, _, values),) = both(plan, ts, mask)
    return values[0]


# -- the plan contract ----------------------------------------------------

def test_describe_and_json_round_trip() -> None:
    plan = seq("A", "!N", "B{2,4}", "C?", "B*", "A{3}", "C{2,}", "B+", within=9)
    assert plan.describe() == "SEQ(A, !N, B{2,4}, C?, B*, A{3}, C{2,}, B+)"
    doc = plan.to_json()
    assert '"v":4' in doc and Plan.from_json(doc) == plan
    assert '"el":[[0,0],[1,1,2,4],[2,0,0,null],[1,1,0,null],[0,1,3,3],[2,1,2,null],[1,1]]' in doc


def test_plain_plans_keep_their_json() -> None:
    plan = seq("A", "B+", "C")
    assert not plan.quantified and f'"v":{PLAN_VERSION}' in plan.to_json()
    assert '"el":[[0,0],[1,1],[2,0]]' in plan.to_json()


@pytest.mark.parametrize("doc, message", [
    ('{"v":1,"sym":["A"],"el":[[0,1,2,3]],"neg":[0,0],"w":null,"s":null,"m":[["count_star",null,null,"n"]],'
     '"col":[],"ct":"bigint"}', "written exactly as version 4, got version 1 with one"),
    ('{"v":4,"sym":["A"],"el":[[0,1]],"neg":[0,0],"w":null,"s":null,"m":[["count_star",null,null,"n"]],'
     '"col":[],"ct":"bigint"}', "written exactly as version 4, got version 4 without one"),
    ('{"v":4,"sym":["A"],"el":[[0,1,2]],"neg":[0,0],"w":null,"s":null,"m":[["count_star",null,null,"n"]],'
     '"col":[],"ct":"bigint"}', r"element \[0, 1, 2\] is not \[symbol, kleene\(, min_rows, max_rows\)\]"),
    ('{"v":4,"sym":["A"],"el":[[0,1,2,"4"]],"neg":[0,0],"w":null,"s":null,"m":[["count_star",null,null,"n"]],'
     '"col":[],"ct":"bigint"}', "is not \\[symbol, kleene"),
])
def test_json_versions_are_checked(doc: str, message: str) -> None:
    with pytest.raises(PlanError, match=message):
        Plan.from_json(doc)
    assert PLAN_VERSION_QUANTIFIED == 4


@pytest.mark.parametrize("elements, message", [
    ((Element(0, False, 0), Element(1, True, 0)), "every element of the pattern is optional"),
    ((Element(0, False, 2),), r"element 0 \(A\): a non-Kleene element binds one row .* got min_rows=2"),
    ((Element(0, False, 1, 1),), "with max_rows None; got min_rows=1, max_rows=1"),
    ((Element(0, True, 3, 2),), r"element 0 \(A\): max_rows 2 is below min_rows 3"),
    ((Element(0), Element(1, True, 0, 0)), r"element 1 \(B\): max_rows 0 is below 1"),
    ((Element(0, True, -1),), "min_rows must be an integer >= 0"),
    ((Element(0, True, True),), "min_rows must be an integer >= 0"),
])
def test_row_counts_are_validated(elements: tuple[Element, ...], message: str) -> None:
    with pytest.raises(PlanError, match=message):
        Plan(symbols=SYMS, elements=elements, negations=(0,) * (len(elements) + 1))


def test_optional_elements_take_no_predicate_and_no_imprecise_times() -> None:
    with pytest.raises(PlanError, match=r"predicate compares element 1 \(B\?\), which is optional"):
        seq("A", "B?", columns=(ValueType.INT,), predicates=(Predicate(0, 0, CmpOp.LT, 1, 0),))
    with pytest.raises(PlanError, match="not supported with imprecise timestamps"):
        seq("A", "B{2}", within=5, uncertain=1, count_type=CountType.DOUBLE)


def test_kernel_refuses_next_match_and_iterators_on_quantified_elements() -> None:
    plan = seq("A", "B{2,3}", "C", strategy=Strategy.SKIP_TILL_NEXT_MATCH)
    with pytest.raises(PlanError, match=r"SEQ\(A, B\{2,3\}, C\): quantified and optional elements are not supported "
                                        "with the selection strategy SKIP TILL NEXT MATCH yet"):
        evaluate_group(plan, np.array([1, 2, 3]), np.array([A, B, C]))
    plan = seq("A", "B{2,3}", "C", columns=(ValueType.INT,), iterator_predicates=(IteratorPredicate(1, 0, CmpOp.GT),))
    with pytest.raises(PlanError, match=r"iterator predicates on the quantified element B\{2,3\} are not supported"):
        evaluate_group(plan, np.array([1, 2, 3]), np.array([A, B, C]), [(np.zeros(3, np.int64), np.ones(3, bool))])


def test_too_many_classes_are_refused() -> None:
    plan = seq(*["B{1,9}"] * 4)  # 9**4 classes
    assert 9**4 > MAX_CLASSES
    with pytest.raises(PlanError, match=r"stands for 6561 plain patterns .* at most 4096"):
        evaluate_group(plan, np.array([1]), np.array([B]))


def test_expansion_of_each_quantifier() -> None:
    def shapes(text: str) -> list[str]:
        return sorted(p.describe() for p in expand(seq("A", text)))

    assert shapes("B?") == ["SEQ(A)", "SEQ(A, B)"]
    assert shapes("B*") == ["SEQ(A)", "SEQ(A, B+)"]
    assert shapes("B{3}") == ["SEQ(A, B, B, B)"]
    assert shapes("B{3,}") == ["SEQ(A, B, B, B+)"]
    assert shapes("B{2,4}") == ["SEQ(A, B, B)", "SEQ(A, B, B, B)", "SEQ(A, B, B, B, B)"]
    assert shapes("B{0,2}") == ["SEQ(A)", "SEQ(A, B)", "SEQ(A, B, B)"]


# -- hand-worked examples (the oracle and the kernel) ----------------------

def test_optional_element_both_ways() -> None:
    # a1 b2 c3: (a1, c3) binds no B, (a1, b2, c3) binds b2: two different matches
    assert count(seq("A", "B?", "C"), [1, 2, 3], [A, B, C]) == 2
    # two B rows: no B, b2, or b3 (X? binds one row at most); X* also {b2, b3}
    assert count(seq("A", "B?", "C"), [1, 2, 3, 4], [A, B, B, C]) == 3
    assert count(seq("A", "B*", "C"), [1, 2, 3, 4], [A, B, B, C]) == 4


def test_exact_and_ranged_row_counts_with_ties() -> None:
    # b1 b1' b2: two-row sets need distinct times: {b1, b2}, {b1', b2}
    assert count(seq("B{2}"), [1, 1, 2], [B, B, B]) == 2
    # a0 b1 b2 b3 c4: sets of 2 or 3 of the three B rows: 3 + 1; of at least 2: the same
    assert count(seq("A", "B{2,3}", "C"), [0, 1, 2, 3, 4], [A, B, B, B, C]) == 4
    assert count(seq("A", "B{2,}", "C"), [0, 1, 2, 3, 4], [A, B, B, B, C]) == 4
    assert count(seq("A", "B{2}", "C"), [0, 1, 2, 3, 4], [A, B, B, B, C]) == 3
    # b at the time of c is not before it
    assert count(seq("A", "B{1,2}", "C"), [0, 1, 2, 2], [A, B, B, C]) == 1


def test_negation_gap_between_nearest_bound_elements() -> None:
    plan = seq("A", "!N", "B?", "C")
    # a1 n2 b3 c4: n2 lies between A and B, and between A and C when B binds nothing
    assert count(plan, [1, 2, 3, 4], [A, N, B, C]) == 0
    # a1 b2 n3 c4: the N stands before B; (a1, b2, c4) keeps, (a1, c4) has n3 between A and C
    assert count(plan, [1, 2, 3, 4], [A, B, N, C]) == 1


def test_middle_negation_with_nothing_bound_on_one_side_constrains_nothing() -> None:
    plan = seq("B?", "!N", "C")
    # n1 c2: (c2) alone; b0 n1 c2: (b0, c2) has n1 between B and C, (c2) still counts
    assert count(plan, [1, 2], [N, C]) == 1
    assert count(plan, [0, 1, 2], [B, N, C]) == 1


def test_within_over_bound_rows() -> None:
    plan = seq("A", "B*", "C", within=3)
    # a0 b1 b2 c3: span 3 is not < 3; a1 b2 c3: (a1, c3) and (a1, b2, c3)
    assert count(plan, [0, 1, 2, 3], [A, B, B, C]) == 0
    assert count(plan, [1, 2, 3], [A, B, C]) == 2
    # c at 2 with the optional B: (a0, c2) spans 2 without B and with b1
    assert count(seq("A", "B?", "C", within=3), [0, 1, 2, 4], [A, B, C, B]) == 2


def test_trailing_negation_from_the_last_bound_row() -> None:
    plan = seq("A", "B?", "!N", within=5)
    # a0 b1 n3: N after b1 (with B) and after a0 (without): no match
    assert count(plan, [0, 1, 3], [A, B, N]) == 0
    # a0 n1 b2: (a0) has n1 after it; (a0, b2) has no N after b2
    assert count(plan, [0, 1, 2], [A, N, B]) == 1
    # leading negation measured from the first bound row: b1 n2 a3: (a3) has n2 before it,
    # (b1, a3) has n2 after its first row, so no N in (3 - 3, 1)
    lead = seq("!N", "B?", "A", within=3)
    assert count(lead, [1, 2, 3], [B, N, A]) == 1


def test_measures_over_optional_element() -> None:
    # a0 b1 b2 c3, B* : matches bind {}, {b1}, {b2}, {b1, b2}; b1 has value 10, b2 NULL
    ms = (Measure(MeasureKind.COUNT_STAR, name="n"), Measure(MeasureKind.COUNT, 1, name="nb"),
          Measure(MeasureKind.SUM, 1, 0, "s"), Measure(MeasureKind.AVG, 1, 0, "avg"),
          Measure(MeasureKind.MIN, 1, 0, "lo"), Measure(MeasureKind.MAX, 2, 0, "hi"))
    plan = seq("A", "B*", "C", measures=ms, columns=(ValueType.INT,))
    ((_, _, values),) = both(plan, [0, 1, 2, 3], [A, B, B, C], ([None, 10, None, 7],))
    assert values == [4, 4, 20, 10.0, 10, 7]
    # no match binds a B: COUNT(B) 0 and SUM(B) NULL while COUNT(*) counts the B-less match
    ((_, _, values),) = both(plan, [0, 3], [A, C], ([None, 7],))
    assert values == [1, 0, None, None, None, 7]


def test_sliding_windows_are_those_of_every_symbol() -> None:
    # a B alone in a window still gives the window a row (COUNT 0), as for plain patterns
    plan = seq("A", "B?", "C", within=2, slide=2)
    rows = both(plan, [0, 1, 5], [A, C, B])
    assert [(a, v[0]) for a, _, v in rows] == [(0, 1), (4, 0)]


def test_overflow_rules_as_for_plain_patterns() -> None:
    # a0, 70 B rows, c71: Σ C(70, k) for k = 1..62 matches, beyond BIGINT
    ts = list(range(72))
    mask = [A] + [B] * 70 + [C]
    want = sum(math.comb(70, k) for k in range(1, 63))
    plan = seq("A", "B{1,62}", "C")
    with pytest.raises(CountOverflowError, match="does not fit BIGINT"):
        evaluate_group(plan, np.array(ts), np.array(mask))
    exact = dataclasses.replace(plan, count_type=CountType.DECIMAL)
    assert evaluate_group(exact, np.array(ts), np.array(mask)).values[0][0] == want
    double = dataclasses.replace(plan, count_type=CountType.DOUBLE)
    assert math.isclose(evaluate_group(double, np.array(ts), np.array(mask)).values[0][0], want, rel_tol=1e-12)
    # each class fits int64 and their sum does not: still exact
    ts2 = list(range(66))
    two = seq("B{31,32}", count_type=CountType.DECIMAL)
    assert evaluate_group(two, np.array(ts2), np.full(66, B)).values[0][0] == math.comb(66, 31) + math.comb(66, 32)


# -- random groups against the oracle --------------------------------------

@st.composite
def quantified_plans(draw: st.DrawFn, window: str = "any", **kw: object) -> Plan:
    """:func:`plans` with some elements made quantified or optional (ranges up to 3 rows)."""
    base = draw(plans(window=window, max_len=4, **kw))
    elements = []
    for e in base.elements:
        form = draw(st.sampled_from(["keep", "keep", "?", "*", "{n}", "{n,}", "{n,m}", "{0,m}"]))
        lo = draw(st.integers(1, 3))
        hi = draw(st.integers(lo, 3))
        elements.append({"keep": e, "?": Element(e.symbol, False, 0), "*": Element(e.symbol, True, 0),
                         "{n}": Element(e.symbol, True, lo, lo), "{n,}": Element(e.symbol, True, lo),
                         "{n,m}": Element(e.symbol, True, lo, hi), "{0,m}": Element(e.symbol, True, 0, hi)}[form])
    if all(x.optional for x in elements):
        k = draw(st.integers(0, len(elements) - 1))
        elements[k] = Element(elements[k].symbol, elements[k].kleene)
    return dataclasses.replace(base, elements=tuple(elements))


def cheap(plan: Plan, ev: oracle.Events) -> bool:
    """Few enough bindings for the oracle: rows, times the elements that bind sets."""
    sets = sum(e.kleene and e.max_rows != 1 for e in plan.elements)
    return len(ev.ts) <= 6 or sets * len(ev.ts) <= 12


@pytest.mark.parametrize("window", ["none", "within", "slide"])
@SETTINGS
@given(data=st.data())
def test_window_mode(window: str, data: st.DataObject) -> None:
    plan = data.draw(quantified_plans(window=window))
    ev = data.draw(events(plan))
    assume(cheap(plan, ev))
    check(plan, ev)


@SETTINGS
@given(st.data())
def test_negations_next_to_optional_elements(data: st.DataObject) -> None:
    plan = data.draw(quantified_plans(window=data.draw(st.sampled_from(["none", "within", "slide"])),
                                      middle_negation=True, edges=data.draw(st.booleans())))
    ev = data.draw(events(plan, max_rows=8, max_ts=10))
    assume(cheap(plan, ev))
    check(plan, ev)


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_fallback_number_systems(data: st.DataObject) -> None:
    """Exact Python ints and floats, as if int64 overflowed."""
    plan = data.draw(quantified_plans(edges=data.draw(st.booleans()), middle_negation=data.draw(st.booleans())))
    plan = dataclasses.replace(plan, count_type=data.draw(st.sampled_from([CountType.DECIMAL, CountType.DOUBLE])))
    ev = data.draw(events(plan))
    assume(cheap(plan, ev))
    check(plan, ev, KernelOptions(int64_first=False))


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_non_finite_doubles(data: st.DataObject) -> None:
    """NaN and ±inf: sums over the pairs that bind them, MIN/MAX in Spark's order, NULLs skipped."""
    plan = data.draw(quantified_plans(window=data.draw(st.sampled_from(["none", "within", "slide"]))))
    plan = with_double_measures(plan, data.draw(st.sampled_from([e.symbol for e in plan.elements])))
    ev = data.draw(events(plan, non_finite=5))
    assume(cheap(plan, ev))
    check(plan, ev)


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_empty_group(data: st.DataObject) -> None:
    plan = data.draw(quantified_plans())
    check(plan, oracle.Events([], [], ([], [])))


# -- other execution paths ---------------------------------------------------

@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_time_split_chunks_equal_oracle(data: st.DataObject) -> None:
    """Chunks of a partition evaluated apart (each class of the union by the chunk's usual
    T1 - T0 difference) and combined equal the oracle on the whole partition."""
    plan = data.draw(quantified_plans(window=data.draw(st.sampled_from(["within", "slide"])),
                                      middle_negation=data.draw(st.booleans()), edges=data.draw(st.booleans())))
    ev = data.draw(events(plan, max_rows=9, max_ts=14, non_finite=3))
    assume(cheap(plan, ev))
    check_split(plan, ev, cuts(data, list(ev.ts)))


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_stream_equals_oracle(data: st.DataObject) -> None:
    """StreamEvaluator over random chunks (carried state per class without WITHIN, the
    block and window modes with WITHIN) equals the oracle."""
    plan = data.draw(quantified_plans(window=data.draw(st.sampled_from(["none", "within", "slide"])),
                                      middle_negation=data.draw(st.booleans())))
    ev = data.draw(events(plan, max_rows=9))
    assume(cheap(plan, ev))
    options = KernelOptions(int64_first=data.draw(st.booleans()))
    assert_same(plan, stream(plan, ev, data.draw(st.lists(st.integers(0, 20), max_size=5)), options),
                oracle.evaluate(ev, plan))


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_live_equals_batch(data: st.DataObject) -> None:
    """LiveEvaluator (rows out of order, state through the codec at random steps): windows
    once each when final, running results after every batch, equal to evaluate_group."""
    plan = data.draw(quantified_plans(window=data.draw(st.sampled_from(["none", "within", "slide"])),
                                      middle_negation=data.draw(st.booleans())))
    s = data.draw(streams(plan))
    if plan.slide is not None:
        check_windows(plan, s)
    else:
        run(plan, s)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_live_advance_all_windows(data: st.DataObject) -> None:
    """Several partitions' windows in one kernel call equal each partition alone."""
    plan = data.draw(quantified_plans(window="slide"))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    together, alone = [LiveEvaluator(plan) for _ in range(3)], [LiveEvaluator(plan) for _ in range(3)]
    for step in range(4):
        for a, b in zip(together, alone):
            n = int(rng.integers(0, 20))
            ts, mask = step * 7 + 1 + rng.integers(0, 12, n), rng.integers(0, 1 << len(plan.symbols), n)
            cols = [(rng.integers(-9, 9, n), rng.random(n) < 0.8), (rng.normal(size=n), rng.random(n) < 0.8)]
            a.add(ts, mask, cols)
            b.add(ts, mask, cols)
        for g, b in zip(advance_all(together, step * 7 + 1), alone):
            want = b.advance(step * 7 + 1)
            assert (g is None) == (want is None)
            if want is not None:
                assert_results_close(g, want)


@st.composite
def requantified(draw: st.DrawFn, plan: Plan) -> Plan:
    """``plan`` with other quantifiers on the same symbols (its measures stay valid)."""
    forms = [draw(st.sampled_from([Element(e.symbol, e.kleene), Element(e.symbol, False, 0), Element(e.symbol, True, 0),
                                   Element(e.symbol, True, 2), Element(e.symbol, True, 1, 2)]))
             for e in plan.elements]
    if all(f.optional for f in forms):
        forms[0] = Element(forms[0].symbol)
    return dataclasses.replace(plan, elements=tuple(forms))


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_workload_equals_each_plan_alone(data: st.DataObject) -> None:
    """evaluate_many over plain and quantified plans of one window (COUNT(*) only: shared
    timelines and shared block timelines are candidates) gives each plan's own result."""
    base = data.draw(quantified_plans(window=data.draw(st.sampled_from(["none", "within", "slide"]))))
    if data.draw(st.booleans()):
        base = dataclasses.replace(base, measures=(Measure(MeasureKind.COUNT_STAR, name="n"),))
    plans_ = [base] + [data.draw(requantified(base)) for _ in range(data.draw(st.integers(1, 4)))]
    n = len(plans_)
    mp = MultiPlan(tuple(plans_), base.measures, (tuple(range(len(base.measures))),) * n, (None,) * n, (False,) * n)
    ev = data.draw(events(base, max_rows=12))
    ts, mask, cols = to_arrays(ev)
    for plan, got in zip(plans_, evaluate_many(mp, ts, mask, cols)):
        if not (mask & plan.pattern_symbols_mask).any():  # as its own statement: no row for this group
            assert got is not None and len(got.values[0]) == 0
            continue
        assert_results_close(got, evaluate_group(plan, ts, mask, cols))


def test_shared_timeline_refuses_quantified_plans() -> None:
    from udafs.kernels.multiplan.pretree import evaluate_shared
    from udafs.kernels.values.arith import Arith, Kind

    with pytest.raises(PlanError, match="quantified or optional elements does not share a timeline"):
        evaluate_shared([seq("A", "B?"), seq("A", "B")], np.array([1, 2]), np.array([A, B]), Arith(Kind.INT))


def test_plain_pattern_evaluations_refuse_quantified_plans() -> None:
    """A path that reads elements as plain X / X+ would count B{2,4} as B+: it refuses instead."""
    from udafs.kernels.counting.pattern import Pattern

    with pytest.raises(PlanError, match=r"SEQ\(A, B\{2,4\}, C\) reached an evaluation of plain patterns"):
        Pattern.of(seq("A", "B{2,4}", "C"))
    assert Pattern.of(seq("A", "B+", "C")).kleene == (False, True, False)


@st.composite
def quantified_ext_plans(draw: st.DrawFn, window: str) -> Plan:
    """Plans with cross-event predicates, iterator predicates on X+ and a contiguity or the
    default strategy, whose other elements are made quantified or optional."""
    strategy = draw(st.sampled_from([Strategy.SKIP_TILL_ANY_MATCH, Strategy.STRICT_CONTIGUITY,
                                     Strategy.PARTITION_CONTIGUITY]))
    base = draw(ext_plans(window=window, strategy=strategy, n_pred=2, max_kleene=1, need_pred=draw(st.booleans())))
    named = {p.left for p in base.predicates} | {p.right for p in base.predicates}
    named |= {q.element for q in base.iterator_predicates}
    forms = draw(quantified_plans(window="none", max_kleene=0)).elements  # random forms to borrow
    elements = [e if i in named else Element(e.symbol, forms[i % len(forms)].kleene, forms[i % len(forms)].min_rows,
                                             forms[i % len(forms)].max_rows)
                for i, e in enumerate(base.elements)]
    if all(e.optional for e in elements):
        elements[0] = Element(elements[0].symbol)
    plan = dataclasses.replace(base, elements=tuple(elements))
    assume(plan.quantified)
    return plan


@pytest.mark.parametrize("window", ["none", "within", "slide"])
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(data=st.data())
def test_predicates_and_contiguity_equal_oracle(window: str, data: st.DataObject) -> None:
    """Cross-event predicates, iterator predicates on X+ and contiguity strategies with
    quantified and optional elements: class by class, equal to the oracle."""
    plan = data.draw(quantified_ext_plans(window))
    ev = data.draw(ext_events(plan, max_rows=8))
    assume(cheap(plan, ev) and oracle.cheap(plan, ev))
    check_extended(plan, ev)
