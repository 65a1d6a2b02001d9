"""Expected aggregates over events with imprecise timestamps, exactly and in polynomial time.

The model (SASE++ section 2.3, after Zhang, Diao and Immerman): an event may occur
at any of its *possible times* ``lo, lo + s, ..., <= hi`` (``s`` = ``plan.uncertain``),
each with probability 1/U, independently of the other events. A *possible world* fixes
one time per event; in it matches are exactly those of SEMANTICS sections 3-5, and every
measure here is the expectation of the world's measure (COUNT(*), COUNT(X), SUM(X.a)).

By linearity of expectation the expected number of matches is a sum, over bindings
of distinct events, of the probability that their times satisfy the pattern: a sum of
products of per-event probabilities. That is what the existing prefix-count passes
compute on an *expanded timeline* whose rows are the (event, possible time) pairs,
each weighted by its probability (:class:`~udafs.kernels.counting.timeline.Timeline` weights),
provided three things that the expansion would get wrong cannot happen:

* one event bound twice: a Kleene set takes at most one row per *group* — all possible
  times of one event with imprecise time, or all point events at one time — which is
  exact when such an event shares no possible time range with another instance of the
  same Kleene symbol (else :class:`UncertainTimeError`); and an event that instantiates
  two positive positions i < j must be unable to take both (some position between them
  has no instance strictly inside its range), else the error;
* negation: the probability that no negated event falls in a gap is a product over the
  negated events (:mod:`udafs.kernels.imprecise.uncertain_gaps`), exact when each imprecise
  negated event is negated in one gap only and is no instance of a positive symbol
  (else the error).

Point events (lo = hi) take part as one row of weight 1, so point-time input gives
exactly today's answers. The rows (:mod:`udafs.kernels.imprecise.possible_times`) are one per
(event, possible time), or merged per (time, symbol mask) where no row must stay one
event's. Paths, by plan: no WITHIN — one segment; WITHIN without SLIDE — the time
blocks of :mod:`udafs.kernels.counting.within` when no gap or edge needs the general negation
step and no imprecise Kleene instance straddles a block boundary, else one segment per
distinct time of the first element ("anchored": its matches start there); SLIDE — one
segment per window. Cost O(rows), times the rows per window for the anchored and
sliding paths.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from udafs.errors import UncertainTimeError
from udafs.kernels.counting import within as within_path
from udafs.kernels.counting.passes import Run, run
from udafs.kernels.counting.paths import add_pairs, new_acc
from udafs.kernels.counting.pattern import Pattern
from udafs.kernels.counting.segments import batches, concat_ranges, sliding_windows
from udafs.kernels.imprecise.possible_times import Events, Expanded, attribute, expand, group_events
from udafs.kernels.imprecise.uncertain_gaps import GapTimeline, Negated, outside
from udafs.kernels.predicates import predpass
from udafs.kernels.predicates.predpass import PredPattern
from udafs.kernels.values.arith import Arith, Kind
from udafs.kernels.values.measures import Column, Partial, Tally, measure_symbols, partials
from udafs.plan import Plan


def evaluate_uncertain(plan: Plan, ts: np.ndarray, mask: np.ndarray, cols: Sequence[Column], lo: np.ndarray,
                       hi: np.ndarray, ar: Arith | None = None) -> tuple[list[Partial], np.ndarray | None]:
    """Partials of the expected measures of one group (what ``evaluate_group`` finalises).

    Parameters
    ----------
    plan : Plan
        A plan with ``plan.uncertain`` (the step between possible times).
    ts, mask : arrays of int64
        Validated rows in any order; ``ts`` is unused here (window bounds come from
        the possible times) but kept for the caller's shapes.
    cols : list of (values, valid)
        Validated value columns.
    lo, hi : arrays of int64
        First and last possible time of each row (equal for a point event).
    ar : Arith, optional
        Number system: float64 by default; ``Arith(Kind.RATIONAL)`` computes exact
        fractions (tests).

    Returns
    -------
    (list of Partial, array or None)
        Per measure, values per output row; window starts with SLIDE, else None.

    Raises
    ------
    UncertainTimeError
        ``lo > hi``, too many possible times, or input the method cannot evaluate
        exactly (module docstring).
    """
    ar = ar or Arith(Kind.FLOAT, prune=False)
    ev = group_events(plan, mask, lo, hi)
    check_exact(plan, ev)
    ex = expand(plan, ev, ar)
    cols = [(v[ev.row], ok[ev.row]) for v, ok in cols]
    runner = Runner(plan, cols if ex.event is None else [(v[ex.event], ok[ex.event]) for v, ok in cols])
    if plan.slide is not None:
        return sliding(plan, ev, ex, cols, ar, runner)
    if plan.within is None:
        tally = _whole(plan, ev, ex, ar, runner)
    elif _blocks_apply(plan, ev):
        tally = _blocks(plan, ev, ex, ar)
    else:
        tally = _anchored(plan, ev, ex, ar, runner)
    return partials(plan, tally, cols, ar), None


class Runner:
    """One weighted run of the plan's pattern on a timeline of expanded rows: the plain
    passes, or with Kleene iterator predicates the passes of :mod:`udafs.kernels.predicates.predpass`
    (values per expanded row in ``cols``)."""

    def __init__(self, plan: Plan, cols: list[Column]) -> None:
        self.pat = Pattern.of(plan)
        self.chains = PredPattern.of(plan, None) if plan.iterator_predicates else None
        self.cols = cols

    def __call__(self, tl: GapTimeline, ar: Arith, start: np.ndarray | None = None, end: np.ndarray | None = None,
                 need_pairs: bool = False) -> Run:
        if self.chains is None:
            return run(tl, self.pat, ar, start, end, need_pairs)
        return predpass.run(tl, self.chains, self.cols, ar, start, end, need_pairs)


def check_exact(plan: Plan, ev: Events) -> None:
    """Refuse input whose expected aggregates this method cannot compute exactly.

    Raises
    ------
    UncertainTimeError
        Naming the events and the rule (module docstring).
    """
    imprecise = ev.n > 1
    pos, neg = plan.positive_mask, plan.negated_mask
    both = np.flatnonzero(imprecise & ((ev.mask & pos) != 0) & ((ev.mask & neg) != 0))
    if len(both):
        raise UncertainTimeError(
            f"an event with possible times {_range(plan, ev, both[0])} is an instance of both a positive and a "
            "negated symbol; with imprecise times its own negation cannot be told apart from its binding")
    gaps = sum(((ev.mask & g) != 0).astype(np.int64) for g in plan.negations if g)
    several = np.flatnonzero(imprecise & (np.asarray(gaps) > 1))
    if len(several):
        raise UncertainTimeError(
            f"an event with possible times {_range(plan, ev, several[0])} is negated in two gaps of "
            f"{plan.describe()}; the probability that it falls in neither does not factor over the gaps")
    _check_kleene_groups(plan, ev)
    _check_positions(plan, ev)


def _range(plan: Plan, ev: Events, k: int) -> str:
    return f"[{int(ev.lo[k])}, {int(ev.lo[k] + (ev.n[k] - 1) * plan.uncertain)}]"


def _check_kleene_groups(plan: Plan, ev: Events) -> None:
    """An imprecise instance of a Kleene symbol may share its range with no other instance."""
    for sym in sorted({el.symbol for el in plan.elements if el.kleene}):
        k = np.flatnonzero(ev.mask & (1 << sym))
        if not len(k):
            continue
        k = k[np.lexsort((ev.n[k], ev.lo[k]))]
        lo, hi, wide = ev.lo[k], ev.lo[k] + (ev.n[k] - 1) * plan.uncertain, ev.n[k] > 1
        before_any = np.maximum.accumulate(np.concatenate(([np.iinfo(np.int64).min], hi[:-1])))
        before_wide = np.maximum.accumulate(np.concatenate(([np.iinfo(np.int64).min],
                                                            np.where(wide, hi, np.iinfo(np.int64).min)[:-1])))
        clash = np.flatnonzero((lo <= before_wide) | (wide & (lo <= before_any)))
        if len(clash):
            c = int(clash[0])
            j = next(j for j in range(c) if hi[j] >= lo[c] and (wide[j] or wide[c]))
            raise UncertainTimeError(
                f"Kleene element {plan.symbols[sym]}+: instances with possible times {_range(plan, ev, k[j])} and "
                f"{_range(plan, ev, k[c])} overlap, and one of them is imprecise; a set then needs pairwise distinct "
                "times among overlapping events (a weighted matching count, #P-hard in general), so the ranges of "
                "a Kleene symbol's imprecise instances must be disjoint from the other instances'")


def _check_positions(plan: Plan, ev: Events) -> None:
    """An imprecise event instantiating positions i < j must be unable to take both."""
    times: dict[int, np.ndarray] = {}
    for i in range(plan.length):
        for j in range(i + 1, plan.length):
            bits = (1 << plan.elements[i].symbol) | (1 << plan.elements[j].symbol)
            k = np.flatnonzero((ev.n > 1) & ((ev.mask & bits) == bits))
            if not len(k):
                continue
            lo, hi = ev.lo[k], ev.lo[k] + (ev.n[k] - 1) * plan.uncertain
            possible = np.ones(len(k), dtype=bool)
            for between in range(i + 1, j):
                sym = plan.elements[between].symbol
                t = times[sym] if sym in times else times.setdefault(sym, _instance_times(plan, ev, sym))
                possible &= np.searchsorted(t, hi, "left") > np.searchsorted(t, lo, "right")
            if possible.any():
                e = k[np.flatnonzero(possible)[0]]
                raise UncertainTimeError(
                    f"the event with possible times {_range(plan, ev, e)} is an instance of positions {i + 1} and "
                    f"{j + 1} of {plan.describe()} and could take both within its range; an event with an imprecise "
                    "time may take one position of a match only: make the two positions' conditions exclusive, or "
                    "make sure a position between them has no instance inside such a range")


def _instance_times(plan: Plan, ev: Events, sym: int) -> np.ndarray:
    """Sorted possible times of the instances of symbol ``sym``."""
    k = np.flatnonzero(ev.mask & (1 << sym))
    idx, _ = concat_ranges(np.zeros(len(k), dtype=np.int64), ev.n[k])
    return np.sort(np.repeat(ev.lo[k], ev.n[k]) + idx * plan.uncertain)


def negated_events(plan: Plan, ev: Events, neg: int) -> Negated:
    """Every instance of the symbols in ``neg`` as events (point ones with one time)."""
    k = np.flatnonzero(ev.mask & neg)
    assert plan.uncertain is not None  # only plans with uncertain times get here
    return Negated.of(ev.lo[k], ev.n[k], plan.uncertain)


def _gap_events(plan: Plan, ev: Events) -> dict[int, Negated]:
    """Middle gaps that hold an imprecise negated event, with their events."""
    out = {}
    for g in plan.negations[1:-1]:
        if g and (ev.n[(ev.mask & g) != 0] > 1).any():
            out[g] = negated_events(plan, ev, g)
    return out


def timeline(ex: Expanded, idx: np.ndarray, bounds: np.ndarray, negated: dict[int, Negated],
             origin: bool) -> GapTimeline:
    """The weighted timeline of expanded rows ``idx`` cut into segments at ``bounds``."""
    return GapTimeline(ex.ts[idx], ex.mask[idx], bounds, idx if origin else None, ex.weight[idx], ex.inv[idx],
                       ex.group[idx], negated=negated)


def _tally(plan: Plan, ev: Events, ex: Expanded, counts: np.ndarray, acc: dict[int, np.ndarray],
           ar: Arith) -> Tally:
    """One output row: pairs per copy (``rows`` = their event), or per event for merged rows."""
    if ex.event is None:
        pairs = {sym: attribute(plan, ev, ex, p, ar) for sym, p in acc.items()}
        return Tally(counts, np.arange(len(ev.lo)), np.array([0, len(ev.lo)]), pairs)
    return Tally(counts, ex.event, np.array([0, len(ex.ts)]), acc)


# -- paths -------------------------------------------------------------------------------

def _whole(plan: Plan, ev: Events, ex: Expanded, ar: Arith, runner: Runner) -> Tally:
    """No WITHIN: the group is one segment."""
    n = len(ex.ts)
    symbols = measure_symbols(plan)
    acc = new_acc(symbols, n, ar)
    if not n:
        return _tally(plan, ev, ex, ar.zeros(1), acc, ar)
    tl = timeline(ex, np.arange(n), np.array([0, n]), _gap_events(plan, ev), False)
    pat = runner.pat
    r = runner(tl, ar, need_pairs=bool(symbols))
    if symbols:
        add_pairs(acc, tl, pat, r.pairs, ar)
    return _tally(plan, ev, ex, r.totals, acc, ar)


def _blocks_apply(plan: Plan, ev: Events) -> bool:
    """The block decomposition is exact: point negation only, no imprecise Kleene event
    straddling a block boundary (its halves would be counted as two events), no
    iterator predicates (the block passes have no chain step)."""
    if plan.iterator_predicates or plan.has_edge_negation or any(g and (ev.n[(ev.mask & g) != 0] > 1).any()
                                                                 for g in plan.negations):
        return False
    for sym in {el.symbol for el in plan.elements if el.kleene}:
        k = np.flatnonzero(((ev.mask & (1 << sym)) != 0) & (ev.n > 1))
        hi = ev.lo[k] + (ev.n[k] - 1) * plan.uncertain
        if (ev.lo[k] // plan.within != hi // plan.within).any():
            return False
    return True


def _blocks(plan: Plan, ev: Events, ex: Expanded, ar: Arith) -> Tally:
    """WITHIN by time blocks (:func:`udafs.kernels.counting.within.positive_count`) on the weighted rows."""
    n = len(ex.ts)
    acc = new_acc(measure_symbols(plan), n, ar)
    if not n:
        return _tally(plan, ev, ex, ar.zeros(1), acc, ar)
    blk = ex.ts // plan.window
    cuts = np.flatnonzero(blk[1:] != blk[:-1]) + 1
    tl = timeline(ex, np.arange(n), np.concatenate(([0], cuts, [n])), {}, False)
    count = within_path.positive_count(tl, Pattern.of(plan), plan.window, ar, acc)
    counts = ar.zeros(1)
    counts[0] = count
    return _tally(plan, ev, ex, counts, acc, ar)


def _anchored(plan: Plan, ev: Events, ex: Expanded, ar: Arith, runner: Runner) -> Tally:
    """WITHIN w: one segment ``[x, x + w)`` per distinct time x of a first-element row,
    holding the matches whose first row is at x; edge negation as end weights."""
    n, w = len(ex.ts), plan.within
    symbols = measure_symbols(plan)
    acc = new_acc(symbols, n, ar)
    pat = Pattern.of(plan)
    first = ex.ts[(ex.mask & (1 << pat.symbols[0])) != 0]
    anchors = np.unique(first)
    starts = np.searchsorted(ex.ts, anchors, "left")
    ends = np.searchsorted(ex.ts, anchors + w, "left")
    gaps, edges = _gap_events(plan, ev), _edge_events(plan, ev)
    total = ar.zeros(1)
    for a, b in batches(ends - starts):
        idx, bounds = concat_ranges(starts[a:b], ends[a:b])
        tl = timeline(ex, idx, bounds, gaps, True)
        x = anchors[a:b]
        rows0 = tl.rows(pat.symbols[0])
        start = ar.asarray((tl.ts[rows0] == x[tl.seg_of(pat.symbols[0])]).astype(np.int64))
        end = _edge_weights(plan, tl, pat, edges, x, ar)
        r = runner(tl, ar, start, end, need_pairs=bool(symbols))
        total[0] = total[0] + ar.total(r.totals)
        if symbols:
            add_pairs(acc, tl, pat, r.pairs, ar, to_base=True)
    return _tally(plan, ev, ex, total, acc, ar)


def _edge_events(plan: Plan, ev: Events) -> tuple[Negated | None, Negated | None]:
    """Events of the leading and the trailing negation (None where the gap is empty)."""
    lead, trail = plan.negations[0], plan.negations[-1]
    return (negated_events(plan, ev, lead) if lead else None, negated_events(plan, ev, trail) if trail else None)


def _edge_weights(plan: Plan, tl: GapTimeline, pat: Pattern, edges: tuple[Negated | None, Negated | None],
                  x: np.ndarray, ar: Arith) -> np.ndarray | None:
    """End weights of the anchored segments ``[x, x + w)``: a match with last row z
    forbids leading negated events in ``(z - w, x)`` and trailing ones in ``(z, x + w)``
    (both reach depends on z, so both are weights of the last element's rows)."""
    lead, trail = edges
    if lead is None and trail is None:
        return None
    last = pat.symbols[-1]
    z, seg = tl.ts[tl.rows(last)], tl.seg_of(last)
    out = ar.ones(len(z))
    if lead is not None:
        out = ar.mul(out, outside(lead, z - plan.within, x[seg], ar))
    if trail is not None:
        out = ar.mul(out, outside(trail, z, x[seg] + plan.within, ar))
    return out


def sliding(plan: Plan, ev: Events, ex: Expanded, cols: Sequence[Column], ar: Arith,
            runner: Runner) -> tuple[list[Partial], np.ndarray]:
    """WITHIN w SLIDE s: each window that may hold an instance, on its own rows.

    Window-local leading / trailing negation: no negated event in ``[ws, first)`` /
    ``(last, ws + w)``, as start / end weights.
    """
    w, s = plan.sliding
    assert ex.event is not None  # SLIDE is never merged (possible_times.mergeable): one row per copy
    k = sliding_windows(np.sort(_all_times(plan, ev)), w, s)
    starts = np.searchsorted(ex.ts, k * s, "left")
    ends = np.searchsorted(ex.ts, k * s + w, "left")
    symbols = measure_symbols(plan)
    counts = ar.zeros(len(k))
    nonempty = np.flatnonzero(ends > starts)
    gaps, (lead, trail) = _gap_events(plan, ev), _edge_events(plan, ev)
    pat = Pattern.of(plan)
    slots: list[np.ndarray] = []
    seg_bounds: list[tuple[np.ndarray, np.ndarray]] = []
    acc_parts: dict[int, list[np.ndarray]] = {sym: [] for sym in symbols}
    for a, b in batches(ends[nonempty] - starts[nonempty]):
        win = nonempty[a:b]
        idx, bounds = concat_ranges(starts[win], ends[win])
        tl = timeline(ex, idx, bounds, gaps, True)
        ws = k[win] * s
        start = end = None
        if lead is not None:
            first = tl.rows(pat.symbols[0])
            seg = tl.seg_of(pat.symbols[0])
            start = outside(lead, ws[seg], tl.ts[first], ar, closed=True)
        if trail is not None:
            last = tl.rows(pat.symbols[-1])
            seg = tl.seg_of(pat.symbols[-1])
            end = outside(trail, tl.ts[last], ws[seg] + w, ar)
        r = runner(tl, ar, start, end, need_pairs=bool(symbols))
        counts[win] = r.totals
        acc = new_acc(symbols, tl.n, ar)
        if symbols:
            add_pairs(acc, tl, pat, r.pairs, ar)
        slots.append(ex.event[idx])
        seg_bounds.append((win, bounds))
        for sym in symbols:
            acc_parts[sym].append(acc[sym])
    tally = _window_tally(len(k), slots, seg_bounds, acc_parts, counts, ar)
    return partials(plan, tally, cols, ar), k * s


def _window_tally(n_windows: int, slots: list[np.ndarray], seg_bounds: list[tuple[np.ndarray, np.ndarray]],
                  acc_parts: dict[int, list[np.ndarray]], counts: np.ndarray, ar: Arith) -> Tally:
    """Per-window slots (empty for windows without bound rows) in window order."""
    lengths = np.zeros(n_windows, dtype=np.int64)
    for win, bounds in seg_bounds:
        lengths[win] = np.diff(bounds)
    bounds = np.concatenate(([0], np.cumsum(lengths)))
    rows = np.concatenate(slots) if slots else np.zeros(0, dtype=np.int64)
    acc = {sym: np.concatenate(parts) if parts else ar.zeros(0) for sym, parts in acc_parts.items()}
    return Tally(counts, rows, bounds, acc)


def _all_times(plan: Plan, ev: Events) -> np.ndarray:
    """Every possible time of every instance (windows may hold only negated ones)."""
    idx, _ = concat_ranges(np.zeros(len(ev.n), dtype=np.int64), ev.n)
    return np.repeat(ev.lo, ev.n) + idx * plan.uncertain
