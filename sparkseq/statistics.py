"""Statistics for the sharing optimizer, collected from the data with one Spark job.

For a sharing group (:class:`sql_rewrites.shared.SharedGroup`) the optimizer needs the
rate of every symbol's events per partition and time unit
(:class:`sql_rewrites.sharing.Statistics`). :func:`collect` counts, in one aggregate
over the group's source (optionally a ``TABLESAMPLE``), the rows of each symbol (its
DEFINE / TYPE BY condition), the number of partitions and the time span, in engine
time units (microseconds for timestamps).
"""

from __future__ import annotations

from pyspark.sql import SparkSession
from sqlglot import exp

from sql_rewrites.dialect import SparkSeq
from sql_rewrites.generate import sanitize
from sql_rewrites.shared import SharedGroup
from sql_rewrites.sharing import Statistics
from sql_rewrites.sql_types import time_to_engine


def symbol_keys(group: SharedGroup) -> tuple[str, ...]:
    """The optimizer's type key of each symbol of the group: its condition as SQL."""
    return tuple(condition.sql(dialect=SparkSeq) for _, condition in group.symbols)


def collect(spark: SparkSession, group: SharedGroup, *, sample_percent: float | None = None) -> Statistics:
    """Per-symbol counts, partitions and span of the group's source (one job).

    Parameters
    ----------
    sample_percent : float, optional
        Read a ``TABLESAMPLE (p PERCENT)`` of the source instead of all of it.
    """
    first = group.members[0].query
    source = first.node.this.copy()
    if sample_percent is not None:
        source.set("sample", exp.TableSample(percent=exp.Literal.number(sample_percent)))
    time = time_to_engine(first.order.expression.copy(), first.order.kind)
    keys = [k.expression.copy() for k in first.partition_keys]
    columns = [
        exp.alias_(exp.Count(this=exp.Distinct(expressions=keys)) if keys else exp.Literal.number(1), "partitions"),
        exp.alias_(exp.Min(this=time.copy()), "lo"), exp.alias_(exp.Max(this=time.copy()), "hi"),
    ]
    for k, (_, condition) in enumerate(group.symbols):
        hit = exp.case().when(condition.copy(), exp.Literal.number(1)).else_(exp.Literal.number(0))
        columns.append(exp.alias_(exp.Sum(this=hit), f"c{k}"))
    select = exp.select(*columns).from_(source)
    sanitize(select)
    row = spark.sql(select.sql(dialect=SparkSeq)).first()
    assert row is not None  # an aggregate without GROUP BY has one row
    span = max(1, (row["hi"] or 0) - (row["lo"] or 0)) if row["lo"] is not None else 1
    counts = {key: int(row[f"c{k}"] or 0) for k, key in enumerate(symbol_keys(group))}
    fraction = 1.0 if sample_percent is None else sample_percent / 100
    return Statistics.from_counts(counts, span, max(1, int(row["partitions"] or 1)), fraction)


__all__ = ["collect", "symbol_keys"]
