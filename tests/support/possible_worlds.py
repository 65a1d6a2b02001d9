"""Brute-force expected aggregates over possible worlds: the reference for imprecise timestamps.

Every event r may occur at any of its possible times ``lo[r], lo[r] + step, ... <= hi[r]``
with equal probability, independently of the others. This module enumerates every
possible world (one time per event), evaluates the point-time oracle (``tests.support.oracle``,
SEMANTICS sections 3-5 literally) in it, and sums each measure weighted by the world's
probability, in exact fractions. Obviously correct, exponential: a few events only.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from fractions import Fraction

from tests.support import oracle
from udafs.plan import MeasureKind, Plan

Row = tuple[int | None, int | None, list[object]]


def possible_times(lo: int, hi: int, step: int) -> list[int]:
    """The possible times of one event."""
    return list(range(lo, hi + 1, step))


def world_count(plan: Plan, ev: oracle.Events, lo: list[int], hi: list[int]) -> int:
    """Number of possible worlds (rows of no pattern symbol keep their time)."""
    out = 1
    for r in range(len(ev.ts)):
        if ev.mask[r] & plan.pattern_symbols_mask:
            out *= len(possible_times(lo[r], hi[r], plan.uncertain))
    return out


def worlds(plan: Plan, ev: oracle.Events, lo: list[int], hi: list[int]):
    """(probability, times) of every possible world."""
    choices, weights = [], []
    for r in range(len(ev.ts)):
        if ev.mask[r] & plan.pattern_symbols_mask:
            times = possible_times(lo[r], hi[r], plan.uncertain)
        else:
            times = [ev.ts[r]]
        choices.append(times)
        weights.append(Fraction(1, len(times)))
    p = Fraction(1)
    for w in weights:
        p *= w
    for times in itertools.product(*choices):
        yield p, list(times)


class _Acc:
    """Expected measures of one output row, summed over worlds."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.values = [Fraction(0)] * len(plan.measures)
        self.nonnull = [False] * len(plan.measures)
        self.non_finite: list[set[float]] = [set() for _ in plan.measures]  # NaN / ±inf some world binds

    def add(self, p: Fraction, ev: oracle.Events, ms: list[oracle.Match]) -> None:
        for j, m in enumerate(self.plan.measures):
            if m.kind is MeasureKind.COUNT_STAR:
                self.values[j] += p * len(ms)
                continue
            positions = [i for i, el in enumerate(self.plan.elements) if el.symbol == m.symbol]
            pair_rows = [r for match in ms for i in positions for r in match[i]]
            if m.kind is MeasureKind.COUNT:
                self.values[j] += p * len(pair_rows)
                continue
            vals = [ev.values[m.column][r] for r in pair_rows if ev.values[m.column][r] is not None]
            self.values[j] += p * sum((Fraction(v) for v in vals if math.isfinite(v)), Fraction(0))
            self.non_finite[j].update(v if not math.isnan(v) else math.nan for v in vals if not math.isfinite(v))
            self.nonnull[j] = self.nonnull[j] or bool(vals)

    def row(self) -> list[object]:
        out: list[object] = []
        for j, m in enumerate(self.plan.measures):
            if m.kind is MeasureKind.SUM and not self.nonnull[j]:
                out.append(None)
            elif self.non_finite[j]:  # IEEE: p·inf = inf, p·NaN = NaN, inf + -inf = NaN
                out.append(float(self.values[j]) + sum(self.non_finite[j]))
            else:
                out.append(self.values[j])
        return out


def expected(plan: Plan, ev: oracle.Events, lo: list[int], hi: list[int]) -> list[Row]:
    """Expected measures in the oracle's row shape: one row without SLIDE; with SLIDE one
    per window that holds an instance in some possible world, by window start."""
    point = dataclasses.replace(plan, uncertain=None)
    if plan.slide is None:
        acc = _Acc(plan)
        for p, times in worlds(plan, ev, lo, hi):
            world = dataclasses.replace(ev, ts=times)
            acc.add(p, world, oracle.matches(world, point))
        return [(None, None, acc.row())]
    per_window: dict[int, _Acc] = {}
    for p, times in worlds(plan, ev, lo, hi):
        world = dataclasses.replace(ev, ts=times)
        for a, b in oracle.windows(world, point):
            per_window.setdefault(a, _Acc(plan)).add(p, world, oracle.window_matches(world, point, a, b))
    return [(a, a + plan.within, per_window[a].row()) for a in sorted(per_window)]
