"""Property tests: plans evaluated together on one timeline with shared prefixes and
suffixes (``udafs.kernels.multiplan.pretree``, used by ``evaluate_many``) equal the brute-force
oracle, plan by plan, whichever plans share a timeline and wherever they are cut; and
``evaluate_many`` runs exactly the shared timelines its multi-plan carries."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.kernels.test_kernel_oracle import as_rows, events, to_arrays
from tests.support import oracle
from udafs.kernels import GroupResult
from udafs.kernels.multiplan.pretree import evaluate_shared
from udafs.kernels.options import DEFAULT, KernelOptions
from udafs.kernels.values.arith import with_fallback
from udafs.kernels.values.measures import finalize
from udafs.multiplan import MultiPlan
from udafs.plan import CountType, Element, Measure, MeasureKind, Plan
from udafs.timelines import SharedTimeline, choose_cuts, choose_timelines, shape_of

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def families(draw: st.DrawFn, window: str, sql: bool = False) -> list[Plan]:
    """2-6 COUNT(*) plans of one window shape, grown from one base so prefixes and suffixes
    repeat: each copies a prefix (or a suffix) of an earlier plan and draws the rest
    (symbols, Kleene, negations in gaps and at the edges). ``sql``: SLIDE <= WITHIN."""
    n_sym = draw(st.sampled_from([2, 3, 4]))
    within = slide = None
    if window == "slide":
        within = draw(st.integers(1, 10))
        slide = draw(st.integers(1, min(5, within) if sql else 5))
    count_type = draw(st.sampled_from(list(CountType)))
    neg = st.integers(1, (1 << n_sym) - 1)

    def tail(length: int) -> list[tuple[int, bool, int]]:  # (symbol, Kleene, negation before it)
        return [(draw(st.integers(0, n_sym - 1)), draw(st.integers(0, 3)) == 0,
                 draw(neg) if draw(st.integers(0, 3)) == 0 else 0) for _ in range(length)]

    bodies = [tail(draw(st.integers(1, 4)))]
    for _ in range(draw(st.integers(1, 5))):
        parent = draw(st.sampled_from(bodies))
        how = draw(st.integers(0, 2))
        if how == 0:  # a prefix of the parent, then new elements
            keep = draw(st.integers(0, len(parent)))
            bodies.append(parent[:keep] + tail(draw(st.integers(0 if keep else 1, 3))))
        elif how == 1:  # new elements, then a suffix of the parent (shared suffixes: Chop-Connect)
            keep = draw(st.integers(0, len(parent)))
            bodies.append(tail(draw(st.integers(0 if keep else 1, 3))) + parent[len(parent) - keep:])
        else:  # the parent with one negation or Kleene flag changed: same symbols, other prefix
            at = draw(st.integers(0, len(parent) - 1))
            sym, kleene, gap = parent[at]
            changed = (sym, not kleene, gap) if draw(st.booleans()) else (sym, kleene, 0 if gap else draw(neg))
            bodies.append(parent[:at] + [changed] + parent[at + 1:])
    plans = []
    family_edges = [draw(neg) if within is not None and draw(st.booleans()) else 0 for _ in range(2)]
    for body in bodies:
        edges = [0, 0]
        if within is not None:  # mostly the family's edges, so that suffixes (and prefixes) repeat
            edges = [e if draw(st.integers(0, 3)) else (draw(neg) if draw(st.booleans()) else 0)
                     for e in family_edges]
        plans.append(Plan(
            symbols=tuple(f"S{i}" for i in range(n_sym)),
            elements=tuple(Element(s, k) for s, k, _ in body),
            negations=(edges[0], *(g for _, _, g in body[1:]), edges[1]),
            within=within, slide=slide,
            measures=(Measure(MeasureKind.COUNT_STAR, name="n"),),
            count_type=count_type,
        ))
    return plans


def check_family(plans: list[Plan], ev: oracle.Events, options: KernelOptions = DEFAULT,
                 cuts: list[int] | tuple[int, ...] | None = None) -> None:
    """The plans on one timeline, cut at ``cuts`` (default: :func:`choose_cuts`), equal the oracle."""
    assert all(shape_of(p) is not None for p in plans)
    ts, mask, _ = to_arrays(ev)
    order = np.argsort(ts, kind="stable")
    cut = choose_cuts(plans) if cuts is None else cuts
    results = with_fallback(plans[0], lambda ar: evaluate_shared(plans, ts[order], mask[order], ar, cut), options)
    for plan, (parts, starts) in zip(plans, results):
        values, valid = finalize(plan, parts)
        ends = None if starts is None else starts + plan.within
        got = as_rows(GroupResult(starts, ends, tuple(values), tuple(valid)))
        want = oracle.evaluate(ev, plan)
        assert [(ws, we, [int(v) for v in vals]) for ws, we, vals in got] == want, plan


@pytest.mark.parametrize("window", ["none", "slide"])
@SETTINGS
@given(data=st.data())
def test_shared_prefixes_equal_oracle(window: str, data: st.DataObject) -> None:
    plans = data.draw(families(window))
    check_family(plans, data.draw(events(plans[0])))


@SETTINGS
@given(data=st.data())
def test_shared_prefixes_exact_number_systems(data: st.DataObject) -> None:
    """The fallback number systems (plain passes on the shared timeline) agree too."""
    plans = data.draw(families(data.draw(st.sampled_from(["none", "slide"]))))
    check_family(plans, data.draw(events(plans[0])), KernelOptions(int64_first=False))


@pytest.mark.parametrize("window", ["none", "slide"])
@SETTINGS
@given(data=st.data())
def test_any_cut_is_exact(window: str, data: st.DataObject) -> None:
    """Chop-Connect at one element is exact wherever the plans are cut (the cost model only
    picks where): cuts drawn at random, every plan equals the oracle."""
    plans = data.draw(families(window))
    cuts = [data.draw(st.integers(0, p.length - 1)) for p in plans]
    check_family(plans, data.draw(events(plans[0])), cuts=cuts)


def count_steps(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int, int]]:
    """Records every pass step (``Timeline.prev_ranges`` call) as (previous symbol, symbol, negation)."""
    from udafs.kernels.multiplan import pretree

    calls: list[tuple[int, int, int]] = []
    real = pretree.Timeline.prev_ranges

    def counting(self, prev_sym: int, sym: int, neg: int):  # noqa: ANN001, ANN202
        calls.append((prev_sym, sym, neg))
        return real(self, prev_sym, sym, neg)

    monkeypatch.setattr(pretree.Timeline, "prev_ranges", counting)
    return calls


def test_prefixes_are_computed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Three plans sharing SEQ(S0, S1): the second position's array is computed once."""
    from udafs.kernels.multiplan import pretree

    calls = count_steps(monkeypatch)

    def plan(*syms: int) -> Plan:
        return Plan(symbols=("S0", "S1", "S2", "S3"), elements=tuple(Element(s) for s in syms),
                    negations=(0,) * (len(syms) + 1))

    plans = [plan(0, 1, 2), plan(0, 1, 3), plan(0, 1)]
    ts = np.arange(12, dtype=np.int64)
    mask = np.array([1, 2, 4, 8] * 3, dtype=np.int64)
    results = with_fallback(plans[0], lambda ar: pretree.evaluate_shared(plans, ts, mask, ar, choose_cuts(plans)))
    assert [int(parts[0].value[0]) for parts, _ in results] == [10, 10, 6]
    assert calls.count((0, 1, 0)) == 1 and len(calls) == 3


def test_suffixes_are_computed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """SEQ(X, S1, S2, S3) for four different X: cut after S1, the shared suffix SEQ(S2, S3)
    and its step back into S1's rows are counted once on the reversed timeline and
    connected to each plan's own prefix (Chop-Connect); counts equal each plan alone.
    Two such plans are not cut: the reversed timeline's row lists would cost more than
    the nodes saved."""
    from udafs.kernels.multiplan import pretree

    def plan(*syms: int) -> Plan:
        return Plan(symbols=tuple(f"S{i}" for i in range(8)), elements=tuple(Element(s) for s in syms),
                    negations=(0,) * (len(syms) + 1))

    plans = [plan(x, 1, 2, 3) for x in (0, 4, 5, 6)]
    assert choose_cuts(plans) == (1, 1, 1, 1)
    assert choose_cuts(plans[:2]) == (3, 3)
    assert choose_cuts([plan(0, 1, 2, 3), plan(0, 1, 2, 4)]) == (3, 3)  # a shared prefix: not cut
    calls = count_steps(monkeypatch)
    ts = np.arange(28, dtype=np.int64)
    mask = np.array([1, 16, 32, 64, 2, 4, 8] * 4, dtype=np.int64)
    results = with_fallback(plans[0], lambda ar: pretree.evaluate_shared(plans, ts, mask, ar, (1, 1, 1, 1)))
    monkeypatch.undo()
    alone = [with_fallback(p, lambda ar, p=p: pretree.evaluate_shared([p], ts, mask, ar))[0] for p in plans]
    assert [int(r[0][0].value[0]) for r in results] == [int(r[0][0].value[0]) for r in alone] == [35] * 4
    assert sorted(calls) == [(0, 1, 0), (2, 1, 0), (3, 2, 0), (4, 1, 0), (5, 1, 0), (6, 1, 0)]


def test_shared_suffix_keeps_the_trailing_negation() -> None:
    """The trailing negation belongs to the suffix: SEQ(X, S1, S2, S3) WITHIN 10 SLIDE 5 with
    "no S5 after S3", over S0 S4 S1 S2 S3 S5 S0 S1 S2 S3, per window exactly as each plan
    alone (the S5 at 5 kills the matches ending at 4 in the first two windows)."""
    from udafs.kernels.multiplan import pretree

    def plan(*syms: int) -> Plan:
        return Plan(symbols=tuple(f"S{i}" for i in range(8)), elements=tuple(Element(s) for s in syms),
                    negations=(0,) * len(syms) + (32,), within=10, slide=5)

    plans = [plan(x, 1, 2, 3) for x in (0, 4, 6, 7)]
    assert choose_cuts(plans) == (1, 1, 1, 1)
    ts = np.arange(10, dtype=np.int64)
    mask = np.array([1, 16, 2, 4, 8, 32, 1, 2, 4, 8], dtype=np.int64)
    shared = with_fallback(plans[0], lambda ar: pretree.evaluate_shared(plans, ts, mask, ar, (1, 1, 1, 1)))
    alone = [with_fallback(p, lambda ar, p=p: pretree.evaluate_shared([p], ts, mask, ar))[0] for p in plans]
    counts = [[int(v) for v in parts[0].value] for parts, _ in shared]
    assert counts == [[int(v) for v in parts[0].value] for parts, _ in alone]
    assert counts[:2] == [[1, 4, 1], [1, 3, 0]]


def rows_of(mask: np.ndarray):  # noqa: ANN201 - udafs.timelines.Rows
    """The rows of a symbol mask in ``mask``, as the kernel counts them per partition."""
    return lambda symbols: int(np.count_nonzero(mask & symbols))


def grouped(timelines: tuple[SharedTimeline, ...]) -> list[list[int]]:
    return [list(t.members) for t in timelines]


def test_grouping_follows_the_cost_model() -> None:
    """Plans of one window shape share a timeline where the model finds it cheaper: over the
    same symbols, and over disjoint symbols of similar rows too (each symbol's row list is
    built from its own rows, so one timeline saves each plan's fixed costs: 0.67-0.79x the
    plans alone, measured on the kernel at 500-80,000 rows); not a plan over seven rare
    symbols with one over a frequent symbol (every symbol pays a count per window of the
    frequent one's: measured 1.2-1.5x alone), though plans among them that start alike
    still do; a plan alone in its window shape shares
    with nobody."""
    def plan(*syms: int) -> Plan:
        return Plan(symbols=tuple(f"S{i}" for i in range(8)), elements=tuple(Element(s) for s in syms),
                    negations=(0,) * (len(syms) + 1), within=10, slide=5)

    rows = rows_of(np.array([1 << (i % 8) for i in range(80_000)], dtype=np.int64))
    assert grouped(choose_timelines([plan(0, 1, 2, 3), plan(3, 2, 1, 0), plan(1, 0, 3, 2)], rows)) == [[0, 1, 2]]
    assert grouped(choose_timelines([plan(0, 1), plan(2, 3), plan(4, 5), plan(6, 7)], rows)) == [[0, 1, 2, 3]]
    skewed = rows_of(np.array([1 << 7] * 1_000_000 + [1 << (i % 7) for i in range(700)], dtype=np.int64))
    assert grouped(choose_timelines([plan(0, 1, 2, 3, 4, 5, 6), plan(7, 7)], skewed)) == []
    # not all of one shape, but those that start alike (a common first step)
    alike = [plan(0, 1, 2, 3, 4, 5, 6), plan(0, 1, 6, 5, 4, 3), plan(7, 7)]
    assert grouped(choose_timelines(alike, skewed)) == [[0, 1]]
    no_window = Plan(symbols=("S0", "S1"), elements=(Element(0), Element(1)), negations=(0, 0, 0))
    assert grouped(choose_timelines([plan(0, 1), no_window, plan(0, 1)], rows)) == [[0, 2]]
    assert grouped(choose_timelines([plan(0, 1), no_window, plan(0, 1)], rows, candidates=[0, 1])) == []


@st.composite
def forced_timelines(draw: st.DrawFn, plans: list[Plan]) -> tuple[SharedTimeline, ...]:
    """Any grouping of the plans into shared timelines (plans of one window shape, two or
    more each), any cuts."""
    shuffled = draw(st.permutations(range(len(plans))))
    out, rest = [], list(shuffled)
    while len(rest) >= 2 and draw(st.booleans()):
        size = draw(st.integers(2, len(rest)))
        members, rest = tuple(rest[:size]), rest[size:]
        out.append(SharedTimeline(members, tuple(draw(st.integers(0, plans[i].length - 1)) for i in members)))
    return tuple(out)


def check_many(plans: list[Plan], ev: oracle.Events, mp: MultiPlan, options: KernelOptions = DEFAULT
               ) -> list[SharedTimeline]:
    """Every plan's ``evaluate_many`` result equals the oracle; returns the timelines it ran."""
    from udafs.kernels.multiplan import many

    ts, mask, _ = to_arrays(ev)
    ran: list[SharedTimeline] = []
    for plan, res in zip(plans, many.evaluate_many(mp, ts, mask, [], options=options, ran=ran)):
        want = oracle.evaluate(ev, plan)
        if plan.slide is None and not ((mask & plan.pattern_symbols_mask) != 0).any():
            want = []  # as its own statement: no row for a group without its symbols
        assert [(ws, we, [int(v) for v in vals]) for ws, we, vals in as_rows(res)] == want, plan
    return ran


def multi(plans: list[Plan], timelines: tuple[SharedTimeline, ...] | None) -> MultiPlan:
    n = len(plans)
    return MultiPlan(tuple(plans), (plans[0].measures[0],), ((0,),) * n, (None,) * n, (False,) * n, timelines)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_evaluate_many_runs_the_forced_timelines_exactly(data: st.DataObject) -> None:
    """Whatever shared timelines and cuts a multi-plan carries, ``evaluate_many`` runs
    exactly those (its members present in the group, the decided cuts) and every plan
    equals the oracle."""
    plans = data.draw(families(data.draw(st.sampled_from(["none", "slide"]))))
    timelines = data.draw(forced_timelines(plans))
    ev = data.draw(events(plans[0]))
    ran = check_many(plans, ev, multi(plans, timelines))
    _, mask, _ = to_arrays(ev)
    present = int(np.bitwise_or.reduce(mask)) if len(mask) else 0
    expected = []
    for t in timelines:
        kept = [(i, k) for i, k in zip(t.members, t.cuts) if present & plans[i].pattern_symbols_mask]
        if kept:
            expected.append(SharedTimeline(tuple(i for i, _ in kept), tuple(k for _, k in kept)))
    assert ran == expected


@pytest.mark.parametrize("share", [True, False])
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_evaluate_many_with_and_without_prefix_sharing(share: bool, data: st.DataObject) -> None:
    """``evaluate_many`` on a multi-plan without a decision (it chooses per group by the
    cost model, as for an E-Cube) equals the oracle, and so does its one-by-one path
    (``share_prefixes`` off, nothing run together)."""
    plans = data.draw(families(data.draw(st.sampled_from(["none", "slide"]))))
    ran = check_many(plans, data.draw(events(plans[0])), multi(plans, None), KernelOptions(share_prefixes=share))
    assert share or ran == []
