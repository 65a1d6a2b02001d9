"""Spark SQL that runs a compiled plan over a relation: batch and streaming forms.

These are the Plan-level entry points, for callers that build a :class:`~udafs.plan.Plan`
themselves; SQL users write MATCH_AGGREGATE and call :func:`sparkseq.sql` instead.
The relation supplies, per row, the partition key columns, an int64 event time, the
symbol bitmask (bit k set iff the row is an instance of ``plan.symbols[k]``, e.g.
``CASE WHEN action = 'view' THEN 1 ELSE 0 END | CASE WHEN … THEN 2 ELSE 0 END``) and
one expression per ``plan.columns`` entry. Window bounds come back as BIGINT in the
units of the time expression.

* :func:`udaf_query` groups by the keys and calls the plan's grouped-aggregate
  function (one group in memory at a time), in the very SQL shape the compiler gives
  MATCH_AGGREGATE (:func:`sql_rewrites.generation.generate.engine_query`). The function does not
  see its group key, so it reports an overflow in its ``error`` field; the query
  raises it with ``raise_error``, the partition key spliced in as JSON.
* :func:`stream_query` feeds the streaming Arrow UDTF for groups too large for memory
  (see :mod:`udafs.workers.streaming`); it raises overflows itself, naming the partition.

The SQL is built by the compiler (:mod:`sql_rewrites.generation.plan_queries`): every identifier is
quoted, the plan is a string literal, and the time, mask and value arguments are parsed
as exactly one SQL expression each. No input can change the shape of the query.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame, SparkSession

from sparkseq.spark.registration import engine_function, stream_function
from sql_rewrites.generation.plan_queries import (
    MIN_BUCKET_BITS,
    QueryError,
    key_types_sql,
    stream_query_sql,
    udaf_query_sql,
)
from udafs.plan import Plan


def udaf_query(spark: SparkSession, plan: Plan, source: str, *, keys: Sequence[str] = (), ts: str = "ts",
               mask: str = "mask", values: Sequence[str] = ()) -> str:
    """SQL computing ``plan`` per partition of ``source`` with the grouped-aggregate UDF.

    Parameters
    ----------
    spark : SparkSession
        Where the plan's engine function is registered (once per output schema).
    plan : Plan
        The compiled pattern and its measures.
    source : str
        A table or view name (``db.table`` allowed).
    keys : sequence of str
        Partition column names; matches never cross partitions.
    ts, mask : str
        SQL expressions for the int64 event time and the symbol bitmask.
    values : sequence of str
        One SQL expression per ``plan.columns`` entry (cast to BIGINT / DOUBLE, or to
        DECIMAL(38, 0) for a ``ValueType.DECIMAL`` column: pass integers, e.g. unscaled values).

    Returns
    -------
    str
        A query with columns ``keys``, ``window_start``/``window_end`` (with SLIDE),
        then one column per measure named by ``Measure.name`` (``m<j>`` if empty).

    Examples
    --------
    >>> from sparkseq import Element, Plan
    >>> plan = Plan(symbols=("A", "B"), elements=(Element(0), Element(1)), negations=(0, 0, 0))
    >>> spark.sql("SELECT * FROM VALUES ('u', 1L, 1L), ('u', 2L, 1L), ('u', 3L, 2L) AS t(user, ts, mask)"
    ...           ).createOrReplaceTempView("events")
    >>> sql = udaf_query(spark, plan, "events", keys=["user"], mask="mask")  # mask bit k: symbol k
    >>> spark.sql(sql).collect()
    [Row(user='u', count=2)]
    """
    return udaf_query_sql(plan, source, engine_function(spark, plan), keys=keys, ts=ts, mask=mask, values=values)


def stream_query(spark: SparkSession, plan: Plan, source: str, *, keys: Sequence[str] = (), ts: str = "ts",
                 mask: str = "mask", values: Sequence[str] = (),
                 ts_bounds: tuple[int, int] | None = None) -> str:
    """SQL computing ``plan`` per partition with the streaming UDTF; same output as :func:`udaf_query`.

    Rows reach the UDTF distributed by a hash of the keys and sorted by (hash, time),
    so one worker holds only the evaluators of the keys it is currently reading.

    Parameters
    ----------
    ts_bounds : (int, int), optional
        Inclusive bounds of the event time. When the span leaves at least
        :data:`MIN_BUCKET_BITS` bits free, Spark sorts by one packed 64-bit key
        ``(key hash bucket << bits) | (ts - lo)`` instead of two columns (faster); a
        row outside the bounds then fails the query.

    Other parameters as for :func:`udaf_query`.
    """
    function = stream_function(spark, plan, _key_types(spark, source, keys))
    return stream_query_sql(plan, source, function, keys=keys, ts=ts, mask=mask, values=values, ts_bounds=ts_bounds)


def aggregate(spark: SparkSession, plan: Plan, source: str, *, keys: Sequence[str] = (), ts: str = "ts",
              mask: str = "mask", values: Sequence[str] = (), streaming: bool = False,
              ts_bounds: tuple[int, int] | None = None) -> DataFrame:
    """Run :func:`udaf_query` (or :func:`stream_query` when ``streaming``) and return the DataFrame."""
    if streaming:
        return spark.sql(stream_query(spark, plan, source, keys=keys, ts=ts, mask=mask, values=values,
                                      ts_bounds=ts_bounds))
    if ts_bounds is not None:
        raise QueryError("ts_bounds only applies to streaming=True")
    return spark.sql(udaf_query(spark, plan, source, keys=keys, ts=ts, mask=mask, values=values))


def _key_types(spark: SparkSession, source: str, keys: Sequence[str]) -> list[str]:
    """Spark SQL types of the key columns (the UDTF's output schema names them)."""
    if not keys:
        return []
    schema = spark.sql(key_types_sql(source, keys)).schema
    return [f.dataType.simpleString() for f in schema]


__all__ = ["MIN_BUCKET_BITS", "QueryError", "aggregate", "stream_query", "udaf_query"]
