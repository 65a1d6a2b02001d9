"""Spark SQL that runs a compiled plan over a relation: batch and streaming forms.

The relation supplies, per row, the partition key columns, an int64 event time, the
symbol bitmask (bit k set iff the row is an instance of ``plan.symbols[k]``, e.g.
``CASE WHEN action = 'view' THEN 1 ELSE 0 END | CASE WHEN … THEN 2 ELSE 0 END``) and
one expression per ``plan.columns`` entry. Window bounds come back as BIGINT in the
units of the time expression.

* :func:`udaf_query` groups by the keys and calls the plan's grouped-aggregate
  function (one group in memory at a time). The function does not see its group key,
  so it reports an overflow in its ``error`` field; the query raises it with
  ``raise_error``, the partition key spliced in as JSON.
* :func:`stream_query` feeds the streaming Arrow UDTF for groups too large for memory
  (see :mod:`udafs.spark_udtf`); it raises overflows itself, naming the partition.

Every identifier taken from the caller is quoted; the plan is a quoted literal; the
time, mask and value expressions are parsed and re-generated as exactly one SQL
expression each. No input can change the shape of the query.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlglot
from pyspark.sql import DataFrame, SparkSession
from sqlglot import exp
from sqlglot.errors import ParseError

from sparkseq.registration import engine_function, stream_function
from udafs.errors import SparkSeqError
from udafs.plan import Plan
from udafs.spark_udfs import PARTITION_SLOT, result_fields, value_sql_type

_P = "__sq_"  # prefix of the generated queries' internal column names
MIN_BUCKET_BITS = 16  # a packed sort key needs room for at least 65,536 hash buckets


class QueryError(SparkSeqError, ValueError):
    """The arguments describing a query's input are unusable (named in the message)."""


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
        One SQL expression per ``plan.columns`` entry (cast to BIGINT / DOUBLE).

    Returns
    -------
    str
        A query with columns ``keys``, ``window_start``/``window_end`` (with SLIDE),
        then one column per measure named by ``Measure.name`` (``m<j>`` if empty).

    Examples
    --------
    >>> sql = udaf_query(spark, plan, "events", keys=["user"], mask="mask")  # doctest: +SKIP
    >>> spark.sql(sql).show()  # doctest: +SKIP
    """
    events = _events(plan, source, keys, ts, mask, values, constant_key=not keys)
    key_cols = [_ident(k) for k in keys]
    group_by = key_cols or [_ident(_P + "all")]
    results = [f"{_P}ws", f"{_P}we"] + [f"{_P}m{j}" for j in range(len(plan.measures))]
    outputs = _output_columns(plan, results)
    fn = engine_function(spark, plan)
    args = ", ".join([_literal(plan.to_json()), _ident(_P + "ts"), _ident(_P + "mask"), *_value_refs(plan)])
    return "\n".join([
        f"SELECT {_join(key_cols + outputs)}",
        "FROM (",
        f"  SELECT {_join(group_by)}, inline({fn}({args})) AS ({_join(map(_ident, results + [_P + 'error']))})",
        f"  FROM ({events}) AS {_ident(_P + 'events')}",
        f"  WHERE {_instances(plan)}",
        f"  GROUP BY {_join(group_by)}",
        f") AS {_ident(_P + 'groups')}",
        f"WHERE CASE WHEN {_ident(_P + 'error')} IS NULL THEN TRUE",
        f"  ELSE raise_error(replace({_ident(_P + 'error')}, {_literal(PARTITION_SLOT)}, {_key_json(keys)})) END",
    ])


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
    events = _events(plan, source, keys, ts, mask, values, constant_key=False)
    bucket, sort, check = _stream_order(keys, ts_bounds)
    inner = [bucket + f" AS {_ident(_P + 'b')}", *map(_ident, keys), _ident(_P + "ts"), _ident(_P + "mask"),
             *_value_refs(plan)]
    renamed = [f"{_ident(f'k{i}')} AS {_ident(k)}" for i, k in enumerate(keys)]
    outputs = _output_columns(plan, [name for name, _ in result_fields(plan)])
    key_schema = spark.sql(f"SELECT {_join(map(_ident, keys))} FROM {_table(source)}").schema if keys else []
    fn = stream_function(spark, plan, [f.dataType.simpleString() for f in key_schema])
    return "\n".join([
        f"SELECT {_join(renamed + outputs)}",
        f"FROM {fn}(TABLE(",
        f"  SELECT {_join(inner)}",
        f"  FROM ({events}) AS {_ident(_P + 'events')}",
        f"  WHERE {_instances(plan)}{check}",
        f"  DISTRIBUTE BY {_ident(_P + 'b')} SORT BY {sort}",
        f"), {_literal(plan.to_json())})",
    ])


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


def _events(plan: Plan, source: str, keys: Sequence[str], ts: str, mask: str, values: Sequence[str],
            constant_key: bool) -> str:
    """The per-row engine input: keys, ``__sq_ts``, ``__sq_mask``, ``__sq_v<j>``."""
    if len(values) != len(plan.columns):
        raise QueryError(f"the plan declares {len(plan.columns)} value columns "
                         f"({', '.join(c.value for c in plan.columns) or 'none'}), got {len(values)} values")
    for k in keys:
        if k.startswith(_P):
            raise QueryError(f"partition column {k!r} uses the reserved prefix {_P!r}")
    cols = [_ident(k) for k in keys] + (["0 AS " + _ident(_P + "all")] if constant_key else [])
    cols += [f"CAST({_expr(ts, 'ts')} AS BIGINT) AS {_ident(_P + 'ts')}",
             f"CAST({_expr(mask, 'mask')} AS BIGINT) AS {_ident(_P + 'mask')}"]
    cols += [f"CAST({_expr(v, f'value {j}')} AS {value_sql_type(vt).upper()}) AS {_ident(f'{_P}v{j}')}"
             for j, (v, vt) in enumerate(zip(values, plan.columns))]
    return f"SELECT {_join(cols)} FROM {_table(source)}"


def _instances(plan: Plan) -> str:
    """Rows that take part in something: a time, and an instance of a pattern symbol."""
    return f"{_ident(_P + 'ts')} IS NOT NULL AND ({_ident(_P + 'mask')} & {plan.pattern_symbols_mask}) <> 0"


def _value_refs(plan: Plan) -> list[str]:
    return [_ident(f"{_P}v{j}") for j in range(len(plan.columns))]


def _output_columns(plan: Plan, results: Sequence[str]) -> list[str]:
    """Window bounds (with SLIDE) and measures from the engine's ``results`` columns, renamed."""
    names = [m.name or f"m{j}" for j, m in enumerate(plan.measures)]
    if len(set(names)) < len(names):
        raise QueryError(f"measure names must be distinct, got {names}")
    pairs = list(zip(results, ["window_start", "window_end", *names]))
    return [f"{_ident(src)} AS {_ident(out)}" for src, out in (pairs if plan.slide else pairs[2:])]


def _key_json(keys: Sequence[str]) -> str:
    """The partition key as JSON text, e.g. ``{"customer_id":42}``."""
    if not keys:
        return _literal("(all rows)")
    return f"to_json(named_struct({_join(f'{_literal(k)}, {_ident(k)}' for k in keys)}))"


def _stream_order(keys: Sequence[str], ts_bounds: tuple[int, int] | None) -> tuple[str, str, str]:
    """(bucket expression, SORT BY list, extra WHERE check) of the streaming input."""
    key_hash = f"xxhash64({_join(map(_ident, keys))})" if keys else "0L"
    ts_col = _ident(_P + "ts")
    if ts_bounds is not None:
        lo, hi = (int(x) for x in ts_bounds)
        if hi < lo:
            raise QueryError(f"ts_bounds must be (low, high) with low <= high, got {ts_bounds}")
        ts_bits = max(hi - lo, 1).bit_length()
        bucket_bits = 62 - ts_bits  # keep the packed key below 2**62: non-negative
        if bucket_bits >= MIN_BUCKET_BITS:
            check = (f" AND CASE WHEN {ts_col} BETWEEN {lo} AND {hi} THEN TRUE ELSE raise_error("
                     f"{_literal(f'event time outside the declared ts_bounds [{lo}, {hi}]')}) END")
            packed = f"shiftleft({_ident(_P + 'b')}, {ts_bits}) | ({ts_col} - {lo})"
            return f"pmod({key_hash}, {1 << bucket_bits})", packed, check
    return key_hash, f"{_ident(_P + 'b')}, {ts_col}", ""


def _ident(name: str) -> str:
    return exp.to_identifier(name, quoted=True).sql(dialect="spark")


def _literal(text: str) -> str:
    return exp.Literal.string(text).sql(dialect="spark")


def _table(name: str) -> str:
    return exp.to_table(name, dialect="spark").sql(dialect="spark", identify=True)


def _expr(text: str, what: str) -> str:
    """One SQL expression, re-generated in parentheses; anything else is refused."""
    try:
        node = sqlglot.parse_one(text, read="spark")
    except ParseError as exc:
        raise QueryError(f"the {what} expression {text!r} is not valid SQL: {exc}") from None
    if not isinstance(node, exp.Condition):
        raise QueryError(f"the {what} expression {text!r} must be a single SQL expression")
    return f"({node.sql(dialect='spark')})"


def _join(parts: object) -> str:
    return ", ".join(parts)  # type: ignore[arg-type]
