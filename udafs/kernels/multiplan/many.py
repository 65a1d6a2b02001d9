"""``evaluate_many``: every plan of a :class:`~udafs.multiplan.MultiPlan` over one group.

The group is validated and sorted by time once; each evaluated plan then takes its
own rows (a mask test keeps them in order, so its own sort is free) and runs the
usual path — except COUNT(*) plans that share one timeline (``MultiPlan.timelines``,
:mod:`udafs.timelines`) and count common prefixes and suffixes once. Derived plans
(``MultiPlan.derived``) are not evaluated: their partial measures are the exact
combination (:func:`udafs.kernels.values.measures.combine`) of their parts' partials, window by
window, so a coarse cuboid costs a few array additions.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from udafs.errors import PlanError
from udafs.kernels.counting import paths, quantifiers, within
from udafs.kernels.counting.segments import sliding_windows
from udafs.kernels.counting.timeline import Timeline
from udafs.kernels.evaluate import GroupResult, sorted_instances, tally, validate
from udafs.kernels.multiplan import pretree
from udafs.kernels.options import DEFAULT, KernelOptions
from udafs.kernels.predicates import extended
from udafs.kernels.values.arith import Arith, with_fallback
from udafs.kernels.values.measures import Column, Partial, combine, finalize, measure_symbols, partials
from udafs.multiplan import MultiPlan
from udafs.plan import Measure, Plan, ValueType
from udafs.timelines import SharedTimeline, blocked, choose_timelines

Evaluated = tuple[list[Partial], "np.ndarray | None"]


class _RowCounts:
    """Rows of any set of symbols in one group (:data:`udafs.timelines.Rows`), each set
    counted once: what the engine's per-partition choices (shared timelines, shared block
    timelines) are made from."""

    def __init__(self, mask: np.ndarray) -> None:
        self._mask = mask
        self._counted: dict[int, int] = {}

    def __call__(self, symbols: int) -> int:
        if symbols not in self._counted:
            self._counted[symbols] = int(np.count_nonzero(self._mask & symbols))
        return self._counted[symbols]


def evaluate_many(mp: MultiPlan, ts: np.ndarray, mask: np.ndarray, columns: Sequence[Column] = (), *,
                  options: KernelOptions = DEFAULT, ran: list[SharedTimeline] | None = None
                  ) -> list[GroupResult | None]:
    """Exact aggregates of every plan of ``mp`` over one group of events.

    Parameters
    ----------
    mp : MultiPlan
        The plans; they share symbols, value columns, count type and windows.
    ts, mask, columns, options
        As for :func:`udafs.kernels.evaluate_group`; ``options.share_prefixes`` off evaluates
        every plan on its own, ``options.share_suffixes`` off cuts none.
    ran : list, optional
        Appended with every shared timeline evaluated (members and cuts as run), so that
        callers can see the engine obey ``mp.timelines``.

    Returns
    -------
    list of GroupResult or None
        One entry per plan of ``mp`` (None for hidden plans), each what
        ``evaluate_group(plan, ts, mask, columns)`` returns — except that a plan
        without SLIDE whose symbols have no instance in the group gets no row, as its
        own MATCH_AGGREGATE statement would give no row for such a partition.

    Raises
    ------
    InputDataError, CountOverflowError
        As :func:`udafs.kernels.evaluate_group`.
    """
    first = mp.plans[0]
    ts, mask, cols = validate(first, ts, mask, columns)
    union = 0
    for p in mp.plans:
        union |= p.pattern_symbols_mask
    ts, mask, cols = _sorted(ts, mask, cols, union)
    present = int(np.bitwise_or.reduce(mask)) if len(mask) else 0
    done: dict[int, Evaluated] = {}
    rows = _RowCounts(mask)
    if options.share_prefixes:
        done = _shared_timelines(mp, ts, mask, present, options, ran, rows)
    blocks = _BlockTimelines(mp, ts, mask, rows)

    def evaluated(i: int) -> Evaluated:
        if i not in done:
            plan, parts = mp.plans[i], mp.derived[i]
            if parts is not None:
                done[i] = _derive(mp, i, evaluated)
            elif mp.hidden[i] and any(not present >> el.symbol & 1 for el in plan.elements if not el.optional):
                done[i] = _no_match(plan, ts, mask)  # a part that cannot match: zeros, same windows
            else:
                done[i] = _evaluate(plan, ts, mask, cols, options, blocks)
        return done[i]

    out: list[GroupResult | None] = []
    for i, plan in enumerate(mp.plans):
        if mp.hidden[i]:
            out.append(None)
            continue
        if not present & plan.pattern_symbols_mask:  # as its own statement: no row for this group
            out.append(_no_rows(plan))
            continue
        parts, starts = evaluated(i)
        values, valid = finalize(plan, parts)
        ends = None if starts is None else starts + plan.within
        out.append(GroupResult(starts, ends, tuple(values), tuple(valid)))
    return out


def _shared_timelines(mp: MultiPlan, ts: np.ndarray, mask: np.ndarray, present: int, options: KernelOptions,
                      ran: list[SharedTimeline] | None, rows: _RowCounts) -> dict[int, Evaluated]:
    """Plans evaluated together on one timeline (:func:`udafs.kernels.multiplan.pretree.evaluate_shared`):
    those of ``mp.timelines``, the decision made before the pass, as given; for a
    multi-plan without one, those :func:`udafs.timelines.choose_timelines` puts together
    from this group's rows. A plan with no row of its symbols here (it reports no row, or
    zeros as a hidden part) leaves its timeline; the others keep their cuts."""
    def evaluable(i: int) -> bool:
        plan = mp.plans[i]
        if mp.derived[i] is not None or not present & plan.pattern_symbols_mask or plan.quantified:
            return False  # a quantified plan runs as the union of its plain classes (_evaluate)
        return not (mp.hidden[i] and any(not present >> el.symbol & 1 for el in plan.elements))

    timelines = mp.timelines
    if timelines is None:
        timelines = choose_timelines(mp.plans, rows, candidates=[i for i in range(len(mp.plans)) if evaluable(i)])
    done: dict[int, Evaluated] = {}
    for timeline in timelines:
        kept = [(i, k) for i, k in zip(timeline.members, timeline.cuts) if evaluable(i)]
        if not kept:
            continue
        members = tuple(i for i, _ in kept)
        plans = [mp.plans[i] for i in members]
        cuts = tuple(k for _, k in kept) if options.share_suffixes else tuple(p.length - 1 for p in plans)
        shared = with_fallback(plans[0], lambda ar: pretree.evaluate_shared(plans, ts, mask, ar, cuts), options)
        done.update(zip(members, shared))
        if ran is not None:
            ran.append(SharedTimeline(members, cuts))
    return done


def _sorted(ts: np.ndarray, mask: np.ndarray, cols: list[Column],
            union: int) -> tuple[np.ndarray, np.ndarray, list[Column]]:
    """Rows of any plan's symbols, by time (one stable argsort for all plans)."""
    keep = (mask & union) != 0
    if not keep.all():
        ts, mask = ts[keep], mask[keep]
        cols = [(v[keep], ok[keep]) for v, ok in cols]
    if len(ts) > 1 and (ts[1:] < ts[:-1]).any():
        order = np.argsort(ts, kind="stable")
        ts, mask = ts[order], mask[order]
        cols = [(v[order], ok[order]) for v, ok in cols]
    return ts, mask, cols


class _BlockTimelines:
    """The time-block timelines (:func:`udafs.kernels.counting.within.block_timeline`) of one
    group's rows, one per WITHIN length, shared by the plans that run WITHIN without
    SLIDE: each plan's passes read only its own symbols' rows, and every per-symbol
    index the timeline caches (row lists, prefix counts, predecessor ranges, next-block
    ranges, the reversed twin) is built once for all of them instead of once per plan,
    and so is every pass of a pattern part that several plans share (``keeps_passes``).

    Sharing pays when the plans together hold at least as many rows as the group
    (each alone would build its indexes over its own rows): :meth:`for_plan` gives a
    plan the shared timeline only then, and None otherwise (the plan runs alone)."""

    def __init__(self, mp: MultiPlan, ts: np.ndarray, mask: np.ndarray, rows: _RowCounts) -> None:
        self._ts, self._mask = ts, mask
        self._built: dict[int, Timeline] = {}
        self._gathered: dict[tuple[int, tuple[int, ...]], list[Column]] = {}
        own: dict[int, int] = {}  # WITHIN length -> rows of every blocked plan, summed
        for i, plan in enumerate(mp.plans):
            if mp.derived[i] is None and blocked(plan):
                own[plan.window] = own.get(plan.window, 0) + rows(plan.pattern_symbols_mask)
        self._shared = {w for w, rows in own.items() if rows >= len(ts)}

    def for_plan(self, plan: Plan) -> Timeline | None:
        if not blocked(plan) or plan.window not in self._shared:
            return None
        if plan.window not in self._built:
            timeline = within.block_timeline(self._ts, self._mask, plan.window)
            timeline.keeps_passes = True  # plans sharing a prefix or suffix share its passes
            self._built[plan.window] = timeline
        return self._built[plan.window]

    def columns_at(self, plan: Plan, symbols: set[int], rows: np.ndarray, cols: list[Column]) -> list[Column]:
        """``cols`` at ``rows``, the slots of a tally of ``plan`` on its shared timeline (the rows
        of its measured ``symbols``), gathered once for all plans measuring the same symbols."""
        key = (plan.window, tuple(sorted(symbols)))
        if key not in self._gathered:
            self._gathered[key] = [(v[rows], ok[rows]) for v, ok in cols]
        return self._gathered[key]


def _evaluate(plan: Plan, ts: np.ndarray, mask: np.ndarray, cols: list[Column], options: KernelOptions,
              blocks: _BlockTimelines) -> Evaluated:
    if plan.extended:  # strategies and cross-event predicates (no contiguity sequence here)
        return extended.evaluate_extended(plan, ts, mask, cols, None, options)
    timeline = blocks.for_plan(plan)
    if timeline is not None:  # the group's rows as they are, on the shared block timeline
        def one(p: Plan, ar: Arith) -> list[Partial]:  # a plain plan, or one class of a quantified plan
            symbols = measure_symbols(p)
            tally = within.within_blocks(p, ts, mask, ar, symbols, timeline=timeline)
            return partials(p, tally, blocks.columns_at(p, symbols, tally.rows, cols), ar, gathered=True)

        def on_blocks(ar: Arith) -> Evaluated:
            return quantifiers.each(plan, lambda p: one(p, ar)), None

        return with_fallback(plan, on_blocks, options)
    ts, mask, cols = sorted_instances(plan, ts, mask, cols)  # a filter: the rows are sorted already

    def attempt(ar: Arith) -> Evaluated:  # a quantified plan: the union of its classes on the same rows
        if plan.slide is not None:  # quantified plans too: the classes share each batch of windows
            return paths.sliding(plan, ts, mask, cols, ar)
        return quantifiers.each(plan, lambda p: partials(p, tally(p, ts, mask, ar), cols, ar)), None

    return with_fallback(plan, attempt, options)


def _no_rows(plan: Plan) -> GroupResult:
    """A result with no output row (a group holding no instance of the plan's symbols)."""
    empty = np.zeros(0, dtype=np.int64)
    bounds = None if plan.slide is None else empty
    return GroupResult(bounds, bounds, tuple(empty for _ in plan.measures), tuple(empty.astype(bool)
                                                                                for _ in plan.measures))


def _no_match(plan: Plan, ts: np.ndarray, mask: np.ndarray) -> Evaluated:
    """Partials of a plan that has no match: one zero row, or with SLIDE zeros in each
    window holding an instance of its symbols (the windows it would report)."""
    starts = None
    if plan.slide is not None:
        mine = ts[(mask & plan.pattern_symbols_mask) != 0]
        within, slide = plan.sliding
        starts = sliding_windows(mine, within, slide) * slide
    n = 1 if starts is None else len(starts)

    def zero(m: Measure) -> Partial:
        floats = m.column is not None and plan.columns[m.column] is ValueType.FLOAT
        return Partial(np.zeros(n, dtype=np.float64 if floats else np.int64), np.zeros(n, dtype=np.int64))

    return [zero(m) for m in plan.measures], starts


def _derive(mp: MultiPlan, i: int, evaluated) -> Evaluated:  # noqa: ANN001 - Callable[[int], Evaluated]
    """Plan ``i``'s partials from its parts' (disjoint match sets), aligned by field and window."""
    target = mp.plans[i]
    parts = mp.derived[i]
    if parts is None:
        raise PlanError(f"plan {i} of the E-Cube is evaluated, not derived")
    results = [(j, *evaluated(j)) for j in parts]
    starts = None
    if target.slide is not None:
        starts = np.unique(np.concatenate([s for _, _, s in results])).astype(np.int64)
    total: list[Partial] | None = None
    for j, parts, part_starts in results:
        by_field = {f: p for f, p in zip(mp.slots[j], parts)}
        aligned = [by_field[f] for f in mp.slots[i]]
        if starts is not None:
            at = np.searchsorted(starts, part_starts)
            aligned = [_spread(p, at, len(starts)) for p in aligned]
        total = aligned if total is None else combine(target, total, aligned)
    assert total is not None
    return total, starts


def _spread(p: Partial, at: np.ndarray, n: int) -> Partial:
    """A partial over some windows placed onto ``n`` windows (nn = 0 elsewhere: no match)."""
    value = np.zeros(n, dtype=p.value.dtype)
    nn = np.zeros(n, dtype=p.nn.dtype)
    value[at], nn[at] = p.value, p.nn
    return Partial(value, nn)


__all__ = ["evaluate_many"]
