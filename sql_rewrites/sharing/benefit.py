"""The sharing benefit model (Sharon section III, in an additive form).

All costs are estimated operations per time unit over all partitions: the per-window
cost of Sharon's formulas times :meth:`Statistics.evaluations_per_time`. ``R(E)`` is
the number of events of type ``E`` per window and partition, ``rate(E) * W`` with ``W``
the window length (WITHIN, or the data span without one); ``R(S) = sum of R(E)`` over
the elements of a sequence ``S`` (Sharon eq. 1; a repeated type counts each time, which
is Sharon's factor ``k`` of section VII).

For a query ``q = (E_1 .. E_n)`` and a pattern ``p = (E_m .. E_{m+l-1})`` in it
(0-based ``m``):

* ``NonShared(q) = R(E_1) * R(q)`` (eq. 2): every matched event updates one count per
  live START event. It splits per element: element ``j`` costs ``R(E_1) * R(E_j)``.
* ``Shared(p) = R(p_1) * R(p)``: the shared pattern, computed once (eq. 7, first term).
* ``Comb(p, q) = R(E_1) * R(E_m) * R(E_{m+l})`` (eq. 5; the last factor is 1 when
  ``p`` ends the query, and ``Comb = 0`` when ``p`` starts it (``m = 0``): then the
  shared counts per START *are* the query's counts, A-Seq's PreTree).
* ``gain(p, q) = R(E_1) * R(p) - Comb(p, q)``: what ``q`` saves by reading ``p``.
* ``BValue(p, Q) = sum over q in Q of gain(p, q) - Shared(p)`` (eq. 8).

The one change from Sharon's eq. 4: the query's own parts stay maintained per START
of the query (as A-Seq's multi-connect snapshots do, thesis Fig. 4.4) instead of being
re-rooted at the suffix's first event. That makes benefits additive, so the score of a
plan (eq. 9) *is* its estimated cost reduction and ``cost(plan) = NonShared - score``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from sql_rewrites.sharing.candidates import Candidate
from sql_rewrites.sharing.statistics import Statistics
from sql_rewrites.sharing.workload import Window


@dataclass(frozen=True)
class CostModel:
    """Sharon's cost formulas for one sharing class (one window, one statistics)."""

    statistics: Statistics
    window: Window
    window_length: float = field(init=False)
    scale: float = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "window_length", self.statistics.window_length(self.window))
        object.__setattr__(self, "scale", self.statistics.evaluations_per_time(self.window))

    def per_window(self, event_type: str) -> float:
        """``R(E)``: events of the type per window and partition."""
        return self.statistics.rate(event_type) * self.window_length

    def sequence_rate(self, types: tuple[str, ...]) -> float:
        """``R(S)``, Sharon eq. 1."""
        return sum(self.per_window(t) for t in types)

    def query_cost(self, pattern: tuple[str, ...]) -> float:
        """``NonShared(q)``, Sharon eq. 2, scaled."""
        return self.scale * self.per_window(pattern[0]) * self.sequence_rate(pattern)

    def element_cost(self, pattern: tuple[str, ...], j: int) -> float:
        """Cost of element ``j`` of a query computed by the query itself, scaled."""
        return self.scale * self.per_window(pattern[0]) * self.per_window(pattern[j])

    def shared_cost(self, pattern: tuple[str, ...]) -> float:
        """``Shared(p)``: the shared pattern computed once, scaled."""
        return self.scale * self.per_window(pattern[0]) * self.sequence_rate(pattern)

    def combination_cost(self, query: tuple[str, ...], start: int, length: int) -> float:
        """``Comb(p, q)`` for ``p = query[start:start + length]``, scaled."""
        if start == 0:
            return 0.0
        end = start + length
        tail = self.per_window(query[end]) if end < len(query) else 1.0
        return self.scale * self.per_window(query[0]) * self.per_window(query[start]) * tail

    def gain(self, query: tuple[str, ...], start: int, length: int) -> float:
        """``gain(p, q)``: the query's saving from reading the shared counts of ``p``."""
        own = self.scale * self.per_window(query[0]) * self.sequence_rate(query[start:start + length])
        return own - self.combination_cost(query, start, length)

    def benefit(self, candidate: Candidate, patterns: Mapping[str, tuple[str, ...]]) -> float:
        """``BValue(p, Q)`` (Sharon eq. 8 in additive form).

        Parameters
        ----------
        candidate : Candidate
            The pattern and its occurrences.
        patterns : mapping of query id to pattern
            The patterns of the candidate's queries.
        """
        total = sum(self.gain(patterns[o.query], o.start, candidate.length) for o in candidate.occurrences)
        return total - self.shared_cost(candidate.pattern)
