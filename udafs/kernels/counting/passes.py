"""The one primitive: a segmented forward pass of prefix counts, and what it yields.

``forward(tl, pat, ar, start)`` returns, per pattern position i, the array ``F[i]``
over the rows of ``pat.symbols[i]`` (in ``tl.rows`` order): the weighted number of
partial matches of elements 0..i inside the row's segment that end at that row (for
a Kleene element: whose set's last row it is). Partial matches are weighted by
``start`` at the row bound to element 0 (its first row when Kleene).

Step i -> i+1 (``CS`` = exclusive cumulative sum of ``F[i]``)::

    F[i+1][r] = CS[hi(r)] - CS[lo(r)]

with ``hi(r)`` the first predecessor row of r's tie group and ``lo(r)`` the start of
r's segment or of the tie group of the last gap-negation instance before r. A Kleene
element adds ``P`` over tie groups: ``P[g+1] = (1 + m[g])·P[g] + e[g]`` (``m`` rows,
``e`` summed entries of group g), solved by :func:`affine_scan`.

A backward pass is the forward pass on the time-reversed timeline with the reversed
pattern. ``F[i][r] · B[i][r]`` is the number of (match, row r at position i) pairs:
both factors include r once, and a Kleene set containing r splits uniquely into the
part up to r and the part from r.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import NamedTuple

import numpy as np

from udafs.kernels.counting.pattern import Pattern
from udafs.kernels.counting.scan import affine_scan
from udafs.kernels.counting.timeline import Timeline
from udafs.kernels.values.arith import Arith

Live = list[np.ndarray] | None  # per position: rows that take part in a weighted match


def forward(tl: Timeline, pat: Pattern, ar: Arith, start: np.ndarray | None = None,
            live: Live = None) -> list[np.ndarray]:
    """Prefix counts per position (see module docstring); ``start`` defaults to 1.

    With ``live`` (from :func:`liveness`) counts of rows that complete no match are
    zeroed as they are produced, which leaves every other count unchanged.
    """
    if start is None and live is None and keeps_passes(tl):
        return list(kept_forward(tl, pat, ar))
    out: list[np.ndarray] = []
    for i, sym in enumerate(pat.symbols):
        if i == 0:
            entry = ar.ones(tl.n_rows(sym)) if start is None else start
        else:
            entry = tl.step(pat.symbols[i - 1], sym, pat.gaps[i - 1], out[-1], ar)
        entry = tl.weigh(sym, entry, ar)  # weighted timelines: the bound row's probability
        if live is not None:
            entry = _keep(entry, live[i])
        f = kleene_sets(tl, sym, entry, ar, None if live is None else live[i]) if pat.kleene[i] else entry
        out.append(f if live is None else _keep(f, live[i]))
    return out


def backward(tl: Timeline, pat: Pattern, ar: Arith, end: np.ndarray | None = None,
             live: Live = None) -> list[np.ndarray]:
    """Suffix counts per position: matches of elements i..n-1 starting at each row.

    ``end`` weights the row bound to the last element (its last row when Kleene).
    Arrays are in forward ``tl.rows`` order, like :func:`forward`'s.
    """
    rev_live = None if live is None else [x[::-1] for x in live[::-1]]
    rev = forward(tl.reversed(), pat.reversed(), ar, None if end is None else end[::-1], rev_live)
    return [x[::-1] for x in rev[::-1]]


# -- passes kept on a timeline that several plans share ------------------------------
#
# Plans evaluated on one timeline (the cuboids of an E-Cube on the shared block
# timeline) differ in a level here and there: their patterns share prefixes (forward
# passes) and suffixes (backward passes, prefixes of the reversed pattern on the reversed
# twin). A timeline with ``keeps_passes`` keeps every unweighted pass from start weight 1
# by pattern and number system, with the exclusive cumulative sum of its last array,
# so a pattern costs one step beyond its longest kept prefix and each shared cumulative
# sum is taken once. Counts are the same arrays a fresh pass computes (same operations
# in the same order), overflow checks included: a pass that overflows is not kept.

def keeps_passes(tl: Timeline) -> bool:
    """Whether ``tl`` keeps unweighted passes (:meth:`Timeline.step` not overridden)."""
    return tl.keeps_passes and tl.weight is None and tl.inv is None


def kept_forward(tl: Timeline, pat: Pattern, ar: Arith) -> list[np.ndarray]:
    """:func:`forward` from start weight 1 on a timeline that keeps passes (do not modify
    the arrays: they are shared)."""
    key = ("fw", pat, ar.kind)
    if key not in tl._cache:
        sym = pat.symbols[-1]
        if pat.length == 1:
            head: list[np.ndarray] = []
            entry = ar.ones(tl.n_rows(sym))
        else:
            prefix = pat.slice(0, pat.length - 1)
            head = kept_forward(tl, prefix, ar)
            entry = tl.step_sums(prefix.symbols[-1], sym, pat.gaps[-1], kept_sums(tl, prefix, ar))
        tl._cache[key] = [*head, kleene_sets(tl, sym, entry, ar) if pat.kleene[-1] else entry]
    return tl._cache[key]


def kept_sums(tl: Timeline, pat: Pattern, ar: Arith) -> np.ndarray:
    """``ar.excl_cumsum`` of the last array of :func:`kept_forward`, kept with it."""
    key = ("fw_cs", pat, ar.kind)
    if key not in tl._cache:
        tl._cache[key] = ar.excl_cumsum(kept_forward(tl, pat, ar)[-1])
    return tl._cache[key]


def kept_backward_sums(tl: Timeline, pat: Pattern, ar: Arith) -> np.ndarray:
    """``ar.excl_cumsum`` of ``backward(tl, pat, ar)[0]`` (end weight 1), from the kept
    sums of the reversed pass: the sum before row k is the total less the sum from k on."""
    key = ("bw_cs", pat, ar.kind)
    if key not in tl._cache:
        rev = kept_sums(tl.reversed(), pat.reversed(), ar)
        tl._cache[key] = rev[-1] - rev[::-1]
    return tl._cache[key]


def _keep(x: np.ndarray, live: np.ndarray) -> np.ndarray:
    out = x.copy()
    out[~live] = 0
    return out


# -- liveness: which (row, position) pairs take part in some weighted match --------
#
# Dead partial matches (say B+ sets that no C ever follows) can reach astronomic
# counts while the answer is small. The fallback number systems prune them first,
# so that every intermediate value stays below the run's own total: exact Python
# ints stay as small as the answer, floats do not cancel catastrophically.

def reach_forward(tl: Timeline, pat: Pattern, start: np.ndarray | None = None) -> list[np.ndarray]:
    """Boolean :func:`forward`: does any partial match (with start weight > 0) end here?"""
    out: list[np.ndarray] = []
    for i, sym in enumerate(pat.symbols):
        if i == 0:
            e = np.ones(tl.n_rows(sym), dtype=bool) if start is None else np.asarray(start, dtype=bool)
        else:
            lo, hi = tl.prev_ranges(pat.symbols[i - 1], sym, pat.gaps[i - 1])
            cs = count_true(out[-1])
            e = cs[hi] > cs[lo]
        out.append(_kleene_reach(tl, sym, e) if pat.kleene[i] else e)
    return out


def reach_backward(tl: Timeline, pat: Pattern, end: np.ndarray | None = None) -> list[np.ndarray]:
    """Boolean :func:`backward`."""
    rev = reach_forward(tl.reversed(), pat.reversed(), None if end is None else end[::-1])
    return [x[::-1] for x in rev[::-1]]


def liveness(tl: Timeline, pat: Pattern, start: np.ndarray | None = None,
             end: np.ndarray | None = None) -> list[np.ndarray]:
    """Per position, rows bound there in at least one match with non-zero weights."""
    return [f & b for f, b in zip(reach_forward(tl, pat, start), reach_backward(tl, pat, end))]


def count_true(x: np.ndarray) -> np.ndarray:
    """Exclusive cumulative count of True values (length ``len(x) + 1``)."""
    out = np.zeros(len(x) + 1, dtype=np.int64)
    np.cumsum(x, out=out[1:])
    return out


def _kleene_reach(tl: Timeline, sym: int, entry: np.ndarray) -> np.ndarray:
    """A set can end at r if it can start at r or at a row of an earlier tie group."""
    gid, bounds, seg_first = tie_groups(tl, sym)
    if not len(gid):
        return entry
    before = count_true(entry)[bounds[:-1]]  # entries before each group
    return entry | (before > before[seg_first])[gid]


def kleene_sets(tl: Timeline, sym: int, entry: np.ndarray, ar: Arith, live: np.ndarray | None = None) -> np.ndarray:
    """Counts of (prefix, set ending at r) from counts ``entry`` of sets {r}.

    With ``live``, sets may only take live rows: a set through a dead row never ends
    at a live row with a non-zero count, so live counts are unchanged while dead
    sets no longer grow by a factor (1 + m) per tie group.
    """
    gid, bounds, seg_first = tie_groups(tl, sym)
    if not len(gid):
        return entry
    cs = ar.excl_cumsum(entry)
    e = cs[bounds[1:]] - cs[bounds[:-1]]
    if tl.weight is not None:  # a set takes at most one row of a group, each with its probability
        w = tl.weigh(sym, ar.ones(len(gid)), ar)
        if live is not None:
            w = _keep(w, live)
        cw = ar.excl_cumsum(w)
        p = affine_scan(ar.add(cw[bounds[1:]] - cw[bounds[:-1]], ar.ones(len(e))), e, seg_first, ar)
        return ar.add(entry, ar.mul(w, p[gid]))
    m = np.diff(bounds) if live is None else np.diff(count_true(live)[bounds])
    p = affine_scan(ar.asarray(m + 1), e, seg_first, ar)
    return ar.add(entry, p[gid])


def tie_groups(tl: Timeline, sym: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Tie groups among ``sym`` rows (Kleene groups on weighted timelines): group id per row,
    group bounds, first group of segment."""
    key = ("kg", sym)
    if key not in tl._cache:
        r = tl.rows(sym)
        ties = tl.kleene_key_of(sym)
        new = np.ones(len(r), dtype=bool)
        new[1:] = ties[1:] != ties[:-1]
        if tl.group is not None:  # group keys repeat across segments (tie starts never do)
            seg_rows = tl.seg_of(sym)
            new[1:] |= seg_rows[1:] != seg_rows[:-1]
        starts = np.flatnonzero(new)
        gid = np.cumsum(new) - 1
        seg = tl.seg_of(sym)[starts]
        first = np.ones(len(starts), dtype=bool)
        first[1:] = seg[1:] != seg[:-1]
        seg_first = np.maximum.accumulate(np.where(first, np.arange(len(starts)), 0))
        tl._cache[key] = (gid, np.append(starts, len(r)), seg_first)
    return tl._cache[key]


class Run(NamedTuple):
    """One weighted evaluation of a pattern on a timeline.

    ``totals[k]`` = weighted matches in segment k; ``pairs[i]`` = (match, row) pair
    counts of position i over ``tl.rows(pat.symbols[i])`` (None when not asked for; a
    position whose symbol is not among the run's ``measured`` symbols may hold None).
    """

    totals: np.ndarray
    pairs: Sequence[np.ndarray | None] | None


def run(tl: Timeline, pat: Pattern, ar: Arith, start: np.ndarray | None = None,
        end: np.ndarray | None = None, need_pairs: bool = False, live: Live = None,
        measured: Collection[int] | None = None, by_segment: bool = True) -> Run:
    """Count matches of ``pat`` per segment, and per-row pair counts if asked (only of the
    positions of the ``measured`` symbols when given: :func:`last_pairs_only`). Without
    ``by_segment`` in checked int64 ``totals`` has one entry: the sum over all segments.

    The fallback number systems (``ar.prune``) first drop rows that complete no
    match (see :func:`liveness`) unless ``live`` is given.
    """
    if live is None and ar.prune:
        live = liveness(tl, pat, None if start is None else start != 0, None if end is None else end != 0)
    fw = forward(tl, pat, ar, start, live)
    last = fw[-1] if end is None else ar.mul(fw[-1], end)
    if not by_segment and ar.checked:  # one checked sum: no cumulative sum of the last position
        totals = ar.zeros(1)
        totals[0] = ar.total(last)
    else:
        kept = start is None and end is None and live is None and keeps_passes(tl)
        cs = kept_sums(tl, pat, ar) if kept else ar.excl_cumsum(last)
        b = tl.sym_segments(pat.symbols[-1])
        totals = cs[b[1:]] - cs[b[:-1]]
    if not need_pairs:
        return Run(totals, None)
    if measured is not None and last_pairs_only(tl, pat, measured):
        return Run(totals, [*(None,) * (pat.length - 1), last])
    bw = backward(tl, pat, ar, end, live)
    return Run(totals, pairs_with(fw, bw, ar, tl, pat))


def last_pairs_only(tl: Timeline, pat: Pattern, measured: Collection[int]) -> bool:
    """Whether the pairs of the ``measured`` symbols are those of the last position only
    and need no backward pass: no other position binds a measured symbol, and the last is
    a single row (not Kleene) of an unweighted timeline, so its backward count is the end
    weight and its pairs are the forward counts times the end weights."""
    return (tl.weight is None and tl.inv is None and not pat.kleene[-1]
            and not any(sym in measured for sym in pat.symbols[:-1]))


def pairs_with(fw: list[np.ndarray], bw: list[np.ndarray], ar: Arith, tl: Timeline | None = None,
               pat: Pattern | None = None) -> list[np.ndarray]:
    """Pair counts from matching forward and backward passes (on a weighted timeline
    ``tl`` both hold row r's weight: it is divided out once)."""
    pairs = [ar.mul(f, g) for f, g in zip(fw, bw)]
    if tl is None or tl.inv is None:
        return pairs
    assert pat is not None, "pairs on a weighted timeline need the pattern"
    return [tl.unweigh(sym, p, ar) for sym, p in zip(pat.symbols, pairs)]
