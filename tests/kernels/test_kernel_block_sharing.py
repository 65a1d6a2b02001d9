"""Plans sharing one time-block timeline (WITHIN without SLIDE, as the E-Cube's cuboids
do in one engine call) equal the brute-force oracle, whatever the order they run in.

The shared timeline keeps every pass from weight 1 by pattern part
(``Timeline.keeps_passes``, :func:`udafs.kernels.counting.passes.kept_forward`) and the crossing
sums of each split by its parts (:mod:`udafs.kernels.counting.within`); a plan's pair counts stay
over its measured symbols' row lists (``paths.RowPairs``). Plans here are drawn the
way cuboids differ: one base pattern with symbols swapped at some positions, so that
prefixes, suffixes and split parts repeat across plans and the kept arrays are reused.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.kernels.test_kernel_oracle import COLUMNS, assert_same, events, to_arrays
from tests.support import oracle
from udafs.kernels import GroupResult
from udafs.kernels.counting import within
from udafs.kernels.counting.timeline import Timeline
from udafs.kernels.values.arith import Arith, Kind, with_fallback
from udafs.kernels.values.measures import finalize, measure_symbols, partials
from udafs.plan import CountType, Element, Measure, MeasureKind, Plan

N_SYM = 4
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))


@st.composite
def cuboid_like(draw: st.DrawFn) -> list[Plan]:
    """2-5 plans of one WITHIN length: a base pattern with symbols swapped here and there,
    Kleene and gap negations kept or redrawn, random measures of their own symbols."""
    length = draw(st.integers(1, 4))
    base = [draw(st.integers(0, N_SYM - 1)) for _ in range(length)]
    kleene = [draw(st.integers(0, 3)) == 0 for _ in range(length)]
    gaps = [draw(st.integers(1, (1 << N_SYM) - 1)) if draw(st.integers(0, 4)) == 0 else 0 for _ in range(length + 1)]
    window = draw(st.integers(1, 6))
    out = []
    for _ in range(draw(st.integers(2, 5))):
        syms = [draw(st.integers(0, N_SYM - 1)) if draw(st.integers(0, 2)) == 0 else s for s in base]
        kl = [not k if draw(st.integers(0, 5)) == 0 else k for k in kleene]
        negs = [draw(st.integers(0, (1 << N_SYM) - 1)) if draw(st.integers(0, 5)) == 0 else g for g in gaps]
        measures = [Measure(MeasureKind.COUNT_STAR, name="n")]
        for k in range(draw(st.integers(0, 3))):
            kind = draw(st.sampled_from([m for m in MeasureKind if m is not MeasureKind.COUNT_STAR and not m.funnel]))
            col = None if kind is MeasureKind.COUNT else draw(st.integers(0, 1))
            measures.append(Measure(kind, draw(st.sampled_from(syms)), col, f"m{k}"))
        out.append(Plan(symbols=tuple(f"S{i}" for i in range(N_SYM)),
                        elements=tuple(Element(s, k) for s, k in zip(syms, kl)), negations=tuple(negs),
                        within=window, measures=tuple(measures), columns=COLUMNS,
                        count_type=draw(st.sampled_from([CountType.BIGINT, CountType.DECIMAL]))))
    return out


def on_shared_blocks(plans: list[Plan], ev: oracle.Events) -> list[GroupResult]:
    """Each plan evaluated on one block timeline that keeps passes, in the given order
    (the rows sorted by time first, as ``evaluate_many`` sorts them)."""
    ts, mask, cols = to_arrays(ev)
    order = np.argsort(ts, kind="stable")
    ts, mask, cols = ts[order], mask[order], [(v[order], ok[order]) for v, ok in cols]
    shared = within.block_timeline(ts, mask, plans[0].window)
    shared.keeps_passes = True
    out = []
    for plan in plans:
        def attempt(ar: Arith, plan: Plan = plan) -> GroupResult:
            tally = within.within_blocks(plan, ts, mask, ar, measure_symbols(plan), timeline=shared)
            values, valid = finalize(plan, partials(plan, tally, cols, ar))
            return GroupResult(None, None, tuple(values), tuple(valid))

        out.append(with_fallback(plans[0], attempt))
    return out


@SETTINGS
@given(data=st.data())
def test_plans_on_one_shared_block_timeline_equal_the_oracle(data: st.DataObject) -> None:
    plans = data.draw(cuboid_like())
    order = data.draw(st.permutations(range(len(plans))))
    ev = data.draw(events(plans[0], max_rows=12, max_ts=14))
    got = on_shared_blocks([plans[i] for i in order], ev)
    for i, res in zip(order, got):
        assert_same(plans[i], res, oracle.evaluate(ev, plans[i]))


def test_passes_of_shared_parts_run_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """SEQ(X, S1, Y) for X in S0, S4, S5 and Y in S2, S3 (six plans) on one block timeline:
    the step into S1 runs once per X (3), into Y once per plan (6), the crossing's right part
    SEQ(S1, Y) once per Y (2) and its left part SEQ(X, S1) backward once per X (3): 14
    steps, where the six plans alone take 24; counts and pairs are those of each alone."""
    def plan(*syms: int) -> Plan:
        return Plan(symbols=tuple(f"S{i}" for i in range(6)), elements=tuple(Element(s) for s in syms),
                    negations=(0,) * (len(syms) + 1), within=6,
                    measures=(Measure(MeasureKind.COUNT_STAR, name="n"),
                              Measure(MeasureKind.COUNT, syms[-1], None, "c")))

    plans = [plan(x, 1, y) for x in (0, 4, 5) for y in (2, 3)]
    steps: list[tuple[int, int]] = []
    step_sums = Timeline.step_sums

    def counting(self: Timeline, prev_sym: int, sym: int, neg: int, cs: np.ndarray) -> np.ndarray:
        steps.append((prev_sym, sym))
        return step_sums(self, prev_sym, sym, neg, cs)

    monkeypatch.setattr(Timeline, "step_sums", counting)
    ts = np.arange(36, dtype=np.int64)
    mask = np.array([1, 16, 32, 2, 4, 8] * 6, dtype=np.int64)
    shared = within.block_timeline(ts, mask, 6)
    shared.keeps_passes = True
    ar = Arith(Kind.INT)
    together = [within.within_blocks(p, ts, mask, ar, measure_symbols(p), timeline=shared) for p in plans]
    assert len(steps) == 14
    steps.clear()
    alone = [within.within_blocks(p, ts, mask, ar, measure_symbols(p), timeline=within.block_timeline(ts, mask, 6))
             for p in plans]
    assert len(steps) == 24
    for p, a, b in zip(plans, together, alone):
        assert int(a.counts[0]) == int(b.counts[0]) > 0
        sym = p.elements[-1].symbol
        assert a.rows.tolist() == b.rows.tolist() == shared.rows(sym).tolist()
        assert a.pairs[sym].tolist() == b.pairs[sym].tolist() and a.pairs[sym].sum() > 0
