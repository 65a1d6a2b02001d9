"""Quantified and optional elements (``X{n,m}``, ``X{n}``, ``X{n,}``, ``X?``, ``X*``) as a
union of plain patterns (SEMANTICS section 10; docs/engine.md, "Quantified and optional
elements").

Every match of a quantified pattern binds each element to a set of a definite size, and
the sizes split the matches into disjoint classes, each the set of matches of one plain
pattern (only ``X`` and ``X+``):

* ``X{k}`` (exactly k rows, pairwise distinct timestamps, in time order) is ``X, X, ..., X``
  (k plain elements with no negation between them: each follows the one before in time);
* ``X{n,}`` is ``X`` n - 1 times, then ``X+`` (the set's first n - 1 rows, then the rest);
* ``X{n,m}`` is the union of ``X{k}`` for n <= k <= m;
* an optional element (``X?``, ``X*``, ``X{0,m}``) also takes the class that binds no row:
  the element is left out, and a negation's gap then lies between the nearest elements
  that remain; a middle negation with no remaining element on one side constrains nothing.
  The pattern's own leading / trailing negations stay leading / trailing (measured from the
  first / last bound row).

Measures read pair counts by *symbol* over every position of it, so ``COUNT(X)``,
``SUM(X.a)``, ... of the copies add up to the measure over the whole set, and a class that
leaves X out adds nothing to X's measures. The classes' partials combine exactly
(:func:`union`). The number of classes is the product over elements of their choices
(m - n + 1, plus one when optional); each is evaluated by the ordinary paths on the same
sorted rows, so ties, WITHIN, SLIDE, edge negation, count types and overflow are theirs.
"""

from __future__ import annotations

import itertools
from dataclasses import replace
from typing import Callable, Sequence

import numpy as np

from udafs.errors import PlanError
from udafs.kernels.values.measures import Partial, combine
from udafs.plan import Element, Measure, MeasureKind, Plan, Strategy

#: Most plain patterns one quantified pattern may expand into (the product of the elements'
#: choices); beyond it the plan is refused rather than evaluated for minutes.
MAX_CLASSES = 4096


def choices(el: Element) -> list[tuple[Element, ...]]:
    """The plain element runs one (possibly quantified) element stands for, one per size class."""
    if not el.quantified:
        return [(el,)]
    plain, plus = Element(el.symbol), Element(el.symbol, True)
    out: list[tuple[Element, ...]] = [()] if el.optional else []
    if not el.kleene:  # X?
        return out + [(plain,)]
    lo = max(el.min_rows, 1)
    if el.max_rows is None:  # X{n,}: n - 1 single rows, then the rest as a set
        return out + [(plain,) * (lo - 1) + (plus,)]
    return out + [(plain,) * k for k in range(lo, el.max_rows + 1)]


def class_count(plan: Plan) -> int:
    """How many plain patterns :func:`expand` gives for ``plan``."""
    total = 1
    for el in plan.elements:
        total *= len(choices(el))
    return total


def expand(plan: Plan) -> tuple[Plan, ...]:
    """The plain plans whose match sets partition the matches of ``plan`` (``(plan,)`` when
    no element is quantified or optional).

    Every plain plan keeps ``plan``'s symbols, window, count type and measure order; a
    measure whose symbol the class leaves out becomes a COUNT(*) placeholder, which
    :func:`union` skips (:func:`present`).

    Raises
    ------
    PlanError
        For more than :data:`MAX_CLASSES` classes, for predicates or selection strategies
        (their conditions are not unions over the classes: skip-till-next-match asks which
        row the *quantified* pattern could take next).

    Examples
    --------
    >>> from udafs.plan import Element, Plan
    >>> plan = Plan(symbols=("A", "B", "C", "N"), elements=(Element(0), Element(1, True, 2, 3), Element(2, False, 0)),
    ...             negations=(0, 0, 8, 0))
    >>> plan.describe()
    'SEQ(A, B{2,3}, !N, C?)'
    >>> [p.describe() for p in expand(plan)]
    ['SEQ(A, B, B)', 'SEQ(A, B, B, !N, C)', 'SEQ(A, B, B, B)', 'SEQ(A, B, B, B, !N, C)']
    """
    if not plan.quantified:
        return (plan,)
    refuse_extensions(plan)
    if (n_classes := class_count(plan)) > MAX_CLASSES:
        raise PlanError(f"{plan.describe()} stands for {n_classes} plain patterns (the product of the quantifiers' "
                        f"ranges); at most {MAX_CLASSES} are evaluated")
    return tuple(_plain(plan, runs) for runs in itertools.product(*map(choices, plan.elements)))


def refuse_extensions(plan: Plan) -> None:
    """PlanError for the extensions a quantified plan cannot be split into classes with:
    skip-till-next-match (it asks which row the *quantified* pattern could take next, not
    a class) and iterator predicates on a quantified element (its set spans several plain
    elements of a class). Contiguity strategies and cross-event predicates (on plain,
    non-optional elements: plan validation) hold class by class."""
    if not plan.quantified:
        return
    if plan.strategy is Strategy.SKIP_TILL_NEXT_MATCH:
        raise PlanError(f"{plan.describe()}: quantified and optional elements are not supported with the selection "
                        "strategy SKIP TILL NEXT MATCH yet")
    for q in plan.iterator_predicates:
        el = plan.elements[q.element]
        if el.quantified:
            raise PlanError(f"{plan.describe()}: iterator predicates on the quantified element "
                            f"{el.describe(plan.symbols[el.symbol])} are not supported yet (only on X+)")


def _plain(plan: Plan, runs: Sequence[tuple[Element, ...]]) -> Plan:
    """The plain plan binding element i to ``runs[i]`` (empty: left out)."""
    n = plan.length
    first_unit = list(itertools.accumulate((len(r) for r in runs), initial=0))  # unit index of each run
    elements = tuple(u for run in runs for u in run)
    negations = [0] * (len(elements) + 1)
    negations[0], negations[-1] = plan.negations[0], plan.negations[n]
    bound = [i for i, run in enumerate(runs) if run]
    for gap in range(1, n):
        left = [i for i in bound if i < gap]
        right = [i for i in bound if i >= gap]
        if plan.negations[gap] and left and right:  # between the nearest bound elements; else nothing
            negations[first_unit[right[0]]] |= plan.negations[gap]
    present_symbols = {u.symbol for u in elements}
    measures = tuple(m if m.symbol is None or m.symbol in present_symbols
                     else Measure(MeasureKind.COUNT_STAR, name=m.name) for m in plan.measures)
    # predicates name plain, non-optional elements and iterator predicates X+ (refuse_extensions):
    # each is one unit of every class, at its run's first unit
    predicates = tuple(replace(p, left=first_unit[p.left], right=first_unit[p.right]) for p in plan.predicates)
    iterators = tuple(replace(q, element=first_unit[q.element]) for q in plan.iterator_predicates)
    return replace(plan, elements=elements, negations=tuple(negations), measures=measures, predicates=predicates,
                   iterator_predicates=iterators)


def present(plan: Plan, part: Plan) -> list[bool]:
    """Per measure of ``plan``: does the class ``part`` (from :func:`expand`) compute it?"""
    return [m == n for m, n in zip(plan.measures, part.measures)]


def union(plan: Plan, parts: Sequence[Plan], results: Sequence[list[Partial]]) -> list[Partial]:
    """Partials of ``plan`` from the partials of its classes (disjoint match sets), exactly."""
    out: list[Partial | None] = [None] * len(plan.measures)
    for part, res in zip(parts, results):
        for j, (here, p) in enumerate(zip(present(plan, part), res)):
            if here:
                acc = out[j]
                out[j] = p if acc is None else _add(plan, j, acc, p)
    assert all(p is not None for p in out), "every measured symbol is bound in some class"
    return [p for p in out if p is not None]


def each(plan: Plan, partials_of: Callable[[Plan], list[Partial]]) -> list[Partial]:
    """``partials_of(plan)`` for a plain plan; for a quantified one the :func:`union` of
    ``partials_of`` over its classes (each evaluated on the same rows, so with the same
    output rows: the rows of every symbol of ``plan``)."""
    classes = expand(plan)
    if len(classes) == 1:
        return partials_of(classes[0])
    return union(plan, classes, [partials_of(p) for p in classes])


def _add(plan: Plan, j: int, a: Partial, b: Partial) -> Partial:
    """One measure's partials of two disjoint match sets: int64 while it surely fits, else
    :func:`measures.combine` (exact Python ints, extremes by Spark's order)."""
    kind = plan.measures[j].kind
    if kind not in (MeasureKind.MIN, MeasureKind.MAX) and all(_small(x) for x in (a.value, a.nn, b.value, b.nn)):
        return Partial(a.value + b.value, a.nn + b.nn)
    sub = replace(plan, measures=(plan.measures[j],))
    return combine(sub, [a], [b])[0]


def _small(x: np.ndarray) -> bool:
    """int64 values whose pairwise sums cannot wrap."""
    return x.dtype == np.int64 and (not len(x) or int(np.abs(x).max()) < 2**62)
