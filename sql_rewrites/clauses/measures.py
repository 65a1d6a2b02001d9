"""MEASURES: which aggregates exist, what they read, what SQL type they return.

======================  ==================================  =============================
measure                 reads                               output type
======================  ==================================  =============================
``COUNT(*)``            nothing                             COUNT TYPE (default BIGINT)
``COUNT(X)``            symbol X                            COUNT TYPE
``SUM(X.col)``          numeric ``col`` of rows bound to X  integers: COUNT TYPE;
                                                            DECIMAL(p, s): DECIMAL(min(
                                                            38, p + 10), s), as Spark's
                                                            SUM; else (or COUNT TYPE
                                                            DOUBLE) DOUBLE
``AVG(X.col)``          numeric ``col``                     DECIMAL(p, s): DECIMAL(min(38,
                                                            p + 4), min(38, s + 4)), as
                                                            Spark's AVG; else DOUBLE
``MIN/MAX(X.col)``      ``col`` (see sql_types)             the column's type
``STEPS(*)``            nothing: one count per prefix        ARRAY<COUNT TYPE>
                        E1..Ei of the pattern
``MAX_STEP()``          nothing: the longest prefix with     BIGINT (0: no prefix matched)
                        a match
======================  ==================================  =============================

``STEPS(*)`` and ``MAX_STEP()`` are the funnel measures (SEMANTICS section 10).

``MEASURE_FUNCTIONS`` is the registry; anything else raises
:class:`UnknownMeasureError` listing the allowed forms.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from sqlglot import exp

from sql_rewrites import engine_contract
from sql_rewrites.clauses.symbols import CompiledPattern, PatternSymbol, symbol_key
from sql_rewrites.errors import (
    MissingMeasureAliasError,
    NegatedMeasureError,
    NonNumericMeasureError,
    QuantifierCombinationError,
    UnknownMeasureError,
    UnknownSymbolError,
    UnsupportedMeasureTypeError,
)
from sql_rewrites.logical.query import MeasureSpec, ValueColumn
from sql_rewrites.logical.schema import ColumnSchema
from sql_rewrites.logical.sql_types import (
    MIN_MAX_TYPES_HELP,
    SUM_TYPES_HELP,
    ValueCodec,
    decimal_digits,
    decimal_type,
    double_codec,
    from_unscaled,
    value_codec,
)
from sql_rewrites.syntax.dialect import SparkSeq
from sql_rewrites.syntax.expressions import node_position
from udafs.plan import CountType, MeasureKind, ValueType

MEASURE_FUNCTIONS: dict[type[exp.Expr], MeasureKind] = {
    exp.Count: MeasureKind.COUNT,
    exp.Sum: MeasureKind.SUM,
    exp.Min: MeasureKind.MIN,
    exp.Max: MeasureKind.MAX,
    exp.Avg: MeasureKind.AVG,
}
#: The funnel measures, by function name: what the call takes (``*`` or nothing) and its kind.
FUNNEL_FUNCTIONS: dict[str, tuple[str, MeasureKind]] = {
    "STEPS": ("*", MeasureKind.STEPS),
    "MAX_STEP": ("", MeasureKind.MAX_STEP),
}
MEASURES_HELP = ("COUNT(*), COUNT(X), SUM(X.col), AVG(X.col), MIN(X.col), MAX(X.col) with X a symbol of the pattern, "
                 "STEPS(*), MAX_STEP()")
DEFAULT_MEASURE_NAME = "count"


@dataclass
class MeasureContext:
    """What measure resolution needs: pattern, source column lookup, statement text."""

    pattern: CompiledPattern
    find_column: Callable[[exp.Column, str], ColumnSchema]  # raises UnknownColumnError
    count_type: CountType
    sql: str | None = None
    value_columns: list[ValueColumn] = field(default_factory=list)


def resolve_measures(measures: list[exp.Expr] | None, ctx: MeasureContext) -> list[MeasureSpec]:
    """Resolve MEASURES (default ``COUNT(*) AS count``); fills ``ctx.value_columns``."""
    if not measures:
        return [_count_spec(DEFAULT_MEASURE_NAME, MeasureKind.COUNT_STAR, None, ctx)]
    return [_resolve_measure(m, ctx) for m in measures]


def _resolve_measure(measure: exp.Expr, ctx: MeasureContext) -> MeasureSpec:
    where = node_position(measure, ctx.sql)
    if not isinstance(measure, exp.Alias) or not measure.alias:
        text = measure.sql(dialect=SparkSeq)
        raise MissingMeasureAliasError(f"measure {text} needs a name: write it as {text} AS name", where)
    call, name = measure.this, measure.alias
    if isinstance(call, exp.Anonymous) and call.name.upper() in FUNNEL_FUNCTIONS:
        return _funnel_measure(name, call, ctx)
    kind = MEASURE_FUNCTIONS.get(type(call))
    if kind is None:
        raise UnknownMeasureError(
            f"measure {name} = {call.sql(dialect=SparkSeq)} is not supported; use one of {MEASURES_HELP}", where
        )
    argument = call.this
    if kind is MeasureKind.COUNT:
        return _count_measure(name, call, argument, ctx)
    if not isinstance(argument, exp.Column) or not argument.table:
        raise UnknownMeasureError(
            f"measure {name}: {kind.value.upper()} takes a symbol's column, e.g. {kind.value.upper()}(X.price); "
            f"got {call.sql(dialect=SparkSeq)}",
            where,
        )
    symbol = _measured_symbol(argument.args["table"], name, ctx)
    column = ctx.find_column(exp.column(argument.this.copy()), f"measure {name}")
    return _value_measure(name, kind, symbol, column, call, ctx)


def _count_measure(name: str, call: exp.Expr, argument: exp.Expr, ctx: MeasureContext) -> MeasureSpec:
    if isinstance(argument, exp.Star):
        return _count_spec(name, MeasureKind.COUNT_STAR, None, ctx)
    if isinstance(argument, exp.Column) and not argument.table:
        symbol = _measured_symbol(argument.this, name, ctx)
        return _count_spec(name, MeasureKind.COUNT, symbol.index, ctx)
    raise UnknownMeasureError(
        f"measure {name}: COUNT takes * or a symbol, e.g. COUNT(*) or COUNT(X); got {call.sql(dialect=SparkSeq)}",
        node_position(call, ctx.sql),
    )


def _funnel_measure(name: str, call: exp.Anonymous, ctx: MeasureContext) -> MeasureSpec:
    """``STEPS(*)`` or ``MAX_STEP()``: counts of the pattern's prefixes, over no symbol."""
    function = call.name.upper()
    takes, kind = FUNNEL_FUNCTIONS[function]
    given = [a.sql(dialect=SparkSeq) for a in call.expressions]
    if given != ([takes] if takes else []):
        raise UnknownMeasureError(
            f"measure {name}: {function} takes {takes or 'no argument'}: write {function}({takes}); "
            f"got {call.sql(dialect=SparkSeq)}", node_position(call, ctx.sql))
    first = ctx.pattern.elements[0]
    if first.optional:
        symbol = ctx.pattern.symbols[first.symbol].name
        raise QuantifierCombinationError(
            f"measure {name}: {function}({takes}) counts the prefixes of the pattern, and its first element "
            f"{first.describe(symbol)} is optional, so the first prefix alone could match no row; make the first "
            f"element required ({symbol}{'+' if first.kleene else ''}) or start the funnel at a required element",
            node_position(call, ctx.sql))
    return _count_spec(name, kind, None, ctx)


def _count_spec(name: str, kind: MeasureKind, symbol: int | None, ctx: MeasureContext) -> MeasureSpec:
    engine_type = engine_contract.engine_type(kind, ValueType.INT, ctx.count_type)
    output = exp.DataType.build(engine_type, dialect="spark")
    return MeasureSpec(name, kind, symbol, None, engine_type, output, lambda v: exp.cast(v, output.copy()))


def _measured_symbol(reference: exp.Expr, measure: str, ctx: MeasureContext) -> PatternSymbol:
    """The pattern symbol a measure names; by name, else by exact quoted-value text."""
    symbol = ctx.pattern.find(symbol_key(reference)) or ctx.pattern.find((True, reference.name))
    where = node_position(reference, ctx.sql)
    if symbol is None:
        names = ", ".join(s.name for s in ctx.pattern.symbols)
        raise UnknownSymbolError(
            f"measure {measure} references symbol {reference.name}, which is not in the pattern; "
            f"symbols of the pattern: {names}",
            where,
        )
    if not symbol.positive:
        raise NegatedMeasureError(
            f"measure {measure} references {symbol.name}, which appears only negated (!{symbol.name}) in the "
            "pattern; a negated symbol binds no rows, so measures may use only positive symbols",
            where,
        )
    return symbol


def _value_measure(
    name: str, kind: MeasureKind, symbol: PatternSymbol, column: ColumnSchema, call: exp.Expr, ctx: MeasureContext
) -> MeasureSpec:
    where = node_position(call, ctx.sql)
    codec = value_codec(column.dtype)
    if kind in (MeasureKind.SUM, MeasureKind.AVG) and ctx.count_type is CountType.DOUBLE and codec is not None \
            and codec.value_type is ValueType.DECIMAL:
        codec = double_codec(column.dtype)  # COUNT TYPE DOUBLE asks for approximate sums
    label = f"{kind.value.upper()}({symbol.name}.{column.name})"
    if kind in (MeasureKind.SUM, MeasureKind.AVG) and (codec is None or not codec.numeric):
        raise NonNumericMeasureError(
            f"measure {name} = {label}: column {column.name} is {column.type_text}, not numeric; "
            f"{kind.value.upper()} accepts {SUM_TYPES_HELP}",
            where,
        )
    if codec is None or (kind in (MeasureKind.MIN, MeasureKind.MAX) and codec.from_engine is None):
        raise UnsupportedMeasureTypeError(
            f"measure {name} = {label}: {kind.value.upper()} over {column.type_text} is not supported; "
            f"supported types: {MIN_MAX_TYPES_HELP}",
            where,
        )
    index = value_column_index(column, codec, ctx)
    engine_type = engine_contract.engine_type(kind, codec.value_type, ctx.count_type)
    output, convert = _measure_output(kind, column, codec, engine_type)
    places = digits = 0
    if kind is MeasureKind.AVG and codec.value_type is ValueType.DECIMAL:  # Spark's avg: see udafs.plan.Measure
        places = decimal_digits(output)[1] - codec.scale
        digits = decimal_digits(decimal_type(decimal_digits(column.dtype)[0] + 10, codec.scale))[0]
    return MeasureSpec(name, kind, symbol.index, index, engine_type, output, convert, places, digits)


def _measure_output(
    kind: MeasureKind, column: ColumnSchema, codec: ValueCodec, engine_type: str
) -> tuple[exp.DataType, Callable[[exp.Expr], exp.Expr]]:
    """Output type of a value measure and the conversion from the engine's value."""
    if kind in (MeasureKind.MIN, MeasureKind.MAX):
        return column.dtype.copy(), codec.from_engine  # type: ignore[return-value]
    if codec.value_type is ValueType.DECIMAL:
        return _decimal_output(kind, column.dtype)
    double = exp.DataType.build("DOUBLE")
    if kind is MeasureKind.AVG or engine_type == "DOUBLE":
        return double, lambda v: exp.cast(v, double.copy())
    output = exp.DataType.build(engine_type, dialect="spark")
    return output, _cast_to(output)


def _decimal_output(kind: MeasureKind, dtype: exp.DataType) -> tuple[exp.DataType, Callable[[exp.Expr], exp.Expr]]:
    """SUM / AVG of a DECIMAL(p, s) column with Spark's own result types and values.

    SUM is DECIMAL(min(38, p + 10), s): the engine's exact unscaled sum, which overflows
    exactly where Spark's SUM does (an error with ANSI mode on). AVG is DECIMAL(min(38,
    p + 4), min(38, s + 4)): the engine rounds the exact average half up to that scale,
    as Spark's ``avg`` does (``Measure.places``).
    """
    precision, scale = decimal_digits(dtype)
    result = decimal_type(precision + 10, scale) if kind is MeasureKind.SUM else \
        decimal_type(precision + 4, scale + 4)
    return result, lambda v: from_unscaled(v, result)


def _cast_to(dtype: exp.DataType) -> Callable[[exp.Expr], exp.Expr]:
    return lambda value: exp.cast(value, dtype.copy())


def value_column_index(column: ColumnSchema, codec: ValueCodec, ctx: MeasureContext) -> int:
    """Index of ``column`` in ``ctx.value_columns`` (``Plan.columns``), appended on first use.

    Measures and WHERE predicates (:mod:`sql_rewrites.clauses.predicates`) share the entries,
    so a column travels to the engine once, typed by its :class:`ValueCodec`.
    """
    for i, existing in enumerate(ctx.value_columns):  # one entry per column and carriage (WHERE may scale it)
        if existing.name.casefold() == column.name.casefold() and existing.value_type is codec.value_type:
            return i
    reference = exp.column(exp.to_identifier(column.name))
    ctx.value_columns.append(ValueColumn(column.name, reference, column, codec.value_type, codec.to_engine))
    return len(ctx.value_columns) - 1
