"""MATCH_AGGREGATE over live streams (Spark Structured Streaming).

When the source of a MATCH_AGGREGATE is a streaming DataFrame (or a view or subquery
over one), :func:`sparkseq.sql` replaces the operator by a *live operator* instead of
the batch rewrite, and returns a streaming DataFrame that the caller starts with
``writeStream``. Per operator:

1. The compiler's live form (:func:`sql_rewrites.generation.live.live_query`): the engine's input
   rows, keeping the event-time column that carries the watermark.
2. The partition key becomes one canonical string (each key column encoded exactly:
   integers, decimals, booleans, dates and strings as text, floating keys as text
   with -0.0 folded into 0.0 as GROUP BY folds it, timestamps as microseconds, binary
   as hex) and picks one of a fixed number of buckets by its hash.
3. ``groupBy(bucket).applyInPandasWithState`` with an event-time timeout runs
   :func:`udafs.workers.live.live_function`: one evaluator per partition key, the
   state in Spark's state store, results when the watermark makes them final.
   ``transformWithStateInPandas`` (Spark's newer API) hands every row to Python one
   by one in PySpark 4.3; ``bench/streaming.py --operators`` measures the difference.
4. The result — key string decoded back into typed columns, plus the engine's result
   fields — is registered as a temporary view, and the operator is replaced by the
   batch rewrite's own typed output over that view, so the rest of the statement
   runs over it unchanged.

Emission: with SLIDE, one row per (partition, window) in append mode, when the
watermark passes the window's end; otherwise a running result per partition in
update mode, whenever it changed. Rows at or before the watermark are dropped by
Spark and counted in ``numRowsDroppedByWatermark`` of the query's progress
(:func:`progress`).
"""

from __future__ import annotations

import hashlib
import re
import struct
from dataclasses import dataclass
from typing import Any

from pyspark.errors import AnalysisException
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.streaming.state import GroupStateTimeout

from sparkseq.running.execution_paths import Path, forced_path
from sparkseq.spark.gateway import is_connect_session, jvm
from sparkseq.spark.jvm_parser import Place, with_origins
from sparkseq.spark.jvm_path import jvm_function
from sql_rewrites.errors import StreamingError
from sql_rewrites.generation.live import LiveQuery, jvm_live_literal, jvm_live_shape, live_query
from sql_rewrites.logical.query import MatchAggregateQuery
from sql_rewrites.rewriter import Replaced, Replacement
from sql_rewrites.syntax.dialect import SparkSeq
from sql_rewrites.syntax.expressions import node_position
from udafs.plan import Plan, ValueType
from udafs.workers import grouped as spark_udfs
from udafs.workers import live as spark_live

BUCKETS_CONF = "sparkseq.streaming.buckets"
#: Buckets of partition keys: each is one Python call per micro-batch. A checkpoint
#: keeps the count it was started with (its state records it).
DEFAULT_BUCKETS = 32
WATERMARK_DELAY = "spark.watermarkDelayMs"  # the metadata Spark's withWatermark puts on the column
VIEW_PREFIX = "__sparkseq_live_"  # the views holding live operators' results
JVM_VIEW_PREFIX = VIEW_PREFIX + "jvm_"  # ... of the JVM live operator (sparkseq/jvm/SparkSeqLive.java)
#: Spark's grouping folds -0.0 into 0.0; the key text must too.
_FLOATING = (T.FloatType, T.DoubleType)
_AS_TEXT = (T.BooleanType, T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.DecimalType, T.DateType,
            T.TimestampNTZType, *_FLOATING)


def replacer(spark: SparkSession, sql: str, *, register: bool = True, batch: set[str] | None = None,
             place: Place | None = None) -> Replacement:
    """The ``replace`` hook of :func:`sql_rewrites.rewriter.explain_statement` that turns
    operators over streaming sources into live operators (module docstring). With
    ``register=False`` it only checks them (nothing is registered in the session).

    The live operator's events carry where the user's DEFINE conditions stand in ``sql``
    (:func:`sparkseq.spark.jvm_parser.with_origins`; ``place`` maps a span of ``sql`` into what
    the user wrote, as for a batch statement): an error one raises while the stream runs
    (ANSI division by zero, a malformed cast) points at the DEFINE as written, never at
    the generated SQL.

    ``batch``, when given, remembers the sources (as :meth:`MatchAggregateQuery.scoped_sql`
    prints them) found not to be streaming, so that each is analysed once while it holds:
    the caller empties it when a statement may redefine a relation (as for the schema
    cache, :func:`sparkseq.statements.scripts.evict_changed`)."""
    def replace(ordinal: int, query: MatchAggregateQuery) -> Replaced | None:
        scoped = query.scoped_sql() if batch is not None else ""
        if batch is not None and scoped in batch:
            return None
        source = source_frame(spark, query)
        if source is None or not source.isStreaming:
            if batch is not None and source is not None:
                batch.add(scoped)
            return None
        live = live_query(query, sql)
        check_watermark(live, source, sql)
        events = spark.sql(with_origins(spark, query.scoped_sql(live.events), [live], sql, place))
        check_keys(live, events, sql)
        in_jvm = runs_in_jvm(spark, live.plan)
        view = view_name(live, in_jvm)
        if register:
            frame(spark, live, events, in_jvm).createOrReplaceTempView(view)
        return live.output(view), view

    return replace


def source_frame(spark: SparkSession, query: MatchAggregateQuery) -> DataFrame | None:
    """The operator's source as a DataFrame (an analysis, no job), with the CTEs of the
    statement in scope; None when Spark cannot analyse it on its own."""
    try:
        return spark.sql(query.scoped_sql())
    except AnalysisException:
        return None


def check_watermark(live: LiveQuery, source: DataFrame, sql: str | None) -> None:
    """Refuse a streaming source whose ORDER BY column carries no watermark.

    Raises
    ------
    StreamingError
        Naming the column, where the watermark is instead (if anywhere) and how to set one.
    """
    where = node_position(live.query.node.args["order"], sql)
    if VIEW_PREFIX in live.query.node.this.sql(dialect=SparkSeq):
        raise StreamingError("a MATCH_AGGREGATE over the result of another MATCH_AGGREGATE on a stream is not "
                             "supported (the inner result has no watermark)", where)
    column = live.order_column
    field = next((f for f in source.schema.fields if f.name.casefold() == column.casefold()), None)
    if field is not None and WATERMARK_DELAY in field.metadata:
        return
    marked = [f.name for f in source.schema.fields if WATERMARK_DELAY in f.metadata]
    elsewhere = f" (the watermark is on {', '.join(marked)})" if marked else ""
    raise StreamingError(
        f"the streaming source has no watermark on the ORDER BY column {column}{elsewhere}; without one no window "
        f"or result is ever final. Set it the Spark way before the query: "
        f"df.withWatermark('{column}', '10 minutes'), or in SQL: "
        f"SELECT * FROM stream WATERMARK {column} DELAY OF INTERVAL 10 MINUTES", where)


def view_name(live: LiveQuery, in_jvm: bool = False) -> str:
    """The temporary view holding a live operator's results (named by what it computes, and
    by :data:`JVM_VIEW_PREFIX` when the JVM live operator runs it)."""
    text = live.plan.to_json() + live.events.sql(dialect=SparkSeq)
    return (JVM_VIEW_PREFIX if in_jvm else VIEW_PREFIX) + hashlib.sha1(text.encode()).hexdigest()[:12]


def check_keys(live: LiveQuery, events: DataFrame, sql: str | None) -> None:
    """Refuse partition keys of types with no exact text form here.

    Raises
    ------
    StreamingError
        Naming the key and its type (arrays, maps, structs, intervals, ...).
    """
    for key in live.query.partition_keys:
        dtype = events.schema[key.name].dataType
        if not isinstance(dtype, (T.StringType, T.TimestampType, T.BinaryType, *_AS_TEXT)):
            raise StreamingError(
                f"PARTITION BY {key.name} is {dtype.simpleString().upper()}; over a streaming source partition keys "
                "must be strings, numbers, booleans, dates, timestamps or binary — compute such a key in the source "
                "(e.g. to_json(...))", node_position(key.expression, sql))


def frame(spark: SparkSession, live: LiveQuery, events: DataFrame, in_jvm: bool = False) -> DataFrame:
    """The live operator's streaming DataFrame over its ``events``: partition keys by name
    and the engine's result fields named :attr:`LiveQuery.fields` (module docstring,
    steps 2-4; in the JVM when ``in_jvm``: :func:`runs_in_jvm`)."""
    types = {k: events.schema[k].dataType for k in live.keys}
    key = F.to_json(F.array(*(encode_key(events[k], types[k]) for k in live.keys))) if live.keys else F.lit("[]")
    if in_jvm:
        result = jvm_operator(spark, live, events, key)
    else:
        result = python_operator(spark, live, events, key)
    parsed = F.from_json(result[spark_live.KEY], T.ArrayType(T.StringType()))
    keys = [decode_key(parsed[i], types[k]).alias(k) for i, k in enumerate(live.keys)]
    fields = [c for c in result.columns if c != spark_live.KEY]
    return result.select(*keys, *(result[c].alias(name) for c, name in zip(fields, live.fields)))


def runs_in_jvm(spark: SparkSession, plan: Plan) -> bool:
    """Whether the live operator of ``plan`` runs in the JVM (``SparkSeqLive``): ``auto`` picks
    it for the shapes :func:`sql_rewrites.generation.live.jvm_live_shape` covers where the JVM path's jar
    loads (else the Python operator, after the one :class:`~sparkseq.spark.jvm_path.JvmPathUnavailable`
    warning); ``sparkseq.path=jvm`` forces it (an uncovered shape is an error naming why), any
    other forced path the Python operator.

    Raises
    ------
    ValueError
        ``sparkseq.path=jvm`` and a plan the JVM live operator does not evaluate.
    """
    forced = forced_path(spark)
    if forced is not None and forced is not Path.JVM:
        return False
    reason = jvm_live_shape(plan)
    if reason is None and is_connect_session(spark):  # the operator is built through py4j, in this process
        reason = "a Spark Connect client's live streams run on the Python live operator"
    if reason is not None:
        if forced is Path.JVM:
            raise ValueError(f"sparkseq.path=jvm, but this plan cannot run on the JVM live operator: {reason}")
        return False
    return jvm_function(spark) is not None


def jvm_state_digest(plan_json: str) -> str:
    """What the JVM live operator's stored state must have been written for (the plan; the
    state carries its layout version apart)."""
    return hashlib.sha1(f"jvm-live|{plan_json}".encode()).hexdigest()[:16]


def jvm_operator(spark: SparkSession, live: LiveQuery, events: DataFrame, key: Column) -> DataFrame:
    """The live operator in the JVM (``sparkseq/jvm/SparkSeqLive.java``): one state per
    partition key, ``key`` and the contract's result fields out, no Python worker."""
    plan = live.plan
    values, scale = [], -1
    for name, vt in zip(live.values, plan.columns):  # one at most (jvm_live_shape)
        dtype = events.schema[name].dataType
        values.append(_jvm_value(events[name], vt, dtype).alias("value"))
        scale = dtype.scale if isinstance(dtype, T.DecimalType) else -1
    rows = events.select(key.alias(spark_live.KEY), events[live.event_time], events[live.ts].cast("bigint").alias("ts"),
                         events[live.mask].cast("bigint").alias("mask"), *values)
    window = (plan.within or 0, plan.slide or 0)  # 0: none (a window is positive)
    jdf = jvm(spark).sparkseq.jvm.SparkSeqLive.operator(rows._jdf, jvm_live_literal(plan), *window,
                                                         jvm_state_digest(plan.to_json()), scale)
    return DataFrame(jdf, spark)


def _jvm_value(column: Column, vt: ValueType, dtype: T.DataType) -> Column:
    """A value column as ``SparkSeqLive`` reads it (``SparkSeqLive.Event``): BIGINT (an integer,
    or a DECIMAL of up to 18 digits, which the engine events carry as its unscaled integer:
    :func:`sql_rewrites.logical.sql_types.unscaled_bigint`), DOUBLE, or a wider DECIMAL as its
    plain text (``CAST(d AS STRING)``: no exponent, all its decimals); NULL as NULL."""
    if isinstance(dtype, T.DecimalType):
        return column.cast("string")
    return column.cast("double" if vt is ValueType.FLOAT else "bigint")


def python_operator(spark: SparkSession, live: LiveQuery, events: DataFrame, key: Column) -> DataFrame:
    """The live operator in Python: ``applyInPandasWithState`` per bucket of keys
    (:mod:`udafs.workers.live`), ``key`` and the contract's result fields out."""
    buckets = bucket_count(spark)
    values = []
    for j, (name, vt) in enumerate(zip(live.values, live.plan.columns)):
        values += [engine_value(events[name], vt, events.schema[name].dataType).alias(f"v{j}"),
                   events[name].isNotNull().alias(f"ok{j}")]
    rows = events.select(F.pmod(F.xxhash64(key), F.lit(buckets)).cast("int").alias("bucket"), key.alias("key"),
                         events[live.event_time], events[live.ts].alias("ts"), events[live.mask].alias("mask"), *values)
    plan_json = live.plan.to_json()
    mode = "Append" if live.plan.slide is not None else "Update"
    return rows.groupBy("bucket").applyInPandasWithState(
        spark_live.live_function(plan_json, buckets), spark_live.output_ddl(live.plan), spark_live.STATE_DDL, mode,
        GroupStateTimeout.EventTimeTimeout)


def engine_value(column: Column, vt: ValueType, dtype: T.DataType) -> Column:
    """A value column as the live operator's function reads it, NULL as 0 (its validity
    travels beside it): integers as BIGINT, doubles, and a DECIMAL as its exact unscaled
    integer (:class:`~udafs.plan.ValueType`) — a BIGINT up to 18 digits (the engine events
    carry it so already, :func:`sql_rewrites.logical.sql_types.unscaled_bigint`), else the digits
    of its plain text form (``CAST(d AS STRING)``: no exponent, all ``s`` decimals),
    which the function reads as a Python int."""
    if isinstance(dtype, T.DecimalType):
        plain = F.coalesce(column, F.lit(0).cast(dtype))
        if dtype.precision <= spark_udfs.MAX_INT64_DIGITS:  # DECIMAL(p + 11, s): exact, fits int64
            return (plain * F.lit(10 ** dtype.scale)).cast("bigint")
        return plain.cast("string")
    if vt is ValueType.INT or (vt is ValueType.DECIMAL and isinstance(dtype, T.IntegralType)):
        return F.coalesce(column, F.lit(0)).cast("bigint")  # an integer, or a DECIMAL's unscaled BIGINT
    return F.coalesce(column.cast("double"), F.lit(0.0))


def encode_key(column: Column, dtype: T.DataType) -> Column:
    """One partition key column as exact text (module docstring, step 2; the types
    :func:`check_keys` accepts)."""
    if isinstance(dtype, T.StringType):
        return column
    if isinstance(dtype, _FLOATING):
        return (column + F.lit(0.0).cast(dtype)).cast("string")  # -0.0 + 0.0 is 0.0
    if isinstance(dtype, T.TimestampType):
        return F.unix_micros(column).cast("string")
    if isinstance(dtype, T.BinaryType):
        return F.hex(column)
    return column.cast("string")


def decode_key(text: Column, dtype: T.DataType) -> Column:
    """The inverse of :func:`encode_key`."""
    if isinstance(dtype, T.StringType):
        return text
    if isinstance(dtype, T.TimestampType):
        return F.timestamp_micros(text.cast("bigint"))
    if isinstance(dtype, T.BinaryType):
        return F.unhex(text)
    return text.cast(dtype)


def bucket_count(spark: SparkSession) -> int:
    """The number of buckets live operators spread partition keys over (:data:`BUCKETS_CONF`)."""
    return int(spark.conf.get(BUCKETS_CONF, str(DEFAULT_BUCKETS)) or DEFAULT_BUCKETS)


def check_checkpoint(spark: SparkSession, checkpoint: str, plans: list[str]) -> None:
    """Refuse, before a query starts, a checkpoint whose live-operator state was written
    for other plans than ``plans`` (``Plan.to_json()`` of the statement's live operators),
    by the other live operator (JVM or Python: :func:`runs_in_jvm` decides for this run), or
    in a JVM state layout this sparkseq does not read. Reads one stored state per stateful
    operator with Spark's ``statestore`` source (a small job); a checkpoint without state passes.

    Raises
    ------
    StreamingError
        Naming the digests found and expected, or the operator and layout found.
    """
    buckets = bucket_count(spark)
    python = {spark_live.state_digest(p, buckets) for p in plans}
    jvm_digests = {jvm_state_digest(p) for p in plans}
    in_jvm = [runs_in_jvm(spark, Plan.from_json(p)) for p in plans]
    expected = {jvm_state_digest(p) if j else spark_live.state_digest(p, buckets) for p, j in zip(plans, in_jvm)}
    try:
        operators = [r.operatorId for r in spark.read.format("state-metadata").load(checkpoint).collect()]
    except AnalysisException:
        return  # no checkpoint, or no state in it yet
    for op in operators:
        rows = (spark.read.format("statestore").option("operatorId", op).load(checkpoint)
                .select("value.groupState.state").limit(1).collect())
        if not rows or rows[0][0] is None:
            continue
        blob = bytes(rows[0][0])
        stored = jvm_state(blob)
        found = stored.digest if stored is not None else spark_live.stored_digest(blob)
        if found is None or found in expected:
            continue
        if found in python | jvm_digests:
            wrote, runs = ("JVM", "Python") if stored is not None else ("Python", "JVM")
            raise StreamingError(
                f"the checkpoint {checkpoint} holds state written by sparkseq's {wrote} live operator, and this run "
                f"would use the {runs} one (sparkseq.path, or whether sparkseq-aggregates.jar loads, differs from the "
                f"first run); run it as the first run did (sparkseq.path={'jvm' if wrote == 'JVM' else 'grouped'}), "
                "or start it with a new checkpoint location")
        raise StreamingError(
            f"the checkpoint {checkpoint} holds state written by a different MATCH_AGGREGATE, or by an earlier "
            f"sparkseq whose state layout differs (state digest {found}; this statement's: "
            f"{', '.join(sorted(expected))}); a query restarted from a checkpoint "
            "must be the same statement (and bucket count) — start a changed query with a new checkpoint location")


#: The first bytes of the JVM live operator's state (``SparkSeqLive.MAGIC``) and the layout
#: version this sparkseq writes and reads (``SparkSeqLive.VERSION``).
JVM_STATE_MAGIC = b"SQJL"
JVM_STATE_VERSION = 2


@dataclass(frozen=True)
class JvmState:
    """The head of one key's state written by the JVM live operator: the statement's digest,
    the first window not yet emitted (SLIDE; None before any) and the times of the rows held."""

    digest: str
    next_window: int | None
    ts: tuple[int, ...]


def jvm_state(blob: bytes) -> JvmState | None:
    """What a stored state of the JVM live operator holds (``SparkSeqLive.KeyState.toBytes``:
    big-endian; each row's time a zigzag varint of the step from the row before, then its mask
    as a varint), None for state it did not write (the Python operator's).

    Raises
    ------
    StreamingError
        State of another layout version than :data:`JVM_STATE_VERSION`.
    """
    if blob[:4] != JVM_STATE_MAGIC:
        return None
    version, size = struct.unpack_from(">bH", blob, 4)
    if version != JVM_STATE_VERSION:
        raise StreamingError(f"the checkpoint holds JVM live-operator state of layout version {version}; this sparkseq "
                             f"reads layout version {JVM_STATE_VERSION} — start the query with a new checkpoint "
                             "location (or run the sparkseq that wrote it)")
    at = 7 + size
    digest = blob[7:at].decode()
    next_window, n = struct.unpack_from(">qi", blob, at)
    at += 12
    ts, previous = [], 0
    for _ in range(n):
        step, at = _varint(blob, at)
        previous += (step >> 1) ^ -(step & 1)  # zigzag
        ts.append(previous)
        _, at = _varint(blob, at)  # the mask
    return JvmState(digest, None if next_window == -(2**63) else next_window, tuple(ts))


def _varint(blob: bytes, at: int) -> tuple[int, int]:
    """The unsigned varint at ``blob[at:]`` (7 bits a byte, low first) and where the next item starts."""
    value = shift = 0
    while True:
        byte = blob[at]
        value |= (byte & 0x7F) << shift
        at, shift = at + 1, shift + 7
        if byte < 0x80:
            return value, at


#: One of Spark's errors in a text: ``[CONDITION] message SQLSTATE: code``, then the place of
#: the text it is about, when it has one (``== SQL (line L, position P) ==``, the excerpt, the
#: underline). The message holds no other condition (a wrapper's message quotes its cause's).
_SPARK_ERROR = re.compile(r"\[(?P<condition>[A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)\] "
                          r"(?P<message>(?:(?!\[[A-Z][A-Z0-9_.]*\] )[^\n])*?) SQLSTATE: \w+"
                          r"(?P<place>\n== SQL[^\n]*==\n[^\n]*\n *\^+)?")
#: Spark's conditions that wrap the error a streaming query stopped with.
_WRAPPERS = frozenset({"STREAM_FAILED", "FOREACH_BATCH_USER_FUNCTION_ERROR"})
#: Where Spark's text of a failed streaming query starts describing the query (its plan, in
#: the names of the SQL a statement became).
_QUERY_DESCRIPTION = "\n=== Streaming Query ==="


def failure_message(text: str) -> str:
    r"""The error a live query stopped with, as the user reads it, from Spark's text of the
    failure (``str()`` of what ``awaitTermination()`` / ``processAllAvailable()`` raise):
    the error it stopped with — a DEFINE's run-time error with the place of the condition in
    the user's statement (:func:`replacer`) — without Spark's wrapping (``STREAM_FAILED``, a
    ``foreachBatch`` function's Python traceback), its description of the query (a plan in
    generated names) or the JVM stack trace.

    >>> print(failure_message("[STREAM_FAILED] Query [id = 1, runId = 2] terminated with exception: "
    ...                       "[DIVIDE_BY_ZERO] Division by zero. SQLSTATE: 22012\n== SQL (line 1, position 13) ==\n"
    ...                       "DEFINE A AS x / 0 > 1\n            ^^^^^^^^^\n SQLSTATE: XXKST\n"
    ...                       "=== Streaming Query ===\n+- ~Project [__sparkseq_mask#1L]"))
    [DIVIDE_BY_ZERO] Division by zero. SQLSTATE: 22012
    == SQL (line 1, position 13) ==
    DEFINE A AS x / 0 > 1
                ^^^^^^^^^
    """
    text = text.split(_QUERY_DESCRIPTION)[0]
    found = [m for m in _SPARK_ERROR.finditer(text) if m["condition"] not in _WRAPPERS]
    chosen = next((m for m in found if m["place"]), found[-1] if found else None)
    if chosen is not None:
        return chosen.group(0)
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[0] if lines else text


def progress(last: dict | None) -> dict[str, Any] | None:
    """A micro-batch's progress (``query.lastProgress``, or an item of
    ``query.recentProgress``) in brief, summed over the stateful operators: batch, input
    rows, rows per second, watermark, late rows dropped, state rows and bytes, rows
    emitted, duration. None for None (no batch yet)."""
    if not last:
        return None
    ops = last.get("stateOperators", [])
    return {
        "batch": last["batchId"],
        "input_rows": last["numInputRows"],
        "rows_per_second": last.get("processedRowsPerSecond") or 0.0,
        "watermark": last.get("eventTime", {}).get("watermark"),
        "late_rows_dropped": sum(op.get("numRowsDroppedByWatermark", 0) for op in ops),
        "state_rows": sum(op.get("numRowsTotal", 0) for op in ops),
        "state_bytes": sum(op.get("memoryUsedBytes", 0) for op in ops),
        "output_rows": last.get("sink", {}).get("numOutputRows", -1),
        "duration_ms": last.get("durationMs", {}).get("triggerExecution", 0),
    }


__all__ = ["JVM_VIEW_PREFIX", "VIEW_PREFIX", "replacer", "source_frame", "engine_value", "check_watermark",
           "check_keys", "frame",
           "view_name", "encode_key", "decode_key", "progress", "bucket_count", "check_checkpoint", "BUCKETS_CONF",
           "runs_in_jvm", "jvm_operator", "python_operator", "jvm_state", "JvmState", "jvm_state_digest",
           "JVM_STATE_MAGIC", "JVM_STATE_VERSION",
           "DEFAULT_BUCKETS", "failure_message"]
