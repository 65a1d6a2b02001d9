"""Rows per symbol of a sharing group's source, for the plan-time timeline decision: one Spark job.

:func:`collect` runs the one aggregate of :func:`sql_rewrites.shared.statistics_sql`
over the group's source — over a sample of it when Spark estimates the source as large
(:func:`sql_rewrites.symbol_statistics.sample_every`) — and returns the rows of each
symbol (its DEFINE / TYPE BY condition) and the number of partitions as a
:class:`~sql_rewrites.symbol_statistics.SymbolStatistics`.
"""

from __future__ import annotations

from pyspark.sql import SparkSession

from sparkseq.execution_paths import source_size
from sql_rewrites.shared import SharedGroup, statistics_sql, symbol_keys
from sql_rewrites.symbol_statistics import SymbolStatistics, sample_every


def collect(spark: SparkSession, group: SharedGroup) -> SymbolStatistics:
    """Rows per symbol and partitions of the group's source (one job; module docstring)."""
    every = sample_every(*source_size(spark, group.members[0].query))
    row = spark.sql(statistics_sql(group, sample_every=every)).first()
    assert row is not None  # an aggregate without GROUP BY has one row
    counts = {key: int(row[f"c{k}"] or 0) for k, key in enumerate(symbol_keys(group))}
    return SymbolStatistics.from_sample(counts, int(row["partitions"] or 0), every)


__all__ = ["collect"]
