"""Forward-only evaluation without a window, chunk by chunk, with O(L) carried state.

Without WITHIN a match may span the whole stream, so the streaming evaluator cannot
wait for a backward pass. Instead every partial match carries, next to its count,
the aggregates of the rows bound so far ("channels"): a sum channel holds
Σ over partial matches of Σ x(row) over rows bound to the measured symbol (x = 1 for
COUNT(X), x = [a not NULL] for the non-NULL pair count, x = a for SUM), a min/max
channel the extreme of x over rows bound in partial matches that exist. Extending
a partial match by row r at a position of symbol X maps (count, s, m) to
(count, s + x(r)·count, min(m, x(r))) — linear for sums, so the forward recurrences of
:mod:`udafs.kernels.counting.passes` carry over; for Kleene the sum channel solves
``P_s[g+1] = (1 + m_g)·P_s[g] + Σ_{r in g} (e_s[r] + x(r)·K[r])`` (K: the count
recurrence's result), and the min channel is a running minimum. Matches are
aggregated where they end, so no backward pass is needed.

The carry after a chunk is, per position i, the aggregate of the partial matches
ending at rows that may still precede a later row: those since the last instance of
the negation after position i (its time's rows included), and for a Kleene position
the aggregate of all sets so far. Chunks must end at tie-group boundaries.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from udafs.kernels.counting.passes import tie_groups
from udafs.kernels.counting.pattern import Pattern
from udafs.kernels.counting.scan import affine_scan, seg_accumulate
from udafs.kernels.counting.timeline import Timeline
from udafs.kernels.values.arith import EXACT_CAP, LIMIT, Arith, Kind, Overflow
from udafs.kernels.values.channels import Channel


class Agg(NamedTuple):
    """The count and every channel of one set of partial matches (Python scalars: exact
    ints, or floats for float sums and COUNT TYPE DOUBLE)."""

    matches: int | float
    chans: tuple[int | float, ...]


def empty_agg(channels: tuple[Channel, ...]) -> Agg:
    """The aggregate of no partial match."""
    return Agg(0, tuple(c.identity for c in channels))


def merge(a: Agg, b: Agg, channels: tuple[Channel, ...]) -> Agg:
    """Aggregate of the union of two disjoint sets of partial matches."""
    chans = []
    for c, x, y in zip(channels, a.chans, b.chans):
        chans.append(x + y if c.kind == "sum" else (min(x, y) if c.kind == "min" else max(x, y)))
    return Agg(a.matches + b.matches, tuple(chans))  # min/max channels hold int64 keys: no NaN here


def saturate(a: Agg, channels: tuple[Channel, ...]) -> Agg:
    """Clamp exact counts and sums at ``EXACT_CAP`` (in magnitude).

    Every later result is a linear function of this state with non-negative integer
    coefficients: a result that uses a clamped value is >= EXACT_CAP either way (and
    then reported as an overflow), one that does not is unchanged. Pending partial
    matches (say B+ sets waiting for a C) thus stay exact-in-effect at bounded size.
    """
    def clamp(v: int | float) -> int | float:
        return v if isinstance(v, float) or abs(v) < EXACT_CAP else (EXACT_CAP if v > 0 else -EXACT_CAP)

    chans = tuple(clamp(v) if c.kind == "sum" else v for c, v in zip(channels, a.chans))
    return Agg(clamp(a.matches), chans)


class Carry(NamedTuple):
    """State between chunks: per position, the pool of partial matches a later row may
    extend, and for Kleene positions the aggregate of all sets so far."""

    pool: tuple[Agg, ...]
    kleene: tuple[Agg, ...]

    def saturated(self, channels: tuple[Channel, ...]) -> Carry:
        return Carry(tuple(saturate(a, channels) for a in self.pool),
                     tuple(saturate(a, channels) for a in self.kleene))

    @staticmethod
    def start(pat: Pattern, channels: tuple[Channel, ...]) -> Carry:
        e = empty_agg(channels)
        return Carry((e,) * pat.length, (e,) * pat.length)


class ChunkResult(NamedTuple):
    """Aggregate of the matches ending in the chunk, and the carry after it."""

    ended: Agg
    carry: Carry


class Chunk(NamedTuple):
    """One chunk's events as a single-segment timeline, with per-channel x per row."""

    tl: Timeline
    xs: tuple[np.ndarray, ...]


class Numbers(NamedTuple):
    """Number system of counts and exact integer sums (checked int64 or Python ints or
    float64); float channels always use float64."""

    ar: Arith
    real: Arith

    def of(self, c: Channel | None) -> Arith:
        return self.ar if c is None or c.dtype is None else self.real


class _Arrays(NamedTuple):
    """Per-row count and channel arrays of one position."""

    matches: np.ndarray
    chans: list[np.ndarray]


def run_chunk(chunk: Chunk, pat: Pattern, channels: tuple[Channel, ...], nums: Numbers,
              carry: Carry) -> ChunkResult:
    """Forward pass over one chunk continuing from ``carry`` (see module docstring)."""
    tl = chunk.tl
    fw: list[_Arrays] = []
    for i, sym in enumerate(pat.symbols):
        n = tl.n_rows(sym)
        if i == 0:
            entry = _Arrays(nums.ar.ones(n), [_full(n, c.identity, c, nums) for c in channels])
        else:
            entry = _step(tl, pat, i, fw[-1], carry.pool[i - 1], channels, nums)
        xs = [None if c.symbol != sym else x[tl.rows(sym)] for c, x in zip(channels, chunk.xs)]
        if pat.kleene[i]:
            fw.append(_kleene(tl, sym, entry, xs, channels, nums, carry.kleene[i]))
        else:
            fw.append(_bind(entry, xs, channels, nums))
    pools = tuple(_pool_after(tl, pat.symbols[i], pat.gaps[i], fw[i], carry.pool[i], channels, nums)
                  for i in range(pat.length - 1)) + (carry.pool[-1],)
    kleene = tuple(merge(k, _total(f, channels, nums), channels) if kl else k
                   for k, f, kl in zip(carry.kleene, fw, pat.kleene))
    return ChunkResult(_total(fw[-1], channels, nums), Carry(pools, kleene))


def _full(n: int, value: int | float, c: Channel | None, nums: Numbers) -> np.ndarray:
    """An array of ``n`` copies of a Python scalar in the channel's number system."""
    if c is not None and c.kind != "sum":
        return np.full(n, value, dtype=c.dtype)
    ar = nums.of(c)
    out = ar.zeros(n)
    if value:
        if ar.checked and not abs(value) < LIMIT:
            raise Overflow
        out[:] = value
    return out


def _step(tl: Timeline, pat: Pattern, i: int, prev: _Arrays, pool: Agg, channels: tuple[Channel, ...],
          nums: Numbers) -> _Arrays:
    """Entry aggregates of position i: valid predecessors in the chunk plus the pool."""
    psym, sym, gap = pat.symbols[i - 1], pat.symbols[i], pat.gaps[i - 1]
    lo, hi = tl.prev_ranges(psym, sym, gap)
    free = tl.last_neg_before(gap)[tl.rows(sym)] < 0 if gap else np.ones(len(hi), dtype=bool)
    count = _range_sum(prev.matches, lo, hi, free, pool.matches, None, nums)
    chans = []
    for c, arr, carried in zip(channels, prev.chans, pool.chans):
        if c.kind == "sum":
            chans.append(_range_sum(arr, lo, hi, free, carried, c, nums))
        else:
            chans.append(_range_extreme(tl, psym, gap, arr, lo, hi, free, carried, c))
    return _Arrays(count, chans)


def _range_sum(x: np.ndarray, lo: np.ndarray, hi: np.ndarray, free: np.ndarray, carried: int | float,
               c: Channel | None, nums: Numbers) -> np.ndarray:
    ar = nums.of(c)
    signed = c is not None and c.signed
    cs = ar.excl_cumsum(x, signed=signed)
    out = cs[hi] - cs[lo]
    if carried:
        extra = ar.zeros(len(out))
        extra[free] = _full(1, carried, c, nums)[0]
        out = ar.add(out, extra, signed=signed)
    return out


def _range_extreme(tl: Timeline, psym: int, gap: int, x: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                   free: np.ndarray, carried: object, c: Channel) -> np.ndarray:
    """min/max of ``x`` over [lo, hi) (ranges restart at negation instances), and the pool."""
    neg_rows = np.flatnonzero((tl.mask & gap) != 0) if gap and len(x) else ()
    if len(neg_rows):
        restart = np.zeros(len(x) + 1, dtype=bool)
        restart[tl.count_before(psym)[tl.tie_start[neg_rows]]] = True
        run = seg_accumulate(c.ufunc, x, np.maximum.accumulate(np.where(restart[:-1], np.arange(len(x)), 0)))
    else:
        run = c.ufunc.accumulate(x) if len(x) else x
    ident = np.array(c.identity, dtype=c.dtype)
    out = np.where(hi > lo, run[np.maximum(hi - 1, 0)] if len(x) else ident, ident)
    return np.where(free, c.ufunc(out, np.array(carried, dtype=c.dtype)), out)


def _bind(entry: _Arrays, xs: list[np.ndarray | None], channels: tuple[Channel, ...], nums: Numbers) -> _Arrays:
    """Bind each row to a non-Kleene position: add its x to the channels of its symbol."""
    chans = []
    for c, arr, x in zip(channels, entry.chans, xs):
        if x is None:
            chans.append(arr)
        elif c.kind == "sum":
            ar = nums.of(c)
            chans.append(ar.add(arr, _times(x, entry.matches, c, nums), signed=c.signed))
        else:
            chans.append(np.where(entry.matches > 0, c.ufunc(arr, x), np.array(c.identity, dtype=c.dtype)))
    return _Arrays(entry.matches, chans)


def _times(x: np.ndarray, count: np.ndarray, c: Channel, nums: Numbers) -> np.ndarray:
    """x(r)·count(r) in the channel's number system."""
    ar = nums.of(c)
    if c.dtype is not None:
        return x * count.astype(np.float64)
    return ar.mul(ar.asarray(x) if ar.kind is not Kind.INT else x, count, signed=c.signed)


def _kleene(tl: Timeline, sym: int, entry: _Arrays, xs: list[np.ndarray | None], channels: tuple[Channel, ...],
            nums: Numbers, before: Agg) -> _Arrays:
    """Kleene position: sets of rows with distinct timestamps, continuing the carried sets."""
    gid, bounds, _ = tie_groups(tl, sym)
    if not len(gid):
        return entry
    ar = nums.ar
    grow = ar.asarray(np.diff(bounds) + 1)  # a set can skip group g or take one of its m rows
    p = _affine_from(grow, _group_sums(entry.matches, bounds, ar, False), before.matches, ar, False)
    count = ar.add(entry.matches, p[gid])
    chans = []
    for c, arr, x, carried in zip(channels, entry.chans, xs, before.chans):
        if c.kind == "sum":
            car = nums.of(c)
            own = arr if x is None else car.add(arr, _times(x, count, c, nums), signed=c.signed)
            g = car.asarray(grow) if car is not ar else grow
            ps = _affine_from(g, _group_sums(own, bounds, car, c.signed), carried, car, c.signed)
            chans.append(car.add(own, ps[gid], signed=c.signed))
        else:
            ident = np.array(c.identity, dtype=c.dtype)
            own = arr if x is None else c.ufunc(arr, np.where(count > 0, x, ident))
            groups = c.ufunc.reduceat(own, bounds[:-1])
            pm = c.ufunc.accumulate(np.concatenate(([np.array(carried, dtype=c.dtype)], groups)))[:-1]
            chans.append(np.where(count > 0, c.ufunc(own, pm[gid]), ident))
    return _Arrays(count, chans)


def _group_sums(x: np.ndarray, bounds: np.ndarray, ar: Arith, signed: bool) -> np.ndarray:
    cs = ar.excl_cumsum(x, signed=signed)
    return cs[bounds[1:]] - cs[bounds[:-1]]


def _affine_from(a: np.ndarray, b: np.ndarray, p0: int | float, ar: Arith, signed: bool) -> np.ndarray:
    """Exclusive scan of ``P -> a·P + b`` over groups, starting from ``p0`` (one segment)."""
    a1 = np.concatenate((ar.ones(1), a))
    b1 = np.concatenate((_full1(p0, ar), b))
    return affine_scan(a1, b1, np.zeros(len(a1), dtype=np.int64), ar, signed)[1:]


def _full1(value: int | float, ar: Arith) -> np.ndarray:
    out = ar.zeros(1)
    if value:
        if ar.checked and not abs(value) < LIMIT:
            raise Overflow
        out[0] = value
    return out


def _pool_after(tl: Timeline, sym: int, gap: int, f: _Arrays, pool: Agg, channels: tuple[Channel, ...],
                nums: Numbers) -> Agg:
    """The pool of position i after the chunk: reset at the last negation instance."""
    neg = np.flatnonzero((tl.mask & gap) != 0) if gap else np.zeros(0, dtype=np.int64)
    if not len(neg):
        return merge(pool, _total(f, channels, nums), channels)
    start = tl.count_before(sym)[tl.tie_start[neg[-1]]]
    tail = _Arrays(f.matches[start:], [x[start:] for x in f.chans])
    return _total(tail, channels, nums)


def _total(f: _Arrays, channels: tuple[Channel, ...], nums: Numbers) -> Agg:
    """Aggregate of all partial matches in ``f`` as Python scalars."""
    count = nums.ar.total(f.matches) if len(f.matches) else 0
    chans: list[int | float] = []
    for c, x in zip(channels, f.chans):
        if c.kind != "sum":
            chans.append(_py(c.ufunc.reduce(x)) if len(x) else c.identity)
        elif not len(x):
            chans.append(c.identity)
        elif c.dtype is not None:
            chans.append(float(np.sum(x)))
        else:
            chans.append(_py(nums.ar.excl_cumsum(x, signed=c.signed)[-1]))
    return Agg(count, tuple(chans))


def _py(v: object) -> int | float:
    """A numpy or Python number as the matching Python scalar (ints stay exact)."""
    if isinstance(v, (np.floating, float)):
        return float(v)
    if isinstance(v, (np.integer, int)):
        return int(v)
    raise TypeError(f"not a number: {v!r}")
