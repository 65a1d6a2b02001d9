"""Offline 2-D dominance sums: ``D(t, k) = Σ w[x] over x < t with rank[x] < k``, vectorised.

A static merge-sort tree over the index axis: at level L the indices are cut into
blocks of 2^L, each block sorted by rank with cumulative weights. The prefix
``[0, t)`` is the union of one block per set bit of t, so a query is one
``searchsorted`` per level. Building costs O(m log² m) (one argsort per level),
answering q queries O(q log² m); no Python loop over rows.

The *condensed* variant (:func:`equal_prefix`) groups rows by rank instead: sorting
by (rank, index) once gives per-rank prefix counters, so ``Σ w[x] over x < t with
rank[x] = r`` is one ``searchsorted`` — the condensed-composition paper's condensed composition, cheapest
when many rows share a value.
"""

from __future__ import annotations

import numpy as np

from udafs.kernels.values.arith import Arith


class Dominance:
    """Answers ``D(t, k)`` for the weights ``w`` over ranks ``rank`` (0 <= rank < n_ranks).

    ``max_range`` bounds the index ranges :meth:`box` will be asked about (e.g. the
    longest segment): only levels up to it are built, and boxes are cut into canonical
    blocks instead of prefix differences.
    """

    def __init__(self, rank: np.ndarray, w: np.ndarray, n_ranks: int, ar: Arith,
                 max_range: int | None = None) -> None:
        self.m = len(rank)
        self.n_ranks = n_ranks
        self.ar = ar
        self.levels: list[tuple[np.ndarray, np.ndarray]] = []
        idx = np.arange(self.m, dtype=np.int64)
        top = max(self.m if max_range is None else min(max_range, self.m), 1)
        order = np.arange(self.m)
        level = 0
        while (1 << level) <= top:
            key = (idx >> level) * n_ranks + rank
            # the previous level's order holds sorted runs: a stable sort merges them cheaply
            order = order[np.argsort(key[order], kind="stable")]
            self.levels.append((key[order], ar.excl_cumsum(w[order])))
            level += 1

    def query(self, t: np.ndarray, k: np.ndarray) -> np.ndarray:
        """``D(t, k)`` for arrays of prefix ends ``t`` (0..m) and rank limits ``k`` (0..n_ranks)."""
        out = self.ar.zeros(len(t))
        for level, (keys, cs) in enumerate(self.levels):
            on = ((t >> level) & 1) == 1
            if not on.any():
                continue
            tt, kk = t[on], k[on]
            block = (tt >> level) - 1
            start = block << level
            pos = np.searchsorted(keys, block * self.n_ranks + kk, "left")
            out[on] = self.ar.add(out[on], cs[pos] - cs[start])
        return out

    def box(self, lo: np.ndarray, hi: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Σ w[x] over lo <= x < hi and a <= rank[x] < b (hi - lo within the built levels)."""
        if len(self.levels) and (1 << (len(self.levels) - 1)) >= max(self.m, 1):
            return (self.query(hi, b) - self.query(hi, a)) - (self.query(lo, b) - self.query(lo, a))
        out = self.ar.zeros(len(lo))
        lo, hi = lo.copy(), hi.copy()
        for level, (keys, cs) in enumerate(self.levels):  # canonical blocks, smallest first
            size = 1 << level
            for side in (0, 1):
                if side == 0:
                    take = ((lo >> level) & 1 == 1) & (lo + size <= hi)
                    block = lo >> level
                else:
                    take = ((hi >> level) & 1 == 1) & (hi - size >= lo)
                    block = (hi >> level) - 1
                if not take.any():
                    continue
                base = block[take] * self.n_ranks
                got = (cs[np.searchsorted(keys, base + b[take], "left")]
                       - cs[np.searchsorted(keys, base + a[take], "left")])
                out[take] = self.ar.add(out[take], got)
                if side == 0:
                    lo[take] += size
                else:
                    hi[take] -= size
        if (lo < hi).any():
            raise AssertionError("box range longer than the built levels")
        return out


def equal_prefix(rank: np.ndarray, w: np.ndarray, ar: Arith):
    """Per-rank prefix counters: returns ``f(t, r) = Σ w[x] over x < t with rank[x] = r``."""
    m = len(rank)
    key = rank.astype(np.int64) * (m + 1) + np.arange(m, dtype=np.int64)
    order = np.argsort(key, kind="stable")
    keys = key[order]
    cs = ar.excl_cumsum(w[order])

    def f(t: np.ndarray, r: np.ndarray) -> np.ndarray:
        base = r.astype(np.int64) * (m + 1)
        return cs[np.searchsorted(keys, base + t, "left")] - cs[np.searchsorted(keys, base, "left")]

    return f
