"""Evaluation paths: no window, sliding windows, WITHIN by time blocks.

Each path turns sorted events into a :class:`~udafs.kernels.measures.Tally` using the
forward-pass primitive of :mod:`udafs.kernels.passes`.
"""

from __future__ import annotations

import numpy as np

from udafs.kernels.arith import Arith
from udafs.kernels.measures import Tally
from udafs.kernels.passes import Run, run
from udafs.kernels.pattern import Pattern
from udafs.kernels.segments import range_timeline, sliding_windows
from udafs.kernels.timeline import Timeline
from udafs.plan import Plan


def add_pairs(acc: dict[int, np.ndarray], tl: Timeline, pat: Pattern, pairs: list[np.ndarray],
              ar: Arith, sign: int = 1, to_base: bool = False) -> None:
    """Add (``sign`` 1) or subtract (-1) a run's per-position pair counts into ``acc``.

    ``acc`` arrays are indexed by the rows of ``tl``, or with ``to_base`` by its
    origin rows (replicated rows then add up onto their base row).
    """
    for sym, p in zip(pat.symbols, pairs):
        if sym not in acc:
            continue
        rows = tl.rows(sym)
        if not to_base:
            acc[sym][rows] = ar.add(acc[sym][rows], p) if sign > 0 else acc[sym][rows] - p
        else:
            np.add.at(acc[sym], tl.origin[rows], p if sign > 0 else -p)


def new_acc(symbols: set[int], n: int, ar: Arith) -> dict[int, np.ndarray]:
    return {s: ar.zeros(n) for s in symbols}


def no_window(plan: Plan, ts: np.ndarray, mask: np.ndarray, ar: Arith, symbols: set[int]) -> Tally:
    """The whole group is one segment (no WITHIN)."""
    n = len(ts)
    pat = Pattern.of(plan)
    acc = new_acc(symbols, n, ar)
    if not n:
        return Tally(ar.zeros(1), np.zeros(0, dtype=np.int64), np.array([0, 0]), acc)
    tl = Timeline(ts, mask, np.array([0, n]))
    r = run(tl, pat, ar, need_pairs=bool(symbols))
    if symbols:
        add_pairs(acc, tl, pat, r.pairs, ar)
    return Tally(r.totals, np.arange(n), np.array([0, n]), acc)


def sliding(plan: Plan, ts: np.ndarray, mask: np.ndarray, ar: Arith,
            symbols: set[int]) -> tuple[Tally, np.ndarray]:
    """WITHIN w SLIDE s: every window [k·s, k·s + w) holding a row, on its own rows.

    Rows are replicated into each window containing them (O(n·w/s) rows) and the
    windows become the segments of one timeline. Window-local leading / trailing
    negation become 0/1 start / end weights. Returns the tally and window starts.
    """
    w, s = plan.within, plan.slide
    k = sliding_windows(ts, w, s)
    starts = np.searchsorted(ts, k * s, "left")
    ends = np.searchsorted(ts, k * s + w, "left")
    tl = range_timeline(ts, mask, starts, ends)
    pat = Pattern.of(plan)
    r = _edge_weighted_run(tl, pat, plan.negations[0], plan.negations[-1], ar, bool(symbols))
    acc = new_acc(symbols, tl.n, ar)
    if symbols:
        add_pairs(acc, tl, pat, r.pairs, ar)
    return Tally(r.totals, tl.origin, tl.bounds, acc), k * s


def _edge_weighted_run(tl: Timeline, pat: Pattern, lead: int, trail: int, ar: Arith,
                       need_pairs: bool) -> Run:
    """Run with window-local leading / trailing negation as start / end weights."""
    start = ar.asarray(tl.no_neg_before(pat.symbols[0], lead)) if lead else None
    end = ar.asarray(tl.no_neg_after(pat.symbols[-1], trail)) if trail else None
    return run(tl, pat, ar, start, end, need_pairs)
