"""Plans of one window shape over one shared timeline, prefixes counted once (PreTree).

The plans of a workload group (or an E-Cube) often start alike: routes through the
same streets, funnels through the same first pages. A forward pass (see
:mod:`udafs.kernels.counting.passes`) computes, position by position, the counts of the
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
:class:`~udafs.kernels.counting.timeline.Timeline`.

Suffixes are shared the same way from the other end (Chop-Connect at one element):
a plan cut after element k counts ``Σ_x F_k(x)·B_k(x)`` over the rows x of element k,
with ``B_k`` from a trie of suffixes passed over the reversed timeline (see
:func:`_totals`; where each plan is cut is :func:`udafs.timelines.choose_cuts`' choice).

Which plans share a timeline and where each is cut is decided before the pass
(:mod:`udafs.timelines`: a :class:`~udafs.timelines.SharedTimeline` per group of plans);
this module evaluates such a decision exactly as given.

Used by :func:`udafs.kernels.multiplan.many.evaluate_many` for plans that measure only
``COUNT(*)`` and have SLIDE or no window. WITHIN without SLIDE evaluates by blocks,
and other measures need per-row pair counts: those plans run one by one.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from udafs.errors import PlanError
from udafs.kernels.counting.passes import kleene_sets, run
from udafs.kernels.counting.pattern import Pattern
from udafs.kernels.counting.segments import batches, range_timeline, sliding_windows
from udafs.kernels.counting.timeline import Timeline
from udafs.kernels.values.arith import Arith
from udafs.kernels.values.measures import Partial, Tally, partials
from udafs.plan import Plan
from udafs.timelines import prefix_steps, shape_of, suffix_key

Evaluated = tuple[list[Partial], "np.ndarray | None"]


def evaluate_shared(plans: Sequence[Plan], ts: np.ndarray, mask: np.ndarray, ar: Arith,
                    cuts: Sequence[int] | None = None) -> list[Evaluated]:
    """Partials (and window starts with SLIDE) of every plan, exactly what the plan's
    own evaluation gives on its own rows; ``ts`` sorted, plans of one
    :class:`~udafs.timelines.Shape`; ``cuts``: per plan the element after which it is cut
    (:class:`~udafs.timelines.SharedTimeline`; default: none is cut, prefixes shared only)."""
    if any(p.quantified for p in plans):  # udafs.kernels.multiplan.many evaluates them as unions of plain classes
        raise PlanError("a plan with quantified or optional elements does not share a timeline; evaluate it alone")
    shape = shape_of(plans[0])
    cut = [p.length - 1 for p in plans] if cuts is None else list(cuts)
    assert shape is not None and all(shape_of(p) == shape for p in plans)
    union = 0
    for p in plans:
        union |= p.pattern_symbols_mask
    keep = (mask & union) != 0
    ts, mask = ts[keep], mask[keep]
    if shape.slide is None:
        tl = Timeline(ts, mask, np.array([0, len(ts)]))
        totals = _totals(plans, tl, ar, cut) if len(ts) else None
        return [(_count_partials(p, ar.zeros(1) if totals is None else totals[i], ar), None)
                for i, p in enumerate(plans)]
    w, s = shape.within, shape.slide
    assert w is not None
    k = sliding_windows(ts, w, s)
    starts = np.searchsorted(ts, k * s, "left")
    ends = np.searchsorted(ts, k * s + w, "left")
    per_batch = []  # per batch of windows: their numbers, every plan's totals, the windows each plan reports
    for a, b in batches(ends - starts):
        tl = range_timeline(ts, mask, starts[a:b], ends[a:b])
        # a plan reports the windows holding a row of its own symbols (sliding_windows of its rows)
        per_batch.append((k[a:b], _totals(plans, tl, ar, cut), [tl.segments_holding(p.pattern_symbols_mask)
                                                                 for p in plans]))
    out: list[Evaluated] = []
    for i, p in enumerate(plans):
        windows, counts = np.zeros(0, dtype=np.int64), ar.zeros(0)
        if per_batch:
            windows = np.concatenate([numbers[held[i]] for numbers, _, held in per_batch])
            counts = np.concatenate([t[i][held[i]] for _, t, held in per_batch])
        out.append((_count_partials(p, counts, ar), windows * s))
    return out


def _totals(plans: Sequence[Plan], tl: Timeline, ar: Arith, cut: Sequence[int]) -> list[np.ndarray]:
    """Matches per segment of ``tl``, plan by plan, each prefix and suffix counted once.

    Every plan is cut after its element k = ``cut[i]``: its matches per segment are
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
    suffixes = _suffix_counts(plans, cut, tl, ar)
    steps = [prefix_steps(p) for p in plans]
    out: list[np.ndarray] = [ar.zeros(0)] * len(plans)
    path: list[list] = []  # per depth: [node key, forward counts, their exclusive cumsum or None]
    for i in sorted(range(len(plans)), key=lambda i: steps[i]):
        p, node = plans[i], steps[i]
        pat = Pattern.of(p)
        _walk(path, node[:cut[i] + 1], tl, pat, ar, p.negations[0])
        f, sym = path[cut[i]][1], pat.symbols[cut[i]]
        if cut[i] < pat.length - 1:
            f = ar.mul(f, suffixes[suffix_key(p, cut[i])])
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
            entry = ar.asarray(tl.no_neg_before(sym, lead)) if lead else ar.ones(tl.n_rows(sym))
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
    need = {suffix_key(p, k): (p, k) for p, k in zip(plans, cut) if k < p.length - 1}
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


def _plain(plan: Plan, tl: Timeline, ar: Arith) -> np.ndarray:
    pat = Pattern.of(plan)
    lead, trail = plan.negations[0], plan.negations[-1]
    start = ar.asarray(tl.no_neg_before(pat.symbols[0], lead)) if lead else None
    end = ar.asarray(tl.no_neg_after(pat.symbols[-1], trail)) if trail else None
    return run(tl, pat, ar, start, end).totals


def _count_partials(plan: Plan, totals: np.ndarray, ar: Arith) -> list[Partial]:
    empty = np.zeros(0, dtype=np.int64)
    return partials(plan, Tally(totals, empty, empty, {}), [], ar)


__all__ = ["evaluate_shared"]
