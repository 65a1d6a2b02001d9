"""The physical plan of a sharing group's pass: which members share a timeline, and where each is cut.

A sharing group's members (:mod:`sql_rewrites.generation.shared`) run in one engine call per
partition. Inside that call, COUNT(*) members of one window shape may be evaluated
together on one timeline, common prefixes and suffixes counted once
(:mod:`udafs.kernels.multiplan.pretree`). Whether that pays depends on the data: a timeline of
everybody's rows builds every symbol's row list over all of them. :func:`plan_timelines`
decides it here, once, from the rows per symbol the group's statistics job counts
(``sparkseq.running.statistics.collect``, :func:`sql_rewrites.generation.shared.statistics_sql`), by the cost
model of :mod:`udafs.timelines`, and puts the decision into the group's
:class:`~udafs.multiplan.MultiPlan` (``timelines``): the engine runs it as given and
EXPLAIN WORKLOAD prints it (:func:`describe_timelines`).

The rows of a set of symbols are estimated as the sum of its symbols' rows: exact for
``TYPE BY`` (each row is of one type), an over-estimate where DEFINE conditions overlap.

Pure: a group and statistics in, a group whose plan carries the decision out.
"""

from __future__ import annotations

import dataclasses

from sql_rewrites.generation.shared import SharedGroup, symbol_keys
from sql_rewrites.planning.symbol_statistics import SymbolStatistics
from udafs.plan import Plan
from udafs.timelines import (
    SharedTimeline,
    alone_cost,
    blocked,
    choose_timelines,
    needs_rows,
    shape_of,
    shared_prefixes,
    shared_suffixes,
    timeline_cost,
)


class SymbolRows:
    """Rows per symbol of a group over all its partitions, from its statistics."""

    def __init__(self, group: SharedGroup, statistics: SymbolStatistics) -> None:
        self.per_symbol = tuple(statistics.rows_of(key) for key in symbol_keys(group))
        self.calls = statistics.partitions

    def __call__(self, symbols: int) -> float:
        """Rows of the symbols of a mask (bit k: symbol k)."""
        return sum(rows for k, rows in enumerate(self.per_symbol) if symbols >> k & 1)


def needs_statistics(group: SharedGroup) -> bool:
    """Whether :func:`plan_timelines` needs the group's statistics: only when two or more
    members could share a timeline."""
    return needs_rows(group.plan.plans)


def plan_timelines(group: SharedGroup, statistics: SymbolStatistics | None) -> SharedGroup:
    """``group`` with its plan's shared timelines decided (module docstring);
    ``statistics`` may be None only when :func:`needs_statistics` is False."""
    plans = group.plan.plans
    if statistics is None:
        if needs_rows(plans):
            raise ValueError("deciding the shared timelines of this group needs its statistics")
        timelines: tuple[SharedTimeline, ...] = ()
    else:
        rows = SymbolRows(group, statistics)
        timelines = choose_timelines(plans, rows, calls=rows.calls)
    return dataclasses.replace(group, plan=dataclasses.replace(group.plan, timelines=timelines))


def describe_statistics(statistics: SymbolStatistics) -> str:
    """What the decision was made from, for EXPLAIN."""
    read = "all rows" if statistics.sampled == 1 else f"a sample of about one row in {round(1 / statistics.sampled):,}"
    calls = statistics.partitions
    job = "an earlier run's statistics job over the same unchanged source" if statistics.reused else \
        "the statistics job"
    return f"rows per symbol from {job} ({read}), {calls:,} partition{'' if calls == 1 else 's'}"


def describe_timelines(group: SharedGroup, statistics: SymbolStatistics | None,
                       numbers: tuple[int, ...] | None = None) -> list[str]:
    """EXPLAIN's lines for the decision in ``group.plan.timelines`` (as :func:`plan_timelines`
    made it from ``statistics``): each shared timeline with its members, cuts, estimated
    cost against the members alone, and the prefixes and suffixes it counts once; then the
    members counted one by one and why. ``numbers``: each plan's member number in the
    workload group (default: its index)."""
    plans = group.plan.plans
    timelines = group.plan.timelines or ()
    number = numbers or tuple(range(len(plans)))
    rows = None if statistics is None else SymbolRows(group, statistics)

    def named(indices: tuple[int, ...] | list[int]) -> str:
        return ", ".join(str(number[i]) for i in indices)

    lines = []
    for t, timeline in enumerate(timelines):
        members = [plans[i] for i in timeline.members]
        cost = ""
        if rows is not None:
            shared = timeline_cost(members, timeline.cuts, rows, rows.calls)
            alone = sum(alone_cost(p, rows, rows.calls) for p in members)
            cost = f"; estimated {shared:,.0f} row steps against {alone:,.0f} one by one"
        lines.append(f"timeline {t + 1}: members {named(timeline.members)} on one timeline{cost}")
        cuts = [(i, k) for i, k in zip(timeline.members, timeline.cuts) if k < plans[i].length - 1]
        if cuts:
            lines.append("  cut (Chop-Connect at one element): " + ", ".join(
                f"member {number[i]} after element {k + 1}" for i, k in cuts))
        prefixes = shared_prefixes(plans, timeline)
        lines += [f"  prefix counted once: {_prefix(p)} for members {named(who)}" for who, p in prefixes]
        suffixes = shared_suffixes(plans, timeline)
        lines += [f"  suffix counted once: {_suffix(p)} for members {named(who)}" for who, p in suffixes]
        if not prefixes and not suffixes:
            lines.append("  (no prefix or suffix common to two members: the timeline's per-symbol work is shared)")
    together = {i for timeline in timelines for i in timeline.members}
    unshapely = [i for i, p in enumerate(plans) if shape_of(p) is None]
    shapes = [shape_of(p) for p in plans]
    left = [i for i, shape in enumerate(shapes) if i not in together and shape is not None]
    costly = [i for i in left if shapes.count(shapes[i]) > 1]
    lonely = [i for i in left if shapes.count(shapes[i]) == 1]
    if costly:
        lines.append(f"members {named(costly)}: counted one by one (a shared timeline would cost more here)")
    if lonely:
        lines.append(f"members {named(lonely)}: counted one by one (alone in their window shape)")
    by_blocks = [i for i in unshapely if blocked(plans[i])]
    if by_blocks:
        lines.append(f"members {named(by_blocks)}: counted one by one (WITHIN without SLIDE: by time blocks), on "
                     "one block timeline per WITHIN length in each partition where their rows add up to at least "
                     "the partition's")
    others = [i for i in unshapely if not blocked(plans[i])]
    if others:
        lines.append(f"members {named(others)}: counted one by one (measures other than COUNT(*), strategies or "
                     "predicates)")
    return lines


def _prefix(plan: Plan) -> str:
    return f"{plan.describe()[:-1]}, ...)"


def _suffix(plan: Plan) -> str:
    return f"SEQ(..., {plan.describe()[4:]}"


__all__ = ["SymbolRows", "describe_statistics", "describe_timelines", "needs_statistics", "plan_timelines"]
