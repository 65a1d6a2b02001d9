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
The pattern grammar and its errors are those of ``PATTERN`` (:mod:`sql_rewrites.pattern`).

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
import this module by reference. Patterns are compiled once per worker and text.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from sql_rewrites.errors import (
    NegatedMeasureError,
    NonNumericMeasureError,
    OrderByError,
    UnknownHierarchyError,
    UnknownSymbolError,
    WindowTypeMismatchError,
)
from sql_rewrites.expressions import MatchPattern
from sql_rewrites.hierarchy import ConceptHierarchy
from sql_rewrites.pattern import compile_type_pattern
from sql_rewrites.sql_types import ORDER_TYPES_HELP, SUM_TYPES_HELP, OrderKind
from sql_rewrites.symbols import compile_pattern
from sql_rewrites.windows import WindowSpec, describe_length, interval_text_length, window_length
from udafs.errors import CountOverflowError, PlanError, SparkSeqError
from udafs.kernels import GroupResult, evaluate_group
from udafs.plan import CountType, Measure, MeasureKind, Plan, Strategy, ValueType
from udafs.spark_udfs import column_arrays, unscaled

MAX_EXACT_DIGITS = 18  # DECIMAL(p, s) with p <= 18 travels as an exact int64 ...
MAX_EXACT_SCALE = 6  # ... scaled by 10^s, like MATCH_AGGREGATE (sql_rewrites.sql_types)
TIMESTAMP_UTC = pa.timestamp("us", tz="UTC")


class FunctionArgumentError(SparkSeqError, ValueError):
    """A BI function was called with unusable arguments (named in the message)."""


class FunctionOverflowError(CountOverflowError):
    """A ``seq_*`` count does not fit BIGINT."""

    def __init__(self, function: str, exc: CountOverflowError) -> None:
        ArithmeticError.__init__(
            self,
            f"{function}: {exc.what} has {exc.value_digits} decimal digits and does not fit BIGINT; "
            "use MATCH_AGGREGATE with COUNT TYPE DECIMAL (or DOUBLE) for such counts",
        )
        self.what, self.value_digits, self.target, self.partition = exc.what, exc.value_digits, "BIGINT", None


@dataclass(frozen=True)
class Signature:
    """One ``seq_*`` function: its measure and whether it returns sliding windows."""

    kind: MeasureKind
    windows: bool = False

    @property
    def measure(self) -> str:
        """``count``, ``sum``, ``avg``, ``min`` or ``max``: the result's name."""
        return "count" if self.kind is MeasureKind.COUNT_STAR else self.kind.value

    @property
    def name(self) -> str:
        """The SQL function name, e.g. ``seq_sum_windows``."""
        return f"seq_{self.measure}" + ("_windows" if self.windows else "")

    @property
    def params(self) -> tuple[str, ...]:
        """Parameter names, in order."""
        names = ("ts", "type", "pattern", "within") + (("slide",) if self.windows else ())
        return names if self.kind is MeasureKind.COUNT_STAR else names + ("symbol", "value")

    @property
    def usage(self) -> str:
        """``seq_sum(ts, type, pattern, within, symbol, value)``."""
        return f"{self.name}({', '.join(self.params)})"

    @property
    def value_type(self) -> str:
        """SQL type of the measure."""
        return "bigint" if self.kind is MeasureKind.COUNT_STAR else "double"

    @property
    def return_type(self) -> str:
        """The function's SQL return type (DDL)."""
        if not self.windows:
            return self.value_type
        return f"array<struct<window_start:timestamp,window_end:timestamp,`{self.measure}`:{self.value_type}>>"

    def bind(self, args: Sequence[pa.Array]) -> dict[str, pa.Array | None]:
        """Arguments by parameter name; ``within`` of ``seq_count`` may be left out."""
        optional = self.kind is MeasureKind.COUNT_STAR and not self.windows
        if len(args) != len(self.params) and not (optional and len(args) == len(self.params) - 1):
            raise FunctionArgumentError(f"{self.usage} takes {len(self.params)} arguments"
                                        f"{' (within is optional)' if optional else ''}, got {len(args)}")
        return dict(zip(self.params, list(args) + [None]))


# --- the compiled pattern of a call ------------------------------------------------------


@dataclass(frozen=True)
class Compiled:
    """A plan plus what turns a type column into the plan's symbol mask."""

    plan: Plan
    values: tuple[str, ...]  # distinct type values of the pattern
    bits: np.ndarray  # bits[i]: OR of the symbols whose type value is values[i]

    def mask(self, types: pa.Array) -> np.ndarray:
        """Per-row symbol bitmask: which symbols' type value the row's type equals."""
        if not (pa.types.is_string(types.type) or pa.types.is_large_string(types.type)):
            types = pc.cast(types, pa.string())
        index = pc.index_in(types, value_set=pa.array(self.values, type=types.type))
        index = index.fill_null(-1).to_numpy(zero_copy_only=False)
        return np.where(index >= 0, self.bits[np.maximum(index, 0)], 0).astype(np.int64)


#: The session's concept hierarchies as bound into the registered functions:
#: ``((casefolded name, ((child, parent), ...)), ...)`` (hashable, picklable).
Hierarchies = tuple[tuple[str, tuple[tuple[str, str], ...]], ...]
WITH_HIERARCHY = re.compile(r"^(?P<seq>.*\))\s+HIERARCHY\s+(?P<name>[^\s)]+)\s*$", re.IGNORECASE | re.DOTALL)


WITH_STRATEGY = re.compile(r"\s+STRATEGY\s+(?P<words>[A-Za-z]+(?:\s+[A-Za-z]+)*?)(?=\s+HIERARCHY\s|\s*$)",
                           re.IGNORECASE)


def split_strategy(pattern: str) -> tuple[str, Strategy | None]:
    """``'SEQ(A, B) STRATEGY SKIP TILL NEXT MATCH'`` -> (``'SEQ(A, B)'``, the strategy);
    no suffix -> (pattern, None). The suffix may stand before or after ``HIERARCHY name``.

    Raises
    ------
    FunctionArgumentError
        ``STRATEGY`` followed by anything but one of the four strategies.
    """
    head = pattern.rfind(")") + 1
    found = WITH_STRATEGY.search(pattern, head)
    if found is None:
        return pattern, None
    try:
        strategy = Strategy.from_sql(found["words"])
    except PlanError:
        raise FunctionArgumentError(
            f"unknown strategy {found['words']!r} in pattern {pattern!r}; write STRATEGY followed by "
            f"{', '.join(Strategy.sql_choices())}") from None
    return pattern[:found.start()] + pattern[found.end():], strategy


def split_hierarchy(pattern: str) -> tuple[str, str | None]:
    """``'SEQ(A, B) HIERARCHY h'`` -> (``'SEQ(A, B)'``, ``'h'``); no suffix -> (pattern, None).
    A ``STRATEGY ...`` suffix (:func:`split_strategy`) is removed as well."""
    pattern = split_strategy(pattern)[0]
    found = WITH_HIERARCHY.match(pattern)
    return (found["seq"], found["name"]) if found else (pattern, None)


def hierarchy_of(sig: Signature, name: str, hierarchies: Hierarchies) -> ConceptHierarchy:
    """The bound hierarchy ``name`` (case-insensitive).

    Raises
    ------
    UnknownHierarchyError
    """
    for known, pairs in hierarchies:
        if known == name.casefold():
            return ConceptHierarchy.build(name, pairs)
    names = ", ".join(n for n, _ in hierarchies) or "none"
    raise UnknownHierarchyError(f"{sig.name}: unknown concept hierarchy {name} (this session's: {names}); register "
                                "it with CREATE CONCEPT HIERARCHY or sparkseq.register_hierarchy")


@functools.lru_cache(maxsize=512)
def compile_call(sig: Signature, pattern: str, within: int | None, slide: int | None,
                 symbol: str | None, value_type: ValueType | None, hierarchies: Hierarchies = ()) -> Compiled:
    """Parse and check ``pattern`` (the compiler's errors, positions within the string).

    A ``HIERARCHY name`` suffix makes every symbol a node of that bound hierarchy: it
    matches rows whose type is the node or any node below it. A ``STRATEGY ...`` suffix
    sets the event selection strategy; STRICT CONTIGUITY is refused (it needs the rank
    of each row in the whole input, which a grouped function cannot see).
    """
    strategy = split_strategy(pattern)[1] or Strategy.SKIP_TILL_ANY_MATCH
    if strategy is Strategy.STRICT_CONTIGUITY:
        raise FunctionArgumentError(
            f"{sig.name}: STRATEGY STRICT CONTIGUITY needs each event's rank in the whole input, which a grouped "
            "function sees only for its own group; use PARTITION CONTIGUITY (contiguity within the group) or "
            "MATCH_AGGREGATE (... STRATEGY STRICT CONTIGUITY)")
    pattern, hierarchy_name = split_hierarchy(pattern)
    hierarchy = hierarchy_of(sig, hierarchy_name, hierarchies) if hierarchy_name else None
    typed = compile_type_pattern(pattern, within=within, slide=slide)
    plan = dataclasses.replace(typed.plan, strategy=strategy)
    if sig.kind is MeasureKind.COUNT_STAR:
        plan = dataclasses.replace(plan, measures=(Measure(MeasureKind.COUNT_STAR, name="count"),))
    else:
        assert symbol is not None and value_type is not None
        index = measured_symbol(sig, typed.pattern, pattern, symbol)
        plan = dataclasses.replace(
            plan, measures=(Measure(sig.kind, index, 0, sig.measure),), columns=(value_type,),
            count_type=CountType.DECIMAL,  # exact sums of any size; rounded once to DOUBLE
        )
    covers: list[tuple[str, ...]] = [(v,) for v in typed.type_values]
    if hierarchy is not None:
        covers = [hierarchy.descendants_or_self(v) for v in typed.type_values]
    values = tuple(dict.fromkeys(v for cover in covers for v in cover))
    bits = np.array([sum(1 << k for k, cover in enumerate(covers) if value in cover) for value in values],
                    dtype=np.int64)
    return Compiled(plan, values, bits)


def measured_symbol(sig: Signature, parsed: MatchPattern, pattern: str, symbol: str) -> int:
    """The symbol index a measure's ``symbol`` argument names: its exact type value first,
    else a case-insensitive match of a symbol written as a name."""
    symbols = compile_pattern(parsed, pattern).symbols
    found = [s for s in symbols if s.name == symbol] or [
        s for s in symbols if not s.quoted and s.name.casefold() == symbol.casefold()]
    if len(found) != 1:
        names = ", ".join(s.name for s in symbols)
        why = "names several symbols" if found else "is not a symbol of the pattern"
        raise UnknownSymbolError(f"{sig.name}: symbol {symbol!r} {why} {pattern!r} (symbols: {names})")
    if not found[0].positive:
        raise NegatedMeasureError(
            f"{sig.name}: symbol {symbol} appears only negated (!{symbol}) in {pattern!r}; a measure needs a "
            "symbol that is bound to rows of the match")
    return found[0].index


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
        raise OrderByError(f"{sig.name}: ts is {t}; the event time must be {ORDER_TYPES_HELP} "
                           "(e.g. CAST(ts AS TIMESTAMP))")
    if sig.windows and kind is not OrderKind.TIMESTAMP:
        raise OrderByError(f"{sig.name} returns TIMESTAMP window bounds and needs a TIMESTAMP event time, got "
                           f"{'TIMESTAMP_NTZ' if kind is OrderKind.TIMESTAMP_NTZ else t}; cast it, or use "
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
    raise NonNumericMeasureError(f"{sig.name}: the value column is {t}, not numeric; {sig.name} accepts "
                                 f"{SUM_TYPES_HELP}")


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
    if sig.kind is not MeasureKind.COUNT_STAR:
        named = constant(sig, "symbol", call["symbol"])
        if named is None or not named.is_valid:
            raise FunctionArgumentError(f"{sig.usage}: symbol must name a symbol of the pattern, e.g. 'B'")
        symbol = str(named.as_py())
        value_type, scale, column = value_column(sig, call["value"])
        columns = [column]
    compiled = compile_call(sig, pattern.as_py(), within, slide, symbol, value_type, hierarchies)
    mask = compiled.mask(call["type"])
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
    if sig.kind is MeasureKind.COUNT_STAR:
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

COUNT, SUM, AVG, MIN, MAX = (Signature(k) for k in (MeasureKind.COUNT_STAR, MeasureKind.SUM, MeasureKind.AVG,
                                                     MeasureKind.MIN, MeasureKind.MAX))


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


#: (signature, body) of every function, for registration.
FUNCTIONS: tuple[tuple[Signature, object], ...] = (
    (COUNT, seq_count), (SUM, seq_sum), (AVG, seq_avg), (MIN, seq_min), (MAX, seq_max),
    (dataclasses.replace(COUNT, windows=True), seq_count_windows),
    (dataclasses.replace(SUM, windows=True), seq_sum_windows),
    (dataclasses.replace(AVG, windows=True), seq_avg_windows),
    (dataclasses.replace(MIN, windows=True), seq_min_windows),
    (dataclasses.replace(MAX, windows=True), seq_max_windows),
)



def bodies(hierarchies: Hierarchies) -> tuple[tuple[Signature, object], ...]:
    """Every function with the session's hierarchies bound in (for ``HIERARCHY name`` patterns).

    Python workers cannot see the driver's registry, so the hierarchies travel inside
    the function; the session re-registers the functions whenever its hierarchies change.
    """
    if not hierarchies:
        return FUNCTIONS
    return tuple((sig, _bound(sig, hierarchies)) for sig, _ in FUNCTIONS)


def _bound(sig: Signature, hierarchies: Hierarchies) -> object:
    """One function body with ``hierarchies`` bound in (type hints as the plain bodies')."""
    if sig.windows:
        def windows(*args: pa.Array) -> pa.Scalar:
            return aggregate_windows(sig, args, hierarchies)
        return windows
    if sig.kind is MeasureKind.COUNT_STAR:
        def count(*args: pa.Array) -> int:
            return aggregate(sig, args, hierarchies)  # type: ignore[return-value]
        return count

    def value(*args: pa.Array) -> float:
        return aggregate(sig, args, hierarchies)  # type: ignore[return-value]
    return value


# --- checks before any Spark job ---------------------------------------------------------

BY_NAME: dict[str, Signature] = {sig.name: sig for sig, _ in FUNCTIONS}
PLACEHOLDER_LENGTH = 1  # stands for a given WITHIN / SLIDE whose unit depends on ts's type


def check_calls(tree: exp.Expr, resolve: Callable[[str], ConceptHierarchy] | None = None) -> None:
    """Check the ``seq_*`` calls of a parsed statement whose arguments are literals.

    Catches wrong argument counts, pattern syntax, edge negations without ``within``
    and unknown or negated measure symbols while parsing — before any Spark job —
    with the same errors the functions raise at run time; ``resolve(name)`` looks up a
    pattern's ``HIERARCHY name`` (raising for unknown ones; without ``resolve``, a call
    naming a hierarchy is left to the function, which knows its session's). Window
    values are checked at run time, where the type of ``ts`` is known.
    """
    for call in tree.find_all(exp.Anonymous):
        sig = BY_NAME.get(str(call.name).lower())
        if sig is None:
            continue
        bound = sig.bind(call.expressions)
        pattern = _literal_text(bound["pattern"])
        if pattern is None:
            continue
        within = None if _is_null(bound["within"]) else PLACEHOLDER_LENGTH
        slide = None if _is_null(bound.get("slide")) else PLACEHOLDER_LENGTH
        within_us, slide_us = (_interval_micros(bound.get(name)) for name in ("within", "slide"))
        if within_us is not None and slide_us is not None:  # both written as intervals: the event time is a timestamp
            WindowSpec.checked(within_us, slide_us,
                               shown=(describe_length(within_us, True), describe_length(slide_us, True)))
        symbol = _literal_text(bound.get("symbol")) if sig.kind is not MeasureKind.COUNT_STAR else None
        name = split_hierarchy(pattern)[1]
        hierarchies: Hierarchies = ()
        if name:
            if resolve is None:
                continue
            hierarchies = ((name.casefold(), tuple(sorted(resolve(name).parent_of.items()))),)
        if sig.kind is not MeasureKind.COUNT_STAR and symbol is None:
            compile_type_pattern(split_hierarchy(pattern)[0], within=within, slide=slide)  # symbol not a literal
            if name:
                hierarchy_of(sig, name, hierarchies)
        else:
            compile_call(sig, pattern, within, slide, symbol, ValueType.FLOAT if symbol is not None else None,
                         hierarchies)


def _interval_micros(node: exp.Expr | None) -> int | None:
    """An ``INTERVAL ...`` literal argument in microseconds; None for anything else."""
    if not isinstance(node, exp.Interval):
        return None
    return window_length(node, "within", "ts", OrderKind.TIMESTAMP)


def _literal_text(node: exp.Expr | None) -> str | None:
    return node.name if isinstance(node, exp.Literal) and node.is_string else None


def _is_null(node: exp.Expr | None) -> bool:
    return node is None or isinstance(node, exp.Null)


__all__ = ["FUNCTIONS", "BY_NAME", "Hierarchies", "bodies", "split_hierarchy", "Signature", "FunctionArgumentError",
           "FunctionOverflowError", "check_calls",
           "seq_count", "seq_sum", "seq_avg", "seq_min", "seq_max", "seq_count_windows", "seq_sum_windows",
           "seq_avg_windows", "seq_min_windows", "seq_max_windows"]
