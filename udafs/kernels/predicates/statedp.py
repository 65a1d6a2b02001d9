"""The general exact evaluator for extended plans: a dynamic program over condensed states.

A *state* stands for every partial match that (a) has bound elements ``0..i``,
(b) ends at row ``x`` (for a Kleene element: the set's last row so far) and (c)
carries the same *open key*: the first row's timestamp (WITHIN only) and, for every
cross-event predicate whose first element is bound and whose second is not yet, the
compared value of the bound side. Every partial match of one state has exactly the
same completions, so the state keeps only aggregates over them:

* the number of partial matches (exact Python int),
* per measure channel (:mod:`.channels`) a linear sum (Σ x over rows bound to the
  measured symbol) or an extreme (min / max of the value), like the streaming carry.

Grouping partial matches by the *values* the predicates test, not by their rows, is
the condensed-composition paper's method: the number of states is rows × distinct open
keys. States are finalised in time order (tie group by tie group) and pushed to the
rows that may follow; a complete state adds to the totals. Nothing enumerates
matches: a Kleene set is forgotten except for its last row, so 2^n sets cost n states.

Cost: O(states × rows) per element with a Python loop per state, so this is the
exact *fallback* for combinations the vectorised paths (:mod:`.predicates`) do not
cover, meant for windows of up to a few thousand rows.
"""

from __future__ import annotations

import bisect
from typing import NamedTuple, Sequence

import numpy as np

from udafs.kernels.predicates import compare
from udafs.kernels.values.channels import Channel
from udafs.kernels.values.measures import Column, float_key
from udafs.plan import Plan, Strategy, ValueType


class Group(NamedTuple):
    """One group's rows sorted by ts, as Python lists (None = NULL), plus contiguity ranks."""

    ts: list[int]
    mask: list[int]
    values: list[list[int | float | None]]  # per plan column, raw values (floats: Python floats)
    rank: list[int] | None


def make_group(ts: np.ndarray, mask: np.ndarray, cols: Sequence[Column], rank: np.ndarray | None) -> Group:
    """Python-list view of sorted arrays."""
    values: list[list[int | float | None]] = []
    for vals, ok in cols:
        raw = vals.tolist()
        values.append([v if k else None for v, k in zip(raw, ok.tolist())])
    return Group(ts.tolist(), mask.tolist(), values, None if rank is None else rank.tolist())


class _Compiled(NamedTuple):
    """Per-plan lookup tables for the DP."""

    lkey: list[list[object]]  # per predicate: key of the left operand per row
    rkey: list[list[object]]  # per predicate: key of right + offset per row
    span: list[tuple[int, int]]  # per predicate: (first, second) element position
    open_at: list[list[int]]  # per element i: predicates with first <= i < second
    cur_key: list[list[object]]  # per iterator predicate: key of b[i] per row
    prev_key: list[list[object]]  # per iterator predicate: key of b[i-1] + offset per row
    chan_x: list[Sequence[object]]  # per channel: per-row contribution (None: nothing)


def _compile(plan: Plan, g: Group, chans: Sequence[Channel]) -> _Compiled:
    lkey, rkey, span = [], [], []
    for p in plan.predicates:
        fl = compare.is_float(plan, (p.offset, p.left_offset), p.left_column, p.right_column)
        lkey.append([compare.shifted(v, p.left_offset, fl) for v in g.values[p.left_column]])
        rkey.append([compare.shifted(v, p.offset, fl) for v in g.values[p.right_column]])
        span.append((min(p.left, p.right), max(p.left, p.right)))
    open_at = [[k for k, (a, b) in enumerate(span) if a <= i < b] for i in range(plan.length)]
    cur, prev = [], []
    for q in plan.iterator_predicates:
        fl = compare.is_float(plan, (q.offset, q.left_offset), q.column)
        cur.append([compare.shifted(v, q.left_offset, fl) for v in g.values[q.column]])
        prev.append([compare.shifted(v, q.offset, fl) for v in g.values[q.column]])
    chan_x: list[Sequence[object]] = []
    for c in chans:
        if c.x == "one":
            chan_x.append([1] * len(g.ts))
            continue
        assert c.column is not None  # every channel but "one" reads a column
        vals = g.values[c.column]
        if c.x == "nn":
            chan_x.append([None if v is None else 1 for v in vals])
        elif c.kind == "sum":
            chan_x.append(vals)
        elif plan.columns[c.column] is ValueType.FLOAT:  # min / max in Spark's double order
            keys = float_key(np.array([0.0 if v is None else v for v in vals], dtype=np.float64)).tolist()
            chan_x.append([None if v is None else k for v, k in zip(vals, keys)])
        else:
            chan_x.append(vals)
    return _Compiled(lkey, rkey, span, open_at, cur, prev, chan_x)


class Edges(NamedTuple):
    """How a segment treats WITHIN and edge negation.

    ``within``: span limit w (WITHIN without SLIDE), else None (a SLIDE window bounds
    the span by itself). ``lead`` / ``trail``: sorted timestamps of the leading /
    trailing negated instances the edge clauses look at; ``window`` says whether they
    are window-local (SLIDE: "none in the window before the first / after the last
    bound row") or WITHIN-relative.
    """

    within: int | None
    lead: list[int]
    trail: list[int]
    window: bool


def _exists(times: list[int], lo: float, hi: float) -> bool:
    """Some t in sorted ``times`` with lo < t < hi."""
    k = bisect.bisect_right(times, lo)
    return k < len(times) and times[k] < hi


def evaluate_segment(plan: Plan, g: Group, lo: int, hi: int, edges: Edges, chans: Sequence[Channel],
                     comp: _Compiled | None = None) -> list[object]:
    """Aggregates ``[count, channel...]`` over all matches among rows ``lo..hi-1`` of ``g``.

    Counts and linear channels are exact Python ints (float sums for FLOAT columns);
    extremes are None when no row contributed.
    """
    comp = comp or _compile(plan, g, chans)
    n_el = plan.length
    ts, mask = g.ts, g.mask
    sym_bit = [1 << e.symbol for e in plan.elements]
    gap_times = [[ts[r] for r in range(lo, hi) if mask[r] & neg] for neg in plan.negations]
    it_of = [[k for k, q in enumerate(plan.iterator_predicates) if q.element == i] for i in range(n_el)]
    # first-element forms (b[i] OP b[1]): an open Kleene set's state also keeps its first row's
    # compared values, appended to the key while the set is open
    first_of = [[k for k in it_of[i] if plan.iterator_predicates[k].first] for i in range(n_el)]
    next_strategy = plan.strategy is Strategy.SKIP_TILL_NEXT_MATCH
    contiguous = plan.strategy.contiguous
    rank = g.rank if contiguous else None
    assert rank is not None or not contiguous  # make_group ranks the rows of a contiguous strategy
    w = edges.within
    need_first = w is not None or (edges.window and bool(plan.negations[0]))  # else states merge across first rows
    total: list[object] = [0] + [_identity(c) for c in chans]
    pending: dict[int, dict[tuple, list]] = {}

    def bind(acc: list, row: int, el: int) -> list:
        out = acc.copy()
        sym = plan.elements[el].symbol
        for j, c in enumerate(chans):
            x = comp.chan_x[j][row]
            if c.symbol != sym or x is None:
                continue
            if c.kind == "sum":
                out[j + 1] = out[j + 1] + acc[0] * x
            elif out[j + 1] is None or (x < out[j + 1] if c.kind == "min" else x > out[j + 1]):
                out[j + 1] = x
        return out

    def push(row: int, el: int, key: tuple, acc: list) -> None:
        slot = pending.setdefault(row, {})
        have = slot.get((el, key))
        slot[(el, key)] = acc if have is None else _merge(have, acc, chans)

    def first_part(el: int, row: int) -> tuple:
        return tuple(comp.prev_key[k][row] for k in first_of[el])

    def iter_ok(el: int, x: int, z: int, key: tuple) -> bool:
        stored = dict(zip(first_of[el], key[len(key) - len(first_of[el]):]))
        return all(compare.holds(plan.iterator_predicates[k].op, comp.cur_key[k][z],
                                 stored[k] if k in stored else comp.prev_key[k][x]) for k in it_of[el])

    def advance_key(el: int, key: tuple, z: int) -> tuple | None:
        """Open key after binding row z to element el + 1, or None if a predicate fails."""
        nxt = el + 1
        old = dict(zip(comp.open_at[el], key[1:]))
        for k in comp.open_at[el]:
            a, b = comp.span[k]
            if b != nxt:
                continue
            p = plan.predicates[k]
            left = old[k] if p.left == a else comp.lkey[k][z]
            right = comp.rkey[k][z] if p.right == b else old[k]
            if not compare.holds(p.op, left, right):
                return None
        new = tuple(old[k] if comp.span[k][0] != nxt else _side_key(plan, comp, k, z) for k in comp.open_at[nxt])
        return (key[0],) + new + first_part(nxt, z)

    def complete(x: int, key: tuple, acc: list) -> None:
        first = key[0]
        if (plan.negations[0] or plan.negations[-1]) and not edges.window:
            assert w is not None  # an edge negation without SLIDE has WITHIN (Plan checks it)
            if plan.negations[0] and _exists(edges.lead, ts[x] - w, first):
                return
            if plan.negations[-1] and _exists(edges.trail, ts[x], first + w):
                return
        if edges.window:
            if plan.negations[0] and _exists(edges.lead, float("-inf"), first):
                return
            if plan.negations[-1] and _exists(edges.trail, ts[x], float("inf")):
                return
        merged = _merge(total, acc, chans)
        total[:] = merged

    r = lo
    while r < hi:
        t_end = r
        while t_end < hi and ts[t_end] == ts[r]:
            t_end += 1
        for a in range(r, t_end):  # new partial matches start at E1 rows of this tie group
            if mask[a] & sym_bit[0]:
                key = ((ts[a] if need_first else None,) + tuple(_side_key(plan, comp, k, a) for k in comp.open_at[0])
                       + first_part(0, a))
                push(a, 0, key, bind([1] + [_identity(c) for c in chans], a, 0))
        for x in range(r, t_end):
            for (el, key), acc in pending.pop(x, {}).items():
                if el == n_el - 1:
                    complete(x, key, acc)
                kleene = plan.elements[el].kleene
                ext, adv = [], []
                t_star = None
                for z in range(t_end, hi):
                    if w is not None and not ts[z] - key[0] < w:
                        break  # later rows are outside the window (S2: so would every y be)
                    if t_star is not None and ts[z] > t_star:
                        break  # S2: past the earliest tie group of candidates
                    if rank is not None and rank[z] != rank[x] + 1:
                        continue
                    if kleene and mask[z] & sym_bit[el] and iter_ok(el, x, z, key):
                        ext.append(z)
                    if el + 1 < n_el and mask[z] & sym_bit[el + 1]:
                        nk = advance_key(el, key, z)
                        if nk is not None:  # a row failing a predicate is no candidate
                            adv.append((z, nk))
                    if next_strategy and t_star is None and (ext or adv):
                        t_star = ts[z]  # only the earliest tie group of candidates
                for z in ext:
                    push(z, el, key, bind(acc, z, el))
                for z, nk in adv:
                    if _exists(gap_times[el + 1], ts[x], ts[z]):
                        continue
                    push(z, el + 1, nk, bind(acc, z, el + 1))
        r = t_end
    return total


def _side_key(plan: Plan, comp: _Compiled, k: int, row: int) -> object:
    """The key predicate k needs from the row bound to its first element."""
    p = plan.predicates[k]
    return comp.lkey[k][row] if p.left == comp.span[k][0] else comp.rkey[k][row]


def _identity(c: Channel) -> object:
    """No rows bound: an empty sum (exact 0), no extreme yet (None)."""
    return 0 if c.kind == "sum" else None


def _merge(a: list, b: list, chans: Sequence[Channel]) -> list:
    out = [a[0] + b[0]]
    for j, c in enumerate(chans):
        x, y = a[j + 1], b[j + 1]
        if c.kind != "sum":
            out.append(y if x is None else x if y is None else (min(x, y) if c.kind == "min" else max(x, y)))
        else:
            out.append(x + y)
    return out
