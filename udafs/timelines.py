"""Which plans of a multi-plan are counted together on one timeline, and where each is cut.

A *shared timeline* (:class:`SharedTimeline`) is a set of COUNT(*) plans of one window
shape (:func:`shape_of`) that :func:`udafs.kernels.multiplan.pretree.evaluate_shared` evaluates on
one timeline — the rows of any of their symbols, cut into the windows of any of them —
with every common prefix counted once (the PreTree) and, for plans cut after an element
(``cuts``), every common suffix counted once backwards and connected at that element
(Chop-Connect at one element). Exactness does not depend on the choice: any grouping of
plans of one shape and any cuts give each plan's own counts (tests/test_kernel_pretree.py).
Only the cost does, and this module chooses by the cost model below.

The choice is made once, before the pass, from row counts per symbol:
:func:`choose_timelines` takes a function giving the rows of any set of symbols. The
compiler calls it at plan time with the counts of the group's statistics job
(:mod:`sql_rewrites.planning.timeline_plan`) and the decision travels in the
:class:`~udafs.multiplan.MultiPlan`; the kernel calls it per partition, with that
partition's counts, only for multi-plans that carry no decision (E-Cube's).

Cost model (units: one *row step* — one row of a symbol's row list taking part in one
step of a forward pass; the constants are fitted by ``bench/sharing.py --calibrate``):

* a timeline of ``R`` rows over ``S`` symbols costs ``R x (TIMELINE_WORK + SYMBOL_WORK x S)``:
  the window rows replicated once and every symbol's row list copied from its own base
  rows (together about ``R``), plus per symbol one count per window (the small ``S`` term;
  before row lists were built from each symbol's own rows it was a scan and a prefix sum
  of the whole timeline per symbol, and dominated); a timeline with cut plans builds its
  reversed twin's row lists too (one more ``SYMBOL_WORK x R`` per symbol of the suffixes);
* each node of the prefix trie and of the suffix trie (one step of a pass: an exclusive
  cumulative sum of the previous counts and a gather at the predecessor ranges) costs the
  rows of its symbol, and each plan's last sum over its cut element's rows the same;
* each timeline costs ``CALL_WORK`` per engine call (per partition): its windows, its
  batches and their fixed numpy overheads;
* each plan on it costs ``MEMBER_WORK`` per engine call: its own windows, partials and
  result arrays.

Under SLIDE every row term is multiplied by WITHIN / SLIDE (each row is on the timeline
once per window holding it).

A plan alone is the same formula over its own symbols, rows and steps. Plans of one shape
share a timeline, cut where :func:`choose_cuts` says or not cut at all, whichever the
model finds cheaper, when its cost is at most the sum of theirs alone; else the plans of that
shape that start alike (same first two elements: at least one common step) are tried the
same way; the rest run alone.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from udafs.errors import PlanError
from udafs.plan import MeasureKind, Plan

#: Rows of the symbols of a mask (bit k: symbol k) in the data the choice is for.
Rows = Callable[[int], float]

# The constants, in row steps, are fitted by ``bench/sharing.py --calibrate`` (non-negative
# least squares of the engine's measured seconds on the model's terms, relative errors): 368
# observations — each member alone and random sets of 2 to all members on one timeline, for
# the 20- and 60-query groups of bench/sharing.py's routes and funnels (2 M events, 200 keys,
# WITHIN 10 min SLIDE 1 min), on whole partitions and on their first 30 rows — gave, with
# each symbol's row list built from its own rows (:class:`udafs.kernels.counting.segments.RangeTimeline`),
# 15.5 ns per row step, TIMELINE_WORK 4.57, SYMBOL_WORK 0.036, CALL_WORK 15,339, MEMBER_WORK
# 21,201; relative error median 23.0 %, max 82.8 % (a loaded machine; docs/sharing.md).

#: Work per timeline row, independent of symbols (window replication, the row lists' copies).
TIMELINE_WORK = 4.6
#: Work per timeline row and symbol (what is left per symbol: one count per window and symbol).
SYMBOL_WORK = 0.036
#: Work per timeline and engine call (partition): windows, batches, fixed numpy overheads.
CALL_WORK = 15_000.0
#: Work per plan and engine call: its own windows, partials and result arrays.
MEMBER_WORK = 21_000.0


class Shape(NamedTuple):
    """What plans must share to be evaluated on one timeline: their windows."""

    within: int | None
    slide: int | None


def shape_of(plan: Plan) -> Shape | None:
    """The plan's window shape, or None when it cannot share a timeline: measures other
    than COUNT(*) need per-row pair counts, WITHIN without SLIDE evaluates by blocks,
    strategies and predicates take their own paths, and so do quantified and optional
    elements (a union of plain patterns: :mod:`udafs.kernels.counting.quantifiers`)."""
    if plan.extended or plan.quantified or any(m.kind is not MeasureKind.COUNT_STAR for m in plan.measures):
        return None
    if plan.within is not None and plan.slide is None:
        return None
    if plan.within is None and plan.has_edge_negation:
        return None
    return Shape(plan.within, plan.slide)


def blocked(plan: Plan) -> bool:
    """WITHIN without SLIDE, evaluated by time blocks (:mod:`udafs.kernels.counting.within`). Such
    plans of one engine call never share a pass, but they share one block timeline per
    WITHIN length (:mod:`udafs.kernels.multiplan.many`: its per-symbol indexes are built once) in a
    group where their own rows add up to at least the group's rows."""
    return plan.within is not None and plan.slide is None and not plan.extended and plan.uncertain is None


@dataclass(frozen=True)
class SharedTimeline:
    """Plans (indices into a multi-plan's plans) evaluated together on one timeline, and
    per plan the element after which it is cut (its last element: not cut)."""

    members: tuple[int, ...]
    cuts: tuple[int, ...]

    def __post_init__(self) -> None:
        if not self.members or len(self.cuts) != len(self.members):
            raise PlanError(f"a shared timeline needs members and one cut each, got {self.members}, {self.cuts}")
        if len(set(self.members)) != len(self.members):
            raise PlanError(f"a shared timeline names a plan twice: {self.members}")

    def check(self, plans: Sequence[Plan]) -> None:
        """Raise :class:`PlanError` unless every member is a plan of ``plans`` of one shape
        and every cut an element of its plan."""
        shapes = set()
        for i, k in zip(self.members, self.cuts):
            if not 0 <= i < len(plans):
                raise PlanError(f"a shared timeline names plan {i}; there are {len(plans)}")
            shape = shape_of(plans[i])
            if shape is None:
                raise PlanError(f"plan {i} cannot share a timeline (measures other than COUNT(*), WITHIN "
                                "without SLIDE, or a strategy or predicates)")
            shapes.add(shape)
            if not 0 <= k < plans[i].length:
                raise PlanError(f"plan {i} is cut after element {k}; it has {plans[i].length}")
        if len(shapes) > 1:
            raise PlanError(f"the plans {self.members} of a shared timeline have different windows")

    def to_list(self) -> list[list[int]]:
        """``[members, cuts]`` (the multi-plan's JSON)."""
        return [list(self.members), list(self.cuts)]

    @staticmethod
    def from_list(doc: list) -> SharedTimeline:
        """Inverse of :meth:`to_list`."""
        members, cuts = doc
        return SharedTimeline(tuple(int(i) for i in members), tuple(int(k) for k in cuts))


def prefix_steps(plan: Plan) -> tuple:
    """The plan's path in the PreTree: leading negation, then (gap, symbol, Kleene) per element."""
    first = ((plan.negations[0], plan.elements[0].symbol, plan.elements[0].kleene),)
    return first + tuple((g, e.symbol, e.kleene) for g, e in zip(plan.negations[1:-1], plan.elements[1:]))


def suffix_steps(plan: Plan) -> tuple:
    """The plan's path in the trie of suffixes, from its end: trailing negation, then
    (gap, symbol, Kleene) from the last element back to the first."""
    els, negs, n = plan.elements, plan.negations, plan.length
    first = ((negs[-1], els[-1].symbol, els[-1].kleene),)
    return first + tuple((negs[j + 1], els[j].symbol, els[j].kleene) for j in range(n - 2, -1, -1))


def suffix_key(plan: Plan, k: int) -> tuple:
    """The suffix after element k in the reversed trie: :func:`suffix_steps` down to
    element k+1, then the step into element k's rows."""
    return suffix_steps(plan)[:plan.length - 1 - k] + ((plan.negations[k + 1], plan.elements[k].symbol, -1),)


def _nodes(plan: Plan, k: int) -> list[tuple]:
    """The trie nodes (one pass step each) a plan cut after element ``k`` walks."""
    fwd, rev = prefix_steps(plan), suffix_steps(plan)
    nodes = [("F", fwd[:j + 1]) for j in range(k + 1)]
    if k < plan.length - 1:
        nodes += [("B", rev[:j + 1]) for j in range(plan.length - 1 - k)] + [("B", suffix_key(plan, k))]
    return nodes


def _suffix_symbols(plans: Sequence[Plan], cuts: Sequence[int]) -> set[int]:
    """Symbols whose row lists a timeline's reversed twin builds."""
    return {el.symbol for p, k in zip(plans, cuts) if k < p.length - 1 for el in p.elements[k:]}


def choose_cuts(plans: Sequence[Plan]) -> tuple[int, ...]:
    """Per plan, the element after which it is cut (its last element: not cut), chosen so
    that the prefix trie and the suffix trie together hold the fewest nodes — each node is
    one step of a pass over its symbol's rows. Each plan starts at the cut whose nodes,
    each spread over the plans that could use it, cost least; then two greedy sweeps move
    single plans to the cut that adds the fewest nodes. Ties keep a plan uncut (or cut
    later), and no plan is cut unless the nodes saved exceed the symbols whose row lists
    the reversed timeline needs. Depends on the plans only."""
    return _choose_cuts(tuple(plans))


@functools.lru_cache(maxsize=64)
def _choose_cuts(plans: tuple[Plan, ...]) -> tuple[int, ...]:
    options = [[_nodes(p, k) for k in range(p.length)] for p in plans]
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
    uncut = {node for per_k in options for node in per_k[-1]}
    chosen = {node for i, per_k in enumerate(options) for node in per_k[cut[i]]}
    if len(chosen) + len(_suffix_symbols(plans, cut)) >= len(uncut):  # also when nothing is cut
        return tuple(p.length - 1 for p in plans)
    return tuple(cut)


class CostTerms(NamedTuple):
    """The cost model's terms of evaluating some plans on one timeline (module docstring):
    row steps, timeline rows, timeline rows x symbols (both times the window copies),
    engine calls, and plan evaluations (plans x engine calls)."""

    steps: float
    rows: float
    symbol_rows: float
    calls: float
    evaluations: float

    @property
    def cost(self) -> float:
        """The work in row steps under this module's constants."""
        return (self.steps + TIMELINE_WORK * self.rows + SYMBOL_WORK * self.symbol_rows + CALL_WORK * self.calls
                + MEMBER_WORK * self.evaluations)


def cost_terms(plans: Sequence[Plan], cuts: Sequence[int], rows: Rows, calls: int = 1) -> CostTerms:
    """The terms of evaluating ``plans`` (one shape) on one timeline with ``cuts`` over
    ``calls`` engine calls holding ``rows``."""
    union = 0
    for p in plans:
        union |= p.pattern_symbols_mask
    symbols = union.bit_count() + len(_suffix_symbols(plans, cuts))
    nodes = {node for p, k in zip(plans, cuts) for node in _nodes(p, k)}
    steps = sum(rows(1 << node[-1][1]) for _, node in nodes)
    steps += sum(rows(1 << p.elements[k].symbol) for p, k in zip(plans, cuts))
    first = plans[0]  # one shape: with SLIDE each row is on the timeline once per window holding it
    copies = 1.0 if first.slide is None or first.within is None else first.within / first.slide
    timeline = rows(union) * copies
    return CostTerms(steps * copies, timeline, timeline * symbols, float(calls), float(len(plans) * calls))


def timeline_cost(plans: Sequence[Plan], cuts: Sequence[int], rows: Rows, calls: int = 1) -> float:
    """Estimated work of evaluating ``plans`` on one timeline with ``cuts`` (module
    docstring), in row steps, over ``calls`` engine calls holding ``rows``."""
    return cost_terms(plans, cuts, rows, calls).cost


def alone_cost(plan: Plan, rows: Rows, calls: int = 1) -> float:
    """Estimated work of evaluating ``plan`` on its own timeline (:func:`timeline_cost`)."""
    return timeline_cost([plan], [plan.length - 1], rows, calls)


def choose_timelines(plans: Sequence[Plan], rows: Rows, *, calls: int = 1,
                     candidates: Sequence[int] | None = None) -> tuple[SharedTimeline, ...]:
    """The shared timelines of two or more plans among ``candidates`` (indices into
    ``plans``; default all) that the cost model prefers to evaluating them alone
    (module docstring); ``rows`` gives the rows of a symbol mask over ``calls`` engine
    calls. Plans in no timeline run alone."""
    by_shape: dict[Shape, list[int]] = {}
    for i in range(len(plans)) if candidates is None else candidates:
        shape = shape_of(plans[i])
        if shape is not None:
            by_shape.setdefault(shape, []).append(i)
    out: list[SharedTimeline] = []
    for members in by_shape.values():
        whole = _worth_sharing(plans, members, rows, calls)
        if whole is not None:
            out.append(whole)
            continue
        by_root: dict[tuple, list[int]] = {}
        for i in members:
            by_root.setdefault(prefix_steps(plans[i])[:2], []).append(i)
        out += [t for t in (_worth_sharing(plans, m, rows, calls) for m in by_root.values()) if t is not None]
    return tuple(out)


def _worth_sharing(plans: Sequence[Plan], members: list[int], rows: Rows, calls: int) -> SharedTimeline | None:
    if len(members) < 2:
        return None
    chosen = [plans[i] for i in members]
    uncut = tuple(p.length - 1 for p in chosen)
    cost, cuts = min((timeline_cost(chosen, c, rows, calls), c) for c in {uncut, choose_cuts(chosen)})
    if cost > sum(alone_cost(p, rows, calls) for p in chosen):
        return None
    return SharedTimeline(tuple(members), cuts)


def needs_rows(plans: Sequence[Plan]) -> bool:
    """Whether :func:`choose_timelines` depends on the rows at all: some window shape
    holds two or more plans."""
    shapes = [s for s in map(shape_of, plans) if s is not None]
    return len(shapes) != len(set(shapes))


def shared_prefixes(plans: Sequence[Plan], timeline: SharedTimeline) -> list[tuple[tuple[int, ...], Plan]]:
    """The prefixes a shared timeline counts once for several of its members: every
    deepest PreTree node of at least two elements common to two or more members, as
    (members, the prefix as a plan)."""
    nodes: dict[tuple, list[int]] = {}
    for i, k in zip(timeline.members, timeline.cuts):
        steps = prefix_steps(plans[i])[:k + 1]
        for d in range(2, len(steps) + 1):
            nodes.setdefault(steps[:d], []).append(i)
    widest_child: dict[tuple, int] = {}
    for node, who in nodes.items():
        widest_child[node[:-1]] = max(widest_child.get(node[:-1], 0), len(who))
    out = []
    for node, who in nodes.items():
        if len(who) > 1 and widest_child.get(node, 0) < len(who):
            p, d = plans[who[0]], len(node)
            out.append((tuple(who), Plan(symbols=p.symbols, elements=p.elements[:d], negations=(*p.negations[:d], 0))))
    return sorted(out, key=lambda x: x[0])


def shared_suffixes(plans: Sequence[Plan], timeline: SharedTimeline) -> list[tuple[tuple[int, ...], Plan]]:
    """The suffixes a shared timeline counts once for several of its members (from the
    cut element to the end), as (members, the suffix from the cut element as a plan)."""
    keys: dict[tuple, list[int]] = {}
    for i, k in zip(timeline.members, timeline.cuts):
        if k < plans[i].length - 1:
            keys.setdefault(suffix_key(plans[i], k), []).append(i)
    out = []
    for who in keys.values():
        if len(who) > 1:
            p, k = plans[who[0]], timeline.cuts[timeline.members.index(who[0])]
            out.append((tuple(who), Plan(symbols=p.symbols, elements=p.elements[k:],
                                         negations=(0, *p.negations[k + 1:]))))
    return sorted(out, key=lambda x: x[0])


__all__ = ["CALL_WORK", "MEMBER_WORK", "SYMBOL_WORK", "TIMELINE_WORK", "CostTerms", "Rows", "Shape", "SharedTimeline",
           "alone_cost", "blocked", "choose_cuts", "choose_timelines", "cost_terms", "needs_rows", "prefix_steps",
           "shape_of", "shared_prefixes", "shared_suffixes", "suffix_key", "suffix_steps", "timeline_cost"]
