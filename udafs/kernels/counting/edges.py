"""Leading / trailing negation under WITHIN (no SLIDE), by subtracting violators.

A leading ``!N`` forbids N in ``(ts(last) - w, ts(first))``: its reach depends on the
*other* end of the match, so it cannot be a start weight. Instead count matches
satisfying everything else (blocks) and subtract the violators, grouped by the last
N time ``tn`` before the first row: those are exactly the matches lying in the open
interval ``(tn, tn + w)`` whose first row is at or before the next N time after tn
(the window test then holds by itself). Trailing ``!N`` is the mirror image:
intervals ``(tn - w, tn)`` with the last row at or after the previous N time. With
both, matches violating both are added back: pairs n1 < n2 < n1 + 2w, interval
``(max(n1, n2 - w), min(n2, n1 + w))``, both limits. Middle negation inside such an
interval only looks between two bound rows, so it is exact there.

Each interval is a segment of one replicated timeline. Cost O(n·k) for k negated
instances per window (O(n·k²) with both edges).
"""

from __future__ import annotations

import numpy as np

from udafs.kernels.counting.passes import Run, run
from udafs.kernels.counting.paths import add_pairs
from udafs.kernels.counting.pattern import Pattern
from udafs.kernels.counting.segments import batches, concat_ranges, open_ranges, range_timeline
from udafs.kernels.counting.timeline import Timeline
from udafs.kernels.values.arith import Arith
from udafs.plan import Plan

_TS_MAX = np.iinfo(np.int64).max
_TS_MIN = np.iinfo(np.int64).min


def edge_correction(plan: Plan, ts: np.ndarray, mask: np.ndarray, ar: Arith, acc: dict[int, np.ndarray],
                    count: int | float, first: tuple[int, int] | None = None) -> int | float:
    """``count`` minus edge-negation violators; ``acc`` pair counts corrected in place.

    ``first = (lo, hi)`` restricts everything to matches whose first row has
    lo <= ts < hi, as in :func:`udafs.kernels.counting.within.within_blocks`.
    """
    pat, w = Pattern.of(plan), plan.window
    lead, trail = _times(ts, mask, plan.negations[0]), _times(ts, mask, plan.negations[-1])
    nxt = np.append(lead[1:], _TS_MAX)  # next leading-N time after each one
    prv = np.insert(trail[:-1], 0, _TS_MIN)  # previous trailing-N time before each one
    if len(lead):
        count -= _violators(ts, mask, pat, ar, acc, lead, lead + w, nxt, None, first, -1)
    if len(trail):
        count -= _violators(ts, mask, pat, ar, acc, trail - w, trail, None, prv, first, -1)
    if len(lead) and len(trail):
        i1, i2 = _pairs(lead, trail, nxt, prv, w)
        lo = np.maximum(lead[i1], trail[i2] - w)
        hi = np.minimum(trail[i2], lead[i1] + w)
        count += _violators(ts, mask, pat, ar, acc, lo, hi, nxt[i1], prv[i2], first, 1)
    return count


def _times(ts: np.ndarray, mask: np.ndarray, neg: int) -> np.ndarray:
    """Distinct timestamps of ``neg`` instances, ascending."""
    t = ts[(mask & neg) != 0]
    if len(t) > 1:
        t = t[np.concatenate(([True], t[1:] != t[:-1]))]
    return t


def _pairs(lead: np.ndarray, trail: np.ndarray, nxt: np.ndarray, prv: np.ndarray,
           w: int) -> tuple[np.ndarray, np.ndarray]:
    """Index pairs (i1, i2) with lead[i1] < trail[i2] < lead[i1] + 2w that can hold a match.

    A doubly violating match has its first row in (trail[i2] - w, nxt[i1]] and its
    last row in [prv[i2], lead[i1] + w), which prunes most pairs.
    """
    lo = np.searchsorted(trail, lead, "right")
    hi = np.searchsorted(trail, lead + 2 * w, "left")
    i2, _ = concat_ranges(lo, hi)
    i1 = np.repeat(np.arange(len(lead)), hi - lo)
    ok = (trail[i2] - w < nxt[i1]) & (prv[i2] < lead[i1] + w)
    return i1[ok], i2[ok]


def _violators(ts: np.ndarray, mask: np.ndarray, pat: Pattern, ar: Arith, acc: dict[int, np.ndarray],
               lo: np.ndarray, hi: np.ndarray, first_max: np.ndarray | None, last_min: np.ndarray | None,
               first: tuple[int, int] | None, sign: int) -> int | float:
    """Matches inside the open intervals (lo, hi) with first row <= first_max and last
    row >= last_min (per interval), in batches of bounded size; their pairs are added
    into ``acc`` with ``sign``."""
    starts, ends = open_ranges(ts, lo, hi)
    keep = ends > starts
    starts, ends = starts[keep], ends[keep]
    first_max = None if first_max is None else first_max[keep]
    last_min = None if last_min is None else last_min[keep]
    total: int | float = 0
    for a, b in batches(ends - starts):
        tl = range_timeline(ts, mask, starts[a:b], ends[a:b])
        start = _first_weights(tl, pat.symbols[0], None if first_max is None else first_max[a:b], first, ar)
        end = None
        if last_min is not None:
            r = tl.rows(pat.symbols[-1])
            end = ar.asarray(tl.ts[r] >= last_min[a:b][tl.seg_of(pat.symbols[-1])])
        res: Run = run(tl, pat, ar, start, end, need_pairs=bool(acc), measured=acc.keys())
        if acc:
            add_pairs(acc, tl, pat, res.pairs, ar, sign=sign, to_base=True)
        total += ar.total(res.totals)
    return total


def _first_weights(tl: Timeline, sym: int, first_max: np.ndarray | None, first: tuple[int, int] | None,
                   ar: Arith) -> np.ndarray | None:
    """0/1 start weights: first row at or before the segment's limit, and inside ``first``."""
    if first_max is None and first is None:
        return None
    t = tl.ts[tl.rows(sym)]
    ok = np.ones(len(t), dtype=bool) if first_max is None else t <= first_max[tl.seg_of(sym)]
    if first is not None:
        ok &= (t >= first[0]) & (t < first[1])
    return ar.asarray(ok)
