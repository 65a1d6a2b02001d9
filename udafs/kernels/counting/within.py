"""WITHIN w without SLIDE: time blocks of length w, cost independent of window size.

Blocks are ``[k·w, (k+1)·w)``. A match of span < w lies inside one block, or its
rows straddle exactly one boundary B = (k+1)·w, cut at a unique split (between two
elements, or inside a Kleene set). For a split with left part L (in block k) and
right part R (in block k+1)::

    crossing = Σ_a H(a) · F(ts(a) + w)

``H(a)``: matches of L starting at row a (backward pass, segments = blocks);
``F(t)``: matches of R in block k+1 ending before t (forward pass, cumulative sum,
looked up with ``searchsorted``). Measures of crossing matches: L's rows from a
forward pass of L with start weights ``F(ts(a) + w)``; R's rows from a backward pass
of R with end weights ``V(e)`` = Σ H(a) over block-k starts with ts(a) > ts(e) - w.
Cost O(n·L²) for n events and pattern length L; no per-window work at all.
"""

from __future__ import annotations

import functools
from typing import Callable

import numpy as np

from udafs.kernels.counting.edges import edge_correction
from udafs.kernels.counting.passes import (
    backward,
    count_true,
    forward,
    keeps_passes,
    kept_backward_sums,
    kept_sums,
    last_pairs_only,
    pairs_with,
    reach_backward,
    reach_forward,
    run,
)
from udafs.kernels.counting.paths import RowPairs, add_pairs, new_acc, row_pairs
from udafs.kernels.counting.pattern import Pattern, Split, splits
from udafs.kernels.counting.timeline import Timeline
from udafs.kernels.values.arith import LIMIT, Arith, Kind, Overflow
from udafs.kernels.values.measures import Tally
from udafs.plan import Plan


def within_blocks(plan: Plan, ts: np.ndarray, mask: np.ndarray, ar: Arith, symbols: set[int],
                  first: tuple[int, int] | None = None, timeline: Timeline | None = None) -> Tally:
    """Tally of all matches under WITHIN (with edge negation by subtraction).

    With ``first = (lo, hi)`` only matches whose first row has lo <= ts < hi count
    (the streaming evaluator attributes each match to its first row's time).
    ``timeline`` is ``block_timeline(ts, mask, plan.window)`` when the caller has it:
    several plans over the same rows share one, and with it every per-symbol index it
    caches (rows of other symbols on it take part in nothing). The tally's slots are
    then the rows of the measured ``symbols`` only (pair counts are zero elsewhere), so
    a plan's measures cost its own rows, not the group's.
    """
    n = len(ts)
    row_lists = timeline is not None and not plan.has_edge_negation
    tl = block_timeline(ts, mask, plan.window) if timeline is None else timeline
    acc = RowPairs(dict.fromkeys(symbols)) if row_lists else new_acc(symbols, n, ar)
    if n:
        pat = Pattern.of(plan)
        start = None if first is None else ar.asarray(in_range(tl.ts[tl.rows(pat.symbols[0])], first))
        count = positive_count(tl, pat, plan.window, ar, acc, start)
        if plan.has_edge_negation:
            count = edge_correction(plan, ts, mask, ar, acc, count, first)
    else:
        count = 0
    if ar.kind is Kind.INT and not count < LIMIT:
        raise Overflow
    counts = ar.zeros(1)
    counts[0] = count
    if timeline is None:
        return Tally(counts, np.arange(n), np.array([0, n]), acc)
    return _measured_rows(counts, tl, acc, ar)


def _measured_rows(counts: np.ndarray, tl: Timeline, acc: dict[int, np.ndarray], ar: Arith) -> Tally:
    """A one-row tally whose slots are the rows of the measured symbols (``acc``'s keys)
    on ``tl``, from pair counts over the symbols' row lists (:class:`RowPairs`) or over
    every row of ``tl``."""
    if not acc:
        return Tally(counts, np.zeros(0, dtype=np.int64), np.array([0, 0]), acc)
    symbols = sorted(acc)
    rows = functools.reduce(np.union1d, [tl.rows(s) for s in symbols])
    if not isinstance(acc, RowPairs):
        pairs = {s: p[rows] for s, p in acc.items()}
    elif len(symbols) == 1:
        pairs = {symbols[0]: row_pairs(acc, tl, symbols[0], ar)}
    else:
        pairs = {}
        for s in symbols:
            pairs[s] = ar.zeros(len(rows))
            pairs[s][np.searchsorted(rows, tl.rows(s))] = row_pairs(acc, tl, s, ar)
    return Tally(counts, rows, np.array([0, len(rows)]), pairs)


def block_timeline(ts: np.ndarray, mask: np.ndarray, w: int) -> Timeline:
    """Sorted events with one segment per non-empty block ``floor(ts / w)``."""
    blk = ts // w
    cuts = np.flatnonzero(blk[1:] != blk[:-1]) + 1
    return Timeline(ts, mask, np.concatenate(([0], cuts, [len(ts)])))


def in_range(t: np.ndarray, first: tuple[int, int]) -> np.ndarray:
    """``lo <= t < hi`` for ``first = (lo, hi)``."""
    return (t >= first[0]) & (t < first[1])


def positive_count(tl: Timeline, pat: Pattern, w: int, ar: Arith, acc: dict[int, np.ndarray],
                   start: np.ndarray | None = None) -> int | float:
    """Matches with span < w (middle negation only); adds their pairs into ``acc``.

    ``start`` (0/1 per first-element row) keeps only matches starting at chosen rows.
    """
    r = run(tl, pat, ar, start, need_pairs=bool(acc), measured=acc.keys(), by_segment=False)
    if acc:
        add_pairs(acc, tl, pat, r.pairs, ar)
    count = ar.total(r.totals)
    for sp in splits(pat):
        count += _crossing(tl, sp, w, ar, acc, start)
    return count


def _crossing(tl: Timeline, sp: Split, w: int, ar: Arith, acc: dict[int, np.ndarray],
              start: np.ndarray | None) -> int | float:
    """Matches cut by a block boundary at split ``sp``; adds their pairs into ``acc``."""
    ranges = _next_block_ranges(tl, sp.left.symbols[0], sp.right.symbols[-1], w)
    f_lo, f_hi, v_lo, v_hi = ranges
    end_left = ar.asarray(tl.no_neg_after(sp.left.symbols[-1], sp.seam)) if sp.seam else None
    start_right = ar.asarray(tl.no_neg_before(sp.right.symbols[0], sp.seam)) if sp.seam else None
    live_left, live_right = (_crossing_liveness(tl, sp, ranges, start, end_left, start_right) if ar.prune
                             else (None, None))
    bw_left = backward(tl, sp.left, ar, end_left, live_left)
    h = bw_left[0] if start is None else ar.mul(bw_left[0], start)
    fw_right = forward(tl, sp.right, ar, start_right, live_right)
    # on a timeline that keeps passes (and with weights 1), F and V below depend on the
    # parts and are kept too: plans sharing a part (and the other part's end symbol) reuse them
    kept = start is None and start_right is None and live_right is None and keeps_passes(tl)
    f = _kept(tl, ("cross_f", sp.right, sp.left.symbols[0], ar.kind), kept,
              lambda: _range_sums(kept_sums(tl, sp.right, ar) if kept else ar.excl_cumsum(fw_right[-1]),
                                  f_lo, f_hi))
    count = ar.dot(h, f)
    if acc and any(sym in acc for sym in sp.left.symbols):
        f_start = f if start is None else ar.mul(f, start)
        fw_left = forward(tl, sp.left, ar, f_start, live_left)
        add_pairs(acc, tl, sp.left, pairs_with(fw_left, bw_left, ar, tl, sp.left), ar)
    if acc and any(sym in acc for sym in sp.right.symbols):
        kept = start is None and end_left is None and live_left is None and keeps_passes(tl)
        v = _kept(tl, ("cross_v", sp.left, sp.right.symbols[-1], ar.kind), kept,
                  lambda: _range_sums(kept_backward_sums(tl, sp.left, ar) if kept else ar.excl_cumsum(h),
                                      v_lo, v_hi))
        if last_pairs_only(tl, sp.right, acc.keys()):  # backward count of the last row: its end weight
            add_pairs(acc, tl, sp.right, [*(None,) * (sp.right.length - 1), ar.mul(fw_right[-1], v)], ar)
        else:
            bw_right = backward(tl, sp.right, ar, v, live_right)
            add_pairs(acc, tl, sp.right, pairs_with(fw_right, bw_right, ar, tl, sp.right), ar)
    return count


def _kept(tl: Timeline, key: tuple, kept: bool, make: Callable[[], np.ndarray]) -> np.ndarray:
    """``make()``, kept on ``tl`` under ``key`` when ``kept``."""
    if not kept:
        return make()
    if key not in tl._cache:
        tl._cache[key] = make()
    return tl._cache[key]


def _range_sums(cs: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Sums over index ranges ``[lo, hi)`` from an exclusive cumulative sum."""
    return cs[hi] - cs[lo]


def _crossing_liveness(tl: Timeline, sp: Split, ranges: tuple[np.ndarray, ...], start: np.ndarray | None,
                       end_left: np.ndarray | None, start_right: np.ndarray | None) -> tuple[list, list]:
    """Rows of the left / right part that take part in some crossing match.

    A start row a is live when some left part starts there and some right part ends
    within reach (F(a) > 0); an end row e when some left part starts within reach of
    it (V(e) > 0). Boolean passes with those weights then give every position.
    """
    f_lo, f_hi, v_lo, v_hi = ranges
    back_left = reach_backward(tl, sp.left, None if end_left is None else end_left != 0)
    fore_right = reach_forward(tl, sp.right, None if start_right is None else start_right != 0)
    h = back_left[0] if start is None else back_left[0] & (start != 0)
    g, hc = count_true(fore_right[-1]), count_true(h)
    fore_left = reach_forward(tl, sp.left, h & (g[f_hi] > g[f_lo]))
    back_right = reach_backward(tl, sp.right, hc[v_hi] > hc[v_lo])
    return [f & b for f, b in zip(fore_left, back_left)], [f & b for f, b in zip(fore_right, back_right)]


def _next_block_ranges(tl: Timeline, first: int, last: int, w: int) -> tuple[np.ndarray, ...]:
    """Index ranges pairing start rows (``first``) with end rows (``last``) one block later.

    For a start a: the ``last`` rows e of the next block with ts(e) < ts(a) + w are
    ``[f_lo, f_hi)`` of the ``last`` row list. For an end e: the ``first`` rows a of
    the block before with ts(a) > ts(e) - w are ``[v_lo, v_hi)`` of the ``first`` list.
    The time searches run over all rows (sorted by time: the segments are time blocks),
    once per symbol, so that pairs of symbols share them.
    """
    key = ("nb", first, last)
    if key not in tl._cache:
        f_lo = tl.sym_segments(last)[tl.seg_of(first) + 1]
        f_hi = tl.count_before(last)[_time_search(tl, first, w, "left")]
        v_lo = tl.count_before(first)[_time_search(tl, last, -w, "right")]
        v_hi = tl.sym_segments(first)[tl.seg_of(last)]
        tl._cache[key] = (f_lo, f_hi, v_lo, v_hi)
    return tl._cache[key]


def _time_search(tl: Timeline, sym: int, shift: int, side: str) -> np.ndarray:
    """Per ``sym`` row r: the first row of ``tl`` at or after time ts(r) + shift (``side``
    "left"), or after it ("right")."""
    key = ("ts+", sym, shift, side)
    if key not in tl._cache:
        tl._cache[key] = np.searchsorted(tl.ts, tl.ts[tl.rows(sym)] + shift, side)  # type: ignore[call-overload]
    return tl._cache[key]
