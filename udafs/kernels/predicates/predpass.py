"""Forward / backward passes with adjacent-element predicates and Kleene iterator predicates.

The passes of :mod:`udafs.kernels.counting.passes`, widened by two kinds of steps:

* a *predicate step* between elements i-1 and i: ``F_i[y] = Σ F_{i-1}[x]`` over the
  usual predecessor index range ``[lo(y), hi(y))`` *and* over x whose compared value
  lies in a rank range set by y's value — a box query on (index, value rank),
  answered for all y at once by :mod:`udafs.kernels.predicates.dominance` (``condensed``:
  per-value prefix counters or a dense per-value table; ``sorted``: a merge-sort
  tree), chosen by the condensation degree;
* a *chain step* for a Kleene element with one iterator predicate ``b[i] OP b[i-1] + c``:
  ``C[q] = entry[q] + Σ C[s]`` over rows s of q's segment in earlier tie groups with
  the predicate true for (s, q) — rising runs are increasing subsequences. One pass in
  time order with a Fenwick tree over value ranks: O(n log n).

Because every predicate joins two *adjacent* elements and iterator predicates join
consecutive rows of one set, a match through row r at position i still splits into an
independent prefix (ending at r) and suffix (starting at r): ``F_i[r]·B_i[r]`` is the
(match, row) pair count, and measures follow exactly as in :mod:`udafs.kernels.values.measures`.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Sequence

import numpy as np

from udafs.kernels.counting.passes import Run, kleene_sets, pairs_with
from udafs.kernels.counting.pattern import Pattern
from udafs.kernels.counting.scan import affine_scan
from udafs.kernels.counting.timeline import Timeline
from udafs.kernels.options import Method
from udafs.kernels.predicates import compare
from udafs.kernels.predicates.dominance import Dominance, equal_prefix
from udafs.kernels.values.arith import LIMIT, Arith, Overflow
from udafs.kernels.values.measures import Column
from udafs.plan import CmpOp, Plan, Strategy

#: Condensed per-value counters pay off when rows per distinct value exceed this (d <= 1/2).
CONDENSE_MAX_DEGREE = 0.5
#: A dense per-value table for inequalities is used up to this many distinct values.
DENSE_MAX_VALUES = 64


class Side(NamedTuple):
    """One operand: plan column, offset added to it, and whether it compares as doubles."""

    column: int
    offset: int | float
    as_float: bool


class Step(NamedTuple):
    """Condition ``key(prev row) OP key(next row)`` between adjacent elements (prev earlier in
    this pass's direction)."""

    prev: Side
    nxt: Side
    op: CmpOp

    def reversed(self) -> Step:
        return Step(self.nxt, self.prev, self.op.mirrored())


class PredPattern(NamedTuple):
    """A pattern with ``steps[i]`` between elements i and i+1 and ``chains[i]`` on Kleene element
    i (condition ``key(earlier row) OP key(later row)`` in this pass's direction), the WITHIN
    span for a two-element single-segment pass (else None), and the selection strategy:

    * skip-till-next-match: ``pat.gaps`` also hold the symbols whose rows a run would have
      taken instead (see :meth:`of`), ``next_mask[i]`` the rows that end a Kleene set's run
      of consecutive takes (its own and the next element's symbol);
    * contiguity: ``rank`` per base row (negated in the reversed direction): consecutive
      bound rows have consecutive ranks.
    """

    pat: Pattern
    steps: tuple[Step | None, ...]
    chains: tuple[Step | None, ...]
    within2: int | None
    next_mask: tuple[int, ...] | None = None
    rank: np.ndarray | None = None
    row_ok: tuple[np.ndarray | None, ...] | None = None  # per position: bool per base row (enumerated keys)
    method: Method | None = None  # every predicate step's method (None: by the condensation degree)

    @staticmethod
    def of(plan: Plan, within2: int | None, rank: np.ndarray | None = None) -> PredPattern:
        """The plan's positive elements, middle negations, predicates, iterator predicates and
        strategy (``rank``: contiguity ranks of the base rows)."""
        steps: list[Step | None] = [None] * (plan.length - 1)
        for p in plan.predicates:
            fl = compare.is_float(plan, (p.offset, p.left_offset), p.left_column, p.right_column)
            left, right = Side(p.left_column, p.left_offset, fl), Side(p.right_column, p.offset, fl)
            i = min(p.left, p.right)
            steps[i] = Step(left, right, p.op) if p.left == i else Step(right, left, p.op.mirrored())
        chains: list[Step | None] = [None] * plan.length
        for q in plan.iterator_predicates:  # b[i] + l OP b[i-1] + c  <=>  (b[i-1] + c) mirrored(OP) (b[i] + l)
            fl = compare.is_float(plan, (q.offset, q.left_offset), q.column)
            chains[q.element] = Step(Side(q.column, q.offset, fl), Side(q.column, q.left_offset, fl),
                                     q.op.mirrored())
        pat, next_mask = Pattern.of(plan), None
        if plan.strategy is Strategy.SKIP_TILL_NEXT_MATCH:
            # A step x -> y is S2 when no row a run could take instead lies strictly between:
            # rows of y's element symbol, and of x's own symbol when x's element is Kleene.
            # That is a middle negation of those symbols; Kleene sets take consecutive
            # relevant tie groups (rows of their own or the next element's symbol).
            syms, kl = pat.symbols, pat.kleene
            gaps = tuple(g | (1 << syms[i + 1]) | ((1 << syms[i]) if kl[i] else 0) for i, g in enumerate(pat.gaps))
            pat = Pattern(syms, kl, gaps)
            next_mask = tuple((1 << syms[i]) | ((1 << syms[i + 1]) if i + 1 < len(syms) else 0)
                              for i in range(len(syms)))
        return PredPattern(pat, tuple(steps), tuple(chains), within2, next_mask,
                           rank if plan.strategy.contiguous else None)

    def reversed(self) -> PredPattern:
        return PredPattern(self.pat.reversed(), tuple(None if s is None else s.reversed() for s in self.steps[::-1]),
                           tuple(None if c is None else c.reversed() for c in self.chains[::-1]), self.within2,
                           None if self.next_mask is None else self.next_mask[::-1],
                           None if self.rank is None else -self.rank,
                           None if self.row_ok is None else self.row_ok[::-1], self.method)


def forward(tl: Timeline, pp: PredPattern, cols: Sequence[Column], ar: Arith,
            start: np.ndarray | None = None, base: np.ndarray | None = None) -> list[np.ndarray]:
    """Prefix counts per position over ``tl.rows(symbol)`` (see :func:`udafs.kernels.counting.passes.forward`).

    ``base`` maps timeline rows to rows of ``cols`` (default ``tl.origin``, else identity).
    """
    pat = pp.pat
    if base is None:
        base = tl.origin if tl.origin is not None else np.arange(tl.n)
    out: list[np.ndarray] = []
    for i, sym in enumerate(pat.symbols):
        if i == 0:
            entry = ar.ones(tl.n_rows(sym)) if start is None else start
        elif pp.rank is None and pp.within2 is None and pp.steps[i - 1] is None:
            entry = tl.step(pat.symbols[i - 1], sym, pat.gaps[i - 1], out[-1], ar)
        else:
            prev = pat.symbols[i - 1]
            lo, hi = tl.prev_ranges(prev, sym, pat.gaps[i - 1])
            if pp.rank is not None:  # contiguity: predecessors one rank earlier
                lo_r, hi_r = _rank_ranges(tl, prev, sym, pp.rank[base])
                lo, hi = np.maximum(lo, lo_r), np.minimum(hi, hi_r)
                hi = np.maximum(hi, lo)
            if pp.within2 is not None:  # one segment, two elements: predecessors inside the window
                t_prev = tl.ts[tl.rows(prev)]
                lo = np.maximum(lo, np.searchsorted(t_prev, tl.ts[tl.rows(sym)] - pp.within2, "right"))
                hi = np.maximum(hi, lo)
            step = pp.steps[i - 1]
            if step is None:
                cs = ar.excl_cumsum(out[-1])
                entry = cs[hi] - cs[lo]
            else:
                entry = predicate_step(tl, prev, sym, step, cols, out[-1], lo, hi, ar, base, pp.method)
        entry = tl.weigh(sym, entry, ar)  # weighted timelines (imprecise timestamps)
        ok = None if pp.row_ok is None else pp.row_ok[i]
        if ok is not None:  # fixed values of enumerated predicates
            entry = ar.asarray(np.where(ok[base[tl.rows(sym)]], entry, 0))
        if pat.kleene[i]:
            chain = pp.chains[i]
            if pp.rank is not None:
                f = _kleene_runs(tl, sym, (1 << sym), entry, ar, pp.rank[base])
            elif pp.next_mask is not None:
                f = _kleene_runs(tl, sym, pp.next_mask[i], entry, ar)
            elif chain is None:
                f = kleene_sets(tl, sym, entry, ar)
            else:
                f = chain_step(tl, sym, chain, cols, entry, ar, base)
        else:
            f = entry
        out.append(f)
    return out


def backward(tl: Timeline, pp: PredPattern, cols: Sequence[Column], ar: Arith,
             end: np.ndarray | None = None) -> list[np.ndarray]:
    """Suffix counts per position (forward pass on the time-reversed timeline)."""
    base = (tl.origin if tl.origin is not None else np.arange(tl.n))[::-1]  # reversed row k = row n-1-k
    rev = forward(tl.reversed(), pp.reversed(), cols, ar, None if end is None else end[::-1], base)
    return [x[::-1] for x in rev[::-1]]


def run(tl: Timeline, pp: PredPattern, cols: Sequence[Column], ar: Arith, start: np.ndarray | None = None,
        end: np.ndarray | None = None, need_pairs: bool = False) -> Run:
    """Matches per segment and, if asked, (match, row) pair counts per position."""
    fw = forward(tl, pp, cols, ar, start)
    last = fw[-1] if end is None else ar.mul(fw[-1], end)
    cs = ar.excl_cumsum(last)
    b = tl.sym_segments(pp.pat.symbols[-1])
    totals = cs[b[1:]] - cs[b[:-1]]
    if not need_pairs:
        return Run(totals, None)
    bw = backward(tl, pp, cols, ar, end)
    return Run(totals, pairs_with(fw, bw, ar, tl, pp.pat))


def _keys(base: np.ndarray, rows: np.ndarray, side: Side, cols: Sequence[Column]) -> tuple[np.ndarray, np.ndarray]:
    """Comparison keys and validity of ``side`` over timeline rows (``base`` maps them to column rows)."""
    at = base[rows]
    vals, ok = cols[side.column]
    return compare.array_keys(vals[at], side.offset, side.as_float), ok[at]


def dense_ranks(a: np.ndarray, oka: np.ndarray, b: np.ndarray, okb: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Dense ranks of both key arrays over their valid values (invalid rows get any rank)."""
    uniq = np.unique(np.concatenate([a[oka], b[okb]]))
    top = max(len(uniq) - 1, 0)
    return np.minimum(np.searchsorted(uniq, a), top), np.minimum(np.searchsorted(uniq, b), top), len(uniq)


def condensation_degree(n_values: int, n_rows: int) -> float:
    """The condensed-composition paper: rows after condensation (distinct compared values) over rows before, ≤ 1."""
    return 1.0 if n_rows == 0 else n_values / n_rows


def pick_method(op: CmpOp, n_values: int, n_rows: int) -> Method:
    """``Method.CONDENSED`` or ``Method.SORTED`` for one predicate step (both exact)."""
    d = condensation_degree(n_values, n_rows)
    if d <= CONDENSE_MAX_DEGREE and (op in (CmpOp.EQ, CmpOp.NE) or n_values <= DENSE_MAX_VALUES):
        return Method.CONDENSED
    return Method.SORTED


def predicate_step(tl: Timeline, prev: int, sym: int, step: Step, cols: Sequence[Column], f: np.ndarray,
                   lo: np.ndarray, hi: np.ndarray, ar: Arith, base: np.ndarray,
                   forced: Method | None = None) -> np.ndarray:
    """Σ f[x] over x in [lo, hi) with key(x) OP key(y), for every ``sym`` row y (by the
    ``forced`` method, else the one :func:`pick_method` picks)."""
    x_rows, y_rows = tl.rows(prev), tl.rows(sym)
    kx, okx = _keys(base, x_rows, step.prev, cols)
    ky, oky = _keys(base, y_rows, step.nxt, cols)
    if not okx.any() or not oky.any():  # a NULL operand never satisfies the predicate
        return ar.zeros(len(y_rows))
    rx, ry, n_r = dense_ranks(kx, okx, ky, oky)
    w = ar.asarray(np.where(okx, f, 0))
    method = forced or pick_method(step.op, n_r, int(okx.sum() + oky.sum()))
    op = step.op
    if method is Method.CONDENSED and op in (CmpOp.EQ, CmpOp.NE):
        eq = equal_prefix(rx, w, ar)
        same = eq(hi, ry) - eq(lo, ry)
        if op is CmpOp.EQ:
            out = same
        else:
            cs = ar.excl_cumsum(w)
            out = (cs[hi] - cs[lo]) - same
    else:
        a, b = rank_range(op, ry, n_r)
        if method is Method.CONDENSED:
            out = _dense_box(rx, w, n_r, lo, hi, a, b, ar)
        else:
            dom = Dominance(rx, w, n_r, ar, max_range=int((hi - lo).max()) if len(lo) else 1)
            out = dom.box(lo, hi, a, b)
            if op is CmpOp.NE:
                out = out - dom.box(lo, hi, ry, ry + 1)
    return ar.asarray(np.where(oky, out, 0))


def rank_range(op: CmpOp, ry: np.ndarray, n_r: int) -> tuple[np.ndarray, np.ndarray]:
    """Ranks [a, b) of x with key(x) OP key(y) (NE: all ranks; the caller subtracts EQ)."""
    zero, top = np.zeros_like(ry), np.full_like(ry, n_r)
    return {CmpOp.EQ: (ry, ry + 1), CmpOp.NE: (zero, top), CmpOp.LT: (zero, ry), CmpOp.LE: (zero, ry + 1),
            CmpOp.GT: (ry + 1, top), CmpOp.GE: (ry, top)}[op]


def _dense_box(rx: np.ndarray, w: np.ndarray, n_r: int, lo: np.ndarray, hi: np.ndarray, a: np.ndarray,
               b: np.ndarray, ar: Arith) -> np.ndarray:
    """Condensed inequality: prefix table T[t, r] = Σ w[x] over x < t, rank < r (few values)."""
    m = len(rx)
    if ar.checked and m and float(np.sum(w, dtype=np.float64)) >= float(LIMIT):
        raise Overflow
    onehot = np.zeros((m, n_r), dtype=w.dtype)
    onehot[np.arange(m), rx] = w
    table = np.zeros((m + 1, n_r + 1), dtype=w.dtype)
    table[1:, 1:] = np.cumsum(np.cumsum(onehot, axis=0), axis=1)
    return (table[hi, b] - table[hi, a]) - (table[lo, b] - table[lo, a])


def chain_step(tl: Timeline, sym: int, chain: Step, cols: Sequence[Column], entry: np.ndarray,
               ar: Arith, base: np.ndarray) -> np.ndarray:
    """Kleene sets with an iterator predicate: ``C[q] = entry[q] + Σ C[s]`` over earlier rows s of
    q's segment (earlier tie group) with key(s) OP key(q). Fenwick tree over value ranks."""
    rows = tl.rows(sym)
    if not len(rows):
        return entry
    ks, oks = _keys(base, rows, chain.prev, cols)  # key of s as the earlier row
    kq, okq = _keys(base, rows, chain.nxt, cols)  # key of q as the later row
    if not oks.any() or not okq.any():
        return entry  # no pair can hold: only one-row sets
    rs, rq, n_r = dense_ranks(ks, oks, kq, okq)
    a, b = rank_range(chain.op, rq, n_r)
    seg, ties = tl.seg_of(sym).tolist(), tl.kleene_key_of(sym).tolist()  # tie groups, or Kleene groups
    weight = None if tl.weight is None else tl.weigh(sym, ar.ones(len(rows)), ar).tolist()
    ent = entry.tolist()
    rs_l, a_l, b_l, rq_l = rs.tolist(), a.tolist(), b.tolist(), rq.tolist()
    oks_l, okq_l = oks.tolist(), okq.tolist()
    fen = _Fenwick(n_r)
    out = list(ent)
    k, n = 0, len(rows)
    while k < n:
        if k == 0 or seg[k] != seg[k - 1]:
            fen.clear()
        e = k
        while e < n and seg[e] == seg[k] and ties[e] == ties[k]:
            e += 1
        for q in range(k, e):
            if okq_l[q]:
                got = fen.range(a_l[q], b_l[q])
                if chain.op is CmpOp.NE:
                    got -= fen.range(rq_l[q], rq_l[q] + 1)
                out[q] = ent[q] + (got if weight is None else weight[q] * got)
        for s in range(k, e):
            if oks_l[s] and out[s]:
                fen.add(rs_l[s], out[s])
        k = e
    if ar.checked and max(out) >= LIMIT:
        raise Overflow
    return np.array(out, dtype=ar.dtype) if ar.dtype is not object else np.array(out + [None], dtype=object)[:-1]


class _Fenwick:
    """Prefix sums over ranks 0..n-1 (Python numbers: exact ints or floats), resettable in O(touched)."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.tree: list = [0] * (n + 1)
        self.touched: list[int] = []

    def clear(self) -> None:
        for i in self.touched:
            self.tree[i] = 0
        self.touched = []

    def add(self, i: int, v: object) -> None:
        i += 1
        while i <= self.n:
            self.tree[i] += v
            self.touched.append(i)
            i += i & -i

    def prefix(self, i: int) -> Any:  # int, float or Fraction: the number system's
        s = 0
        while i > 0:
            s += self.tree[i]
            i -= i & -i
        return s

    def range(self, a: int, b: int) -> Any:
        return self.prefix(b) - self.prefix(a) if b > a else 0


def _rank_ranges(tl: Timeline, prev: int, sym: int, rank: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each ``sym`` row y: index range of ``prev`` rows of y's segment with rank(y) - 1.

    ``rank`` (per timeline row) is non-decreasing in time within a segment, so those rows
    are contiguous in the ``prev`` row list; one ``searchsorted`` on (segment, rank) keys.
    """
    x_rows, y_rows = tl.rows(prev), tl.rows(sym)
    if not len(x_rows) or not len(y_rows):
        return np.zeros(len(y_rows), dtype=np.int64), np.zeros(len(y_rows), dtype=np.int64)
    lo_rank = int(rank.min()) - 1
    span = int(rank.max()) - lo_rank + 2
    kx = tl.seg_of(prev) * span + (rank[x_rows] - lo_rank)
    ky = tl.seg_of(sym) * span + (rank[y_rows] - lo_rank)
    return np.searchsorted(kx, ky - 1, "left"), np.searchsorted(kx, ky, "left")


def _kleene_runs(tl: Timeline, sym: int, relevant: int, entry: np.ndarray, ar: Arith,
                 rank: np.ndarray | None = None) -> np.ndarray:
    """Kleene sets whose consecutive rows lie in consecutive *relevant* tie groups.

    Skip-till-next-match: relevant rows are those of ``relevant`` (the set's own symbol
    and the next element's): a set cannot skip a relevant group, and a group without
    ``sym`` rows ends it. Contiguity (``rank`` given, ``relevant`` = the set's symbol):
    consecutive rows need consecutive ranks. With G[g] the counts of sets ending in group
    g: ``G[g] = E[g] + m_g·link_g·G[g-1]`` (``E``: summed entries, ``m``: ``sym`` rows,
    ``link``: group g may follow group g-1), solved by :func:`affine_scan`; a row q of
    group g ends ``entry[q] + link_g·G[g-1]`` sets.
    """
    r_all = np.flatnonzero((tl.mask & relevant) != 0)
    rows = tl.rows(sym)
    if not len(rows):
        return entry
    ties, seg = tl.tie_start[r_all], tl.seg_id[r_all]
    new = np.ones(len(r_all), dtype=bool)
    new[1:] = (ties[1:] != ties[:-1]) | (seg[1:] != seg[:-1])
    gid_all = np.cumsum(new) - 1
    starts = np.flatnonzero(new)
    n_g = len(starts)
    gid = gid_all[np.searchsorted(r_all, rows)]  # group of every sym row (sym rows are relevant)
    seg_g = seg[starts]
    first = np.ones(n_g, dtype=bool)
    first[1:] = seg_g[1:] != seg_g[:-1]
    seg_first = np.maximum.accumulate(np.where(first, np.arange(n_g), 0))
    link = ~first
    if rank is not None:
        rg = rank[r_all[starts]]
        link[1:] &= rg[1:] == rg[:-1] + 1
    cs = ar.excl_cumsum(entry)
    bounds = np.searchsorted(gid, np.arange(n_g + 1), "left")  # sym rows of each group
    e = cs[bounds[1:]] - cs[bounds[:-1]]
    m = np.diff(bounds)
    # P[g] = G[g-1]: P[g+1] = (m_g·link_g)·P[g] + E_g, where the link of g multiplies G[g-1]
    a = ar.asarray(m * link)
    p = affine_scan(a, e, seg_first, ar)
    carried = ar.asarray(np.where(link[gid], 1, 0))
    return ar.add(entry, ar.mul(carried, p[gid]))
