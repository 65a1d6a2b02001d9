"""Event selection strategies: ``evaluate_group`` equals the oracle; plan JSON; PlanErrors.

Every strategy with ties, mask-0 rows, WITHIN / SLIDE, negation (middle and edge),
Kleene with and without iterator predicates, cross-event predicates and all measures.
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tests import oracle
from tests.test_kernel_oracle import as_rows, assert_same, plans, with_double_measures
from tests.test_kernel_predicates import ext_events, ext_plans, run_kernel, vectorisable
from udafs.errors import InputDataError, PlanError
from udafs.kernels import evaluate_group
from udafs.kernels.incremental.streaming import StreamEvaluator
from udafs.kernels.options import KernelOptions
from udafs.plan import CmpOp, CountType, Element, IteratorPredicate, Plan, Predicate, Strategy, ValueType

SETTINGS = settings(max_examples=120, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


def check(plan: Plan, ev: oracle.Events) -> None:
    assert_same(plan, run_kernel(plan, ev), oracle.evaluate(ev, plan))


@pytest.mark.parametrize("strategy", list(Strategy))
@pytest.mark.parametrize("window", ["none", "within", "slide"])
@SETTINGS
@given(data=st.data())
def test_strategy(strategy: Strategy, window: str, data: st.DataObject) -> None:
    plan = data.draw(ext_plans(window=window, strategy=strategy, n_pred=1, middle_negation=data.draw(st.booleans()),
                               edges=data.draw(st.booleans())))
    ev = data.draw(ext_events(plan))
    assume(oracle.cheap(plan, ev))
    check(plan, ev)


@pytest.mark.parametrize("strategy", [Strategy.SKIP_TILL_NEXT_MATCH, Strategy.PARTITION_CONTIGUITY])
@SETTINGS
@given(data=st.data())
def test_strategy_kleene(strategy: Strategy, data: st.DataObject) -> None:
    """Kleene plus under the deterministic strategies, with iterator predicates."""
    plan = data.draw(ext_plans(window=data.draw(st.sampled_from(["none", "within", "slide"])), strategy=strategy,
                               need_kleene=True, n_pred=1, iterators=data.draw(st.booleans())))
    ev = data.draw(ext_events(plan))
    assume(oracle.cheap(plan, ev))
    check(plan, ev)


@pytest.mark.parametrize("strategy", list(Strategy))
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(data=st.data())
def test_strategy_non_finite_doubles(strategy: Strategy, data: st.DataObject) -> None:
    """NaN and ±inf in many DOUBLE values, compared by predicates and summed by measures."""
    plan = data.draw(ext_plans(window=data.draw(st.sampled_from(["none", "within", "slide"])), strategy=strategy,
                               n_pred=1, iterators=data.draw(st.booleans())))
    plan = with_double_measures(plan, data.draw(st.sampled_from([e.symbol for e in plan.elements])))
    ev = data.draw(ext_events(plan, non_finite=5))
    assume(oracle.cheap(plan, ev))
    check(plan, ev)


def test_partition_contiguity_sees_unfiltered_rows() -> None:
    """A mask-0 row between A and B breaks partition contiguity; without it they are contiguous."""
    plan = Plan(symbols=("A", "B"), elements=(Element(0), Element(1)), negations=(0, 0, 0),
                strategy=Strategy.PARTITION_CONTIGUITY)
    assert int(evaluate_group(plan, np.array([1, 2, 3]), np.array([1, 0, 2])).values[0][0]) == 0
    assert int(evaluate_group(plan, np.array([1, 3]), np.array([1, 2])).values[0][0]) == 1
    # a row at the same time as A does not separate A from B (equal times are one step)
    assert int(evaluate_group(plan, np.array([1, 1, 3]), np.array([1, 0, 2])).values[0][0]) == 1


def test_strict_contiguity_needs_seq() -> None:
    plan = Plan(symbols=("A", "B"), elements=(Element(0), Element(1)), negations=(0, 0, 0),
                strategy=Strategy.STRICT_CONTIGUITY)
    with pytest.raises(InputDataError, match="STRICT_CONTIGUITY needs seq"):
        evaluate_group(plan, np.array([1, 3]), np.array([1, 2]))
    # rows of other partitions at time 2 (stream rank 1) separate A (rank 0) and B (rank 2)
    assert int(evaluate_group(plan, np.array([1, 3]), np.array([1, 2]), seq=np.array([0, 2])).values[0][0]) == 0
    assert int(evaluate_group(plan, np.array([1, 3]), np.array([1, 2]), seq=np.array([0, 1])).values[0][0]) == 1


def test_sase_figure_3() -> None:
    """SASE++ Fig. 3: SEQ(A, B+, C) WITHIN 10 over a1 a2 b1 b2 c1: S1 1 run, S2 2, S3 6."""
    base = dict(symbols=("A", "B", "C"), elements=(Element(0), Element(1, True), Element(2)),
                negations=(0, 0, 0, 0), within=10)
    ts, mask = np.array([1, 2, 5, 6, 7]), np.array([1, 1, 2, 2, 4])
    want = {Strategy.STRICT_CONTIGUITY: 1, Strategy.PARTITION_CONTIGUITY: 1,
            Strategy.SKIP_TILL_NEXT_MATCH: 2, Strategy.SKIP_TILL_ANY_MATCH: 6}
    for strategy, n in want.items():
        res = evaluate_group(Plan(**base, strategy=strategy), ts, mask, seq=np.arange(5))
        assert int(res.values[0][0]) == n, strategy


def test_skip_till_next_match_kleene_stops_at_next_element() -> None:
    """SEQ(A, B+, C) over a1 b1 c1 b2 c2: S2 takes b1, then c1 comes before b2: 1 match.
    S3: {b1} with c1 or c2, {b2} with c2, {b1, b2} with c2: 4."""
    base = dict(symbols=("A", "B", "C"), elements=(Element(0), Element(1, True), Element(2)),
                negations=(0, 0, 0, 0))
    ts, mask = np.array([1, 2, 3, 4, 5]), np.array([1, 2, 4, 2, 4])
    for strategy, n in ((Strategy.SKIP_TILL_NEXT_MATCH, 1), (Strategy.SKIP_TILL_ANY_MATCH, 4)):
        assert int(evaluate_group(Plan(**base, strategy=strategy), ts, mask).values[0][0]) == n


def test_skip_till_next_match_ties_branch() -> None:
    """Two B rows at one time are unordered: a run takes either (2 matches), never skips both."""
    plan = Plan(symbols=("A", "B"), elements=(Element(0), Element(1)), negations=(0, 0, 0),
                strategy=Strategy.SKIP_TILL_NEXT_MATCH)
    res = evaluate_group(plan, np.array([1, 2, 2, 3]), np.array([1, 2, 2, 2]))
    assert int(res.values[0][0]) == 2


# -- plan JSON -------------------------------------------------------------------

@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_json_round_trip(data: st.DataObject) -> None:
    plan = data.draw(ext_plans())
    text = plan.to_json()
    back = Plan.from_json(text)
    assert back == plan and back.to_json() == text
    assert json.loads(text)["v"] == (2 if plan.extended else 1)


@settings(max_examples=100, deadline=None)
@given(plans())
def test_plain_plans_keep_version_1_json(plan: Plan) -> None:
    """Plans without extensions serialise byte for byte as before (no new keys)."""
    doc = json.loads(plan.to_json())
    assert doc["v"] == 1 and not {"st", "pr", "ip"} & doc.keys()
    assert list(doc) == ["v", "sym", "el", "neg", "w", "s", "m", "col", "ct"]


def test_describe_extensions() -> None:
    plan = Plan(symbols=("A", "B"), elements=(Element(0), Element(1, True)), negations=(0, 0, 0),
                columns=(ValueType.INT,), strategy=Strategy.SKIP_TILL_NEXT_MATCH,
                iterator_predicates=(IteratorPredicate(1, 0, CmpOp.GT, -1),))
    assert plan.describe_extensions() == "WHERE E1[i].c0 > E1[i-1].c0 - 1 STRATEGY skip-till-next-match"
    assert dataclasses.replace(plan, strategy=Strategy.SKIP_TILL_ANY_MATCH,
                               iterator_predicates=()).describe_extensions() == ""


def test_json_version_checks() -> None:
    plan = Plan(symbols=("A", "B"), elements=(Element(0), Element(1)), negations=(0, 0, 0),
                strategy=Strategy.SKIP_TILL_NEXT_MATCH)
    doc = json.loads(plan.to_json())
    assert doc["st"] == "next" and doc["v"] == 2
    with pytest.raises(PlanError, match=r"version 1 cannot carry the keys \['st'\]"):
        Plan.from_json(json.dumps({**doc, "v": 1}))
    with pytest.raises(PlanError, match="unsupported plan version 5"):
        Plan.from_json(json.dumps({**doc, "v": 5}))
    with pytest.raises(PlanError, match="written exactly as version 4, got version 4 without one"):
        Plan.from_json(json.dumps({**doc, "v": 4}))  # version 4: quantified or optional elements
    with pytest.raises(PlanError, match="'un' .* exactly in plans of version 3"):
        Plan.from_json(json.dumps({**doc, "v": 3}))
    plain = {k: v for k, v in doc.items() if k != "st"}
    with pytest.raises(PlanError, match="plan version 2 without"):
        Plan.from_json(json.dumps(plain))
    with pytest.raises(PlanError, match="malformed plan field"):
        Plan.from_json(json.dumps({**doc, "st": "sometimes"}))


def test_iterator_predicate_json_entries() -> None:
    """``[element, column, op, offset]``, then ``left_offset`` when set or when ``first`` is,
    then ``1`` for a first-element form; a plan over imprecise timestamps is version 3 and
    keeps its iterator predicates with their offsets."""
    base = Plan(symbols=("A", "B"), elements=(Element(0), Element(1, True)), negations=(0, 0, 0),
                columns=(ValueType.INT, ValueType.FLOAT))
    for q, entry in ((IteratorPredicate(1, 1, CmpOp.GE, 0.5), [1, 1, ">=", 0.5]),
                     (IteratorPredicate(1, 1, CmpOp.GE, 0.5, -1.5), [1, 1, ">=", 0.5, -1.5]),
                     (IteratorPredicate(1, 1, CmpOp.GE, 0.5, first=True), [1, 1, ">=", 0.5, 0, 1]),
                     (IteratorPredicate(1, 1, CmpOp.LT, 0.5, -1.5, True), [1, 1, "<", 0.5, -1.5, 1])):
        plan = dataclasses.replace(base, iterator_predicates=(q,))
        doc = json.loads(plan.to_json())
        assert doc["v"] == 2 and doc["ip"] == [entry] and Plan.from_json(plan.to_json()) == plan
        if q.first:  # the imprecise kernel keeps lag-1 chains only
            with pytest.raises(PlanError, match=r"first-element iterator predicates .* not supported with imprecise"):
                dataclasses.replace(plan, uncertain=2, count_type=CountType.DOUBLE)
            continue
        imprecise = dataclasses.replace(plan, uncertain=2, count_type=CountType.DOUBLE)
        doc = json.loads(imprecise.to_json())
        assert doc["v"] == 3 and doc["ip"] == [entry] and Plan.from_json(imprecise.to_json()) == imprecise
    assert plan.describe_extensions() == "WHERE E1[i].c1 - 1.5 < E1[1].c1 + 0.5"
    for bad in ([1, 1, ">=", 0.5, 0, 2], [1, 1, ">=", 0.5, 0, True], [1, 1, ">=", 0.5, 0, 1, 0]):
        with pytest.raises(PlanError, match="malformed plan field"):
            Plan.from_json(json.dumps({**json.loads(plan.to_json()), "ip": [bad]}))


# -- rejected plans ----------------------------------------------------------------

def _plan(**kw: object) -> Plan:
    base = dict(symbols=("A", "B"), elements=(Element(0), Element(1, True), Element(0)), negations=(0, 0, 0, 0),
                columns=(ValueType.INT, ValueType.FLOAT))
    return Plan(**{**base, **kw})


@pytest.mark.parametrize("kw, message", [
    ({"predicates": (Predicate(0, 0, CmpOp.LT, 1, 0),)},
     r"predicate 0: element 1 \(B\+\) is Kleene; a Kleene element takes part only in iterator predicates"),
    ({"predicates": (Predicate(0, 0, CmpOp.LT, 0, 0),)}, "compares element 0 with itself"),
    ({"predicates": (Predicate(0, 0, CmpOp.LT, 3, 0),)}, r"right element position 3 out of range 0\.\.2"),
    ({"predicates": (Predicate(0, 5, CmpOp.LT, 2, 0),)}, r"left column index 5 out of range 0\.\.1"),
    ({"predicates": (Predicate(0, 0, CmpOp.LT, 2, 0, 0.5),)}, "offset 0.5 is fractional but compares INT"),
    ({"predicates": (Predicate(0, 1, CmpOp.LT, 2, 1, float("inf")),)}, "offset must be finite"),
    ({"predicates": (Predicate(0, 0, "<", 2, 0),)}, "must be a Predicate with a CmpOp"),
    ({"iterator_predicates": (IteratorPredicate(0, 0, CmpOp.GE),)}, r"element 0 \(A\) is not Kleene"),
    ({"iterator_predicates": (IteratorPredicate(1, 2, CmpOp.GE),)}, r"column index 2 out of range"),
    ({"iterator_predicates": (IteratorPredicate(1, 0, CmpOp.GE, "1"),)}, "offset must be an int or a float"),
    ({"strategy": "next"}, "strategy must be a Strategy"),
])
def test_plan_errors(kw: dict, message: str) -> None:
    with pytest.raises(PlanError, match=message):
        _plan(**kw)


def test_low_level_paths_refuse_extended_plans() -> None:
    """Callers that bypass evaluate_group (e.g. evaluate_many) cannot drop predicates silently."""
    from udafs.kernels.evaluate import sorted_instances

    plan = _plan(strategy=Strategy.SKIP_TILL_NEXT_MATCH)
    with pytest.raises(PlanError, match="evaluated by evaluate_group only"):
        sorted_instances(plan, np.array([1]), np.array([1]), [])


def test_streaming_refuses_extended_plans() -> None:
    plan = _plan(strategy=Strategy.SKIP_TILL_NEXT_MATCH)
    with pytest.raises(PlanError, match="not supported on the streaming path; use the batch path"):
        StreamEvaluator(plan)
    StreamEvaluator(dataclasses.replace(plan, strategy=Strategy.SKIP_TILL_ANY_MATCH))  # plain plans still stream


@pytest.mark.parametrize("strategy", list(Strategy))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(data=st.data())
def test_vectorised_strategies_equal_state_dp(strategy: Strategy, data: st.DataObject) -> None:
    """Beyond the oracle's reach (Kleene over 40 rows): vectorised strategy passes == state DP."""
    from udafs.kernels.predicates import methods as predicates

    plan = vectorisable(data.draw(ext_plans(window=data.draw(st.sampled_from(["none", "within", "slide"])),
                                            strategy=strategy, n_pred=1, adjacent=True,
                                            need_kleene=data.draw(st.booleans()), iterators=False,
                                            edges=data.draw(st.booleans()))))
    assume(predicates.vectorised(plan) is None)
    ev = data.draw(ext_events(plan, max_rows=40, max_ts=30))
    fast = run_kernel(plan, ev)
    slow = run_kernel(plan, ev, KernelOptions(state_dp=True))
    assert_same(plan, fast, as_rows(slow))


@SETTINGS
@given(data=st.data())
def test_strict_contiguity_with_any_seq(data: st.DataObject) -> None:
    """seq values that are no dense rank of ts (repeats, disorder): the general definition."""
    plan = data.draw(ext_plans(strategy=Strategy.STRICT_CONTIGUITY, n_pred=1))
    ev = data.draw(ext_events(plan))
    ev = oracle.Events(ev.ts, ev.mask, ev.values, seq=[data.draw(st.integers(0, 6)) for _ in ev.ts])
    assume(oracle.cheap(plan, ev))
    check(plan, ev)
