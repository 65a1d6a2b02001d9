"""DOUBLE sums with NaN and infinities, for the evaluators that carry sums along partial matches.

SUM(X.a) over a DOUBLE column is the IEEE sum of a over the (match, row) pairs that
bind X (SEMANTICS section 5): a NaN in a bound row makes it NaN, +inf and -inf together
make it NaN, a row bound by no match changes nothing. Evaluators that carry running
sums of ``count · a`` (the streaming carry, :mod:`.carry`) or take differences of sums
(the time split's ``T1 - T0``, :mod:`.timesplit`) break this: a row with no partial
match still adds ``0 · NaN = NaN``, and a difference of sums turns an infinity into
``inf - inf = NaN``.

:func:`split` therefore hands such an evaluator a plan in which every summed DOUBLE
column is replaced by its finite part (non-finite values as 0) and three indicator
columns (1.0 where the value is NaN, +inf, -inf), each summed over the same pairs as
hidden measures; :func:`join` puts the IEEE result back together:
``finite + (+inf if some pair binds +inf) + (-inf if ...) + (NaN if ...)``. The
pair counts of the indicators are finite floats, so nothing non-finite ever enters
the carried sums, and the result does not depend on the order of summation.

Evaluators that sum ``pairs · a`` per slot directly (:mod:`.measures`) need none of
this: they skip slots no match binds.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from udafs.kernels.values.measures import Column, Partial
from udafs.plan import Measure, MeasureKind, Plan, ValueType

#: The indicator columns after a summed DOUBLE column's finite part, in this order.
KINDS = ("nan", "+inf", "-inf")
_SUMMED = (MeasureKind.SUM, MeasureKind.AVG)


class Split(NamedTuple):
    """A plan whose summed DOUBLE columns never hold a non-finite value.

    ``plan``: what the evaluator runs (the original measures first, each summed DOUBLE
    column replaced by its finite part, then the hidden indicator sums); ``sources``:
    per column of ``plan``, the original column and what it holds ("value", "finite" or
    one of :data:`KINDS`); ``indicators``: per original measure, the indices of its
    three indicator measures in ``plan`` (None for measures that need none).
    """

    plan: Plan
    sources: tuple[tuple[int, str], ...]
    indicators: tuple[tuple[int, int, int] | None, ...]


def split(plan: Plan) -> Split | None:
    """The split plan of ``plan``; None when no measure sums a DOUBLE column.

    >>> from udafs.plan import Element
    >>> plan = Plan(symbols=("A",), elements=(Element(0),), negations=(0, 0), columns=(ValueType.FLOAT,),
    ...             measures=(Measure(MeasureKind.SUM, 0, 0, "s"),))
    >>> s = split(plan)
    >>> s.sources, s.indicators
    (((0, 'value'), (0, 'finite'), (0, 'nan'), (0, '+inf'), (0, '-inf')), ((1, 2, 3),))
    """
    summed = sorted({m.column for m in plan.measures
                     if m.kind in _SUMMED and m.column is not None and plan.columns[m.column] is ValueType.FLOAT})
    if not summed:
        return None
    sources = [(c, "value") for c in range(len(plan.columns))]
    finite_of: dict[int, int] = {}
    for c in summed:
        finite_of[c] = len(sources)
        sources += [(c, "finite")] + [(c, kind) for kind in KINDS]
    measures = [dataclasses.replace(m, column=finite_of[m.column])
                if m.kind in _SUMMED and m.column in finite_of else m for m in plan.measures]
    indicators: list[tuple[int, int, int] | None] = []
    hidden: dict[tuple[int | None, int], int] = {}  # (symbol, finite column) -> first indicator measure
    for m in measures[:len(plan.measures)]:
        if m.kind not in _SUMMED or m.column is None or m.column not in finite_of.values():
            indicators.append(None)
            continue
        key = (m.symbol, m.column)
        if key not in hidden:
            hidden[key] = len(measures)
            measures += [Measure(MeasureKind.SUM, m.symbol, m.column + 1 + k, f"{m.name}:{kind}")
                         for k, kind in enumerate(KINDS)]
        first = hidden[key]
        indicators.append((first, first + 1, first + 2))
    columns = tuple(plan.columns[c] if what == "value" else ValueType.FLOAT for c, what in sources)
    return Split(dataclasses.replace(plan, columns=columns, measures=tuple(measures)), tuple(sources),
                 tuple(indicators))


def columns(s: Split, cols: Sequence[Column]) -> list[Column]:
    """The split plan's columns from the original plan's (NULLs stay NULL in every one)."""
    out: list[Column] = []
    for c, what in s.sources:
        vals, ok = cols[c]
        if what == "value":
            out.append((vals, ok))
            continue
        x = np.asarray(vals, dtype=np.float64)
        if what == "finite":
            out.append((np.where(np.isfinite(x), x, 0.0), ok))
        else:
            hit = np.isnan(x) if what == "nan" else x == (np.inf if what == "+inf" else -np.inf)
            out.append((hit.astype(np.float64), ok))
    return out


def join(s: Split, parts: Sequence[Partial]) -> list[Partial]:
    """The original plan's partials from the split plan's (the hidden sums dropped)."""
    out = []
    for p, hidden in zip(parts[:len(s.indicators)], s.indicators):
        if hidden is None:
            out.append(p)
            continue
        nan, pos, neg = (parts[k].value.astype(np.float64) > 0 for k in hidden)
        with np.errstate(invalid="ignore"):
            value = (p.value.astype(np.float64) + np.where(pos, np.inf, 0.0) + np.where(neg, -np.inf, 0.0)
                     + np.where(nan, np.nan, 0.0))
        out.append(Partial(value, p.nn))
    return out


__all__ = ["KINDS", "Split", "columns", "join", "split"]
