"""Statistics for the sharing optimizer, collected from the data with one Spark job.

For a sharing group (:class:`sql_rewrites.shared.SharedGroup`) the optimizer needs the
rate of every symbol's events per partition and time unit
(:class:`sql_rewrites.sharing.Statistics`). :func:`collect` runs the one aggregate of
:func:`sql_rewrites.shared.statistics_sql` over the group's source (optionally a
``TABLESAMPLE``): the rows of each symbol (its DEFINE / TYPE BY condition), the number
of partitions and the time span, in engine time units (microseconds for timestamps).
"""

from __future__ import annotations

from pyspark.sql import SparkSession

from sql_rewrites.shared import SharedGroup, statistics_sql, symbol_keys
from sql_rewrites.sharing import Statistics


def collect(spark: SparkSession, group: SharedGroup, *, sample_percent: float | None = None) -> Statistics:
    """Per-symbol counts, partitions and span of the group's source (one job).

    Parameters
    ----------
    sample_percent : float, optional
        Read a ``TABLESAMPLE (p PERCENT)`` of the source instead of all of it.
    """
    row = spark.sql(statistics_sql(group, sample_percent=sample_percent)).first()
    assert row is not None  # an aggregate without GROUP BY has one row
    span = max(1, (row["hi"] or 0) - (row["lo"] or 0)) if row["lo"] is not None else 1
    counts = {key: int(row[f"c{k}"] or 0) for k, key in enumerate(symbol_keys(group))}
    fraction = 1.0 if sample_percent is None else sample_percent / 100
    return Statistics.from_counts(counts, span, max(1, int(row["partitions"] or 1)), fraction)


__all__ = ["collect"]
