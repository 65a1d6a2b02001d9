"""What the plan-time timeline decision knows of a sharing group's source: rows per symbol.

:func:`sql_rewrites.planning.timeline_plan.plan_timelines` weighs a shared timeline against its
members one by one by the rows of each symbol and the number of engine calls (partitions).
``sparkseq.running.statistics.collect`` measures them with one aggregate over the group's source
(:func:`sql_rewrites.generation.shared.statistics_sql`); :class:`SymbolStatistics` holds the result.

The decision needs orders of magnitude only: the model's costs are linear in rows and
calls, so it depends on the rows per partition and the mix of symbols, and a wrong
estimate costs time, never exactness (every grouping of members counts exactly). So a
source Spark estimates as large is sampled (:func:`sample_every`): the job evaluates the
symbol conditions — its main cost — on about one row in :data:`SAMPLE_EVERY`, chosen by a
hash of the row's partition keys and time (the same rows for the same data, so EXPLAIN
and the run decide alike).

Pure: no Spark.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

#: A sampled statistics job reads about one row in this many.
SAMPLE_EVERY = 16
#: Sources Spark estimates at more rows than this are sampled (smaller ones cost the job
#: little, and a sample of them would say little).
SAMPLE_FROM_ROWS = 1_000_000
#: Bytes per row assumed when Spark estimates a source's size but not its rows: about the
#: densest a compressed columnar file gets (bench/sharing.py's streams: 2.3 bytes per row
#: in parquet), so that such files are sampled; a CSV of the same size holds fewer rows,
#: and its sample is smaller than intended, never larger.
DENSE_ROW_BYTES = 2
#: Spark's size estimate of a source it cannot size (a DataFrame made from Python rows or an
#: RDD): ``spark.sql.defaultSizeInBytes``, Long.MaxValue by default. Read as unknown.
UNKNOWN_BYTES = 2**63 - 1


def sample_every(source_bytes: int | None, source_rows: int | None) -> int:
    """Read one row in how many, from Spark's estimate of the source (None: unknown):
    :data:`SAMPLE_EVERY` when it says more than :data:`SAMPLE_FROM_ROWS` rows (its row count,
    else its bytes at :data:`DENSE_ROW_BYTES` per row), else 1 (all rows; also when Spark
    cannot size the source, :data:`UNKNOWN_BYTES`)."""
    rows = source_rows if source_rows is not None else (
        None if source_bytes is None or source_bytes >= UNKNOWN_BYTES else source_bytes // DENSE_ROW_BYTES)
    return SAMPLE_EVERY if rows is not None and rows > SAMPLE_FROM_ROWS else 1


@dataclass(frozen=True)
class SymbolStatistics:
    """Rows of each symbol of a group's source and the number of its partitions.

    Parameters
    ----------
    rows : tuple of (symbol key, rows)
        Rows of the source whose symbol condition holds (keys: the conditions as SQL,
        :func:`sql_rewrites.generation.shared.symbol_keys`), over all partitions; estimated from
        a sample when ``sampled`` is below 1 (the sample's counts scaled up). A key not
        listed has no rows.
    partitions : int
        Number of PARTITION BY keys (engine calls of the group's pass); from a sample, the
        keys it holds (fewer than all when keys have fewer rows than one sampling step).
    sampled : float
        Fraction of the source's rows the counts were read from (1: all of them).
    reused : bool
        Read by an earlier run's statistics job over the same, unchanged source
        (``sparkseq.running.statistics``), not by a job of this run.
    """

    rows: tuple[tuple[str, float], ...] = ()
    partitions: int = 1
    sampled: float = 1.0
    reused: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "rows", tuple(sorted((str(k), float(v)) for k, v in self.rows)))
        keys = [k for k, _ in self.rows]
        if len(set(keys)) != len(keys):
            raise ValueError("statistics name a symbol twice")
        if any(not v >= 0 for _, v in self.rows):
            raise ValueError("rows per symbol must be non-negative numbers")
        if not (isinstance(self.partitions, int) and self.partitions >= 1):
            raise ValueError(f"partitions must be a positive integer, got {self.partitions!r}")
        if not 0 < self.sampled <= 1:
            raise ValueError(f"the sampled fraction must be in (0, 1], got {self.sampled!r}")

    @staticmethod
    def from_sample(counts: Mapping[str, int], partitions: int, every: int) -> SymbolStatistics:
        """Statistics from the counts of a sample of one row in ``every``."""
        return SymbolStatistics(tuple((k, v * every) for k, v in counts.items()), max(1, partitions), 1 / every)

    @staticmethod
    def of(rows: Mapping[str, float], partitions: int = 1, sampled: float = 1.0) -> SymbolStatistics:
        """Statistics from a mapping of symbol key to rows."""
        return SymbolStatistics(tuple(rows.items()), partitions, sampled)

    def rows_of(self, key: str) -> float:
        """Rows of the symbol whose condition is ``key`` (0 when not listed)."""
        return dict(self.rows).get(key, 0.0)


__all__ = ["DENSE_ROW_BYTES", "SAMPLE_EVERY", "SAMPLE_FROM_ROWS", "UNKNOWN_BYTES", "SymbolStatistics", "sample_every"]
