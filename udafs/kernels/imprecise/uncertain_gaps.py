"""Negation under imprecise timestamps: the probability that no negated event falls in a gap.

A negated event n has possible times ``τ_j = lo + j·s`` (j < U, uniform). For a gap
``(y, z)`` between two bound rows, independent events give the factor

    Q(y, z) = Π_n (1 - c_n(y, z) / U_n),   c_n = #{j : y < τ_j < z}

which is not 0/1 (point times) and does not split into a factor of y times a factor
of z. It does split far from the diagonal: with ``d`` the longest span ``τ_last - τ_0``
of the gap's events, a pair with ``z - y > d`` has no event covering both y and z, so
every event is inside (factor 0), left of y or right of z (factor 1), or straddles
exactly one end:

    Q(y, z) = [y >= M(z)] · G(y) · H(z)

with ``M(z)`` the largest ``τ_0`` of an event lying entirely before z, ``G(y)`` the
product over events straddling y and ``H(z)`` over events straddling z. A forward
step ``S(z) = Σ_{y<z} F(y)·Q(y, z)`` is then a cumulative sum of ``F·G`` (far pairs)
plus the pairs with ``z - d <= y < z``, enumerated with their events (near pairs):
O(rows · (1 + rows within d · events within d)).

:class:`GapTimeline` is a weighted :class:`~udafs.kernels.counting.timeline.Timeline` whose
:meth:`~GapTimeline.step` uses this for the gaps that hold imprecise negated events.
Edge negations (leading / trailing) become start / end weights of the same kind
(:func:`outside`).
"""

from __future__ import annotations

from typing import Literal, NamedTuple

import numpy as np

from udafs.kernels.counting.segments import concat_ranges
from udafs.kernels.counting.timeline import Timeline
from udafs.kernels.values.arith import Arith

_MIN = np.iinfo(np.int64).min // 4  # "no bound": far below any engine time


class Negated(NamedTuple):
    """The instances of one gap's negated symbols: first possible time ``lo``, number of
    possible times ``n`` (uniform, ``step`` apart), sorted by ``lo``."""

    lo: np.ndarray
    n: np.ndarray
    step: int

    @staticmethod
    def of(lo: np.ndarray, n: np.ndarray, step: int) -> Negated:
        order = np.argsort(lo, kind="stable")
        return Negated(lo[order].astype(np.int64), n[order].astype(np.int64), step)

    @property
    def hi(self) -> np.ndarray:
        """Last possible time of each event."""
        return self.lo + (self.n - 1) * self.step

    @property
    def span(self) -> int:
        """``d``: the longest ``hi - lo`` (0 when every event has a point time)."""
        return int((self.hi - self.lo).max()) if len(self.lo) else 0

    def reversed(self) -> Negated:
        """The same events on the time-reversed axis (times negated)."""
        return Negated.of(-self.hi, self.n, self.step)

    def count_open(self, k: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """``#{j : a < τ_j < b}`` of event ``k`` (arrays broadcast together)."""
        lo, n, s = self.lo[k], self.n[k], self.step
        first = np.where(a < lo, 0, np.minimum((a - lo) // s + 1, n))
        return np.maximum(self._end(lo, n, b) - first, 0)

    def count_closed_open(self, k: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """``#{j : a <= τ_j < b}`` of event ``k``."""
        lo, n, s = self.lo[k], self.n[k], self.step
        first = np.where(a <= lo, 0, np.minimum((a - lo + s - 1) // s, n))
        return np.maximum(self._end(lo, n, b) - first, 0)

    def _end(self, lo: np.ndarray, n: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Number of possible times below ``b``."""
        return np.where(b <= lo, 0, np.minimum((b - lo + self.step - 1) // self.step, n))

    def starting_in(self, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(query index, event index) of every event with ``a < lo <= b`` per query."""
        s = np.searchsorted(self.lo, a, "right")
        e = np.searchsorted(self.lo, b, "right")
        idx, _ = concat_ranges(s, np.maximum(e, s))
        return np.repeat(np.arange(len(a)), np.maximum(e - s, 0)), idx


def survival(neg: Negated, query: np.ndarray, event: np.ndarray, count: np.ndarray, n_query: int,
             ar: Arith) -> np.ndarray:
    """Per query, ``Π (1 - count/U)`` over its (query, event) pairs (1 for none)."""
    u = neg.n[event]
    if ar.dtype is object:
        from fractions import Fraction

        factor = np.array([Fraction(int(x - c), int(x)) for x, c in zip(u, count)] + [None], dtype=object)[:-1]
    else:
        factor = (u - count) / u
    out = ar.ones(n_query)
    if len(query):
        order = np.argsort(query, kind="stable")
        q, f = query[order], factor[order]
        starts = np.flatnonzero(np.concatenate(([True], q[1:] != q[:-1])))
        out[q[starts]] = np.multiply.reduceat(f, starts)
    return out


def straddling_left(neg: Negated, y: np.ndarray, ar: Arith) -> np.ndarray:
    """``G(y)``: Π over events with ``lo <= y < hi`` of ``1 - #{τ > y}/U``."""
    q, k = neg.starting_in(y - neg.span - 1, y)
    keep = y[q] < neg.hi[k]
    q, k = q[keep], k[keep]
    above = neg.count_open(k, y[q], np.full(len(q), np.iinfo(np.int64).max // 4))
    return survival(neg, q, k, above, len(y), ar)


def straddling_right(neg: Negated, z: np.ndarray, ar: Arith) -> np.ndarray:
    """``H(z)``: Π over events with ``lo < z <= hi`` of ``1 - #{τ < z}/U``."""
    q, k = neg.starting_in(z - neg.span - 1, z - 1)
    keep = z[q] <= neg.hi[k]
    q, k = q[keep], k[keep]
    below = neg.count_open(k, np.full(len(q), _MIN), z[q])
    return survival(neg, q, k, below, len(z), ar)


def between(neg: Negated, y: np.ndarray, z: np.ndarray, ar: Arith) -> np.ndarray:
    """``Q(y, z)`` per pair, by enumerating the events that overlap ``(y, z)``."""
    q, k = neg.starting_in(y - neg.span - 1, z - 1)
    inside = neg.count_open(k, y[q], z[q])
    keep = inside > 0
    return survival(neg, q[keep], k[keep], inside[keep], len(y), ar)


def last_inside_start(neg: Negated, z: np.ndarray) -> np.ndarray:
    """``M(z)``: the largest ``lo`` of an event whose every possible time is before z."""
    if not len(neg.lo):
        return np.full(len(z), _MIN)
    order = np.argsort(neg.hi, kind="stable")
    his, best = neg.hi[order], np.maximum.accumulate(neg.lo[order])
    k = np.searchsorted(his, z, "left")
    return np.where(k > 0, best[np.maximum(k - 1, 0)], _MIN)


def outside(neg: Negated, a: np.ndarray, b: np.ndarray, ar: Arith, closed: bool = False) -> np.ndarray:
    """Per row i, the probability that no event falls in ``(a[i], b[i])`` (``[a[i], b[i])``
    when ``closed``): the weights of leading and trailing negation."""
    q, k = neg.starting_in(a - neg.span - 1, b - 1)
    counter = neg.count_closed_open if closed else neg.count_open
    count = counter(k, a[q], b[q])
    keep = count > 0
    return survival(neg, q[keep], k[keep], count[keep], len(a), ar)


def seg_search(seg_rows: np.ndarray, t_rows: np.ndarray, seg_q: np.ndarray, t_q: np.ndarray,
               side: Literal["left", "right"]) -> np.ndarray:
    """``searchsorted`` of (segment, time) queries among rows sorted by (segment, time)."""
    if not len(t_rows):
        return np.zeros(len(t_q), dtype=np.int64)
    if seg_rows[0] == seg_rows[-1] and (not len(seg_q) or (seg_q == seg_rows[0]).all()):
        return np.searchsorted(t_rows, t_q, side)
    both = np.concatenate((t_rows, t_q))
    ranks = np.unique(both, return_inverse=True)[1].reshape(-1)
    width = int(ranks.max()) + 1
    key_rows = seg_rows * width + ranks[:len(t_rows)]
    key_q = seg_q * width + ranks[len(t_rows):]
    return np.searchsorted(key_rows, key_q, side)


class GapTimeline(Timeline):
    """A weighted timeline whose gaps listed in ``negated`` (gap mask -> events) hold
    negated events with imprecise times: their forward step weighs each predecessor by
    ``Q(y, z)`` (module docstring) instead of cutting at the last negated row."""

    def __init__(self, *args: object, negated: dict[int, Negated] | None = None, **kw: object) -> None:
        super().__init__(*args, **kw)  # type: ignore[arg-type]
        self.negated = negated or {}

    def _make_reversed(self) -> GapTimeline:
        def flip(x: np.ndarray | None) -> np.ndarray | None:
            return None if x is None else x[::-1]

        return GapTimeline(-self.ts[::-1], self.mask[::-1], self.n - self.bounds[::-1], flip(self.origin),
                           flip(self.weight), flip(self.inv), flip(self.group),
                           negated={g: neg.reversed() for g, neg in self.negated.items()})

    def step(self, prev_sym: int, sym: int, neg: int, f: np.ndarray, ar: Arith) -> np.ndarray:
        events = self.negated.get(neg)
        if events is None:
            return super().step(prev_sym, sym, neg, f, ar)
        first, below = self.prev_ranges(prev_sym, sym, 0)  # segment start, first row at time >= z
        ty, tz = self.ts[self.rows(prev_sym)], self.ts[self.rows(sym)]
        sy, sz = self.seg_of(prev_sym), self.seg_of(sym)
        d = events.span
        near_from = np.clip(seg_search(sy, ty, sz, tz - d, "left"), first, below)
        far_from = np.minimum(np.maximum(seg_search(sy, ty, sz, last_inside_start(events, tz), "left"), first),
                              near_from)
        cs = ar.excl_cumsum(ar.mul(f, straddling_left(events, ty, ar)))
        out = ar.mul(cs[near_from] - cs[far_from], straddling_right(events, tz, ar))
        if d:
            ys, bounds = concat_ranges(near_from, below)
            zs = np.repeat(np.arange(len(tz)), below - near_from)
            near = ar.mul(f[ys], between(events, ty[ys], tz[zs], ar))
            cn = ar.excl_cumsum(near)
            out = ar.add(out, cn[bounds[1:]] - cn[bounds[:-1]])
        return out
