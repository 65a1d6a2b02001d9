"""BI-friendly SQL functions: pattern strings over a type column, in plain ``GROUP BY``.

Any SQL client of the session (a BI tool over Thrift/JDBC, ``spark.sql``) can call
them without the MATCH_AGGREGATE rewriter::

    SELECT customer_id,
           seq_count(ts, action, 'SEQ(view, buy, !return)', INTERVAL 10 MINUTES) AS funnels,
           seq_sum(ts, action, 'SEQ(view, buy)', NULL, 'buy', price) AS revenue
    FROM clicks GROUP BY customer_id

    SELECT customer_id, w.*
    FROM (SELECT customer_id, seq_count_windows(ts, action, 'SEQ(view, buy)',
                 INTERVAL 10 MINUTES, INTERVAL 1 MINUTE) AS ws FROM clicks GROUP BY customer_id)
    LATERAL VIEW inline(ws) w

Every symbol of the pattern is a *type value*: a row is an instance of ``X`` when its
type column equals ``'X'`` (as text; the spelling is the value, so ``view`` and
``View`` differ, exactly as under ``TYPE BY``); ``'quoted values'`` may hold any text.
The pattern grammar and its errors are those of ``PATTERN`` (:mod:`sql_rewrites.clauses.pattern`).

=======================================================  ===================================
function                                                 returns
=======================================================  ===================================
``seq_count(ts, type, pattern [, within])``              BIGINT (exact; overflow raises)
``seq_sum|seq_avg|seq_min|seq_max(ts, type, pattern,``   DOUBLE (SUM computed exactly for
``within_or_NULL, symbol, value)``                       integers and decimals, then rounded
                                                         once); NULL when no value
``seq_count_windows(ts, type, pattern, within, slide)``  ``ARRAY<STRUCT<window_start
                                                         TIMESTAMP, window_end TIMESTAMP,
                                                         count BIGINT>>`` for ``inline``
``seq_sum_windows`` … ``seq_max_windows(ts, type,``      the same with ``sum`` / ``avg`` /
``pattern, within, slide, symbol, value)``               ``min`` / ``max`` DOUBLE
``seq_steps(ts, type, pattern [, within])``              ``ARRAY<BIGINT>``: the funnel, one
                                                         count per prefix E1..Ei of the
                                                         pattern (the last is seq_count);
                                                         NULL over no rows at all
``seq_max_step(ts, type, pattern [, within])``           BIGINT: the longest prefix with a
                                                         match (0: none), e.g. per customer
                                                         for a drop-off table
=======================================================  ===================================

``ts`` is a TIMESTAMP or TIMESTAMP_NTZ (then ``within``/``slide`` are intervals:
``INTERVAL 10 MINUTES`` or a string such as ``'10 minutes'``) or an integral number
(then they are numbers in its units); the window functions need a TIMESTAMP. Rows
with a NULL ``ts`` take part in nothing. ``pattern``, ``within``, ``slide`` and
``symbol`` must be the same for every row of a group (literals, normally).

A pattern may end in ``STRATEGY SKIP TILL ANY MATCH | SKIP TILL NEXT MATCH | PARTITION
CONTIGUITY`` (before or after ``HIERARCHY name``), e.g.
``'SEQ(A, B+, C) STRATEGY SKIP TILL NEXT MATCH'``. PARTITION CONTIGUITY ranks every row
of the group (also rows of no symbol); STRICT CONTIGUITY is refused here, since a
grouped function cannot see the rest of the input (use MATCH_AGGREGATE).

These are the bodies of grouped-aggregate Arrow UDFs (``arrow_udf``); Python workers
import this module by reference. Patterns are compiled once per worker and text, by
:mod:`sql_rewrites.analysis.seq_functions` (signatures, the pattern argument's grammar, the checks
made before any Spark job); this module converts the Arrow arguments and results.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from fractions import Fraction

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sql_rewrites.analysis.seq_functions import (
    AVG,
    COUNT,
    MAX,
    MAX_STEP,
    MIN,
    SIGNATURES,
    STEPS,
    SUM,
    Compiled,
    FunctionArgumentError,
    Hierarchies,
    Signature,
    compile_call,
)
from sql_rewrites.clauses.windows import WindowSpec, describe_length, interval_text_length
from sql_rewrites.errors import NonNumericMeasureError, OrderByError, WindowTypeMismatchError
from sql_rewrites.logical.sql_types import ORDER_TYPES_HELP, SUM_TYPES_HELP, OrderKind
from udafs.errors import CountOverflowError
from udafs.kernels import GroupResult, evaluate_group
from udafs.plan import MeasureKind, Strategy, ValueType
from udafs.workers.grouped import column_arrays, unscaled

MAX_EXACT_DIGITS = 18  # DECIMAL(p, s) with p <= 18 travels as an exact int64 ...
MAX_EXACT_SCALE = 6  # ... scaled by 10^s, like MATCH_AGGREGATE (sql_rewrites.logical.sql_types)
TIMESTAMP_UTC = pa.timestamp("us", tz="UTC")


class FunctionOverflowError(CountOverflowError):
    """A ``seq_*`` count does not fit BIGINT."""

    def __init__(self, function: str, exc: CountOverflowError) -> None:
        ArithmeticError.__init__(
            self,
            f"{function}: {exc.what} has {exc.value_digits} decimal digits and does not fit BIGINT; "
            "use MATCH_AGGREGATE with COUNT TYPE DECIMAL (or DOUBLE) for such counts",
        )
        self.what, self.value_digits, self.target, self.partition = exc.what, exc.value_digits, "BIGINT", None


def type_mask(compiled: Compiled, types: pa.Array) -> np.ndarray:
    """Per-row symbol bitmask: which symbols' type value the row's type equals."""
    if not (pa.types.is_string(types.type) or pa.types.is_large_string(types.type)):
        types = pc.cast(types, pa.string())
    index = pc.index_in(types, value_set=pa.array(compiled.values, type=types.type))
    index = index.fill_null(-1).to_numpy(zero_copy_only=False)
    return np.where(index >= 0, compiled.bits[np.maximum(index, 0)], 0).astype(np.int64)


# --- argument conversion -----------------------------------------------------------------


def constant(sig: Signature, name: str, arr: pa.Array | None) -> pa.Scalar | None:
    """The one value of a constant argument (None when NULL or left out)."""
    if arr is None or len(arr) == 0 or pa.types.is_null(arr.type):
        return None
    first = arr[0]
    if len(arr) > 1 and pc.count_distinct(arr, mode="all").as_py() > 1:
        raise FunctionArgumentError(f"{sig.usage}: {name} must be the same for every row of a group "
                                    "(write it as a literal)")
    return first


def event_time(sig: Signature, arr: pa.Array) -> tuple[np.ndarray, np.ndarray, OrderKind]:
    """(int64 times, validity, kind) of the ``ts`` argument."""
    t = arr.type
    if pa.types.is_timestamp(t):
        kind = OrderKind.TIMESTAMP if t.tz else OrderKind.TIMESTAMP_NTZ
        micros = pc.cast(arr, pa.timestamp("us", tz=t.tz)).cast(pa.int64())
        values, valid = column_arrays(micros, ValueType.INT)
    elif pa.types.is_integer(t) or (pa.types.is_decimal(t) and t.scale == 0 and t.precision <= MAX_EXACT_DIGITS):
        kind = OrderKind.INTEGRAL
        values, valid = integral(arr)
    else:
        raise OrderByError(f"{sig.name}: ts is {sql_type(t)}; the event time must be {ORDER_TYPES_HELP} "
                           "(e.g. CAST(ts AS TIMESTAMP))")
    if sig.windows and kind is not OrderKind.TIMESTAMP:
        raise OrderByError(f"{sig.name} returns TIMESTAMP window bounds and needs a TIMESTAMP event time, got "
                           f"{'TIMESTAMP_NTZ' if kind is OrderKind.TIMESTAMP_NTZ else sql_type(t)}; cast it, or use "
                           "MATCH_AGGREGATE ... SLIDE, whose window bounds have the ORDER BY column's type")
    return values, valid, kind


def integral(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Integers or DECIMAL(p <= 18, s) as exact int64 (a decimal as its unscaled value)."""
    return unscaled(arr)


def window_argument(sig: Signature, name: str, arr: pa.Array | None, kind: OrderKind) -> int | None:
    """The ``within`` / ``slide`` argument in engine units (µs for timestamps), checked against
    ``ts``; None when NULL or absent (:class:`WindowSpec` checks the two together)."""
    value = constant(sig, name, arr)
    if value is None or not value.is_valid:
        return None
    t = arr.type  # type: ignore[union-attr]
    if pa.types.is_duration(t):
        if not kind.takes_intervals:
            raise WindowTypeMismatchError(f"{sig.name}: ts is numeric, so {name} takes a plain number in the "
                                          f"same units, e.g. 600, not an interval")
        return int(pc.cast(pa.array([value.as_py()], t), pa.duration("us")).cast(pa.int64())[0].as_py())
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        if not kind.takes_intervals:
            raise WindowTypeMismatchError(f"{sig.name}: ts is numeric, so {name} takes a plain number, "
                                          f"got {value.as_py()!r}")
        return interval_text_length(value.as_py(), name.upper())
    if pa.types.is_integer(t) or pa.types.is_decimal(t):
        if kind.takes_intervals:
            raise WindowTypeMismatchError(f"{sig.name}: ts is a timestamp, so {name} takes an interval, e.g. "
                                          f"INTERVAL 10 MINUTES or '10 minutes', got {value.as_py()}")
        number = value.as_py()
        if number != int(number):
            raise FunctionArgumentError(f"{sig.name}: {name} must be a whole number, got {number}")
        return int(number)
    raise FunctionArgumentError(f"{sig.usage}: {name} must be an INTERVAL, a string like '10 minutes' or a "
                                f"number, got {t}")


def value_column(sig: Signature, arr: pa.Array) -> tuple[ValueType, int, tuple[np.ndarray, np.ndarray]]:
    """(engine value type, decimal scale, (values, validity)) of the measured column."""
    t = arr.type
    if pa.types.is_integer(t):
        return ValueType.INT, 0, column_arrays(arr, ValueType.INT)
    if pa.types.is_floating(t):
        return ValueType.FLOAT, 0, column_arrays(pc.cast(arr, pa.float64()), ValueType.FLOAT)
    if pa.types.is_null(t):
        return ValueType.FLOAT, 0, (np.zeros(len(arr)), np.zeros(len(arr), dtype=bool))
    if pa.types.is_decimal(t):
        if t.precision <= MAX_EXACT_DIGITS and t.scale <= MAX_EXACT_SCALE:
            return ValueType.INT, t.scale, integral(arr)
        return ValueType.FLOAT, 0, column_arrays(pc.cast(arr, pa.float64()), ValueType.FLOAT)
    raise NonNumericMeasureError(f"{sig.name}: the value column is {sql_type(t)}, not numeric; {sig.name} accepts "
                                 f"{SUM_TYPES_HELP}")


def sql_type(arrow_type: pa.DataType) -> str:
    """The Spark SQL name of the type a column arrived as (``STRING``, not Arrow's ``large_string``)."""
    from pyspark.sql.pandas.types import from_arrow_type

    try:
        return str(from_arrow_type(arrow_type).simpleString()).upper()
    except (TypeError, ValueError):  # a type Spark does not map (cannot come from Spark)
        return str(arrow_type)


# --- evaluation --------------------------------------------------------------------------


def evaluate(sig: Signature, args: Sequence[pa.Array], hierarchies: Hierarchies = ()) -> tuple[GroupResult, int]:
    """The engine's result for one group, and the decimal scale of the measured values."""
    call = sig.bind(args)
    ts, ts_valid, kind = event_time(sig, call["ts"])
    pattern = constant(sig, "pattern", call["pattern"])
    if pattern is None or not pattern.is_valid or not isinstance(pattern.as_py(), str):
        raise FunctionArgumentError(f"{sig.usage}: pattern must be a string such as 'SEQ(A, B)'")
    within = window_argument(sig, "within", call["within"], kind)
    slide = window_argument(sig, "slide", call.get("slide"), kind)
    if sig.windows and (within is None or slide is None):
        raise FunctionArgumentError(f"{sig.usage}: within and slide are required (not NULL)")
    clock = kind.takes_intervals
    shown = None if within is None or slide is None else (describe_length(within, clock), describe_length(slide, clock))
    WindowSpec.checked(within, slide, shown=shown)
    symbol, value_type, scale, columns = None, None, 0, []
    if not sig.counts:
        named = constant(sig, "symbol", call["symbol"])
        if named is None or not named.is_valid:
            raise FunctionArgumentError(f"{sig.usage}: symbol must name a symbol of the pattern, e.g. 'B'")
        symbol = str(named.as_py())
        value_type, scale, column = value_column(sig, call["value"])
        columns = [column]
    compiled = compile_call(sig, pattern.as_py(), within, slide, symbol, value_type, hierarchies)
    mask = type_mask(compiled, call["type"])
    keep = ts_valid & (mask != 0)
    if compiled.plan.strategy is Strategy.PARTITION_CONTIGUITY:
        keep = ts_valid  # rows of no symbol stay (mask 0): the engine ranks every row of the group
    if not keep.all():
        ts, mask, columns = ts[keep], mask[keep], [(v[keep], ok[keep]) for v, ok in columns]
    try:
        return evaluate_group(compiled.plan, ts, mask, columns), scale
    except CountOverflowError as exc:
        raise FunctionOverflowError(sig.name, exc) from None


def measure_values(sig: Signature, res: GroupResult, scale: int) -> pa.Array:
    """The measure as an Arrow array of the function's value type (NULL where invalid).

    Values of a decimal column come back in units of 10^-scale: exact integers for
    SUM/MIN/MAX (divided exactly, then rounded once), a double for AVG.
    """
    values, valid = res.values[0], res.valid[0]
    if sig.kind is MeasureKind.STEPS:  # BIGINT counts: the kernel raised if one did not fit
        return pa.array(values.astype(np.int64).tolist(), pa.list_(pa.int64()))
    if sig.counts:
        return pa.array(values.astype(np.int64), pa.int64())
    if scale and sig.kind is not MeasureKind.AVG:
        doubles = [float(Fraction(int(v), 10**scale)) for v in values.tolist()]
    else:
        doubles = [float(v) / 10**scale for v in values.tolist()]
    return pa.array(np.array(doubles, dtype=np.float64), pa.float64(), mask=~valid)


def aggregate(sig: Signature, args: Sequence[pa.Array], hierarchies: Hierarchies = ()) -> object:
    """A scalar function's value for one group."""
    res, scale = evaluate(sig, args, hierarchies)
    return measure_values(sig, res, scale)[0].as_py()


def aggregate_windows(sig: Signature, args: Sequence[pa.Array], hierarchies: Hierarchies = ()) -> pa.Scalar:
    """A window function's ``array<struct<window_start, window_end, measure>>`` for one group."""
    res, scale = evaluate(sig, args, hierarchies)
    bounds = [pa.array(b, pa.int64()).cast(TIMESTAMP_UTC) for b in (res.window_start, res.window_end)]
    rows = pa.StructArray.from_arrays([*bounds, measure_values(sig, res, scale)],
                                      names=["window_start", "window_end", sig.measure])
    return pa.ListArray.from_arrays(pa.array([0, len(rows)], pa.int32()), rows)[0]


# --- the registered bodies (type hints tell PySpark they are grouped aggregates) ---------

def seq_count(*args: pa.Array) -> int:
    """``seq_count(ts, type, pattern [, within])``: the number of matches in the group."""
    return aggregate(COUNT, args)  # type: ignore[return-value]


def seq_sum(*args: pa.Array) -> float | None:
    """``seq_sum(ts, type, pattern, within, symbol, value)``: SUM(symbol.value) over all matches."""
    return aggregate(SUM, args)  # type: ignore[return-value]


def seq_avg(*args: pa.Array) -> float | None:
    """``seq_avg(ts, type, pattern, within, symbol, value)``: AVG(symbol.value) over all matches."""
    return aggregate(AVG, args)  # type: ignore[return-value]


def seq_min(*args: pa.Array) -> float | None:
    """``seq_min(ts, type, pattern, within, symbol, value)``: MIN(symbol.value) over all matches."""
    return aggregate(MIN, args)  # type: ignore[return-value]


def seq_max(*args: pa.Array) -> float | None:
    """``seq_max(ts, type, pattern, within, symbol, value)``: MAX(symbol.value) over all matches."""
    return aggregate(MAX, args)  # type: ignore[return-value]


def seq_count_windows(*args: pa.Array) -> pa.Scalar:
    """``seq_count_windows(ts, type, pattern, within, slide)``: the count per sliding window."""
    return aggregate_windows(dataclasses.replace(COUNT, windows=True), args)


def seq_sum_windows(*args: pa.Array) -> pa.Scalar:
    """``seq_sum_windows(ts, type, pattern, within, slide, symbol, value)``."""
    return aggregate_windows(dataclasses.replace(SUM, windows=True), args)


def seq_avg_windows(*args: pa.Array) -> pa.Scalar:
    """``seq_avg_windows(ts, type, pattern, within, slide, symbol, value)``."""
    return aggregate_windows(dataclasses.replace(AVG, windows=True), args)


def seq_min_windows(*args: pa.Array) -> pa.Scalar:
    """``seq_min_windows(ts, type, pattern, within, slide, symbol, value)``."""
    return aggregate_windows(dataclasses.replace(MIN, windows=True), args)


def seq_max_windows(*args: pa.Array) -> pa.Scalar:
    """``seq_max_windows(ts, type, pattern, within, slide, symbol, value)``."""
    return aggregate_windows(dataclasses.replace(MAX, windows=True), args)


def seq_steps(*args: pa.Array) -> list[int]:
    """``seq_steps(ts, type, pattern [, within])``: the matches of every prefix of the pattern."""
    return aggregate(STEPS, args)  # type: ignore[return-value]


def seq_max_step(*args: pa.Array) -> int:
    """``seq_max_step(ts, type, pattern [, within])``: the longest prefix with a match, 0 when none."""
    return aggregate(MAX_STEP, args)  # type: ignore[return-value]


#: (signature, body) of every function, for registration.
FUNCTIONS: tuple[tuple[Signature, Callable[..., object]], ...] = tuple(zip(SIGNATURES, (
    seq_count, seq_sum, seq_avg, seq_min, seq_max,
    seq_count_windows, seq_sum_windows, seq_avg_windows, seq_min_windows, seq_max_windows,
    seq_steps, seq_max_step), strict=True))



def bodies(hierarchies: Hierarchies) -> tuple[tuple[Signature, Callable[..., object]], ...]:
    """Every function with the session's hierarchies bound in (for ``HIERARCHY name`` patterns).

    Python workers cannot see the driver's registry, so the hierarchies travel inside
    the function; the session re-registers the functions whenever its hierarchies change.
    """
    if not hierarchies:
        return FUNCTIONS
    return tuple((sig, _bound(sig, hierarchies)) for sig, _ in FUNCTIONS)


def _bound(sig: Signature, hierarchies: Hierarchies) -> Callable[..., object]:
    """One function body with ``hierarchies`` bound in (type hints as the plain bodies')."""
    if sig.windows:
        def windows(*args: pa.Array) -> pa.Scalar:
            return aggregate_windows(sig, args, hierarchies)
        return windows
    if sig.kind is MeasureKind.STEPS:
        def steps(*args: pa.Array) -> list[int]:
            return aggregate(sig, args, hierarchies)  # type: ignore[return-value]
        return steps
    if sig.counts:
        def count(*args: pa.Array) -> int:
            return aggregate(sig, args, hierarchies)  # type: ignore[return-value]
        return count

    def value(*args: pa.Array) -> float:
        return aggregate(sig, args, hierarchies)  # type: ignore[return-value]
    return value


__all__ = ["FUNCTIONS", "bodies", "FunctionArgumentError", "FunctionOverflowError",
           "seq_count", "seq_sum", "seq_avg", "seq_min", "seq_max", "seq_count_windows", "seq_sum_windows",
           "seq_avg_windows", "seq_min_windows", "seq_max_windows", "seq_steps", "seq_max_step"]
