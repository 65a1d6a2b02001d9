"""Method choice for extended plans (predicates, strategies), and the vectorised evaluation paths.

Two exact methods:

* **vectorised** (:mod:`.predpass`): every plan except skip-till-next-match with
  predicates, contiguity with iterator predicates, and a Kleene element with several
  iterator predicates. The first predicate of each *adjacent* pair of elements is a
  predicate step (box query on (index, value rank): ``condensed`` per-value prefix
  counters / dense per-value table, or ``sorted`` merge-sort tree, picked by the
  condensation degree); every other predicate (non-adjacent, or a second one on a
  pair) is *enumerated* — condensed composition taken literally: for each
  combination of the distinct values of its cheaper side the passes run with
  per-position row filters, and the disjoint match sets' partials combine
  (more than :data:`MAX_COMBOS` combinations: the state DP). Iterator predicates are a
  Fenwick pass (rising runs). All measures, negation, SLIDE; WITHIN over two
  non-Kleene elements without edge negation narrows the predecessor range
  (O(n log² n)); three plain elements counted without per-row measures go through
  :mod:`.triples` (blocks and trie bands, O(n log² n · log w), all combinations of
  enumerated values in one pass) when anchoring would replicate more; otherwise every
  distinct first-row time t anchors a segment ``[t, t + w)`` (O(n · events per
  window)) with the edge negations as end weights.
* **state-dp** (:mod:`.statedp`): everything else, and contiguity ranks that are not a
  dense rank of ts.

:func:`choose` reports the method, the condensation degree and the reason, for EXPLAIN.
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import NamedTuple, Sequence

import numpy as np

from udafs.kernels.counting.paths import add_pairs, new_acc
from udafs.kernels.counting.segments import batches, range_timeline, sliding_windows
from udafs.kernels.counting.timeline import Timeline
from udafs.kernels.options import DEFAULT, KernelOptions, Method, WithinPath
from udafs.kernels.predicates import compare, predpass, triples
from udafs.kernels.values.arith import LIMIT, Arith, Overflow
from udafs.kernels.values.measures import Column, Partial, Tally, combine, measure_symbols, partials
from udafs.plan import CmpOp, Plan, Predicate, Strategy


class MethodChoice(NamedTuple):
    """How a plan is evaluated: ``method`` (:class:`~udafs.kernels.options.Method`); ``degree`` the
    condensation degree of the compared values (distinct values / rows, the largest over the
    plan's predicates; None without predicates)."""

    method: Method
    degree: float | None
    reason: str


class NotVectorised(Exception):
    """The data rule the vectorised paths out (contiguity ranks not monotone in time, or too
    wide for int64 keys): the caller uses the state DP."""


def vectorised(plan: Plan) -> str | None:
    """Whether the vectorised paths can evaluate ``plan`` (from the plan alone).

    Returns
    -------
    str or None
        None when they can (the data may still send the plan to the state DP: too many
        enumerated value combinations, contiguity ranks that are no dense rank of ts),
        else the reason the state DP is used.
    """
    if plan.strategy is Strategy.SKIP_TILL_NEXT_MATCH and (plan.predicates or plan.iterator_predicates):
        return "skip-till-next-match with predicates"
    if plan.strategy.contiguous and plan.iterator_predicates:
        return "contiguity with iterator predicates"
    its = [q.element for q in plan.iterator_predicates]
    if len(set(its)) != len(its):
        return "several iterator predicates on one Kleene element"
    if any(q.first for q in plan.iterator_predicates):
        return "a first-element iterator predicate (b[i] OP b[1]): the state keeps the set's first value"
    return None


def split_predicates(plan: Plan) -> tuple[tuple, tuple]:
    """(stepped, enumerated): the first predicate of each adjacent pair is a predicate step;
    the others (non-adjacent, or a second one on a pair) are enumerated by value."""
    stepped, enumerated, seen = [], [], set()
    for p in plan.predicates:
        pair = min(p.left, p.right)
        if abs(p.left - p.right) == 1 and pair not in seen:
            seen.add(pair)
            stepped.append(p)
        else:
            enumerated.append(p)
    return tuple(stepped), tuple(enumerated)


#: At most this many combinations of enumerated predicate values (else the state DP).
MAX_COMBOS = 1024


def choose(plan: Plan, ts: np.ndarray, mask: np.ndarray, cols: Sequence[Column]) -> MethodChoice:
    """The method that evaluates one group, and the condensation degree of its compared values.

    Parameters
    ----------
    plan : Plan
        An extended plan (``plan.extended``).
    ts, mask : arrays of int64
        The group's timestamps and symbol bitmasks (any order; only ``mask`` is read).
    cols : sequence of (values, valid)
        The plan's value columns, as for :func:`~udafs.kernels.evaluate.evaluate_group`.

    Returns
    -------
    MethodChoice
        ``method``: ``CONDENSED`` / ``SORTED`` (predicate steps), ``FENWICK`` (iterator
        predicates only), ``PREFIX`` (a strategy alone) or ``STATE_DP``; ``degree``:
        distinct compared values / rows (the condensed-composition paper's condensation degree, the largest over
        the predicates; None without predicates); ``reason``: one line for EXPLAIN.

    Examples
    --------
    >>> from udafs.plan import CmpOp, Element, Plan, Predicate, ValueType
    >>> plan = Plan(symbols=("A", "G"), elements=(Element(0), Element(1)), negations=(0, 0, 0),
    ...             columns=(ValueType.INT,), predicates=(Predicate(0, 0, CmpOp.GE, 1, 0, 2),))
    >>> price = (np.array([5, 1, 5, 1]), np.ones(4, dtype=bool))
    >>> choose(plan, np.arange(4), np.array([1, 2, 1, 2]), [price])
    MethodChoice(method=<Method.CONDENSED: 'condensed'>, degree=0.5, reason='2 distinct compared values')
    """
    why = vectorised(plan)
    if why is not None:
        return MethodChoice(Method.STATE_DP, None, why)
    stepped, enumerated = split_predicates(plan)
    if enumerated:
        combos = 1
        degree = 0.0
        for p in enumerated:
            values, rows = _enumerated_side(plan, p, mask, cols)[2:]
            combos *= max(len(values), 1)
            degree = max(degree, predpass.condensation_degree(len(values), rows))
        if combos > MAX_COMBOS:
            return MethodChoice(Method.STATE_DP, degree, f"{combos} combinations of enumerated predicate values")
        return MethodChoice(Method.CONDENSED, degree,
                            f"{combos} enumerated predicate values, {len(stepped)} predicate steps")
    if not plan.predicates:
        if plan.iterator_predicates:
            return MethodChoice(Method.FENWICK, None, "iterator predicates only")
        return MethodChoice(Method.PREFIX, None, f"strategy {plan.strategy.name} without predicates")
    worst = None
    for p in plan.predicates:
        n_values, n_rows = _distinct(plan, p, mask, cols)
        d = predpass.condensation_degree(n_values, n_rows)
        if worst is None or d > worst[0]:
            worst = (d, predpass.pick_method(p.op, n_values, n_rows), n_values)
    assert worst is not None  # the plan has predicates
    d, method, n_values = worst
    return MethodChoice(method, d, f"{n_values} distinct compared values")


def _distinct(plan: Plan, p: Predicate, mask: np.ndarray, cols: Sequence[Column]) -> tuple[int, int]:
    """Distinct non-NULL compared values of predicate ``p`` and the rows they come from."""
    fl = compare.is_float(plan, (p.offset, p.left_offset), p.left_column, p.right_column)
    keys = []
    for pos, col, off in ((p.left, p.left_column, p.left_offset), (p.right, p.right_column, p.offset)):
        vals, ok = cols[col]
        sel = ((mask & (1 << plan.elements[pos].symbol)) != 0) & ok
        keys.append(compare.array_keys(vals[sel], off, fl))
    both = np.concatenate(keys)
    return len(np.unique(both)), len(both)


def check_ranks(ts: np.ndarray, rank: np.ndarray) -> None:
    """Contiguity ranks must order rows like ts (equal ts, equal rank) and fit int64 keys."""
    if len(ts) < 2:
        return
    same = ts[1:] == ts[:-1]
    step = np.diff(rank)
    if (same & (step != 0)).any() or (~same & (step <= 0)).any():
        raise NotVectorised("contiguity ranks are not a dense rank of ts")
    if float(rank.max()) - float(rank.min()) + 2 >= 2.0**62 / (len(ts) + 1):
        raise NotVectorised("contiguity ranks too wide")


def _enumerated_side(plan: Plan, p: Predicate, mask: np.ndarray,
                     cols: Sequence[Column]) -> tuple[bool, np.ndarray, np.ndarray, int]:
    """Which side of predicate ``p`` to enumerate (True: left) — the one with fewer distinct
    non-NULL keys among its element's rows — its keys over all rows, its distinct values,
    and the number of rows they come from."""
    fl = compare.is_float(plan, (p.offset, p.left_offset), p.left_column, p.right_column)
    best = None
    for left, pos, col, off in ((True, p.left, p.left_column, p.left_offset),
                                (False, p.right, p.right_column, p.offset)):
        vals, ok = cols[col]
        keys = compare.array_keys(vals, off, fl)
        sel = ((mask & (1 << plan.elements[pos].symbol)) != 0) & ok
        values = np.unique(keys[sel])
        if best is None or len(values) < len(best[2]):
            best = (left, keys, values, int(sel.sum()))
    assert best is not None  # two sides
    return best


_NP_OPS = {CmpOp.EQ: np.equal, CmpOp.NE: np.not_equal, CmpOp.LT: np.less, CmpOp.LE: np.less_equal,
           CmpOp.GT: np.greater, CmpOp.GE: np.greater_equal}


def _combos(plan: Plan, enumerated: tuple, mask: np.ndarray, cols: Sequence[Column]):
    """Per combination of enumerated values: per-position row filters (bool per row)."""
    sides = []
    for p in enumerated:
        left, keys, values, _ = _enumerated_side(plan, p, mask, cols)
        fl = compare.is_float(plan, (p.offset, p.left_offset), p.left_column, p.right_column)
        if left:  # fix L = v: rows at p.left have key v, rows at p.right satisfy v OP R
            other_pos, other = p.right, compare.array_keys(cols[p.right_column][0], p.offset, fl)
            ok_other = cols[p.right_column][1]
            test = lambda v, o=other, op=_NP_OPS[p.op]: op(np.full(len(o), v, dtype=o.dtype), o)  # noqa: E731
            fixed_pos, ok_fixed = p.left, cols[p.left_column][1]
        else:  # fix R = v: rows at p.right have key v, rows at p.left satisfy L OP v
            other_pos, other = p.left, compare.array_keys(cols[p.left_column][0], p.left_offset, fl)
            ok_other = cols[p.left_column][1]
            test = lambda v, o=other, op=_NP_OPS[p.op]: op(o, np.full(len(o), v, dtype=o.dtype))  # noqa: E731
            fixed_pos, ok_fixed = p.right, cols[p.right_column][1]
        sides.append((keys, values, fixed_pos, ok_fixed, other_pos, ok_other, test))
    n_pos, n = plan.length, len(mask)
    for combo in itertools.product(*[range(max(len(sd[1]), 1)) for sd in sides]):
        row_ok: list[np.ndarray | None] = [None] * n_pos
        for (keys, values, fixed_pos, ok_fixed, other_pos, ok_other, test), k in zip(sides, combo):
            if not len(values):  # no non-NULL value: no match at all
                flt_fixed, flt_other = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
            else:
                v = values[k]
                flt_fixed = ok_fixed & (keys == v)
                flt_other = ok_other & test(v)
            for pos, flt in ((fixed_pos, flt_fixed), (other_pos, flt_other)):
                row_ok[pos] = flt if row_ok[pos] is None else row_ok[pos] & flt
        yield tuple(row_ok)


def evaluate(plan: Plan, ts: np.ndarray, mask: np.ndarray, cols: list[Column], ar: Arith,
             rank: np.ndarray | None = None,
             options: KernelOptions = DEFAULT) -> tuple[list[Partial], np.ndarray | None]:
    """Partials (and window starts with SLIDE) of a plan :func:`vectorised` accepts; rows sorted.

    ``rank``: contiguity ranks of the rows (contiguity strategies only); ``options``: forced
    WITHIN path and predicate step method, if any. Predicates beyond
    one per adjacent pair are *enumerated*: for every combination of their (condensed)
    values the passes run with per-position row filters, and the disjoint match sets'
    partials combine. More than :data:`MAX_COMBOS` combinations: :class:`NotVectorised`.
    """
    if rank is not None:
        check_ranks(ts, rank)
    stepped, enumerated = split_predicates(plan)
    if not enumerated:
        return _evaluate_once(plan, ts, mask, cols, ar, rank, None, options)
    if choose(plan, ts, mask, cols).method is Method.STATE_DP:
        raise NotVectorised("too many combinations of enumerated predicate values")
    base = dataclasses.replace(plan, predicates=stepped)
    batched = _batched_triples(plan, base, ts, mask, cols, ar, enumerated, options)
    if batched is not None:
        return batched
    parts: list[Partial] | None = None
    starts = None
    for row_ok in _combos(plan, enumerated, mask, cols):
        got, starts = _evaluate_once(base, ts, mask, cols, ar, rank, row_ok, options)
        parts = got if parts is None else combine(plan, parts, got)
    assert parts is not None  # at least one combination of enumerated values
    return parts, starts


def _batched_triples(plan: Plan, base: Plan, ts: np.ndarray, mask: np.ndarray, cols: list[Column], ar: Arith,
                     enumerated: tuple, options: KernelOptions) -> tuple[list[Partial], None] | None:
    """COUNT-only plans on the triples path: all combinations of enumerated values in one pass.

    Each combination's rows (those that may fill a position under its filters) are laid
    end to end in time, ``gap`` apart (≥ two windows, a multiple of w), so that no match
    and no block pair spans two combinations; the matches of disjoint combinations add
    up. None when the plan or the data does not qualify, or ``options`` force the anchored
    path (then combination by combination).
    """
    pp = predpass.PredPattern.of(base, None)._replace(method=options.predicate_method)
    if measure_symbols(plan) or not len(ts) or not triples.fits(base, pp, False):
        return None
    combos = list(_combos(plan, enumerated, mask, cols))
    forced = options.within_path
    if forced is WithinPath.ANCHORED or (forced is None and not _triples_pay(
            sum(triples.replicated_rows(base, ts, mask, r) for r in combos), len(ts) * len(combos), base.window)):
        return None
    w, t0 = base.window, int(ts[0])
    gap = ((int(ts[-1]) - t0) // w + 3) * w
    if gap * (len(combos) + 1) >= 2**62:
        return None
    picked, shifts = [], []
    for j, row_ok in enumerate(combos):
        sel = np.zeros(len(ts), dtype=bool)
        for pos, e in enumerate(base.elements):
            here = (mask & (1 << e.symbol)) != 0
            sel |= here if row_ok[pos] is None else here & row_ok[pos]
        picked.append(np.flatnonzero(sel))
        shifts.append(np.full(len(picked[-1]), j * gap, dtype=np.int64))
    rows = np.concatenate(picked)
    row_ok = tuple(None if all(r[pos] is None for r in combos) else
                   np.concatenate([(np.ones(len(ts), dtype=bool) if r[pos] is None else r[pos])[p]
                                   for r, p in zip(combos, picked)]) for pos in range(base.length))
    try:
        count = triples.count(base, ts[rows] - t0 + np.concatenate(shifts), mask[rows],
                              [(v[rows], ok[rows]) for v, ok in cols], ar, pp._replace(row_ok=row_ok))
    except triples.NotTriple:
        return None
    if ar.checked and not count < LIMIT:
        raise Overflow
    counts = ar.zeros(1)
    counts[0] = count
    n = len(ts)
    return partials(plan, Tally(counts, np.arange(n), np.array([0, n]), new_acc(set(), n, ar)), cols, ar), None


def _evaluate_once(plan: Plan, ts: np.ndarray, mask: np.ndarray, cols: list[Column], ar: Arith,
                   rank: np.ndarray | None, row_ok: tuple | None,
                   options: KernelOptions) -> tuple[list[Partial], np.ndarray | None]:
    """One vectorised evaluation (row filters ``row_ok`` per position, or None)."""
    if plan.slide is not None:
        return _sliding(plan, ts, mask, cols, ar, rank, row_ok, options.predicate_method)
    symbols = measure_symbols(plan)
    n = len(ts)
    acc = new_acc(symbols, n, ar)
    rows, bounds = np.arange(n), np.array([0, n])
    if not n:
        return partials(plan, Tally(ar.zeros(1), rows, bounds, acc), cols, ar), None
    kleene = any(e.kleene for e in plan.elements)
    narrow = plan.length == 2 and not kleene and not plan.has_edge_negation
    if plan.within is not None and not narrow and (plan.length > 1 or kleene):
        count = _within(plan, ts, mask, cols, ar, acc, rank, row_ok, options)
    else:
        within2 = plan.within if plan.within is not None and plan.length == 2 else None
        pp = predpass.PredPattern.of(plan, within2, rank)._replace(row_ok=row_ok, method=options.predicate_method)
        tl = Timeline(ts, mask, np.array([0, n]))
        start = None
        if plan.within is not None and plan.length == 1 and plan.has_edge_negation:
            start = ar.asarray(_single_edges(plan, ts, mask, tl))
        r = predpass.run(tl, pp, cols, ar, start, None, bool(symbols))
        if symbols:
            add_pairs(acc, tl, pp.pat, r.pairs, ar)
        count = ar.total(r.totals)
    if ar.checked and not count < LIMIT:  # a sum of checked totals may pass 2**62
        raise Overflow
    counts = ar.zeros(1)
    counts[0] = count
    return partials(plan, Tally(counts, rows, bounds, acc), cols, ar), None


def _single_edges(plan: Plan, ts: np.ndarray, mask: np.ndarray, tl: Timeline) -> np.ndarray:
    """One non-Kleene element under WITHIN: a match is one row t; edges ask for no N in (t - w, t)
    and (t, t + w)."""
    t = ts[tl.rows(plan.elements[0].symbol)]
    ok = np.ones(len(t), dtype=bool)
    for neg, lo, hi in ((plan.negations[0], t - plan.within, t), (plan.negations[-1], t, t + plan.within)):
        if neg:
            nt = ts[(mask & neg) != 0]
            ok &= np.searchsorted(nt, lo, "right") >= np.searchsorted(nt, hi, "left")
    return ok


#: Triples are chosen when anchoring would replicate more than this many rows per
#: (row x trie level) of the triples path.
TRIPLES_MIN_RATIO = 0.5


def within_path(plan: Plan, ts: np.ndarray, mask: np.ndarray, pp: predpass.PredPattern, need_pairs: bool,
                forced: WithinPath | None = None) -> WithinPath:
    """``TRIPLES`` (no replication, :mod:`.triples`) or ``ANCHORED`` for a WITHIN plan: ``forced``
    where both apply, else by cost."""
    if not triples.fits(plan, pp, need_pairs):
        return WithinPath.ANCHORED
    if forced is not None:
        return forced
    pays = _triples_pay(triples.replicated_rows(plan, ts, mask, pp.row_ok), len(ts), plan.window)
    return WithinPath.TRIPLES if pays else WithinPath.ANCHORED


def _triples_pay(replicated: int, rows: int, w: int) -> bool:
    """Anchoring would replicate more than the triples path's rows x trie levels allow."""
    levels = max(int(min(rows, w)).bit_length(), 1)
    return replicated > TRIPLES_MIN_RATIO * rows * levels


def _within(plan: Plan, ts: np.ndarray, mask: np.ndarray, cols: list[Column], ar: Arith,
            acc: dict[int, np.ndarray], rank: np.ndarray | None, row_ok: tuple | None,
            options: KernelOptions) -> int | float:
    """WITHIN (no SLIDE) beyond two plain elements: the triples path where it applies and
    pays, else first-row anchors."""
    pp = predpass.PredPattern.of(plan, None, rank)._replace(row_ok=row_ok, method=options.predicate_method)
    if within_path(plan, ts, mask, pp, bool(acc), options.within_path) is WithinPath.TRIPLES:
        try:
            return triples.count(plan, ts, mask, cols, ar, pp)
        except triples.NotTriple:
            pass
    return _anchored(plan, ts, mask, cols, ar, acc, pp)


def _anchored(plan: Plan, ts: np.ndarray, mask: np.ndarray, cols: list[Column], ar: Arith,
              acc: dict[int, np.ndarray], pat: predpass.PredPattern) -> int | float:
    """WITHIN by first-row anchors: for every distinct time t of an E1 row the segment
    [t, t + w), start weight [ts = t] on E1 rows; leading negation as end weight
    ts(last) >= (last N time before t) + w, trailing as "no N after the last row" in
    the segment (``pat``: the plan's pattern without ``within2``, with the row filters of
    enumerated values). Pairs go back onto the base rows."""
    w = plan.within
    first_sym, last_sym = plan.elements[0].symbol, plan.elements[-1].symbol
    first_ok = (mask & (1 << first_sym)) != 0
    if pat.row_ok is not None and pat.row_ok[0] is not None:  # enumerated values fix the first row's key
        first_ok &= pat.row_ok[0]
    anchors = np.unique(ts[first_ok])
    starts = np.searchsorted(ts, anchors, "left")
    ends = np.searchsorted(ts, anchors + w, "left")
    lead_t = ts[(mask & plan.negations[0]) != 0] if plan.negations[0] else None
    if lead_t is not None and not len(lead_t):
        lead_t = None
    total: int | float = 0
    for a, b in batches(ends - starts):
        tl = range_timeline(ts, mask, starts[a:b], ends[a:b])
        seg_anchor = anchors[a:b]
        start = ar.asarray(tl.ts[tl.rows(first_sym)] == seg_anchor[tl.seg_of(first_sym)])
        end_ok = np.ones(tl.n_rows(last_sym), dtype=bool)
        if lead_t is not None:
            k = np.searchsorted(lead_t, seg_anchor, "left")  # N times before each anchor
            has = k > 0
            prev_n = np.where(has, lead_t[np.maximum(k - 1, 0)], 0)
            seg = tl.seg_of(last_sym)
            end_ok &= ~has[seg] | (tl.ts[tl.rows(last_sym)] >= prev_n[seg] + w)
        if plan.negations[-1]:
            end_ok &= tl.no_neg_after(last_sym, plan.negations[-1])
        r = predpass.run(tl, pat, cols, ar, start, ar.asarray(end_ok), bool(acc))
        if acc:
            add_pairs(acc, tl, pat.pat, r.pairs, ar, to_base=True)
        total += ar.total(r.totals)
    return total


def _sliding(plan: Plan, ts: np.ndarray, mask: np.ndarray, cols: list[Column], ar: Arith,
             rank: np.ndarray | None, row_ok: tuple | None,
             method: Method | None) -> tuple[list[Partial], np.ndarray]:
    """SLIDE: every window holding a row is a segment of a replicated timeline (as paths.sliding)."""
    w, s = plan.sliding
    k = sliding_windows(ts, w, s)
    starts = np.searchsorted(ts, k * s, "left")
    ends = np.searchsorted(ts, k * s + w, "left")
    symbols = measure_symbols(plan)
    pp = predpass.PredPattern.of(plan, None, rank)._replace(row_ok=row_ok, method=method)
    parts = []
    for a, b in batches(ends - starts):
        tl = range_timeline(ts, mask, starts[a:b], ends[a:b])
        lead, trail = plan.negations[0], plan.negations[-1]
        start = ar.asarray(tl.no_neg_before(pp.pat.symbols[0], lead)) if lead else None
        end = ar.asarray(tl.no_neg_after(pp.pat.symbols[-1], trail)) if trail else None
        r = predpass.run(tl, pp, cols, ar, start, end, bool(symbols))
        acc = new_acc(symbols, tl.n, ar)
        if symbols:
            add_pairs(acc, tl, pp.pat, r.pairs, ar)
        assert tl.origin is not None  # range_timeline's rows are copies of the caller's
        parts.append(partials(plan, Tally(r.totals, tl.origin, tl.bounds, acc), cols, ar))
    if not parts:
        tally = Tally(ar.zeros(0), np.zeros(0, dtype=np.int64), np.zeros(1, dtype=np.int64), new_acc(symbols, 0, ar))
        parts = [partials(plan, tally, cols, ar)]
    return [Partial(*(np.concatenate([p[j][f] for p in parts]) for f in range(2)))
            for j in range(len(plan.measures))], k * s
