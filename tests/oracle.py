"""Brute-force match enumerator: the reference every kernel is checked against.

It builds every match literally, following ../shared/SEMANTICS.md sections 3-5
clause by clause, and is meant to be obviously correct, not fast (use it on a
dozen events at most).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from udafs.plan import MeasureKind, Plan, ValueType

Match = tuple[tuple[int, ...], ...]  # per positive element, the row indices bound to it


@dataclass(frozen=True)
class Events:
    """One partition's events. ``values[c][r]`` is column c of row r (None = NULL)."""

    ts: Sequence[int]
    mask: Sequence[int]
    values: Sequence[Sequence[float | int | None]] = ()

    def is_instance(self, row: int, symbols: int) -> bool:
        return bool(self.mask[row] & symbols)


def cheap(plan: Plan, ev: Events) -> bool:
    """True when enumerating matches stays small: Kleene elements enumerate subsets."""
    return sum(e.kleene for e in plan.elements) * len(ev.ts) <= 12 or len(ev.ts) <= 6


def _bindings(ev: Events, plan: Plan, rows: list[int], i: int, after: float) -> Iterator[Match]:
    """Every binding of elements i..n-1 to rows strictly later than ``after``."""
    if i == plan.length:
        yield ()
        return
    el = plan.elements[i]
    cands = [r for r in rows if ev.is_instance(r, 1 << el.symbol) and ev.ts[r] > after]
    if not el.kleene:
        choices: Iterator[tuple[int, ...]] = ((r,) for r in cands)
    else:
        choices = (
            sub
            for k in range(1, len(cands) + 1)
            for sub in itertools.combinations(cands, k)
            if len({ev.ts[r] for r in sub}) == len(sub)  # pairwise distinct timestamps
        )
    for chosen in choices:
        last = max(ev.ts[r] for r in chosen)
        for rest in _bindings(ev, plan, rows, i + 1, last):
            yield (chosen, *rest)


def _no_instance(ev: Events, rows: list[int], symbols: int, lo: float, hi: float) -> bool:
    """True when no row in ``rows`` is an instance of ``symbols`` with lo < ts < hi."""
    return not any(ev.is_instance(r, symbols) and lo < ev.ts[r] < hi for r in rows)


def _middle_ok(ev: Events, plan: Plan, rows: list[int], m: Match) -> bool:
    for gap in range(1, plan.length):
        neg = plan.negations[gap]
        if neg:
            last = max(ev.ts[r] for r in m[gap - 1])
            first = min(ev.ts[r] for r in m[gap])
            if not _no_instance(ev, rows, neg, last, first):
                return False
    return True


def matches(ev: Events, plan: Plan) -> list[Match]:
    """All matches in the partition under WITHIN (no SLIDE): SEMANTICS section 3."""
    rows = list(range(len(ev.ts)))
    out = []
    for m in _bindings(ev, plan, rows, 0, float("-inf")):
        first = min(ev.ts[r] for r in m[0])
        last = max(ev.ts[r] for r in m[-1])
        w = plan.within
        if w is not None and not last - first < w:
            continue
        if not _middle_ok(ev, plan, rows, m):
            continue
        if plan.negations[0] and not _no_instance(ev, rows, plan.negations[0], last - w, first):
            continue
        if plan.negations[-1] and not _no_instance(ev, rows, plan.negations[-1], last, first + w):
            continue
        out.append(m)
    return out


def window_matches(ev: Events, plan: Plan, start: int, end: int) -> list[Match]:
    """Matches of the window [start, end) evaluated on its own rows: SEMANTICS section 4."""
    rows = [r for r in range(len(ev.ts)) if start <= ev.ts[r] < end]
    out = []
    for m in _bindings(ev, plan, rows, 0, float("-inf")):
        first = min(ev.ts[r] for r in m[0])
        last = max(ev.ts[r] for r in m[-1])
        if not _middle_ok(ev, plan, rows, m):
            continue
        if plan.negations[0] and not _no_instance(ev, rows, plan.negations[0], float("-inf"), first):
            continue
        if plan.negations[-1] and not _no_instance(ev, rows, plan.negations[-1], last, float("inf")):
            continue
        out.append(m)
    return out


def windows(ev: Events, plan: Plan) -> list[tuple[int, int]]:
    """Windows [k*s, k*s + w) holding at least one instance of any pattern symbol."""
    w, s = plan.within, plan.slide
    assert w is not None and s is not None
    inst = [ev.ts[r] for r in range(len(ev.ts)) if ev.mask[r] & plan.pattern_symbols_mask]
    if not inst:
        return []
    ks = range((min(inst) - w) // s, max(inst) // s + 1)
    return [(k * s, k * s + w) for k in ks if any(k * s <= t < k * s + w for t in inst)]


def measure_values(ev: Events, plan: Plan, ms: list[Match]) -> list[object]:
    """Every measure of the plan over the match multiset ``ms``: SEMANTICS section 5."""
    out: list[object] = []
    for meas in plan.measures:
        if meas.kind is MeasureKind.COUNT_STAR:
            out.append(len(ms))
            continue
        positions = [i for i, el in enumerate(plan.elements) if el.symbol == meas.symbol]
        pair_rows = [r for m in ms for i in positions for r in m[i]]  # (match, row) pairs
        if meas.kind is MeasureKind.COUNT:
            out.append(len(pair_rows))
            continue
        col = ev.values[meas.column]
        vals = [col[r] for r in pair_rows if col[r] is not None]
        as_int = plan.columns[meas.column] is ValueType.INT
        if meas.kind is MeasureKind.SUM:
            out.append((sum(vals) if as_int else float(sum(vals))) if vals else None)
        elif meas.kind is MeasureKind.AVG:
            out.append(sum(vals) / len(vals) if vals else None)
        elif meas.kind is MeasureKind.MIN:
            out.append(min(vals) if vals else None)
        else:
            out.append(max(vals) if vals else None)
    return out


def evaluate(ev: Events, plan: Plan) -> list[tuple[int | None, int | None, list[object]]]:
    """The reference result: rows of (window_start, window_end, measure values).

    Without SLIDE: exactly one row with window bounds None.
    """
    if plan.slide is None:
        return [(None, None, measure_values(ev, plan, matches(ev, plan)))]
    return [(a, b, measure_values(ev, plan, window_matches(ev, plan, a, b))) for a, b in windows(ev, plan)]
