"""Data statistics for the cost model: event-type rates, partitions, time span.

The SQL layer collects them from the data (a sample or ANALYZE): the number of rows
of each event type, the number of PARTITION BY keys and the time range they cover.
:meth:`Statistics.from_counts` turns such counts into rates.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from sql_rewrites.sharing.errors import SharingError
from sql_rewrites.sharing.workload import Window


@dataclass(frozen=True)
class Statistics:
    """Rates of event types (events per time unit per partition) and the data's shape.

    Parameters
    ----------
    rates : tuple of (type key, rate)
        Sorted by key; a type not listed has rate ``default_rate``.
    partitions : int
        Number of PARTITION BY keys.
    span : float, optional
        Time covered by the data (ORDER BY units); the window length of a query
        without WITHIN.
    default_rate : float
        Rate of types absent from ``rates`` (0: never seen in the sample).
    """

    rates: tuple[tuple[str, float], ...] = ()
    partitions: int = 1
    span: float | None = None
    default_rate: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "rates", tuple(sorted((str(k), float(v)) for k, v in self.rates)))
        keys = [k for k, _ in self.rates]
        if len(set(keys)) != len(keys):
            raise SharingError("statistics name an event type twice")
        if any(not v >= 0 for _, v in self.rates) or not self.default_rate >= 0:
            raise SharingError("event-type rates must be non-negative numbers")
        if not (isinstance(self.partitions, int) and self.partitions >= 1):
            raise SharingError(f"partitions must be a positive integer, got {self.partitions!r}")
        if self.span is not None and not self.span > 0:
            raise SharingError(f"span must be positive, got {self.span!r}")
        object.__setattr__(self, "_lookup", dict(self.rates))

    @staticmethod
    def of(rates: Mapping[str, float], partitions: int = 1, span: float | None = None,
           default_rate: float = 0.0) -> Statistics:
        """Statistics from a mapping of type key to rate."""
        return Statistics(tuple(rates.items()), partitions, span, default_rate)

    @staticmethod
    def from_counts(counts: Mapping[str, int], span: float, partitions: int = 1,
                    sample_fraction: float = 1.0) -> Statistics:
        """Rates from event counts observed over ``span`` time units in all partitions.

        Parameters
        ----------
        counts : mapping of type key to int
            Rows of each type seen (in the sample).
        span : float
            Time range the rows cover.
        partitions : int
            Number of PARTITION BY keys in the data.
        sample_fraction : float
            Fraction of rows sampled (counts are scaled up by its inverse).

        Returns
        -------
        Statistics
            ``rate(E) = counts[E] / sample_fraction / (partitions * span)``.
        """
        if not span > 0 or not 0 < sample_fraction <= 1:
            raise SharingError("from_counts needs span > 0 and 0 < sample_fraction <= 1")
        denom = sample_fraction * partitions * span
        return Statistics(tuple((k, v / denom) for k, v in counts.items()), partitions, span)

    def rate(self, event_type: str) -> float:
        """Events of ``event_type`` per time unit per partition."""
        return self._lookup.get(event_type, self.default_rate)  # type: ignore[attr-defined]

    def window_length(self, window: Window) -> float:
        """Length of the time range one evaluation sees: WITHIN, else the data span."""
        if window.within is not None:
            return float(window.within)
        if self.span is None:
            raise SharingError("a query without WITHIN needs the data's time span in the statistics")
        return float(self.span)

    def evaluations_per_time(self, window: Window) -> float:
        """Window evaluations per time unit over all partitions (the cost scale).

        ``partitions / slide`` with SLIDE; ``partitions / within`` with WITHIN only (the
        per-start cost over one window length, spread over that length); and
        ``partitions / span`` without a window.
        """
        return self.partitions / (window.slide if window.slide is not None else self.window_length(window))
