"""Channels: the aggregates of rows bound in partial matches that measures need.

A partial match carries, next to its count, one value per channel: a *sum* channel
holds Σ x(row) over the rows bound to its symbol (x = 1 for COUNT(X), x = [a not NULL]
for the non-NULL pair count, x = a for SUM / AVG), a *min* / *max* channel the extreme
of x = a. The streaming carry (:mod:`.carry`) keeps them per pooled position, the state
DP (:mod:`.statedp`) per state; :func:`measure_channels` says which a plan needs.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from udafs.plan import MeasureKind, Plan, ValueType


class Channel(NamedTuple):
    """One aggregate carried along partial matches: x(row) at positions of ``symbol``.

    ``kind`` is "sum", "min" or "max"; ``x`` names the per-row value: "one", "nn"
    (1 when column ``column`` is not NULL) or "val" (the column's value; NULL counts
    as 0 in sums and is skipped by min/max). ``dtype`` is the array dtype: int64 for
    min/max (float columns travel as order keys, see ``measures.float_key``), float64
    for float sums, None for exact integers (in the count number system).
    """

    symbol: int
    kind: str
    x: str
    column: int | None
    dtype: np.dtype | None

    @property
    def identity(self) -> int | float:
        """The value of an empty set of partial matches."""
        if self.kind == "sum":
            return 0 if self.dtype is None else 0.0
        info = np.iinfo(self.dtype)  # min/max channels hold int64 (values or float keys)
        return int(info.max) if self.kind == "min" else int(info.min)

    @property
    def ufunc(self) -> np.ufunc:
        return {"sum": np.add, "min": np.minimum, "max": np.maximum}[self.kind]

    @property
    def signed(self) -> bool:
        """Exact sums of column values may be negative."""
        return self.x == "val"


class MeasureChannels(NamedTuple):
    """The channels a plan's measures need (deduplicated, stable order), and per measure the
    indices of its (value, non-NULL count) channels: (None, None) for COUNT(*), the same
    channel twice for COUNT(X)."""

    channels: tuple[Channel, ...]
    slots: tuple[tuple[int | None, int | None], ...]


def measure_channels(plan: Plan) -> MeasureChannels:
    """The channels of ``plan``'s measures.

    >>> from udafs.plan import Element, Measure
    >>> plan = Plan(symbols=("A", "B"), elements=(Element(0), Element(1)), negations=(0, 0, 0),
    ...             columns=(ValueType.INT,), measures=(Measure(MeasureKind.COUNT, 1, name="n"),
    ...                                                 Measure(MeasureKind.SUM, 1, 0, "s")))
    >>> [(c.kind, c.x) for c in measure_channels(plan).channels], measure_channels(plan).slots
    ([('sum', 'one'), ('sum', 'nn'), ('sum', 'val')], ((0, 0), (2, 1)))
    """
    chans: list[Channel] = []

    def slot(c: Channel) -> int:
        if c not in chans:
            chans.append(c)
        return chans.index(c)

    slots: list[tuple[int | None, int | None]] = []
    for m in plan.measures:
        if m.kind is MeasureKind.COUNT_STAR:
            slots.append((None, None))
            continue
        assert m.symbol is not None  # Plan validation: every other measure names a symbol
        if m.kind is MeasureKind.COUNT:
            k = slot(Channel(m.symbol, "sum", "one", None, None))
            slots.append((k, k))
            continue
        assert m.column is not None  # ... and a value column
        nn = slot(Channel(m.symbol, "sum", "nn", m.column, None))
        if m.kind in (MeasureKind.MIN, MeasureKind.MAX):  # floats as order keys (measures.float_key)
            val = Channel(m.symbol, m.kind.value, "val", m.column, np.dtype(np.int64))
        else:
            exact = plan.columns[m.column] is ValueType.INT  # exact integer sums: the count number system
            val = Channel(m.symbol, "sum", "val", m.column, None if exact else np.dtype(np.float64))
        slots.append((slot(val), nn))
    return MeasureChannels(tuple(chans), tuple(slots))


__all__ = ["Channel", "MeasureChannels", "measure_channels"]
