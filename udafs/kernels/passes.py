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

from typing import NamedTuple

import numpy as np

from udafs.kernels.arith import Arith
from udafs.kernels.pattern import Pattern
from udafs.kernels.scan import affine_scan
from udafs.kernels.timeline import Timeline


def forward(tl: Timeline, pat: Pattern, ar: Arith, start: np.ndarray | None = None) -> list[np.ndarray]:
    """Prefix counts per position (see module docstring); ``start`` defaults to 1."""
    out: list[np.ndarray] = []
    for i, sym in enumerate(pat.symbols):
        if i == 0:
            entry = ar.ones(len(tl.rows(sym))) if start is None else start
        else:
            lo, hi = tl.prev_ranges(pat.symbols[i - 1], sym, pat.gaps[i - 1])
            cs = ar.excl_cumsum(out[-1])
            entry = cs[hi] - cs[lo]
        out.append(_kleene(tl, sym, entry, ar) if pat.kleene[i] else entry)
    return out


def backward(tl: Timeline, pat: Pattern, ar: Arith, end: np.ndarray | None = None) -> list[np.ndarray]:
    """Suffix counts per position: matches of elements i..n-1 starting at each row.

    ``end`` weights the row bound to the last element (its last row when Kleene).
    Arrays are in forward ``tl.rows`` order, like :func:`forward`'s.
    """
    rev = forward(tl.reversed(), pat.reversed(), ar, None if end is None else end[::-1])
    return [x[::-1] for x in rev[::-1]]


def _kleene(tl: Timeline, sym: int, entry: np.ndarray, ar: Arith) -> np.ndarray:
    """Counts of (prefix, set ending at r) from counts ``entry`` of sets {r}."""
    gid, bounds, seg_first = _tie_groups(tl, sym)
    if not len(gid):
        return entry
    cs = ar.excl_cumsum(entry)
    e = cs[bounds[1:]] - cs[bounds[:-1]]
    a = ar.asarray(np.diff(bounds) + 1)
    p = affine_scan(a, e, seg_first, ar)
    return ar.add(entry, p[gid])


def _tie_groups(tl: Timeline, sym: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Tie groups among ``sym`` rows: group id per row, group bounds, first group of segment."""
    key = ("kg", sym)
    if key not in tl._cache:
        r = tl.rows(sym)
        ties = tl.tie_start[r]
        new = np.ones(len(r), dtype=bool)
        new[1:] = ties[1:] != ties[:-1]
        starts = np.flatnonzero(new)
        gid = np.cumsum(new) - 1
        seg = tl.seg_id[r[starts]]
        first = np.ones(len(starts), dtype=bool)
        first[1:] = seg[1:] != seg[:-1]
        seg_first = np.maximum.accumulate(np.where(first, np.arange(len(starts)), 0))
        tl._cache[key] = (gid, np.append(starts, len(r)), seg_first)
    return tl._cache[key]


class Run(NamedTuple):
    """One weighted evaluation of a pattern on a timeline.

    ``totals[k]`` = weighted matches in segment k; ``pairs[i]`` = (match, row) pair
    counts of position i over ``tl.rows(pat.symbols[i])`` (None when not asked for).
    """

    totals: np.ndarray
    pairs: list[np.ndarray] | None


def run(tl: Timeline, pat: Pattern, ar: Arith, start: np.ndarray | None = None,
        end: np.ndarray | None = None, need_pairs: bool = False) -> Run:
    """Count matches of ``pat`` per segment, and per-row pair counts if asked."""
    fw = forward(tl, pat, ar, start)
    last = fw[-1] if end is None else ar.mul(fw[-1], end)
    cs = ar.excl_cumsum(last)
    b = tl.sym_segments(pat.symbols[-1])
    totals = cs[b[1:]] - cs[b[:-1]]
    if not need_pairs:
        return Run(totals, None)
    bw = backward(tl, pat, ar, end)
    return Run(totals, [ar.mul(f, g) for f, g in zip(fw, bw)])


def pairs_with(fw: list[np.ndarray], bw: list[np.ndarray], ar: Arith) -> list[np.ndarray]:
    """Pair counts from matching forward and backward passes."""
    return [ar.mul(f, g) for f, g in zip(fw, bw)]
