"""Funnel steps: ``STEPS(*)`` and ``MAX_STEP()`` from the counts of every prefix of the pattern.

SEMANTICS section 10: the i-th prefix keeps E1..Ei, the negations between two of them,
the leading negation, and the trailing negation only when i = n; it is evaluated under
the same WITHIN, SLIDE windows and strategy. ``STEPS(*)`` is the array of the n prefix
counts (the n-th is ``COUNT(*)``), ``MAX_STEP()`` the largest i with a non-zero count.

Both measures share one partial per output row: the ``(rows, n)`` array of prefix
counts, which adds up over disjoint match sets like any count. ``MAX_STEP()`` is read
from it only when finalised (:func:`udafs.kernels.values.measures.finalize`).

Without a window (and without predicates or a strategy) one forward pass gives every
prefix count (:func:`one_pass_counts`). Otherwise each prefix is evaluated as a plan of
its own (:func:`prefix_plan`) on the rows sorted
once, by the same dispatch as every plan (``group_partials``), so every path the
grouped engine takes (no window, WITHIN blocks, SLIDE, edge negation, Kleene, ties,
predicates and strategies) counts the prefixes too, each in its own number system.
With SLIDE a prefix's windows are among the whole pattern's (its symbols are a subset);
a window it does not report holds no match of it.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import numpy as np

from udafs.errors import PlanError
from udafs.kernels.counting.passes import forward
from udafs.kernels.counting.pattern import Pattern
from udafs.kernels.counting.timeline import Timeline
from udafs.kernels.options import KernelOptions
from udafs.kernels.values.arith import Arith, Kind, Overflow
from udafs.kernels.values.measures import Column, Partial
from udafs.plan import Measure, MeasureKind, Plan

COUNT_ONLY = (Measure(MeasureKind.COUNT_STAR, name="count"),)

#: ``group_partials``'s signature: (plan, ts, mask, cols, windows, seq, options) -> (partials, starts).
Evaluator = Callable[..., tuple[list[Partial], "np.ndarray | None"]]


def prefix_plan(plan: Plan, i: int) -> Plan:
    """The i-th prefix of ``plan``'s pattern (1 <= i <= n) as a COUNT(*) plan.

    >>> from udafs.plan import Element
    >>> p = Plan(("A", "B", "N"), (Element(0), Element(1)), (4, 4, 4), within=10)
    >>> prefix_plan(p, 1).describe()
    'SEQ(!N, A)'
    >>> prefix_plan(p, 2).describe()
    'SEQ(!N, A, !N, B, !N)'
    """
    n = plan.length
    if not 1 <= i <= n:
        raise PlanError(f"prefix {i} of a pattern of {n} positive elements; prefixes are 1..{n}")
    if plan.elements[0].optional:  # Plan validation refuses funnel measures on such patterns
        raise PlanError(f"prefix {i} of {plan.describe()} starts with an optional element; the prefixes of a "
                        "funnel start with an element that binds a row")
    return dataclasses.replace(
        plan, elements=plan.elements[:i], negations=(*plan.negations[:i], plan.negations[n] if i == n else 0),
        measures=COUNT_ONLY,
        predicates=tuple(p for p in plan.predicates if p.left < i and p.right < i),
        iterator_predicates=tuple(q for q in plan.iterator_predicates if q.element < i))


def without_funnel(plan: Plan) -> Plan:
    """``plan`` with every STEPS / MAX_STEP measure read as COUNT(*) (the n-th prefix count)."""
    return dataclasses.replace(plan, measures=tuple(
        Measure(MeasureKind.COUNT_STAR, name=m.name) if m.kind.funnel else m for m in plan.measures))


def funnel_partials(plan: Plan, ts: np.ndarray, mask: np.ndarray, cols: list[Column],
                    windows: tuple[int, int] | None, seq: np.ndarray | None, options: KernelOptions,
                    evaluate: Evaluator) -> tuple[list[Partial], np.ndarray | None]:
    """The partials of ``plan`` (which measures STEPS or MAX_STEP) and its window starts.

    ``evaluate`` is the engine's dispatch (``evaluate.group_partials``): it gives the
    whole plan's other measures and its COUNT(*), and the count of every shorter prefix.
    """
    if options.int64_first and all(m.kind.funnel or m.kind is MeasureKind.COUNT_STAR for m in plan.measures):
        steps = one_pass_counts(plan, ts, mask)
        if steps is not None:
            return [Partial(steps, steps) if m.kind.funnel else Partial(steps[:, -1], steps[:, -1])
                    for m in plan.measures], None
    core = without_funnel(plan)
    parts, starts = evaluate(core, ts, mask, cols, windows, seq, options)
    last = next(p.value for m, p in zip(plan.measures, parts) if m.kind.funnel)
    counts = [_single_rows(plan, mask, starts) if i == 1 and _single_rows_suffice(plan) else
              _aligned(evaluate(prefix_plan(plan, i), ts, mask, cols, windows, seq, options), starts)
              for i in range(1, plan.length)]
    steps = _stack([*counts, last])
    return [Partial(steps, steps) if m.kind.funnel else p for m, p in zip(plan.measures, parts)], starts


def one_pass_counts(plan: Plan, ts: np.ndarray, mask: np.ndarray) -> np.ndarray | None:
    """Every prefix count of a plain plan without a window from one forward pass over the
    sorted rows: the forward count of position i at a row is the number of matches of the
    prefix E1..Ei ending there (passes.py), so the prefix count is its sum. In checked int64;
    None for plans this does not cover (a window, predicates or a strategy) and on overflow,
    where the prefixes are evaluated one by one with the engine's exact fallback (whose
    pruning of partial matches that complete no whole match would change prefix counts)."""
    if plan.within is not None or plan.extended or plan.uncertain is not None or plan.quantified or not len(ts):
        return None
    ar = Arith(Kind.INT)
    try:
        fw = forward(Timeline(ts, mask, np.array([0, len(ts)])), Pattern.of(plan), ar)
        return np.array([[ar.total(f) for f in fw]], dtype=np.int64)
    except Overflow:
        return None


def _single_rows_suffice(plan: Plan) -> bool:
    """Whether the first prefix's matches are simply the instances of E1: one row (not
    Kleene), no leading negation, no strategy or predicate, one output row (no SLIDE); a
    single row spans 0 < WITHIN."""
    return not (plan.elements[0].kleene or plan.elements[0].quantified or plan.negations[0] or plan.extended
                or plan.slide is not None)


def _single_rows(plan: Plan, mask: np.ndarray, starts: np.ndarray | None) -> np.ndarray:
    """The first prefix's count when :func:`_single_rows_suffice`: E1's instances."""
    assert starts is None, "one output row"
    return np.array([np.count_nonzero(mask & (1 << plan.elements[0].symbol))], dtype=np.int64)


def _aligned(result: tuple[list[Partial], np.ndarray | None], starts: np.ndarray | None) -> np.ndarray:
    """A prefix's counts on the whole pattern's output rows (0 in windows it does not report)."""
    parts, own = result
    value = parts[0].value
    if starts is None or own is None:
        return value
    at = np.searchsorted(starts, own)
    if len(own) and (at.max() >= len(starts) or (starts[at] != own).any()):
        raise AssertionError("a prefix reported a window that the whole pattern does not")
    out = np.zeros(len(starts), dtype=value.dtype)
    out[at] = value
    return out


def _stack(columns: list[np.ndarray]) -> np.ndarray:
    """The ``(rows, n)`` array of prefix counts: int64 or float64 when every count is,
    else exact Python ints (the prefixes fell back to different number systems)."""
    kinds = {c.dtype.kind for c in columns}
    if kinds <= {"i"} or kinds <= {"f"}:
        return np.column_stack(columns)
    if "f" in kinds:  # COUNT TYPE DOUBLE: int64 prefixes next to float fallbacks
        return np.column_stack([c.astype(np.float64) for c in columns])
    return np.column_stack([c.astype(object) for c in columns])


