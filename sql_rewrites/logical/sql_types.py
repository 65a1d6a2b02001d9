"""Spark SQL types as the compiler sees them: parsing, classifying, converting.

The engine receives int64 event times and int64 or float64 value columns
(:mod:`udafs.plan`). This module decides, per Spark type, how a column travels to the
engine and how a result travels back, exactly:

==============================  ===========================  ==========================
Spark type                      to the engine                back (MIN/MAX, windows)
==============================  ===========================  ==========================
TINYINT..BIGINT                 ``CAST(x AS BIGINT)`` (INT)  ``CAST(v AS <type>)``
DECIMAL(p,s) (measures)         ``x`` (DECIMAL: the engine   the unscaled integer ``v``
                                reads unscaled integers,     read back exactly:
                                up to 38 digits)             :func:`from_unscaled`
DECIMAL(p,s), p <= 18, s <= 6   ``CAST(x * 10^s AS BIGINT)`` (not needed)
(compared in WHERE)             (INT, exact)
FLOAT, DOUBLE                   ``CAST(x AS DOUBLE)``        ``CAST(v AS <type>)``
TIMESTAMP (LTZ)                 ``unix_micros(x)`` (INT)     ``timestamp_micros(v)``
TIMESTAMP_NTZ                   micros since 1970-01-01      ``timestampadd(...)``
DATE                            ``unix_date(x)`` (INT)       ``date_from_unix_date(v)``
==============================  ===========================  ==========================

Measures over a DECIMAL(p, s) column have Spark's own types (``SUM`` DECIMAL(min(38,
p + 10), s), ``AVG`` DECIMAL(min(38, p + 4), min(38, s + 4)), ``MIN`` / ``MAX`` the
column's), and so they are exact — except with COUNT TYPE DOUBLE, where SUM and AVG are
DOUBLE from a ``CAST(x AS DOUBLE)`` column.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable
from dataclasses import dataclass

from sqlglot import exp
from sqlglot.errors import ParseError

from sql_rewrites.syntax.dialect import SparkSeq
from udafs.plan import ValueType

DType = exp.DType
INTEGRAL = frozenset({DType.TINYINT, DType.SMALLINT, DType.INT, DType.BIGINT})
FLOATING = frozenset({DType.FLOAT, DType.DOUBLE})
TIMESTAMP_LTZ = frozenset({DType.TIMESTAMPTZ, DType.TIMESTAMPLTZ, DType.TIMESTAMP})
MAX_EXACT_INT_DIGITS = 18  # every DECIMAL(18, 0) value fits int64
EPOCH_NTZ = "1970-01-01 00:00:00"
#: Spark's text of a string type with a collation: ``string collate UTF8_LCASE``.
COLLATED_STRING = re.compile(r"\s*string\s+collate\s+([A-Za-z0-9_]+)\s*", re.IGNORECASE)


class OrderKind(str, enum.Enum):
    """How an ORDER BY column becomes the engine's int64 time."""

    TIMESTAMP = "timestamp"
    TIMESTAMP_NTZ = "timestamp_ntz"
    INTEGRAL = "integral"

    @property
    def takes_intervals(self) -> bool:
        """True when WITHIN / SLIDE are INTERVAL literals (in microseconds)."""
        return self is not OrderKind.INTEGRAL


ORDER_TYPES_HELP = "TIMESTAMP, TIMESTAMP_NTZ, TINYINT, SMALLINT, INT, BIGINT or DECIMAL(p, 0) with p <= 18"


def parse_type(value: str | exp.DataType) -> exp.DataType:
    """A Spark type string (``'decimal(10,2)'``) or DataType as a sqlglot DataType.

    Raises
    ------
    ValueError
        When the text is not a Spark type.
    """
    if isinstance(value, exp.DataType):
        return value
    collated = COLLATED_STRING.fullmatch(str(value))
    if collated:  # sqlglot's type parser drops the collation, which decides what equal strings are
        return exp.DataType(this=DType.TEXT, collate=exp.Var(this=collated.group(1)))
    try:
        return exp.DataType.build(str(value), dialect="spark")
    except (ParseError, ValueError) as exc:
        raise ValueError(f"not a Spark SQL type: {value!r} ({exc})") from None


def column_type(text: str | None) -> exp.DataType:
    """A catalog's column type (Spark type text, None when unreadable) as the compiler's type.

    Text the compiler cannot read becomes UNKNOWN: analysis then refuses it only where a
    type matters (ORDER BY, PARTITION BY, a measure).
    """
    if text is None:
        return exp.DataType(this=DType.UNKNOWN)
    try:
        return parse_type(text)
    except ValueError:
        return exp.DataType(this=DType.UNKNOWN)


def type_text(dtype: exp.DataType) -> str:
    """The type as Spark SQL text, e.g. ``DECIMAL(38, 0)``."""
    return dtype.sql(dialect=SparkSeq)


#: Spark's JSON names (``DataType.json()``) of the types without parameters. Spark's
#: TIMESTAMP (sqlglot: TIMESTAMPTZ) is TIMESTAMP_LTZ under Spark's default
#: ``spark.sql.timestampType``.
_JSON_NAMES = {
    DType.BOOLEAN: "boolean", DType.TINYINT: "byte", DType.SMALLINT: "short", DType.INT: "integer",
    DType.BIGINT: "long", DType.FLOAT: "float", DType.DOUBLE: "double", DType.TEXT: "string",
    DType.BINARY: "binary", DType.DATE: "date", DType.TIMESTAMPTZ: "timestamp", DType.TIMESTAMPLTZ: "timestamp",
    DType.TIMESTAMPNTZ: "timestamp_ntz",
}


def spark_json_type(value: str | exp.DataType) -> str | dict[str, object]:
    """A Spark type in Spark's JSON form (``DataType.json()``), which PySpark reads into its
    type objects without asking the JVM; fields and elements are nullable, as in a DDL.

    Raises
    ------
    ValueError
        Not a Spark type, or one without a form here (intervals, collations, CHAR, ...).

    Examples
    --------
    >>> spark_json_type("array<struct<window_start:timestamp,`count`:bigint>>")  # doctest: +NORMALIZE_WHITESPACE
    {'type': 'array', 'elementType': {'type': 'struct', 'fields': [{'name': 'window_start', 'type': 'timestamp',
     'nullable': True, 'metadata': {}}, {'name': 'count', 'type': 'long', 'nullable': True, 'metadata': {}}]},
     'containsNull': True}
    """
    dtype = parse_type(value)
    kind, parts = dtype.this, dtype.expressions
    if kind in _JSON_NAMES and not parts and not dtype.args.get("collate"):
        return _JSON_NAMES[kind]
    if kind is DType.DECIMAL:
        return "decimal({},{})".format(*decimal_digits(dtype))
    if kind is DType.ARRAY and len(parts) == 1:
        return {"type": "array", "elementType": spark_json_type(parts[0]), "containsNull": True}
    if kind is DType.MAP and len(parts) == 2:
        return {"type": "map", "keyType": spark_json_type(parts[0]), "valueType": spark_json_type(parts[1]),
                "valueContainsNull": True}
    if kind is DType.STRUCT and all(_plain_field(f) for f in parts):
        return {"type": "struct", "fields": [{"name": f.name, "type": spark_json_type(f.args["kind"]), "nullable": True,
                                              "metadata": {}} for f in parts]}
    raise ValueError(f"no JSON form here for the Spark type {type_text(dtype)}")


def _plain_field(field: exp.Expr) -> bool:
    """A struct field with a name and a type only (no NOT NULL, no COMMENT)."""
    return isinstance(field, exp.ColumnDef) and not any(v for k, v in field.args.items() if k not in ("this", "kind"))


def decimal_digits(dtype: exp.DataType) -> tuple[int, int]:
    """``(precision, scale)`` of a DECIMAL; Spark's bare DECIMAL is DECIMAL(10, 0)."""
    params = [int(e.name) for e in dtype.expressions if e.name.isdigit()]
    precision = params[0] if params else 10
    scale = params[1] if len(params) > 1 else 0
    return precision, scale


def is_exact_integral(dtype: exp.DataType) -> bool:
    """Integers the engine can carry as int64 without loss."""
    if dtype.this in INTEGRAL:
        return True
    if dtype.this == DType.DECIMAL:
        precision, scale = decimal_digits(dtype)
        return scale == 0 and precision <= MAX_EXACT_INT_DIGITS
    return False


def order_kind(dtype: exp.DataType) -> OrderKind | None:
    """The :class:`OrderKind` of an ORDER BY type, or ``None`` when unsupported."""
    if dtype.this in TIMESTAMP_LTZ:
        return OrderKind.TIMESTAMP
    if dtype.this == DType.TIMESTAMPNTZ:
        return OrderKind.TIMESTAMP_NTZ
    if is_exact_integral(dtype):
        return OrderKind.INTEGRAL
    return None


def time_to_engine(column: exp.Expr, kind: OrderKind) -> exp.Expr:
    """The int64 engine time of an ORDER BY column."""
    if kind is OrderKind.TIMESTAMP:
        return exp.Anonymous(this="unix_micros", expressions=[column])
    if kind is OrderKind.TIMESTAMP_NTZ:
        return exp.Anonymous(this="timestampdiff", expressions=[exp.var("MICROSECOND"), _epoch_ntz(), column])
    return exp.cast(column, DType.BIGINT)


def time_from_engine(value: exp.Expr, kind: OrderKind, dtype: exp.DataType) -> exp.Expr:
    """An engine int64 time (window bound) back in the ORDER BY column's type."""
    if kind is OrderKind.TIMESTAMP:
        return exp.Anonymous(this="timestamp_micros", expressions=[value])
    if kind is OrderKind.TIMESTAMP_NTZ:
        return exp.Anonymous(this="timestampadd", expressions=[exp.var("MICROSECOND"), value, _epoch_ntz()])
    return exp.cast(value, dtype.copy())


def _epoch_ntz() -> exp.Expr:
    return exp.cast(exp.Literal.string(EPOCH_NTZ), DType.TIMESTAMPNTZ)


@dataclass(frozen=True)
class ValueCodec:
    """How one value column travels to the engine and (for MIN/MAX) back.

    ``scale`` is the number of decimal places an exact DECIMAL was shifted by to
    travel as an int64 (``12.34`` travels as ``1234`` with scale 2); results built
    from it are shifted back by :func:`unscale`. ``from_engine`` is ``None`` when
    MIN/MAX cannot return the column's own type exactly; ``numeric`` tells whether
    SUM/AVG accept the column.
    """

    value_type: ValueType
    to_engine: Callable[[exp.Expr], exp.Expr]
    from_engine: Callable[[exp.Expr], exp.Expr] | None
    numeric: bool
    scale: int = 0


MIN_MAX_TYPES_HELP = "TINYINT, SMALLINT, INT, BIGINT, FLOAT, DOUBLE, DECIMAL, DATE, TIMESTAMP, TIMESTAMP_NTZ"
SUM_TYPES_HELP = "TINYINT, SMALLINT, INT, BIGINT, FLOAT, DOUBLE, DECIMAL"
MAX_EXACT_SCALE = 6  # predicates: scaled DECIMALs of at most 6 places travel as int64 (as before)
MAX_DECIMAL_DIGITS = 38


def value_codec(dtype: exp.DataType, *, compared: bool = False) -> ValueCodec | None:
    """The :class:`ValueCodec` of a value column's type, ``None`` if unsupported.

    A DECIMAL column is passed to the engine as it is and read back exactly
    (``ValueType.DECIMAL``), unless ``compared``: WHERE predicates compare int64 (a
    DECIMAL(p <= 18, s <= 6) scaled by 10^s) or doubles (other DECIMALs, which
    predicates then refuse as inexact).
    """
    if dtype.this in INTEGRAL:
        return ValueCodec(ValueType.INT, lambda x: exp.cast(x, DType.BIGINT), _cast_back(dtype), True)
    if dtype.this in FLOATING:
        return ValueCodec(ValueType.FLOAT, lambda x: exp.cast(x, DType.DOUBLE), _cast_back(dtype), True)
    if dtype.this == DType.DECIMAL:
        return _compared_decimal_codec(dtype) if compared else _decimal_codec(dtype)
    kind = order_kind(dtype)
    if kind is not None:
        return ValueCodec(
            ValueType.INT, lambda x: time_to_engine(x, kind), lambda v: time_from_engine(v, kind, dtype), False
        )
    if dtype.this == DType.DATE:
        return ValueCodec(
            ValueType.INT,
            lambda x: exp.Anonymous(this="unix_date", expressions=[x]),
            lambda v: exp.Anonymous(this="date_from_unix_date", expressions=[exp.cast(v, DType.INT)]),
            False,
        )
    return None


def _decimal_codec(dtype: exp.DataType) -> ValueCodec:
    """The column's unscaled integers, exactly: as a BIGINT when every value fits one
    (:func:`unscaled_bigint`), else the column as it is (the engine reads the unscaled
    integers of Arrow's decimals); they come back exactly (:func:`from_unscaled`)."""
    precision, scale = decimal_digits(dtype)
    to_engine = (lambda x: unscaled_bigint(x, scale)) if precision <= MAX_EXACT_INT_DIGITS else (lambda x: x)
    return ValueCodec(ValueType.DECIMAL, to_engine, lambda v: from_unscaled(v, dtype), True, scale)


def _compared_decimal_codec(dtype: exp.DataType) -> ValueCodec:
    precision, scale = decimal_digits(dtype)
    if precision <= MAX_EXACT_INT_DIGITS and scale <= MAX_EXACT_SCALE:
        return ValueCodec(ValueType.INT, lambda x: unscaled_bigint(x, scale), lambda v: from_unscaled(v, dtype), True,
                          scale)
    return ValueCodec(ValueType.FLOAT, lambda x: exp.cast(x, DType.DOUBLE), None, True)


def unscaled_bigint(x: exp.Expr, scale: int) -> exp.Expr:
    """A DECIMAL(p <= 18, ``scale``) value as its unscaled integer, a BIGINT, exactly
    (``x * 10^scale`` has no fraction and fewer than 19 digits). Spark converts a BIGINT
    to Arrow without the per-row ``java.math.BigDecimal`` a DECIMAL column costs (2 M
    rows: about 0.12 s less, ad hoc)."""
    return exp.cast(exp.Mul(this=x, expression=exp.Literal.number(10**scale)) if scale else x, DType.BIGINT)


def double_codec(dtype: exp.DataType) -> ValueCodec:
    """A numeric column as DOUBLE (SUM / AVG under COUNT TYPE DOUBLE, which asks for doubles)."""
    return ValueCodec(ValueType.FLOAT, lambda x: exp.cast(x, DType.DOUBLE), _cast_back(dtype), True)


def from_unscaled(value: exp.Expr, dtype: exp.DataType) -> exp.Expr:
    """An unscaled integer (e.g. the engine's DECIMAL(38, 0)) as DECIMAL(p, s) ``dtype``, exactly.

    Spark has no function for it, and dividing by 10^s loses digits past DECIMAL(38)
    (its precision-loss rules keep 6 places), so the digits are read back as
    ``CAST('<unscaled>E-<s>' AS DECIMAL(p, s))``. A value beyond p digits fails like any
    Spark DECIMAL overflow (an error with ANSI mode on, else NULL).
    """
    scale = decimal_digits(dtype)[1]
    if not scale:
        return exp.cast(value, dtype.copy())
    digits = exp.cast(value, DType.TEXT)
    text = exp.Anonymous(this="concat", expressions=[digits, exp.Literal.string(f"E-{scale}")])
    return exp.cast(text, dtype.copy())


def decimal_type(precision: int, scale: int) -> exp.DataType:
    """``DECIMAL(min(38, precision), min(38, scale))`` (Spark's ``DecimalType.bounded``)."""
    return exp.DataType.build(f"DECIMAL({min(MAX_DECIMAL_DIGITS, precision)}, {min(MAX_DECIMAL_DIGITS, scale)})",
                              dialect="spark")


def _cast_back(dtype: exp.DataType) -> Callable[[exp.Expr], exp.Expr]:
    return lambda value: exp.cast(value, dtype.copy())


#: Return types of Spark functions that sqlglot cannot type (it reads them as anonymous
#: calls or leaves their type UNKNOWN), so that derived sources using them need no CAST.
SPARK_FUNCTION_TYPES: dict[str, str] = {
    "timestamp_seconds": "TIMESTAMP",
    "timestamp_millis": "TIMESTAMP",
    "timestamp_micros": "TIMESTAMP",
    "to_timestamp_ltz": "TIMESTAMP",
    "to_timestamp_ntz": "TIMESTAMP_NTZ",
    "make_timestamp_ltz": "TIMESTAMP",
    "make_timestamp_ntz": "TIMESTAMP_NTZ",
}
SPARK_EXPRESSION_TYPES: dict[type[exp.Expr], str] = {
    exp.TimestampFromParts: "TIMESTAMP",  # make_timestamp(...)
    exp.TimestampTrunc: "TIMESTAMP",  # date_trunc(unit, ts): Spark returns TIMESTAMP
}


def type_spark_functions(tree: exp.Expr) -> exp.Expr:
    """Wrap, in place, calls of :data:`SPARK_FUNCTION_TYPES` / :data:`SPARK_EXPRESSION_TYPES`
    in a CAST to their return type, so that ``annotate_types`` knows it.

    Meant for a copy of a query used only to derive column types. Unaliased
    projections are left alone (the CAST would change their derived name).
    """
    for node in list(tree.walk()):
        if isinstance(node, exp.Anonymous):
            returns = SPARK_FUNCTION_TYPES.get(str(node.name).lower())
        else:
            returns = SPARK_EXPRESSION_TYPES.get(type(node))
        if returns is None or isinstance(node.parent, exp.Select):
            continue
        node.replace(exp.cast(node.copy(), exp.DataType.build(returns, dialect="spark")))
    return tree
