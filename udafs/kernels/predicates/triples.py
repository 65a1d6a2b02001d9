"""WITHIN over three elements with predicates, without replicating windows.

For ``SEQ(E1, E2, E3) WITHIN w`` (no Kleene, no negation, skip-till-any-match, counts
only) with a predicate step ``P1`` between E1 and E2 and / or ``P2`` between E2 and E3
that read the *same* column of E2's rows (the condensed-composition paper's Query 1: ``A.price >= G.price + 2
AND C.price < G.price``). Rows bound to E1, E2, E3 are called a, g, c.

Time blocks ``[k·w, (k+1)·w)``: a match spans less than w, so a and c lie in one block
or in neighbouring blocks k and k+1; with offsets ``u = ts - k·w`` the latter need
``u(c) < u(a)``.

* **one block**: a forward pass of :mod:`.predpass` over block segments.
* **neighbouring blocks**: the offsets of a and c rows are ranked; for a pair with
  ``rank(c) < rank(a)`` the highest bit where the ranks differ picks a unique level and
  node of a binary trie over ranks, with a in the node's upper half X (block k) and c
  in its lower half Y (block k+1). Inside such a *band* no condition between a and c
  is left, so the matches through g factor::

      band(X, Y) = Σ_g L(g)·R(g),  L(g) = #{a ∈ X before g, P1(a, g)},
                                    R(g) = #{c ∈ Y after g, P2(g, c)}

  For g inside X or Y, L and R are box counts (index range × value range) on
  :class:`~udafs.kernels.predicates.dominance.Dominance` trees over the a and c rows. For g in
  the middle M between X and Y every a of X is earlier and every c of Y later, so
  L and R depend on g's compared value only: with g rows ordered by that column,
  ``P1(a, ·)`` and ``P2(·, c)`` hold on intervals of ranks, L and R are step
  functions with breakpoints at the ends of those intervals, and
  ``Σ_{g ∈ M} L·R = Σ_intervals L × R × #(g ∈ M with rank in the interval)`` — the
  last a box count on a tree over the g rows.

Every level handles all bands of all block pairs at once: O(n log² n) per level and
⌈log2(distinct offsets)⌉ ≤ log2(w) levels, with no per-window work — where anchoring
every first row's window costs O(n · events per window).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from udafs.kernels.counting.timeline import Timeline
from udafs.kernels.counting.within import block_timeline
from udafs.kernels.predicates import compare, predpass
from udafs.kernels.predicates.dominance import Dominance
from udafs.kernels.values.arith import Arith
from udafs.kernels.values.measures import Column
from udafs.plan import CmpOp, Plan, Strategy


class NotTriple(Exception):
    """The data rule this path out (the compared E2 keys do not order alike): anchor instead."""


def fits(plan: Plan, pp: predpass.PredPattern, need_pairs: bool) -> bool:
    """Whether the plan has this path's shape (the data may still rule it out)."""
    if (plan.length != 3 or plan.within is None or plan.slide is not None or need_pairs or pp.rank is not None
            or any(e.kleene for e in plan.elements) or any(plan.negations)
            or plan.strategy is not Strategy.SKIP_TILL_ANY_MATCH):
        return False
    s1, s2 = pp.steps
    return s1 is None or s2 is None or s1.nxt.column == s2.prev.column


def replicated_rows(plan: Plan, ts: np.ndarray, mask: np.ndarray, row_ok: tuple | None) -> int:
    """Rows the anchored WITHIN path would replicate (one window per distinct first-row time)."""
    first = (mask & (1 << plan.elements[0].symbol)) != 0
    if row_ok is not None and row_ok[0] is not None:
        first &= row_ok[0]
    anchors = np.unique(ts[first])
    return int((np.searchsorted(ts, anchors + plan.within, "left") - np.searchsorted(ts, anchors, "left")).sum())


def count(plan: Plan, ts: np.ndarray, mask: np.ndarray, cols: Sequence[Column], ar: Arith,
          pp: predpass.PredPattern) -> int | float:
    """Matches of a plan :func:`fits` accepts (rows sorted by ts; ``pp`` without ``within2``,
    ``pp.row_ok`` the per-position filters of enumerated predicates)."""
    w = plan.window
    st1, st2 = pp.steps
    sym = pp.pat.symbols
    A = _members(0, sym[0], mask, cols, pp.row_ok, [st1.prev] if st1 else [])
    G = _members(1, sym[1], mask, cols, pp.row_ok, [s for s in (st1 and st1.nxt, st2 and st2.prev) if s])
    C = _members(2, sym[2], mask, cols, pp.row_ok, [st2.nxt] if st2 else [])
    if not (len(A) and len(G) and len(C)):
        return 0
    k1 = _keys(G, st1.nxt, cols) if st1 else None  # E2's compared keys, per step
    k2 = _keys(G, st2.prev, cols) if st2 else None
    grank, n_gr, ivl_a, ivl_c = _intervals(st1, st2, A, C, k1, k2, len(G), cols)
    rows = np.union1d(np.union1d(A, G), C)  # no other row takes part (no negation here)
    blocks = block_timeline(ts[rows], mask[rows], w)
    within_blocks = Timeline(blocks.ts, blocks.mask, blocks.bounds, origin=rows)
    total = ar.total(predpass.run(within_blocks, pp, cols, ar).totals)
    return total + _crossing(ts, w, A, G, C, grank, n_gr, ivl_a, ivl_c, (st1, k1), (st2, k2), cols, ar)


def _members(pos: int, symbol: int, mask: np.ndarray, cols: Sequence[Column], row_ok: tuple | None,
             sides: list[predpass.Side]) -> np.ndarray:
    """Rows that may be bound to position ``pos``: its symbol, its enumerated-value filter, and
    non-NULL compared values (a NULL never satisfies a predicate)."""
    ok = (mask & (1 << symbol)) != 0
    if row_ok is not None and row_ok[pos] is not None:
        ok &= row_ok[pos]
    for side in sides:
        ok &= cols[side.column][1]
    return np.flatnonzero(ok)


def _keys(rows: np.ndarray, side: predpass.Side, cols: Sequence[Column]) -> np.ndarray:
    return compare.array_keys(cols[side.column][0][rows], side.offset, side.as_float)


def _intervals(st1: predpass.Step | None, st2: predpass.Step | None, A: np.ndarray, C: np.ndarray,
               k1: np.ndarray | None, k2: np.ndarray | None, n_g: int,
               cols: Sequence[Column]) -> tuple[np.ndarray, int, list, list]:
    """g ranks (the ``n_g`` g rows ordered by E2's compared column, keys ``k1`` / ``k2`` of the
    two steps) and, per a and per c row, the rank intervals ``[lo, hi)`` of the g rows it matches (two
    for ``<>``)."""
    parts = [np.unique(k, return_inverse=True)[1].ravel() for k in (k1, k2) if k is not None]
    if not parts:
        return np.zeros(n_g, dtype=np.int64), 1, [], []
    order = np.lexsort(parts[::-1])
    new = np.ones(n_g, dtype=bool)
    for p in parts:
        q = p[order]
        new[1:] |= q[1:] != q[:-1]
    dense = np.cumsum(new) - 1
    grank = np.empty(n_g, dtype=np.int64)
    grank[order] = dense
    n_gr = int(dense[-1]) + 1
    for p in parts:  # both E2 keys must order the g rows alike (same column: always)
        if (np.diff(p[order]) < 0).any():
            raise NotTriple("the two predicates order E2's rows differently")
    ivl_a = _rank_intervals(st1.op, _keys(A, st1.prev, cols), k1[order][new], n_gr) if st1 and k1 is not None else []
    # P2: key2(g) OP key(c)  <=>  key(c) mirrored(OP) key2(g)
    ivl_c = (_rank_intervals(st2.op.mirrored(), _keys(C, st2.nxt, cols), k2[order][new], n_gr)
             if st2 and k2 is not None else [])
    return grank, n_gr, ivl_a, ivl_c


def _rank_intervals(op: CmpOp, x: np.ndarray, gk: np.ndarray, n_gr: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """For each key x: the g ranks r with ``x OP gk[r]`` (``gk`` non-decreasing) as intervals."""
    left, right = np.searchsorted(gk, x, "left"), np.searchsorted(gk, x, "right")
    zero, top = np.zeros(len(x), dtype=np.int64), np.full(len(x), n_gr, dtype=np.int64)
    if op is CmpOp.NE:
        return [(zero, left), (right, top)]
    return [{CmpOp.LT: (right, top), CmpOp.LE: (left, top), CmpOp.GT: (zero, left), CmpOp.GE: (zero, right),
             CmpOp.EQ: (left, right)}[op]]


class _Side:
    """Counts of one side's rows (a or c) in an index range whose key stands in ``op`` to a g key."""

    def __init__(self, rows: np.ndarray, step: predpass.Step | None, g_keys: np.ndarray | None, x_side: str,
                 cols: Sequence[Column], ar: Arith) -> None:
        self.ar, self.step = ar, step
        if step is None:
            return
        assert g_keys is not None  # a step compares with E2's keys
        x_keys = _keys(rows, getattr(step, x_side), cols)
        ok_x, ok_g = np.ones(len(x_keys), dtype=bool), np.ones(len(g_keys), dtype=bool)
        rx, self.rg, self.n_r = predpass.dense_ranks(x_keys, ok_x, g_keys, ok_g)
        self.op = step.op if x_side == "prev" else step.op.mirrored()  # x OP g
        self.tree = Dominance(rx, ar.ones(len(rx)), self.n_r, ar)

    def count(self, lo: np.ndarray, hi: np.ndarray, g: np.ndarray) -> np.ndarray:
        """Rows x in ``[lo, hi)`` (indices into this side's rows) with ``key(x) OP key(g)``."""
        hi = np.maximum(hi, lo)
        if self.step is None:
            return self.ar.asarray(hi - lo)
        ry = self.rg[g]
        a, b = predpass.rank_range(self.op, ry, self.n_r)
        out = self.tree.box(lo, hi, a, b)
        if self.op is CmpOp.NE:
            out = out - self.tree.box(lo, hi, ry, ry + 1)
        return out


_StepKeys = tuple["predpass.Step | None", "np.ndarray | None"]  # a step of the chain and E2's keys for it


def _crossing(ts: np.ndarray, w: int, A: np.ndarray, G: np.ndarray, C: np.ndarray, grank: np.ndarray, n_gr: int,
              ivl_a: list, ivl_c: list, step1: _StepKeys, step2: _StepKeys, cols: Sequence[Column],
              ar: Arith) -> int | float:
    """Matches with a in block k and c in block k + 1 (``u(c) < u(a)``), by trie levels
    (``step1`` / ``step2``: each step, or None, with E2's keys for it)."""
    blk = ts // w
    off = ts - blk * w
    t_a, t_g, t_c = ts[A], ts[G], ts[C]
    b_a, b_g, b_c = blk[A], blk[G], blk[C]
    offsets = np.unique(np.concatenate([off[A], off[C]]))
    n_u = len(offsets)
    u_ext = np.append(offsets, w)
    r_a, r_c = np.searchsorted(offsets, off[A]), np.searchsorted(offsets, off[C])
    r_g = np.searchsorted(offsets, off[G], "right") - 1  # -1: before every a / c offset
    left = _Side(A, *step1, "prev", cols, ar)
    right = _Side(C, *step2, "nxt", cols, ar)
    g_tree = Dominance(grank, ar.ones(len(G)), n_gr, ar)
    gi = np.arange(len(G))
    total: int | float = 0
    levels = (n_u - 1).bit_length()

    def at(rank: np.ndarray) -> np.ndarray:  # u offset of a (clipped) rank
        return u_ext[np.minimum(rank, n_u)]

    for level in range(levels):
        s = levels - 1 - level
        # g inside X (upper half, block k) or Y (lower half, block k + 1) of its node's band
        on = r_g >= 0
        g, rg = gi[on], r_g[on]
        node_lo = (rg >> (s + 1)) << (s + 1)
        mid, hi = node_lo + (1 << s), node_lo + (2 << s)
        upper = ((rg >> s) & 1) == 1
        k = np.where(upper, b_g[on], b_g[on] - 1)  # the band's block k
        x0, x1 = k * w + at(mid), np.where(upper, t_g[on], k * w + at(hi))  # a times [x0, x1)
        y0, y1 = np.where(upper, (k + 1) * w + at(node_lo), t_g[on]), (k + 1) * w + at(mid)  # c times
        a_lo, a_hi = np.searchsorted(t_a, x0, "left"), np.searchsorted(t_a, x1, "left")
        c_lo = np.where(upper, np.searchsorted(t_c, y0, "left"), np.searchsorted(t_c, y0, "right"))
        c_hi = np.searchsorted(t_c, y1, "left")
        lv, rv = left.count(a_lo, a_hi, g), right.count(c_lo, c_hi, g)
        total += ar.total(ar.mul(lv, rv))
        total += _middle(s, n_u, u_ext, w, r_a, b_a, r_c, b_c, ivl_a, ivl_c, n_gr, t_g, g_tree, ar)
    return total


def _middle(s: int, n_u: int, u_ext: np.ndarray, w: int, r_a: np.ndarray, b_a: np.ndarray, r_c: np.ndarray,
            b_c: np.ndarray, ivl_a: list, ivl_c: list, n_gr: int, t_g: np.ndarray, g_tree: Dominance,
            ar: Arith) -> int | float:
    """Σ over the bands of one level of Σ_{g ∈ M} L(g)·R(g) (g strictly between X and Y)."""
    in_x = ((r_a >> s) & 1) == 1
    in_y = ((r_c >> s) & 1) == 0
    blk: list[np.ndarray] = []
    node: list[np.ndarray] = []
    pos: list[np.ndarray] = []
    d_l: list[np.ndarray] = []
    d_r: list[np.ndarray] = []

    def add(sel: np.ndarray, bk: np.ndarray, nd: np.ndarray, ivls: list, n: int, is_left: bool) -> None:
        if not ivls:
            ivls = [(np.zeros(n, dtype=np.int64), np.full(n, n_gr, dtype=np.int64))]
        for lo, hi in ivls:
            for at, sign in ((lo, 1), (hi, -1)):
                blk.append(bk)
                node.append(nd)
                pos.append(at[sel])
                ones = np.full(int(sel.sum()), sign, dtype=np.int64)
                (d_l if is_left else d_r).append(ones)
                (d_r if is_left else d_l).append(np.zeros_like(ones))

    add(in_x, b_a[in_x], r_a[in_x] >> (s + 1), ivl_a, len(r_a), True)
    add(in_y, b_c[in_y] - 1, r_c[in_y] >> (s + 1), ivl_c, len(r_c), False)
    blk_e, node_e, pos_e = np.concatenate(blk), np.concatenate(node), np.concatenate(pos)
    order = np.lexsort((pos_e, node_e, blk_e))
    blk_e, node_e, pos_e = blk_e[order], node_e[order], pos_e[order]
    lv = np.cumsum(np.concatenate(d_l)[order])  # every band's deltas sum to 0
    rv = np.cumsum(np.concatenate(d_r)[order])
    keep = ((blk_e[1:] == blk_e[:-1]) & (node_e[1:] == node_e[:-1]) & (pos_e[1:] > pos_e[:-1])
            & (lv[:-1] > 0) & (rv[:-1] > 0))
    if not keep.any():
        return 0
    i = np.flatnonzero(keep)
    bk, nd = blk_e[i], node_e[i]
    node_lo = nd << (s + 1)
    m0 = bk * w + u_ext[np.minimum(node_lo + (2 << s), n_u)]  # M = [end of X, start of Y)
    m1 = (bk + 1) * w + u_ext[np.minimum(node_lo, n_u)]
    g_lo, g_hi = np.searchsorted(t_g, m0, "left"), np.searchsorted(t_g, m1, "left")
    cnt = g_tree.box(g_lo, np.maximum(g_hi, g_lo), pos_e[i], pos_e[i + 1])
    return ar.total(ar.mul(ar.mul(ar.asarray(lv[i]), ar.asarray(rv[i])), cnt))
