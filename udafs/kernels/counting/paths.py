"""Evaluation paths without and with sliding windows (WITHIN alone: :mod:`.within`).

Both use the forward-pass primitive of :mod:`udafs.kernels.counting.passes`; pair counts land
in per-symbol slot arrays (``acc``) that :mod:`udafs.kernels.values.measures` aggregates.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from udafs.kernels.counting import quantifiers
from udafs.kernels.counting.passes import Run, run
from udafs.kernels.counting.pattern import Pattern
from udafs.kernels.counting.segments import RangeTimeline, batches, range_timeline, sliding_windows
from udafs.kernels.counting.timeline import Timeline
from udafs.kernels.values.arith import Arith
from udafs.kernels.values.measures import Column, Partial, Tally, measure_symbols, partials
from udafs.plan import Plan


def add_pairs(acc: dict[int, np.ndarray], tl: Timeline, pat: Pattern, pairs: Sequence[np.ndarray | None] | None,
              ar: Arith, sign: int = 1, to_base: bool = False) -> None:
    """Add (``sign`` 1) or subtract (-1) a run's per-position pair counts into ``acc``.

    ``acc`` arrays are indexed by the rows of ``tl``, or with ``to_base`` by its
    origin rows (replicated rows then add up onto their base row). ``pairs`` is a
    :class:`~udafs.kernels.counting.passes.Run`'s, from a run asked for them (positions of
    symbols not in ``acc`` may hold None).
    """
    if pairs is None:
        raise ValueError("add_pairs needs a run with pair counts (need_pairs=True)")
    for sym, p in zip(pat.symbols, pairs):
        if sym not in acc:
            continue
        if p is None:
            raise ValueError(f"the run left out the pairs of measured symbol {sym}")
        if isinstance(acc, RowPairs):  # slots are the sym rows themselves: no gather, no scatter
            assert not to_base, "pair counts over row lists have no base rows"
            old = acc[sym]
            if old is None:  # the first pairs: taken as they are (never modified in place)
                acc[sym] = p if sign > 0 else -p
            else:
                acc[sym] = ar.add(old, p) if sign > 0 else old - p
            continue
        rows = tl.rows(sym)
        if not to_base:
            acc[sym][rows] = ar.add(acc[sym][rows], p) if sign > 0 else acc[sym][rows] - p
        else:
            assert tl.origin is not None, "to_base needs a timeline of replicated rows"
            np.add.at(acc[sym], tl.origin[rows], p if sign > 0 else -p)


class RowPairs(dict):
    """Pair counts of each measured symbol over that symbol's row list on one timeline
    (``tl.rows(sym)`` order) rather than over all of its rows: for an ``acc`` that takes
    pairs of one timeline only. A symbol maps to None until its first pairs arrive;
    :func:`row_pairs` reads the counts."""


def row_pairs(acc: RowPairs, tl: Timeline, sym: int, ar: Arith) -> np.ndarray:
    """The pair counts of ``sym`` in ``acc`` (zeros when none arrived)."""
    p = acc[sym]
    return ar.zeros(tl.n_rows(sym)) if p is None else p


def new_acc(symbols: set[int], n: int, ar: Arith) -> dict[int, np.ndarray]:
    """Zeroed pair-count arrays over ``n`` slots for each measured symbol."""
    return {s: ar.zeros(n) for s in symbols}


def no_window(plan: Plan, ts: np.ndarray, mask: np.ndarray, ar: Arith, symbols: set[int],
              timeline: Timeline | None = None) -> Tally:
    """The whole group is one segment (no WITHIN); ``timeline`` is that segment's timeline
    when the caller shares one between plans over the same rows (and their kept passes)."""
    n = len(ts)
    pat = Pattern.of(plan)
    acc = new_acc(symbols, n, ar)
    if not n:
        return Tally(ar.zeros(1), np.zeros(0, dtype=np.int64), np.array([0, 0]), acc)
    tl = Timeline(ts, mask, np.array([0, n])) if timeline is None else timeline
    r = run(tl, pat, ar, need_pairs=bool(symbols), measured=symbols)
    if symbols:
        add_pairs(acc, tl, pat, r.pairs, ar)
    return Tally(r.totals, np.arange(n), np.array([0, n]), acc)


def sliding(plan: Plan, ts: np.ndarray, mask: np.ndarray, cols: Sequence[Column], ar: Arith,
            k_range: tuple[int, int] | None = None) -> tuple[list[Partial], np.ndarray]:
    """WITHIN w SLIDE s: every window [k·s, k·s + w) holding a row, on its own rows.

    Rows are replicated into each window containing them (O(n·w/s) rows, in batches
    of about :data:`~udafs.kernels.counting.segments.BATCH_ROWS` to bound memory) and the
    windows become the segments of one timeline per batch. Window-local leading /
    trailing negation become 0/1 start / end weights. ``k_range = (k0, k1)`` keeps
    windows k0 <= k < k1 only. Returns per-window partials and window starts.
    """
    k, starts, ends = window_ranges(plan, ts, k_range)
    return window_partials(plan, ts, mask, cols, ar, starts, ends), k * plan.slide


def window_ranges(plan: Plan, ts: np.ndarray, k_range: tuple[int, int] | None = None
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The windows holding a row of the sorted ``ts`` (numbers k, within ``k_range``) and
    each window's rows as the index range ``[starts, ends)``."""
    w, s = plan.sliding
    k = sliding_windows(ts, w, s)
    if k_range is not None:
        k = k[(k >= k_range[0]) & (k < k_range[1])]
    return k, np.searchsorted(ts, k * s, "left"), np.searchsorted(ts, k * s + w, "left")


def window_partials(plan: Plan, ts: np.ndarray, mask: np.ndarray, cols: Sequence[Column], ar: Arith,
                    starts: np.ndarray, ends: np.ndarray) -> list[Partial]:
    """Partials of the windows whose rows are ``[starts, ends)`` (non-empty ranges, each
    sorted by time; the ranges may lie in different partitions' rows concatenated)."""
    parts = [_window_batch(plan, ts, mask, cols, ar, starts[a:b], ends[a:b]) for a, b in batches(ends - starts)]
    if not parts:
        tally = Tally(ar.zeros(0), np.zeros(0, dtype=np.int64), np.zeros(1, dtype=np.int64),
                      new_acc(measure_symbols(plan), 0, ar))
        parts = [partials(plan, tally, cols, ar)]
    return [Partial(*(np.concatenate([p[j][f] for p in parts]) for f in range(2)))
            for j in range(len(plan.measures))]


def _window_batch(plan: Plan, ts: np.ndarray, mask: np.ndarray, cols: Sequence[Column], ar: Arith,
                  starts: np.ndarray, ends: np.ndarray) -> list[Partial]:
    """Partials of the windows whose rows are ``[starts, ends)`` (all non-empty); the
    classes of a quantified plan (:mod:`udafs.kernels.counting.quantifiers`) share the batch's
    timeline and the passes of their common parts."""
    tl = range_timeline(ts, mask, starts, ends)
    tl.keeps_passes = plan.quantified
    return quantifiers.each(plan, lambda p: _class_batch(p, tl, cols, ar))


def _class_batch(plan: Plan, tl: RangeTimeline, cols: Sequence[Column], ar: Arith) -> list[Partial]:
    """Partials of the windows of the replicated timeline ``tl`` for a plain ``plan``."""
    symbols = measure_symbols(plan)
    pat = Pattern.of(plan)
    r = _edge_weighted_run(tl, pat, plan.negations[0], plan.negations[-1], ar, symbols)
    acc = new_acc(symbols, tl.n, ar)
    if not symbols:  # COUNT(*) only: no row is read (the replicated rows are never built)
        return partials(plan, Tally(r.totals, np.zeros(0, dtype=np.int64), tl.bounds, acc), cols, ar)
    add_pairs(acc, tl, pat, r.pairs, ar)
    return partials(plan, Tally(r.totals, tl.origin, tl.bounds, acc), cols, ar)


def _edge_weighted_run(tl: Timeline, pat: Pattern, lead: int, trail: int, ar: Arith,
                       measured: set[int]) -> Run:
    """Run with window-local leading / trailing negation as start / end weights (pairs of
    the ``measured`` symbols)."""
    start = ar.asarray(tl.no_neg_before(pat.symbols[0], lead)) if lead else None
    end = ar.asarray(tl.no_neg_after(pat.symbols[-1], trail)) if trail else None
    return run(tl, pat, ar, start, end, bool(measured), measured=measured)
