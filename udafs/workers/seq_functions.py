"""The bodies of the BI-friendly ``seq_*`` SQL functions: what a Python worker runs per group.

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
The pattern grammar and its errors are those of ``PATTERN``
(:mod:`sql_rewrites.clauses.pattern`).

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

Every function has one body, made by :func:`seq_body` from the compiler's description
of the function (:class:`SeqFunction`: :class:`sql_rewrites.analysis.seq_functions.Signature`,
whose table ``SIGNATURES`` lists them all) and the session's concept hierarchies. The
body reads one group's Arrow arguments as plain values (:class:`udafs.seq_calls.CallArguments`),
the description checks them and compiles the pattern (once per worker and text), and
the body evaluates it and returns the function's value. This module imports nothing of
the compiler: the description travels inside the function.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any, Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from udafs.contract import OrderKind
from udafs.errors import CountOverflowError
from udafs.kernels import GroupResult, evaluate_group
from udafs.plan import MeasureKind, Strategy, ValueType
from udafs.seq_calls import CallArguments, Compiled, Constant, Hierarchies
from udafs.workers.grouped import MAX_INT64_DIGITS, Column, as_list_value, column_arrays, unscaled

MAX_EXACT_SCALE = 6  # a DECIMAL(p <= 18, s <= 6) value travels as an exact int64 scaled by 10^s, like
#                      MATCH_AGGREGATE's (sql_rewrites.logical.sql_types); a wider one as a DOUBLE
TIMESTAMP_UTC = pa.timestamp("us", tz="UTC")


class SeqFunction(Protocol):
    """A ``seq_*`` function as the compiler describes it
    (:class:`sql_rewrites.analysis.seq_functions.Signature`)."""

    @property
    def name(self) -> str: ...  # the SQL name, e.g. ``seq_sum_windows``

    @property
    def kind(self) -> MeasureKind: ...

    @property
    def windows(self) -> bool: ...  # returns ``array<struct<window_start, window_end, measure>>``

    @property
    def counts(self) -> bool: ...  # reads no symbol's value (no ``symbol``, ``value`` arguments)

    @property
    def measure(self) -> str: ...  # the measure's name in a window's struct

    def bind(self, args: Sequence[Any]) -> dict[str, Any]:
        """The arguments by parameter name (``ts``, ``type``, ``pattern``, ``within`` ...)."""
        ...

    def compiled(self, call: CallArguments, hierarchies: Hierarchies) -> Compiled:
        """``call`` checked (raising the function's errors) and its pattern compiled."""
        ...


class FunctionOverflowError(CountOverflowError):
    """A ``seq_*`` count does not fit BIGINT."""

    def __init__(self, function: str, exc: CountOverflowError) -> None:
        ArithmeticError.__init__(
            self,
            f"{function}: {exc.what} has {exc.value_digits} decimal digits and does not fit BIGINT; "
            "use MATCH_AGGREGATE with COUNT TYPE DECIMAL (or DOUBLE) for such counts",
        )
        self.what, self.value_digits, self.target, self.partition = exc.what, exc.value_digits, "BIGINT", None


def seq_body(function: SeqFunction, hierarchies: Hierarchies = ()) -> Callable[..., object]:
    """The grouped-aggregate body of ``function``, ``hierarchies`` bound in (Python workers
    cannot see the driver's registry, so a pattern's ``HIERARCHY name`` is looked up there).

    Its type hints (``pa.Array`` arguments, one value back) tell PySpark it is a
    grouped-aggregate Arrow UDF.
    """
    def body(*args: pa.Array) -> object:
        return group_value(function, args, hierarchies)

    body.__name__ = function.name
    body.__doc__ = f"``{function.name}``: the function's value for one group (:mod:`{__name__}`)."
    return body


def group_value(function: SeqFunction, args: Sequence[pa.Array], hierarchies: Hierarchies = ()) -> object:
    """``function``'s value for one group: a Python value, or for a window function its
    ``array<struct<window_start, window_end, measure>>``."""
    res, scale = evaluate(function, args, hierarchies)
    values = measure_values(function, res, scale)
    if not function.windows:
        return values[0].as_py()
    bounds = [pa.array(b, pa.int64()).cast(TIMESTAMP_UTC) for b in (res.window_start, res.window_end)]
    return as_list_value([*bounds, values], ["window_start", "window_end", function.measure])


def evaluate(function: SeqFunction, args: Sequence[pa.Array], hierarchies: Hierarchies = ()
             ) -> tuple[GroupResult, int]:
    """The engine's result for one group, and the decimal scale of the measured values."""
    call = function.bind(args)
    kind, (ts, ts_valid) = event_time(call["ts"])
    value_type, scale, columns, value_sql = None, 0, [], ""
    if not function.counts:
        value_type, scale, column = value_column(call["value"])
        columns, value_sql = ([] if column is None else [column]), sql_type(call["value"].type)
    arguments = CallArguments(kind, sql_type(call["ts"].type), constant(call["pattern"]), constant(call["within"]),
                              constant(call.get("slide")), constant(call.get("symbol")), value_type, value_sql)
    compiled = function.compiled(arguments, hierarchies)
    mask = type_mask(compiled, call["type"])
    keep = ts_valid & (mask != 0)
    if compiled.plan.strategy is Strategy.PARTITION_CONTIGUITY:
        keep = ts_valid  # rows of no symbol stay (mask 0): the engine ranks every row of the group
    if not keep.all():
        ts, mask, columns = ts[keep], mask[keep], [(v[keep], ok[keep]) for v, ok in columns]
    try:
        return evaluate_group(compiled.plan, ts, mask, columns), scale
    except CountOverflowError as exc:
        raise FunctionOverflowError(function.name, exc) from None


# --- the arguments of one group, read --------------------------------------------------


def constant(arr: pa.Array | None) -> Constant:
    """A constant argument's one value (None when NULL or left out) and whether rows differ."""
    if arr is None or len(arr) == 0 or pa.types.is_null(arr.type):
        return Constant()
    varies = len(arr) > 1 and pc.count_distinct(arr, mode="all").as_py() > 1
    return Constant(arr[0].as_py(), varies, str(arr.type))


def event_time(arr: pa.Array) -> tuple[OrderKind | None, Column]:
    """The kind of the ``ts`` argument (None: not an event time) and its int64 times with validity."""
    t = arr.type
    if pa.types.is_timestamp(t):
        micros = pc.cast(arr, pa.timestamp("us", tz=t.tz)).cast(pa.int64())
        return OrderKind.TIMESTAMP if t.tz else OrderKind.TIMESTAMP_NTZ, column_arrays(micros, ValueType.INT)
    if pa.types.is_integer(t) or (pa.types.is_decimal(t) and t.scale == 0 and t.precision <= MAX_INT64_DIGITS):
        return OrderKind.INTEGRAL, unscaled(arr)
    return None, (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=bool))


def value_column(arr: pa.Array) -> tuple[ValueType | None, int, Column | None]:
    """(engine value type, decimal scale, (values, validity)) of the measured column; the
    type None when it is not numeric."""
    t = arr.type
    if pa.types.is_integer(t):
        return ValueType.INT, 0, column_arrays(arr, ValueType.INT)
    if pa.types.is_floating(t):
        return ValueType.FLOAT, 0, column_arrays(pc.cast(arr, pa.float64()), ValueType.FLOAT)
    if pa.types.is_null(t):
        return ValueType.FLOAT, 0, (np.zeros(len(arr)), np.zeros(len(arr), dtype=bool))
    if pa.types.is_decimal(t):
        if t.precision <= MAX_INT64_DIGITS and t.scale <= MAX_EXACT_SCALE:
            return ValueType.INT, t.scale, unscaled(arr)
        return ValueType.FLOAT, 0, column_arrays(pc.cast(arr, pa.float64()), ValueType.FLOAT)
    return None, 0, None


def sql_type(arrow_type: pa.DataType) -> str:
    """The Spark SQL name of the type a column arrived as (``STRING``, not Arrow's ``large_string``)."""
    from pyspark.sql.pandas.types import from_arrow_type

    try:
        return str(from_arrow_type(arrow_type).simpleString()).upper()
    except (TypeError, ValueError):  # a type Spark does not map (cannot come from Spark)
        return str(arrow_type)


def type_mask(compiled: Compiled, types: pa.Array) -> np.ndarray:
    """Per-row symbol bitmask: which symbols' type value the row's type equals."""
    if not (pa.types.is_string(types.type) or pa.types.is_large_string(types.type)):
        types = pc.cast(types, pa.string())
    index = pc.index_in(types, value_set=pa.array(compiled.values, type=types.type))
    index = index.fill_null(-1).to_numpy(zero_copy_only=False)
    return np.where(index >= 0, compiled.bits[np.maximum(index, 0)], 0).astype(np.int64)


# --- the function's value ----------------------------------------------------------------


def measure_values(function: SeqFunction, res: GroupResult, scale: int) -> pa.Array:
    """The measure as an Arrow array of the function's value type (NULL where invalid).

    Values of a decimal column come back in units of 10^-scale: exact integers for
    SUM/MIN/MAX (divided exactly, then rounded once), a double for AVG.
    """
    values, valid = res.values[0], res.valid[0]
    if function.kind is MeasureKind.STEPS:  # BIGINT counts: the kernel raised if one did not fit
        return pa.array(values.astype(np.int64).tolist(), pa.list_(pa.int64()))
    if function.counts:
        return pa.array(values.astype(np.int64), pa.int64())
    if scale and function.kind is not MeasureKind.AVG:
        doubles = [float(Fraction(int(v), 10**scale)) for v in values.tolist()]
    else:
        doubles = [float(v) / 10**scale for v in values.tolist()]
    return pa.array(np.array(doubles, dtype=np.float64), pa.float64(), mask=~valid)


__all__ = ["FunctionOverflowError", "SeqFunction", "evaluate", "group_value", "seq_body"]
