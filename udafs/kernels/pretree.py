"""Plans of one window shape over one shared timeline, prefixes counted once (PreTree).

The plans of a workload group (or an E-Cube) often start alike: routes through the
same streets, funnels through the same first pages. A forward pass (see
:mod:`udafs.kernels.passes`) computes, position by position, the counts of the
pattern's *prefixes*; two plans with the same first j elements (symbols, Kleene
flags, the negations between them and the leading negation) have the same arrays
for positions 0..j-1 on the same timeline. So the plans here are evaluated on one
timeline — the rows of any of their symbols, cut into the windows of any of them —
and every prefix array is computed once and kept in a dictionary keyed by the
prefix: the PreTree of the A-Seq thesis (section 4.1), grown lazily.

Exactness. On a timeline holding extra rows, a plan's counts per window do not
change: rows that fill none of its positions and negate none of its gaps are never
read by its pass (predecessor ranges count only rows of the previous position's
symbol; ties are decided by timestamps; negation limits by negated rows). Each plan
then keeps only the windows its own statement reports — those holding one of its
own rows — which are a subset of the shared ones.

What is shared beyond prefixes is the work indexed by symbol rather than by plan:
the replicated window rows, each symbol's row list and prefix counts, and the
predecessor ranges of each (symbol, next symbol, negation) step, cached by the
:class:`~udafs.kernels.timeline.Timeline`.

Suffixes are shared the same way from the other end (Chop-Connect at one element):
a plan cut after element k counts ``Σ_x F_k(x)·B_k(x)`` over the rows x of element k,
with ``B_k`` from a trie of suffixes passed over the reversed timeline (see
:func:`_totals` and :func:`splits`).

Used by :func:`udafs.kernels.many.evaluate_many` for plans that measure only
``COUNT(*)`` and have SLIDE or no window. WITHIN without SLIDE evaluates by blocks,
and other measures need per-row pair counts: those plans run one by one.
"""

from __future__ import annotations

import functools
from typing import NamedTuple, Sequence

import numpy as np

from udafs.kernels.arith import Arith
from udafs.kernels.measures import Partial, Tally, partials
from udafs.kernels.passes import kleene_sets, run
from udafs.kernels.pattern import Pattern
from udafs.kernels.segments import batches, range_timeline, sliding_windows
from udafs.kernels.timeline import Timeline
from udafs.plan import MeasureKind, Plan

Evaluated = tuple[list[Partial], "np.ndarray | None"]


class Shape(NamedTuple):
    """What plans must share to be evaluated on one timeline: their windows."""

    within: int | None
    slide: int | None


def shape_of(plan: Plan) -> Shape | None:
    """The plan's window shape, or None when it runs on its own (module docstring)."""
    if plan.extended or any(m.kind is not MeasureKind.COUNT_STAR for m in plan.measures):
        return None
    if plan.within is not None and plan.slide is None:
        return None
    if plan.within is None and plan.has_edge_negation:
        return None
    return Shape(plan.within, plan.slide)


def groups(plans: Sequence[Plan], mask: np.ndarray) -> list[list[int]]:
    """Which plans to evaluate together (lists of two or more indices into ``plans``).

    Plans of one window shape share a timeline when that costs no more than their
    own timelines, estimated as symbols x rows: each symbol's row list and prefix
    counts are built over the whole timeline, so a timeline of everybody's rows costs
    ``|union symbols| x |union rows|`` against ``sum |plan symbols| x |plan rows|``
    alone, up to :data:`UNION_FACTOR` (routes over one street grid: shared; funnels
    over few items each: not).
    Otherwise plans sharing their first two elements (at least one step of the pass)
    are tried the same way; the rest run alone.
    """
    by_shape: dict[Shape, list[int]] = {}
    for i, p in enumerate(plans):
        shape = shape_of(p)
        if shape is not None:
            by_shape.setdefault(shape, []).append(i)
    rows: dict[int, int] = {}  # rows per symbol mask, counted once per partition
    out: list[list[int]] = []
    for members in by_shape.values():
        if _worth_one_timeline([plans[i] for i in members], mask, rows):
            out.append(members)
            continue
        by_root: dict[tuple, list[int]] = {}
        for i in members:
            by_root.setdefault(_steps(plans[i])[:2], []).append(i)
        out += [m for m in by_root.values() if _worth_one_timeline([plans[i] for i in m], mask, rows)]
    return [m for m in out if len(m) > 1]


def _worth_one_timeline(plans: Sequence[Plan], mask: np.ndarray, rows: dict[int, int]) -> bool:
    if len(plans) < 2:
        return False

    def count(symbols: int) -> int:
        if symbols not in rows:
            rows[symbols] = int(np.count_nonzero(mask & symbols))
        return rows[symbols]

    union, alone = 0, 0
    for p in plans:
        pm = p.pattern_symbols_mask
        union |= pm
        alone += pm.bit_count() * count(pm)
    return union.bit_count() * count(union) <= UNION_FACTOR * alone


#: How much more symbol x row work a shared timeline may do than the plans alone: it
#: saves their per-plan overheads and shared prefixes. Measured on bench/sharing.py's
#: streams (2 M events, 200 keys): routes, 20 plans, ratio 1.3: shared 1.3x faster;
#: funnels, 20 plans, ratio 1.8: shared 1.4x slower.
UNION_FACTOR = 1.5


def evaluate_shared(plans: Sequence[Plan], ts: np.ndarray, mask: np.ndarray, ar: Arith,
                    share_suffixes: bool = True) -> list[Evaluated]:
    """Partials (and window starts with SLIDE) of every plan, exactly what the plan's
    own evaluation gives on its own rows; ``ts`` sorted, plans of one :class:`Shape`;
    without ``share_suffixes`` only prefixes are shared (no plan is cut)."""
    shape = shape_of(plans[0])
    assert shape is not None and all(shape_of(p) == shape for p in plans)
    union = 0
    for p in plans:
        union |= p.pattern_symbols_mask
    keep = (mask & union) != 0
    ts, mask = ts[keep], mask[keep]
    if shape.slide is None:
        tl = Timeline(ts, mask, np.array([0, len(ts)]))
        totals = _totals(plans, tl, ar, share_suffixes) if len(ts) else None
        return [(_count_partials(p, ar.zeros(1) if totals is None else totals[i], ar), None)
                for i, p in enumerate(plans)]
    w, s = shape.within, shape.slide
    assert w is not None
    k = sliding_windows(ts, w, s)
    starts = np.searchsorted(ts, k * s, "left")
    ends = np.searchsorted(ts, k * s + w, "left")
    per_batch = [_totals(plans, range_timeline(ts, mask, starts[a:b], ends[a:b]), ar, share_suffixes)
                 for a, b in batches(ends - starts)]
    out: list[Evaluated] = []
    for i, p in enumerate(plans):
        windows = np.concatenate([t[i] for t in per_batch]) if per_batch else ar.zeros(0)
        own = sliding_windows(ts[(mask & p.pattern_symbols_mask) != 0], w, s)
        out.append((_count_partials(p, windows[np.searchsorted(k, own)], ar), own * s))
    return out


def _totals(plans: Sequence[Plan], tl: Timeline, ar: Arith, share_suffixes: bool) -> list[np.ndarray]:
    """Matches per segment of ``tl``, plan by plan, each prefix and suffix counted once.

    Every plan is cut at a split k (:func:`splits`): its matches per segment are
    ``Σ_x F_k(x)·B_k(x)`` over the rows x of element k's symbol, where ``F_k`` counts the
    prefixes 0..k ending at x (forward pass) and ``B_k`` the suffixes k+1.. starting
    after x (forward pass on the reversed timeline, then one step into element k's
    rows) — Chop-Connect with the connection at one element, exact because a match
    splits uniquely at the last row of element k. With k the last element there is no
    suffix (the plain forward pass). Prefixes are visited in the PreTree's depth-first
    order and suffixes in the reversed trie's, so the arrays kept are one root-to-leaf
    path per trie plus one suffix array per distinct split.
    """
    if ar.prune:  # fallback number systems: the plain pass (it prunes dead partial matches)
        return [_plain(p, tl, ar) for p in plans]
    cut = splits(plans) if share_suffixes else [p.length - 1 for p in plans]
    suffixes = _suffix_counts(plans, cut, tl, ar)
    steps = [_steps(p) for p in plans]
    out: list[np.ndarray] = [ar.zeros(0)] * len(plans)
    path: list[list] = []  # per depth: [node key, forward counts, their exclusive cumsum or None]
    for i in sorted(range(len(plans)), key=lambda i: steps[i]):
        p, node = plans[i], steps[i]
        pat = Pattern.of(p)
        _walk(path, node[:cut[i] + 1], tl, pat, ar, p.negations[0])
        f, sym = path[cut[i]][1], pat.symbols[cut[i]]
        if cut[i] < pat.length - 1:
            f = ar.mul(f, suffixes[_suffix_key(p, cut[i])])
        elif p.negations[-1]:
            f = ar.mul(f, ar.asarray(tl.no_neg_after(sym, p.negations[-1])))
        cs = ar.excl_cumsum(f)
        b = tl.sym_segments(sym)
        out[i] = cs[b[1:]] - cs[b[:-1]]
    return out


def _walk(path: list[list], node: tuple, tl: Timeline, pat: Pattern, ar: Arith, lead: int,
          start: np.ndarray | None = None) -> None:
    """Extend the kept root-to-leaf ``path`` of prefix arrays to ``node`` (a prefix of ``pat``
    on ``tl``, ``lead`` its leading negation, or ``start`` weights), reusing the common part."""
    d = 0
    while d < len(path) and d < len(node) and path[d][0] == node[:d + 1]:
        d += 1
    del path[d:]
    for j in range(d, len(node)):
        sym = pat.symbols[j]
        if j == 0 and start is not None:
            entry = start
        elif j == 0:
            entry = ar.asarray(tl.no_neg_before(sym, lead)) if lead else ar.ones(len(tl.rows(sym)))
        else:
            parent = path[j - 1]
            if parent[2] is None:
                parent[2] = ar.excl_cumsum(parent[1])
            lo, hi = tl.prev_ranges(pat.symbols[j - 1], sym, pat.gaps[j - 1])
            entry = parent[2][hi] - parent[2][lo]
        path.append([node[:j + 1], kleene_sets(tl, sym, entry, ar) if pat.kleene[j] else entry, None])


def _suffix_counts(plans: Sequence[Plan], cut: Sequence[int], tl: Timeline, ar: Arith) -> dict[tuple, np.ndarray]:
    """``B_k`` per distinct suffix key: suffix matches starting after each row of element
    k's symbol (forward row order), each reversed prefix computed once."""
    need = {_suffix_key(p, k): (p, k) for p, k in zip(plans, cut) if k < p.length - 1}
    out: dict[tuple, np.ndarray] = {}
    if not need:
        return out
    rev = tl.reversed()
    path: list[list] = []
    for key in sorted(need):
        p, k = need[key]
        pat = Pattern.of(p).reversed()  # reversed position j = forward element L-1-j
        last = pat.length - 1 - k  # reversed position of element k
        trail = p.negations[-1]  # "no N after the last row", in reversed row order
        start = ar.asarray(tl.no_neg_after(p.elements[-1].symbol, trail))[::-1] if trail else None
        _walk(path, key[:-1], rev, pat, ar, 0, start)
        parent = path[last - 1]
        if parent[2] is None:
            parent[2] = ar.excl_cumsum(parent[1])
        lo, hi = rev.prev_ranges(pat.symbols[last - 1], pat.symbols[last], pat.gaps[last - 1])
        out[key] = (parent[2][hi] - parent[2][lo])[::-1]
    return out


def _suffix_key(plan: Plan, k: int) -> tuple:
    """The suffix after element k in the reversed trie: trailing negation, then (gap, symbol,
    Kleene) from the last element back to k+1, then the step into element k's rows."""
    return _rev_steps(plan)[:plan.length - 1 - k] + ((plan.negations[k + 1], plan.elements[k].symbol, -1),)


def _rev_steps(plan: Plan) -> tuple:
    els, negs, n = plan.elements, plan.negations, plan.length
    first = ((negs[-1], els[-1].symbol, els[-1].kleene),)
    return first + tuple((negs[j + 1], els[j].symbol, els[j].kleene) for j in range(n - 2, -1, -1))


def splits(plans: Sequence[Plan]) -> list[int]:
    """Per plan, the element after which it is cut (see :func:`_splits`); cached, since every
    partition and batch of a group asks for the same plans."""
    return list(_splits(tuple(plans)))


@functools.lru_cache(maxsize=64)
def _splits(plans: tuple[Plan, ...]) -> tuple[int, ...]:
    """Per plan, the element after which it is cut (its last element: not cut), chosen so
    that the prefix trie and the suffix trie together hold the fewest nodes — each node is
    one step of a pass over its symbol's rows. Each plan starts at the cut whose nodes,
    each spread over the plans that could use it, cost least; then two greedy sweeps move
    single plans to the cut that adds the fewest nodes. Ties keep a plan uncut (or cut
    later), and no plan is cut unless the nodes saved exceed the symbols whose row lists
    the reversed timeline needs."""
    options: list[list[list[tuple]]] = []
    for p in plans:
        fwd, rev = _steps(p), _rev_steps(p)
        per_k = []
        for k in range(p.length):
            nodes = [("F", fwd[:j + 1]) for j in range(k + 1)]
            if k < p.length - 1:
                nodes += [("B", rev[:j + 1]) for j in range(p.length - 1 - k)] + [("B", _suffix_key(p, k))]
            per_k.append(nodes)
        options.append(per_k)
    potential: dict[tuple, int] = {}  # plans that could use a node under some cut
    for per_k in options:
        for node in {node for nodes in per_k for node in nodes}:
            potential[node] = potential.get(node, 0) + 1
    cut = []  # start: each node's cost spread over the plans that could share it
    for per_k in options:
        cost = [sum(1 / potential[node] for node in nodes) for nodes in per_k]
        cut.append(max(k for k, c in enumerate(cost) if c <= min(cost) + 1e-9))
    users: dict[tuple, int] = {}
    for i, per_k in enumerate(options):
        for node in per_k[cut[i]]:
            users[node] = users.get(node, 0) + 1
    for _ in range(2):
        for i, per_k in enumerate(options):
            for node in per_k[cut[i]]:
                users[node] -= 1
            cost = [sum(users.get(node, 0) == 0 for node in nodes) for nodes in per_k]
            best = min(cost)
            cut[i] = max(k for k, c in enumerate(cost) if c == best)
            for node in per_k[cut[i]]:
                users[node] = users.get(node, 0) + 1
    # the reversed timeline costs its own row lists: one node per symbol of the suffixes
    uncut = {node for i, per_k in enumerate(options) for node in per_k[-1]}
    chosen = {node for i, per_k in enumerate(options) for node in per_k[cut[i]]}
    symbols = {el.symbol for p, k in zip(plans, cut) if k < p.length - 1 for el in p.elements[k:]}
    if len(chosen) + len(symbols) >= len(uncut):  # also when nothing is cut (then chosen == uncut)
        return tuple(p.length - 1 for p in plans)
    return tuple(cut)


def _steps(plan: Plan) -> tuple:
    """The plan's path in the PreTree: leading negation, then (gap, symbol, Kleene) per element."""
    first = ((plan.negations[0], plan.elements[0].symbol, plan.elements[0].kleene),)
    return first + tuple((g, e.symbol, e.kleene) for g, e in zip(plan.negations[1:-1], plan.elements[1:]))


def _by_shape(plans: Sequence[Plan]) -> dict[Shape, list[int]]:
    """Indices of the plans that may share a timeline, per window shape."""
    by_shape: dict[Shape, list[int]] = {}
    for i, p in enumerate(plans):
        shape = shape_of(p)
        if shape is not None:
            by_shape.setdefault(shape, []).append(i)
    return by_shape


def shared_prefixes(plans: Sequence[Plan]) -> list[tuple[tuple[int, ...], Plan]]:
    """The prefixes :func:`evaluate_shared` counts once for several plans: per window
    shape, every deepest PreTree node (length >= 2) common to two or more plans, as
    (indices into ``plans``, the prefix as a plan). For EXPLAIN."""
    out = []
    for members in _by_shape(plans).values():
        nodes: dict[tuple, list[int]] = {}
        for i in members:
            steps = _steps(plans[i])
            for d in range(2, len(steps) + 1):
                nodes.setdefault(steps[:d], []).append(i)
        widest_child: dict[tuple, int] = {}
        for node, who in nodes.items():
            widest_child[node[:-1]] = max(widest_child.get(node[:-1], 0), len(who))
        for node, who in nodes.items():
            if len(who) > 1 and widest_child.get(node, 0) < len(who):
                p, d = plans[who[0]], len(node)
                prefix = Plan(symbols=p.symbols, elements=p.elements[:d], negations=(*p.negations[:d], 0))
                out.append((tuple(who), prefix))
    return sorted(out, key=lambda x: x[0])


def shared_suffixes(plans: Sequence[Plan]) -> list[tuple[tuple[int, ...], Plan]]:
    """The suffixes :func:`evaluate_shared` counts once for several plans when all plans of a
    window shape share a timeline: per shape, the plans' :func:`splits`, and every suffix
    (from the element after the cut to the end, with the step back into the cut element)
    that two or more plans use, as (indices into ``plans``, the cut element and the suffix
    as a plan). For EXPLAIN."""
    out = []
    for members in _by_shape(plans).values():
        if len(members) < 2:
            continue
        cut = dict(zip(members, splits([plans[i] for i in members])))
        keys: dict[tuple, list[int]] = {}
        for i in members:
            if cut[i] < plans[i].length - 1:
                keys.setdefault(_suffix_key(plans[i], cut[i]), []).append(i)
        for who in keys.values():
            if len(who) > 1:
                p, k = plans[who[0]], cut[who[0]]
                out.append((tuple(who), Plan(symbols=p.symbols, elements=p.elements[k:],
                                             negations=(0, *p.negations[k + 1:]))))
    return sorted(out, key=lambda x: x[0])


def _plain(plan: Plan, tl: Timeline, ar: Arith) -> np.ndarray:
    pat = Pattern.of(plan)
    lead, trail = plan.negations[0], plan.negations[-1]
    start = ar.asarray(tl.no_neg_before(pat.symbols[0], lead)) if lead else None
    end = ar.asarray(tl.no_neg_after(pat.symbols[-1], trail)) if trail else None
    return run(tl, pat, ar, start, end).totals


def _count_partials(plan: Plan, totals: np.ndarray, ar: Arith) -> list[Partial]:
    empty = np.zeros(0, dtype=np.int64)
    return partials(plan, Tally(totals, empty, empty, {}), [], ar)


__all__ = ["Shape", "evaluate_shared", "groups", "shape_of", "shared_prefixes", "shared_suffixes", "splits"]
