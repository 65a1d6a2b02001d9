"""The rows of a weighted timeline for events with imprecise timestamps.

An event with ``U`` possible times becomes rows of probability 1/U each. Two layouts:

* **copies** — one row per (event, possible time). Needed where a row must stay one
  event's: Kleene groups (a set takes an event once), iterator predicates (values per
  row), sliding windows (pairs per window and event);
* **merged** — one row per (time, symbol mask), weighing the *sum* of the probabilities
  of the events that may occur there. Rows with the same time and mask are
  interchangeable in every other pass (a step depends on a row's time and symbols
  only), so a merged row's count is its copies' counts summed, and its (match, row)
  pair count splits back over the copies in proportion to their weights
  (:func:`attribute`). Built from per-(mask, U) difference arrays of *integer* counts
  over the time grid, so the weights are exact before one division, and a width of 100
  costs little more than a width of 10 (about one row per time and mask).
"""

from __future__ import annotations

from fractions import Fraction
from typing import NamedTuple

import numpy as np

from udafs.errors import UncertainTimeError
from udafs.kernels.counting.segments import concat_ranges
from udafs.kernels.values.arith import Arith
from udafs.plan import Plan

#: Timeline rows (copies, or grid cells of merged rows) one group may expand into: a row
#: costs ~100 bytes in the passes, so this keeps a group near a few GB at most.
MAX_ROWS = 1 << 25


class Events(NamedTuple):
    """One group's pattern instances: input row, first possible time, number of possible
    times (``n``), symbol mask (pattern symbols only)."""

    row: np.ndarray
    lo: np.ndarray
    n: np.ndarray
    mask: np.ndarray


class Expanded(NamedTuple):
    """Weighted timeline rows sorted by time. ``event`` is the event of each copy, or
    None for merged rows (then :func:`attribute` maps pair counts to events)."""

    ts: np.ndarray
    mask: np.ndarray
    event: np.ndarray | None
    weight: np.ndarray  # probability of the row (ar's dtype)
    inv: np.ndarray  # 1 / weight
    group: np.ndarray  # Kleene group key


def group_events(plan: Plan, mask: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> Events:
    """Instances of pattern symbols with their possible times, checked."""
    m = mask & plan.pattern_symbols_mask
    keep = np.flatnonzero(m != 0)
    lo, hi, m = lo[keep], hi[keep], m[keep]
    bad = np.flatnonzero(lo > hi)
    if len(bad):
        raise UncertainTimeError(f"an event's possible times run from {int(lo[bad[0]])} to {int(hi[bad[0]])}: "
                                 "the lower bound is above the upper bound")
    return Events(keep, lo, (hi - lo) // plan.uncertain + 1, m)


def row_masks(plan: Plan, ev: Events) -> np.ndarray:
    """The mask each event's rows carry: imprecise events keep their positive symbols only
    (their negated ones, if any, are read from the events by the gap kernel)."""
    return np.where(ev.n > 1, ev.mask & plan.positive_mask, ev.mask)


def timeline_events(plan: Plan, ev: Events) -> np.ndarray:
    """Events with rows: instances of positive symbols and point negated instances."""
    return np.flatnonzero((ev.n == 1) | ((ev.mask & plan.positive_mask) != 0))


def mergeable(plan: Plan) -> bool:
    """Merged rows are exact for plans without Kleene elements, iterator predicates and SLIDE."""
    return not any(el.kleene for el in plan.elements) and not plan.iterator_predicates and plan.slide is None


def expand(plan: Plan, ev: Events, ar: Arith) -> Expanded:
    """The timeline rows: merged where :func:`mergeable` and the time grid is compact, else copies."""
    if mergeable(plan):
        merged = _merged(plan, ev, ar)
        if merged is not None:
            return merged
    return copies(plan, ev, ar)


def copies(plan: Plan, ev: Events, ar: Arith) -> Expanded:
    """One row per (event, possible time).

    Raises
    ------
    UncertainTimeError
        More than :data:`MAX_ROWS` rows.
    """
    take = timeline_events(plan, ev)
    total = int(ev.n[take].sum())
    if total > MAX_ROWS:
        raise UncertainTimeError(f"the events expand into {total} (event, possible time) pairs, more than "
                                 f"{MAX_ROWS} per partition; use a coarser STEP or narrower intervals")
    take = take[np.argsort(ev.lo[take], kind="stable")]
    assert plan.uncertain is not None  # only plans with uncertain times expand
    event, ts = _rows_by_offset(take, ev.lo[take], ev.n[take], plan.uncertain)
    order = np.argsort(ts, kind="stable")  # merges the sorted runs of _rows_by_offset
    ts, event = ts[order], event[order]
    inv = ev.n[event]
    new_time = np.concatenate(([True], ts[1:] != ts[:-1])) if len(ts) else np.zeros(0, dtype=bool)
    group = np.where(inv > 1, len(ts) + event, np.cumsum(new_time) - 1)
    return Expanded(ts, row_masks(plan, ev)[event], event, _fractions(np.ones(len(inv), dtype=np.int64), inv, ar),
                    inv if ar.dtype is not object else inv.astype(object), group)


def _rows_by_offset(events: np.ndarray, lo: np.ndarray, n: np.ndarray, step: int) -> tuple[np.ndarray, np.ndarray]:
    """(event, time) of every possible time, offset-major: all first times (in ``lo``
    order, so sorted), then all second times, ...; a stable sort then only merges runs."""
    if not len(events) or int(n.max()) > 64:  # few huge ranges: event-major is as good
        idx, _ = concat_ranges(np.zeros(len(events), dtype=np.int64), n)
        return np.repeat(events, n), np.repeat(lo, n) + idx * step
    parts_e, parts_t = [], []
    for k in range(int(n.max())):
        sel = n > k
        parts_e.append(events[sel])
        parts_t.append(lo[sel] + k * step)
    return np.concatenate(parts_e), np.concatenate(parts_t)


def _fractions(num: np.ndarray, den: np.ndarray, ar: Arith) -> np.ndarray:
    """``num / den`` in ``ar``'s numbers (exact fractions for object arrays)."""
    if ar.dtype is object:
        cache: dict[tuple[int, int], Fraction] = {}
        out = [cache.setdefault((a, b), Fraction(a, b)) for a, b in zip(num.tolist(), den.tolist())]
        return np.array(out + [None], dtype=object)[:-1]
    return ar.asarray(num / den)


# -- merged rows --------------------------------------------------------------------------

#: A difference array may have this many cells per row it replaces (plus a constant):
#: beyond, the events are too sparse on their time grid and copies are cheaper.
GRID_CELLS_PER_ROW = 8


#: More residue classes (of lo modulo the step) than this: copies instead of grids.
MAX_RESIDUES = 64


def _merged(plan: Plan, ev: Events, ar: Arith) -> Expanded | None:
    """One row per (time, mask), or None when the events' time grid is too sparse for
    difference arrays (copies are then cheaper)."""
    take = timeline_events(plan, ev)
    masks, s = row_masks(plan, ev), plan.uncertain
    assert s is not None  # only plans with uncertain times expand
    point = take[ev.n[take] == 1]
    wide = take[ev.n[take] > 1]
    residues = _small_unique(ev.lo[wide] % s)[0] if len(wide) else np.zeros(0, dtype=np.int64)
    if len(residues) > MAX_RESIDUES:
        return None
    budget = min(GRID_CELLS_PER_ROW * int(ev.n[wide].sum()) + (1 << 16), MAX_ROWS)
    parts = []
    for residue in residues.tolist():
        cls = wide if len(residues) == 1 else wide[ev.lo[wide] % s == residue]
        part = _grid_rows(cls, ev, masks, residue, s, ar, budget)
        if part is None:
            return None
        parts.append(part)
    if len(parts) == 1 and not len(point):  # one grid: rows already in (time, mask) order, one per pair
        return _rows(*parts[0])
    ones = np.ones(len(point), dtype=np.int64)  # point events: one row each, summed with grid rows below
    return _merge(parts + [(ev.lo[point], masks[point], _fractions(ones, ones, ar))])


def _grid_rows(cls: np.ndarray, ev: Events, masks: np.ndarray, residue: int, s: int, ar: Arith,
               budget: int) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(time, mask, weight) of the cells of one residue class's grid that some event covers.

    Events of one (mask, U) kind add +1 / -1 at their first / past-last cell of a
    difference array; its running sum counts the events covering each cell exactly,
    and a cell's weight is Σ count / U over the kinds of its mask. The arrays are laid
    out (cell, mask, U), so the covered cells come out in (time, mask) order.
    """
    first = (ev.lo[cls] - residue) // s
    base = int(first.min())
    cells = int((first + ev.n[cls]).max()) - base + 1
    mask_values, mask_idx = _small_unique(masks[cls])
    u_values, u_idx = _small_unique(ev.n[cls])
    kinds = len(mask_values) * len(u_values)
    if kinds * cells > budget:
        return None
    kind = mask_idx * len(u_values) + u_idx
    start = (first - base) * kinds + kind
    size = kinds * cells
    diff = np.bincount(start, minlength=size) - np.bincount(start + ev.n[cls] * kinds, minlength=size + 1)[:size]
    counts = np.cumsum(diff.reshape(cells, kinds), axis=0).reshape(cells, len(mask_values), len(u_values))
    covered = counts.sum(axis=2) if len(u_values) > 1 else counts[:, :, 0]
    cell, m = np.nonzero(covered)
    if ar.dtype is object:
        weight = sum((_fractions(counts[cell, m, k], np.full(len(cell), u), ar)
                      for k, u in enumerate(u_values.tolist())), start=ar.zeros(len(cell)))
    elif len(u_values) == 1:
        weight = covered[covered != 0] / float(u_values[0])
    else:
        weight = (counts / u_values.astype(np.float64)).sum(axis=2)[covered != 0]
    return residue + (base + cell) * s, mask_values[m], weight


def _small_unique(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct values and the index of each element's value (a constant array costs no sort)."""
    if not len(x) or (x == x[0]).all():
        return x[:1].copy(), np.zeros(len(x), dtype=np.int64)
    values, idx = np.unique(x, return_inverse=True)
    return values, idx.reshape(-1)


def _rows(ts: np.ndarray, mask: np.ndarray, weight: np.ndarray) -> Expanded:
    """Merged rows, one per (time, mask) in that order."""
    time_new = np.concatenate(([True], ts[1:] != ts[:-1])) if len(ts) else np.zeros(0, dtype=bool)
    return Expanded(ts, mask, None, weight, 1 / weight if len(weight) else weight, np.cumsum(time_new) - 1)


def _merge(parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> Expanded:
    """Rows of several grids and point events with equal (time, mask) summed."""
    ts, mask, w = (np.concatenate([p[k] for p in parts]) for k in range(3))
    order = np.lexsort((mask, ts))
    ts, mask, w = ts[order], mask[order], w[order]
    new = np.ones(len(ts), dtype=bool)
    new[1:] = (ts[1:] != ts[:-1]) | (mask[1:] != mask[:-1])
    starts = np.flatnonzero(new)
    return _rows(ts[starts], mask[starts], np.add.reduceat(w, starts) if len(starts) else w)


def attribute(plan: Plan, ev: Events, ex: Expanded, pairs: np.ndarray, ar: Arith) -> np.ndarray:
    """Per event, its (match, row) pair count from the pair counts of merged rows.

    A merged row at (t, m) weighing W holds the pairs of every copy there, in proportion
    to the copies' weights, so event e's pairs are ``w_e · Σ pairs/W`` over the rows at
    its possible times with its mask: a prefix sum over rows ordered by (mask, time
    residue modulo the step, time), looked up once per event.
    """
    s = plan.uncertain
    rho = ar.mul(pairs, ex.inv)
    times, t_rank = np.unique(ex.ts, return_inverse=True)
    masks, m_rank = np.unique(ex.mask, return_inverse=True)
    residues, r_rank = np.unique(ex.ts % s, return_inverse=True)
    key = (m_rank * len(residues) + r_rank) * len(times) + t_rank.reshape(-1)
    order = np.argsort(key, kind="stable")
    cs = ar.excl_cumsum(rho[order], signed=True)
    out = ar.zeros(len(ev.lo))
    take = timeline_events(plan, ev)
    em = row_masks(plan, ev)[take]
    known = np.isin(em, masks)
    take, em = take[known], em[known]
    lo, hi = ev.lo[take], ev.lo[take] + (ev.n[take] - 1) * s
    prefix = (np.searchsorted(masks, em) * len(residues) + np.searchsorted(residues, lo % s)) * len(times)
    a = np.searchsorted(key[order], prefix + np.searchsorted(times, lo, "left"), "left")
    b = np.searchsorted(key[order], prefix + np.searchsorted(times, hi, "right"), "left")
    out[take] = ar.mul(cs[b] - cs[a], _fractions(np.ones(len(take), dtype=np.int64), ev.n[take], ar))
    return out
