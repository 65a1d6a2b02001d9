"""Spark-facing wrappers around the engine: Arrow arrays in, Arrow values out.

The functions here are the bodies of grouped-aggregate Arrow UDFs
(``pyspark.sql.functions.arrow_udf``) that ``sparkseq.spark.registration`` registers. They
need only pyarrow and numpy, so a Python worker unpickles them by reference (this
module) without touching the JVM side.

Arrow rather than pandas UDFs: a nullable BIGINT column reaches a pandas UDF as
float64 with NaN, which is inexact beyond 2**53; Arrow keeps the int64 values and a
separate validity bitmap, which is exactly the kernel's ``(values, valid)`` input.

The engine function of a plan (:func:`plan_aggregate`) carries its plan inside: the
plan travels once, with the function, rather than as a literal argument that Spark
would ship with every row (measured: 15-30 % of a 10-million-row query). The
fixed-signature functions (``sparkseq_count(plan, ts, mask)``) take the plan as an
argument instead, parsed once per distinct text per worker. Results come back as
``array<struct<window_start, window_end, m0, ..., error>>`` for ``inline()``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from udafs import contract
from udafs.errors import CountOverflowError, PlanError, UncertainTimeError
from udafs.kernels import GroupResult, evaluate_group
from udafs.kernels.incremental.timesplit import evaluate_in_chunks
from udafs.kernels.multiplan.many import evaluate_many
from udafs.multiplan import MultiPlan
from udafs.plan import Measure, MeasureKind, Plan, ValueType
from udafs.workers.faults import with_worker_fault

_ARROW = {contract.BIGINT: pa.int64(), contract.DOUBLE: pa.float64(), contract.STRING: pa.string(),
          contract.DECIMAL: pa.decimal128(38, 0)}
_ARROW.update({contract.steps_type(ct): pa.list_(_ARROW[sql]) for ct, sql in contract.COUNT_TYPE_SQL.items()})
_NP = {ValueType.INT: np.int64, ValueType.FLOAT: np.float64}
MAX_INT64_DIGITS = 18  # every DECIMAL(18, s) unscaled value fits int64

Column = tuple[np.ndarray, np.ndarray]

# The result schema is the engine contract's (udafs.contract), the one source of truth
# shared with the compiler; these names are kept for the Spark layer's callers.
PARTITION_SLOT = contract.PARTITION_SLOT
value_sql_type = contract.value_type
result_fields = contract.result_fields
output_ddl = contract.result_type


@functools.lru_cache(maxsize=256)
def parse_plan(text: str) -> Plan:
    """``Plan.from_json`` once per distinct plan text in this worker."""
    return Plan.from_json(text)


def plan_of(plan: pa.Array) -> Plan:
    """The plan from a UDF's plan argument (a constant string column)."""
    if len(plan) == 0 or not plan[0].is_valid:
        raise PlanError("the plan argument must be a non-NULL string literal")
    return parse_plan(plan[0].as_py())


def group_arrays(plan: Plan, ts: pa.Array, mask: pa.Array,
                 values: Sequence[pa.Array]) -> tuple[np.ndarray, np.ndarray, list[Column]]:
    """Kernel input from Arrow columns. Rows with a NULL ts or mask take part in nothing."""
    ts, mask, cols, _ = group_arrays_seq(plan, ts, mask, values, None)
    return ts, mask, cols


def group_arrays_seq(plan: Plan, ts: pa.Array, mask: pa.Array, values: Sequence[pa.Array],
                     seq: pa.Array | None) -> tuple[np.ndarray, np.ndarray, list[Column], np.ndarray | None]:
    """:func:`group_arrays` plus the contiguity rank ``seq`` (filtered alike; None stays None).

    Raises
    ------
    PlanError
        Wrong number of value columns, or a NULL ``seq`` on a row that takes part.
    """
    if len(values) != len(plan.columns):
        raise PlanError(f"the plan declares {len(plan.columns)} value columns, "
                        f"but {len(values)} value arguments were passed")
    if ts.null_count or mask.null_count:
        keep = pc.and_(ts.is_valid(), mask.is_valid())
        ts, mask = ts.filter(keep), mask.filter(keep)
        values = [v.filter(keep) for v in values]
        seq = None if seq is None else seq.filter(keep)
    if seq is not None and seq.null_count:
        raise PlanError("the contiguity rank (seq) is NULL on a row with a time and a mask")
    cols = [column_arrays(v, vt) for v, vt in zip(values, plan.columns)]
    return _int64(ts), _int64(mask), cols, None if seq is None else _int64(seq)


def group_bounds(ts: pa.Array, mask: pa.Array, bounds: Sequence[pa.Array]) -> tuple[np.ndarray, np.ndarray]:
    """First and last possible times of the rows :func:`group_arrays_seq` keeps; a NULL
    bound is the row's own time (a point event when both are NULL)."""
    lo, hi = (pc.coalesce(b, ts) for b in bounds)
    if ts.null_count or mask.null_count:
        keep = pc.and_(ts.is_valid(), mask.is_valid())
        lo, hi = lo.filter(keep), hi.filter(keep)
    return _int64(lo), _int64(hi)


def column_arrays(arr: pa.Array, vt: ValueType) -> Column:
    """A nullable Arrow column as the kernel's ``(values, valid)`` pair (a DECIMAL column
    as its unscaled integers, :func:`unscaled`)."""
    if vt is ValueType.DECIMAL or pa.types.is_decimal(arr.type) and vt is ValueType.INT:
        return unscaled(arr)
    dtype = _NP[vt]
    if arr.null_count == 0:
        return arr.to_numpy(zero_copy_only=False).astype(dtype, copy=False), np.ones(len(arr), dtype=bool)
    valid = arr.is_valid().to_numpy(zero_copy_only=False)
    return pc.fill_null(arr, 0).to_numpy(zero_copy_only=False).astype(dtype, copy=False), valid


def arrow_type(sql: str) -> pa.DataType:
    """The Arrow type of a result field's SQL type (:mod:`udafs.contract`)."""
    return _ARROW[sql]


def unscaled(arr: pa.Array) -> Column:
    """The unscaled integers of a DECIMAL (or integer) column, exactly: int64 when the
    precision is at most 18 digits, else Python ints in an object array (up to 38)."""
    if not pa.types.is_decimal(arr.type):
        return column_arrays(arr, ValueType.INT)
    if arr.type.bit_width != 128:
        arr = pc.cast(arr, pa.decimal128(arr.type.precision, arr.type.scale))
    valid = np.ones(len(arr), dtype=bool) if arr.null_count == 0 else arr.is_valid().to_numpy(zero_copy_only=False)
    # A decimal128 is a little-endian two's-complement 128-bit integer: low word, then high word.
    words = np.frombuffer(arr.buffers()[1], dtype=np.int64)[2 * arr.offset:2 * (arr.offset + len(arr))]
    low, high = words[0::2], words[1::2]
    if arr.type.precision <= MAX_INT64_DIGITS:  # the high word only repeats the sign
        return np.where(valid, low, 0), valid
    wide = high.astype(object) * (1 << 64) + low.view(np.uint64).astype(object)
    wide[~valid] = 0
    return wide, valid


def _int64(arr: pa.Array) -> np.ndarray:
    return arr.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)


def result_rows(res: GroupResult) -> int:
    """Number of output rows in a result (exactly one without SLIDE)."""
    if res.window_start is not None:
        return len(res.window_start)
    return len(res.values[0]) if res.values else 1


def result_arrays(plan: Plan, res: GroupResult) -> list[pa.Array]:
    """One Arrow array per :func:`result_fields` entry, typed as the SQL schema says."""
    n = result_rows(res)
    arrays = [_bound(res.window_start, n), _bound(res.window_end, n)]
    for (_, sql), vals, ok in zip(result_fields(plan)[2:], res.values, res.valid):
        arrays.append(to_arrow(vals, ok, sql))
    return arrays


def _bound(arr: np.ndarray | None, n: int) -> pa.Array:
    return pa.nulls(n, pa.int64()) if arr is None else pa.array(arr, type=pa.int64())


def to_arrow(vals: np.ndarray, ok: np.ndarray, sql: str) -> pa.Array:
    """Kernel values plus validity as an Arrow array of SQL type ``sql``."""
    typ = _ARROW[sql]
    nulls = None if ok.all() else ~ok
    if pa.types.is_list(typ):  # STEPS(*): one row of prefix counts per output row
        return pa.array(vals.tolist(), type=typ, mask=nulls)
    if pa.types.is_decimal(typ):  # object arrays of Python ints, or int64
        return pa.array(vals.tolist(), type=typ, mask=nulls)
    return pa.array(vals, type=typ, mask=nulls)


def as_list_value(arrays: list[pa.Array], names: list[str]) -> pa.Scalar:
    """Arrays of equal length as one ``array<struct>`` value."""
    rows = pa.StructArray.from_arrays(arrays, names=names)
    return pa.ListArray.from_arrays(pa.array([0, len(rows)], type=pa.int32()), rows)[0]


class Verbatim(str):
    """A string whose ``repr`` is itself: a ready-made partition name for error messages."""

    def __repr__(self) -> str:
        return str(self)


def plan_aggregate(plan_json: str) -> Callable[..., pa.Scalar]:
    """The grouped-aggregate body of the engine function of one plan (``Plan.to_json()``).

    Called as ``f(ts, mask, v0, v1, ...)``, or ``f(ts, mask, seq, v0, v1, ...)`` for a
    plan with a contiguity strategy (:mod:`udafs.contract`); returns every
    measure of the plan for one group, per window. On overflow it returns a single row
    whose ``error`` holds the message with :data:`PARTITION_SLOT` where the partition
    key belongs; the generated SQL raises it.
    """
    def engine(ts: pa.Array, mask: pa.Array, *values: pa.Array) -> pa.Scalar:
        p = parse_plan(plan_json)
        if contract.takes_seq(p):
            if len(values) != len(p.columns) + 1:
                raise PlanError(f"a plan with strategy {p.strategy.name} takes (ts, mask, seq, v0, ...): "
                                f"{len(p.columns) + 3} arguments, got {len(values) + 2}")
            return aggregate_group(p, ts, mask, values[1:], seq=values[0])
        if contract.takes_bounds(p):
            if len(values) != len(p.columns) + 2:
                raise PlanError(f"a plan over imprecise timestamps takes (ts, mask, lo, hi, v0, ...): "
                                f"{len(p.columns) + 4} arguments, got {len(values) + 2}")
            return aggregate_group(p, ts, mask, values[2:], bounds=values[:2])
        return aggregate_group(p, ts, mask, values)

    return engine


@with_worker_fault
def aggregate_group(p: Plan, ts: pa.Array, mask: pa.Array, values: Sequence[pa.Array],
                    seq: pa.Array | None = None, bounds: Sequence[pa.Array] | None = None) -> pa.Scalar:
    """Every measure of ``p`` for one group as the contract's ``array<struct<...>>`` value;
    ``seq`` is the contiguity rank of each row (contiguity strategies only), ``bounds``
    the first and last possible time (imprecise timestamps only; NULL means ``ts``)."""
    fields = result_fields(p) + [(contract.ERROR, contract.STRING)]
    names = [n for n, _ in fields]
    try:
        ts_, mask_, cols, seq_ = group_arrays_seq(p, ts, mask, values, seq)
        lohi = None if bounds is None else group_bounds(ts, mask, bounds)
        # a big group in time chunks, one after the other: a chunk's kernel memory, the same result
        res = evaluate_in_chunks(p, ts_, mask_, cols) if seq_ is None and lohi is None else None
        if res is None:
            res = evaluate_group(p, ts_, mask_, cols, seq=seq_, bounds=lohi)
    except (CountOverflowError, UncertainTimeError) as exc:
        return error_value(fields, str(exc.with_partition(Verbatim(PARTITION_SLOT))))
    except MemoryError:  # numpy's failed allocation; the worker itself is still alive
        return error_value(fields, out_of_memory(PARTITION_SLOT, len(ts)))
    arrays = result_arrays(p, res)
    return as_list_value(arrays + [pa.nulls(len(arrays[0]), pa.string())], names)


def multi_aggregate(multi_json: str) -> Callable[..., pa.Scalar]:
    """The grouped-aggregate body of the engine function of a :class:`MultiPlan` (an E-Cube).

    Like :func:`plan_aggregate`, but each result row starts with ``plan``, the index of
    the plan (cuboid) it belongs to (:func:`udafs.contract.multi_result_fields`).
    """
    def engine(ts: pa.Array, mask: pa.Array, *values: pa.Array) -> pa.Scalar:
        return aggregate_many(parse_multi_plan(multi_json), ts, mask, values)

    return engine


@functools.lru_cache(maxsize=64)
def parse_multi_plan(text: str) -> MultiPlan:
    """The MultiPlan of its JSON text, parsed once per worker for each text seen recently."""
    return MultiPlan.from_json(text)


@with_worker_fault
def aggregate_many(mp: MultiPlan, ts: pa.Array, mask: pa.Array, values: Sequence[pa.Array]) -> pa.Scalar:
    """Every reported plan's measures for one group, as one ``array<struct<plan, ...>>`` value."""
    fields = contract.multi_result_fields(mp) + [(contract.ERROR, contract.STRING)]
    names = [n for n, _ in fields]
    try:
        results = evaluate_many(mp, *group_arrays(mp.plans[0], ts, mask, values))
    except CountOverflowError as exc:
        return error_value(fields, str(exc.with_partition(Verbatim(PARTITION_SLOT))))
    except MemoryError:
        return error_value(fields, out_of_memory(PARTITION_SLOT, len(ts)))
    return as_list_value(multi_result_arrays(mp, results), names)


def error_value(fields: list[tuple[str, str]], message: str) -> pa.Scalar:
    """The one-row result carrying ``message`` in ``error`` (the generated SQL raises it)."""
    arrays = [pa.nulls(1, _ARROW[t]) for _, t in fields[:-1]] + [pa.array([message])]
    return as_list_value(arrays, [n for n, _ in fields])


def out_of_memory(partition: str, rows: int) -> str:
    """The message for a group whose evaluation ran out of memory in a Python worker."""
    return (f"a Python worker ran out of memory evaluating partition {partition} ({rows:,} rows); give the "
            "executors' Python workers more memory (spark.executor.memoryOverhead, spark.executor.pyspark.memory) "
            "or evaluate this partition on the bounded-memory streaming path (sparkseq.stream_query)")


def multi_result_arrays(mp: MultiPlan, results: Sequence[GroupResult | None]) -> list[pa.Array]:
    """The rows of every reported plan, one array per :func:`udafs.contract.multi_result_fields`
    entry plus ``error`` (NULL): ``plan`` index, window bounds, and each plan's measures
    in its fields (NULL in the fields it does not fill). Each column is gathered in numpy
    and made an Arrow array once (not an array per plan, concatenated)."""
    fields = contract.multi_result_fields(mp)
    reported = [(i, res, result_rows(res)) for i, res in enumerate(results) if res is not None]
    rows = np.array([n for _, _, n in reported], dtype=np.int64)
    total = int(rows.sum())
    plans = np.repeat(np.array([i for i, _, _ in reported], dtype=np.int64), rows)
    columns = [pa.array(plans, type=pa.int64()),
               _pieces([res.window_start for _, res, _ in reported], rows, contract.BIGINT),
               _pieces([res.window_end for _, res, _ in reported], rows, contract.BIGINT)]
    by_field = [dict(zip(mp.slots[i], zip(res.values, res.valid))) for i, res, _ in reported]
    for f, (_, sql) in enumerate(fields[3:]):
        filled = [own.get(f) for own in by_field]
        columns.append(_pieces([None if x is None else x[0] for x in filled], rows, sql,
                               [None if x is None else x[1] for x in filled]))
    return [*columns, pa.nulls(total, pa.string())]


def _pieces(values: list[np.ndarray | None], rows: np.ndarray, sql: str,
            valid: list[np.ndarray | None] | None = None) -> pa.Array:
    """One Arrow column of SQL type ``sql`` from per-plan pieces of ``rows[j]`` values each
    (None: NULL in all of them; ``valid``: False where a value is NULL)."""
    total = int(rows.sum())
    present = [j for j, v in enumerate(values) if v is not None]
    if not present:
        return pa.nulls(total, _ARROW[sql])
    like = values[present[0]]
    assert like is not None
    vals = np.concatenate([v if v is not None else np.zeros(int(rows[j]), dtype=like.dtype)
                           for j, v in enumerate(values)]) if len(values) > 1 else like
    oks: list[np.ndarray] = []
    for j, v in enumerate(values):
        own = None if valid is None else valid[j]
        if v is None:
            oks.append(np.zeros(int(rows[j]), dtype=bool))
        else:
            oks.append(np.ones(len(v), dtype=bool) if own is None else own)
    ok = np.concatenate(oks) if len(oks) > 1 else oks[0]
    return to_arrow(vals, ok, sql)


# --- fixed-signature functions: one SQL signature for every plan -------------------

COUNT_WINDOWS_DDL = "array<struct<window_start:bigint,window_end:bigint,count:bigint>>"


@functools.lru_cache(maxsize=256)
def _count_plan(text: str, windows: bool) -> Plan:
    """The plan reduced to COUNT(*) as BIGINT, checked for (no) SLIDE."""
    p = parse_plan(text)
    if windows and p.slide is None:
        raise PlanError("sparkseq_count_windows needs a plan with SLIDE; use sparkseq_count")
    if not windows and p.slide is not None:
        raise PlanError("sparkseq_count needs a plan without SLIDE; use sparkseq_count_windows")
    return Plan(symbols=p.symbols, elements=p.elements, negations=p.negations, within=p.within,
                slide=p.slide, measures=(Measure(MeasureKind.COUNT_STAR, name="count"),))


def _count(plan: pa.Array, ts: pa.Array, mask: pa.Array, partition: Sequence[pa.Array],
           windows: bool) -> GroupResult:
    if len(plan) == 0 or not plan[0].is_valid:
        raise PlanError("the plan argument must be a non-NULL string literal")
    p = _count_plan(plan[0].as_py(), windows)
    try:
        return evaluate_group(p, *group_arrays(p, ts, mask, ()))
    except CountOverflowError as exc:
        if partition:
            raise exc.with_partition(partition[0][0].as_py()) from None
        raise


def count_matches(plan: pa.Array, ts: pa.Array, mask: pa.Array, *partition: pa.Array) -> int:
    """``sparkseq_count(plan, ts, mask[, partition])``: COUNT(*) of a plan without SLIDE.

    The optional ``partition`` argument (any expression constant per group) only
    serves to name the group in an overflow error.
    """
    return int(_count(plan, ts, mask, partition, windows=False).values[0][0])


def count_windows(plan: pa.Array, ts: pa.Array, mask: pa.Array, *partition: pa.Array) -> pa.Scalar:
    """``sparkseq_count_windows(plan, ts, mask[, partition])``: COUNT(*) per SLIDE window."""
    res = _count(plan, ts, mask, partition, windows=True)
    arrays = [pa.array(res.window_start, pa.int64()), pa.array(res.window_end, pa.int64()),
              pa.array(res.values[0], pa.int64())]
    return as_list_value(arrays, ["window_start", "window_end", "count"])
