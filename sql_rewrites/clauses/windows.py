"""WITHIN and SLIDE: literals in the ORDER BY column's units, checked and converted.

With a TIMESTAMP (or TIMESTAMP_NTZ) ORDER BY column both take interval literals,
converted exactly to microseconds: ``INTERVAL 10 MINUTES``, ``INTERVAL '1.5' SECONDS``,
``INTERVAL 1 HOUR 30 MINUTES``. With an integral column they take plain integers
in the column's units: ``WITHIN 600``. Months and years have no fixed length and are
refused.
"""

from __future__ import annotations

import dataclasses
from decimal import Decimal, InvalidOperation

from sqlglot import exp
from sqlglot.tokens import TokenType

from sql_rewrites.errors import (
    BadIntervalError,
    NonPositiveWindowError,
    SlideLongerThanWithinError,
    SlideWithoutWithinError,
    SourcePosition,
    WindowTypeMismatchError,
)
from sql_rewrites.logical.sql_types import OrderKind
from sql_rewrites.syntax.dialect import SparkSeq, parse_fragment
from sql_rewrites.syntax.expressions import node_position

MICROS_PER_UNIT = {
    "MICROSECOND": 1,
    "MILLISECOND": 1_000,
    "SECOND": 1_000_000,
    "MINUTE": 60_000_000,
    "HOUR": 3_600_000_000,
    "DAY": 86_400_000_000,
    "WEEK": 7 * 86_400_000_000,
}
INTERVAL_UNITS_HELP = "MICROSECOND(S), MILLISECOND(S), SECOND(S), MINUTE(S), HOUR(S), DAY(S), WEEK(S)"
INT64_MAX = 2**63 - 1


def describe_length(value: float, takes_intervals: bool) -> str:
    """A length in engine time units in words: for a timestamp event time (microseconds)
    exact in the largest unit that divides it, with the size in a larger unit when the
    count runs into thousands, or about (``~1.51 hours``) when no unit divides it; for a
    numeric event time the number in the column's own units.

    >>> describe_length(600_000_000, True), describe_length(90_061_000_000, True), describe_length(600, False)
    ('10 minutes', '90061 seconds (~1.04 days)', '600')
    """
    if not takes_intervals:
        return f"{value:.0f}" if float(value).is_integer() else f"{value:.6g}"
    units = sorted(MICROS_PER_UNIT.items(), key=lambda u: -u[1])
    about = next((f"~{value / size:.3g} {unit.lower()}s" for unit, size in units if value >= size), None)
    for unit, size in units:
        if value >= size and value % size == 0:
            count = int(value // size)
            exact = f"{count} {unit.lower()}{'s' if count != 1 else ''}"
            rounded = count >= 1000 and about and not about.endswith(f" {unit.lower()}s")
            return f"{exact} ({about})" if rounded else exact
    return about or f"{value:g} microseconds"


def window_length(value: exp.Expr, clause: str, order_column: str, kind: OrderKind, sql: str | None = None) -> int:
    """The positive int64 length of a WITHIN / SLIDE value in engine units.

    Parameters
    ----------
    value : sqlglot expression
        What follows WITHIN / SLIDE.
    clause : str
        ``"WITHIN"`` or ``"SLIDE"`` (for messages).
    order_column : str
        Name of the ORDER BY column (for messages).
    kind : OrderKind
        How the ORDER BY column maps to engine time.

    Raises
    ------
    WindowTypeMismatchError, BadIntervalError, NonPositiveWindowError
    """
    where = node_position(value, sql)
    is_interval = any(isinstance(n, exp.Interval) for n in value.walk())
    if is_interval != kind.takes_intervals:
        raise WindowTypeMismatchError(_mismatch_message(clause, order_column, kind), where)
    amount = _interval_micros(value, clause, sql) if is_interval else _number(value, clause, sql)
    if amount <= 0:
        raise NonPositiveWindowError(f"{clause} must be positive, got {value.sql(dialect=SparkSeq)}", where)
    if amount != amount.to_integral_value():
        unit = "microseconds" if is_interval else f"units of {order_column}"
        raise BadIntervalError(
            f"{clause} {value.sql(dialect=SparkSeq)} is not a whole number of {unit}", where
        )
    if amount > INT64_MAX:
        raise BadIntervalError(f"{clause} {value.sql(dialect=SparkSeq)} does not fit a 64-bit integer", where)
    return int(amount)


def interval_text_length(text: str, clause: str = "WITHIN") -> int:
    """An interval literal such as ``'INTERVAL 10 MINUTES'`` (or ``'10 minutes'``) in µs.

    >>> interval_text_length("1 hour 30 minutes")
    5400000000

    Raises
    ------
    SqlParseError, BadIntervalError, NonPositiveWindowError
    """
    value = parse_fragment(exp.Interval, text, 0, len(text), "an interval", lead=TokenType.INTERVAL)
    return window_length(value, clause, "the event time", OrderKind.TIMESTAMP, text)


#: Why SLIDE may not exceed WITHIN, in the words of Spark's own check.
SLIDE_RULE = ("as in Spark's window(), whose slide_duration must be <= window_duration: windows "
              "[k*slide, k*slide + within) would leave gaps no window sees")


@dataclasses.dataclass(frozen=True)
class WindowSpec:
    """WITHIN and SLIDE in engine units (None: absent), checked: both positive int64, SLIDE only
    with WITHIN and at most as long (equal lengths give tumbling windows).

    Build one with :meth:`checked` from engine lengths, or :meth:`of_clauses` from the
    WITHIN / SLIDE expressions of a statement.

    >>> WindowSpec.checked(600, 60)
    WindowSpec(within=600, slide=60)
    >>> WindowSpec.checked(None, 60)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    sql_rewrites.errors.SlideWithoutWithinError: SLIDE needs WITHIN: windows are [k*slide, k*slide + within); ...
    """

    within: int | None = None
    slide: int | None = None

    @classmethod
    def checked(cls, within: int | None, slide: int | None, *, shown: tuple[str, str] | None = None,
                where: SourcePosition | None = None) -> WindowSpec:
        """The window of ``within`` / ``slide``; ``shown`` are the two as messages show them
        (as written, or by :func:`describe_length`; default the numbers), ``where`` is the
        position of SLIDE.

        Raises
        ------
        NonPositiveWindowError, SlideWithoutWithinError, SlideLongerThanWithinError
        """
        for clause, value in (("WITHIN", within), ("SLIDE", slide)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or not
                                      0 < value <= INT64_MAX):
                raise NonPositiveWindowError(
                    f"{clause} must be a positive integer number of time units (at most 2**63 - 1), got {value!r}")
        if slide is not None and within is None:
            raise SlideWithoutWithinError(
                "SLIDE needs WITHIN: windows are [k*slide, k*slide + within); add e.g. "
                "WITHIN INTERVAL 10 MINUTES before SLIDE", where)
        if slide is not None and within is not None and slide > within:
            within_text, slide_text = shown or (str(within), str(slide))
            raise SlideLongerThanWithinError(
                f"SLIDE {slide_text} is longer than WITHIN {within_text}; the slide must be at most the "
                f"window length, {SLIDE_RULE}", where)
        return cls(within, slide)

    @classmethod
    def of_clauses(cls, within: exp.Expr | None, slide: exp.Expr | None, order_column: str, kind: OrderKind,
                   sql: str | None = None) -> WindowSpec:
        """The window of a statement's WITHIN / SLIDE expressions (None: absent), converted by
        :func:`window_length` and checked; messages show the values as written.

        Raises
        ------
        WindowTypeMismatchError, BadIntervalError, NonPositiveWindowError, SlideWithoutWithinError,
        SlideLongerThanWithinError
        """
        where = node_position(slide, sql) if slide is not None else None
        if slide is not None and within is None:
            return cls.checked(None, 1, where=where)  # raises SlideWithoutWithinError
        within_length = None if within is None else window_length(within, "WITHIN", order_column, kind, sql)
        slide_length = None if slide is None else window_length(slide, "SLIDE", order_column, kind, sql)
        shown = None if within is None or slide is None else (within.sql(dialect=SparkSeq), slide.sql(dialect=SparkSeq))
        return cls.checked(within_length, slide_length, shown=shown, where=where)


def _mismatch_message(clause: str, order_column: str, kind: OrderKind) -> str:
    if kind.takes_intervals:
        return (
            f"ORDER BY column {order_column} is a {kind.value.upper()}, so {clause} takes an interval, "
            f"e.g. {clause} INTERVAL 10 MINUTES"
        )
    return (
        f"ORDER BY column {order_column} is numeric, so {clause} takes a plain number in the same units, "
        f"e.g. {clause} 600"
    )


def _interval_micros(value: exp.Expr, clause: str, sql: str | None) -> Decimal:
    if isinstance(value, exp.Add):
        return _interval_micros(value.this, clause, sql) + _interval_micros(value.expression, clause, sql)
    if not isinstance(value, exp.Interval):
        raise BadIntervalError(
            f"{clause} takes an interval literal such as INTERVAL 10 MINUTES, got {value.sql(dialect=SparkSeq)}",
            node_position(value, sql),
        )
    unit = value.unit.name.upper() if isinstance(value.unit, exp.Var) else ""
    unit = unit[:-1] if unit.endswith("S") else unit
    if unit not in MICROS_PER_UNIT:
        got = value.args["unit"].sql(dialect=SparkSeq) if value.args.get("unit") else "no unit"
        raise BadIntervalError(
            f"{clause} interval unit {got} is not supported; use one of {INTERVAL_UNITS_HELP} "
            "(months and years have no fixed length)",
            node_position(value, sql),
        )
    return _decimal(value.this, clause, sql) * MICROS_PER_UNIT[unit]


def _number(value: exp.Expr, clause: str, sql: str | None) -> Decimal:
    if isinstance(value, exp.Neg):
        return -_number(value.this, clause, sql)
    if isinstance(value, exp.Paren):
        return _number(value.this, clause, sql)
    if not (isinstance(value, exp.Literal) and value.is_number):
        raise BadIntervalError(
            f"{clause} takes a number literal, got {value.sql(dialect=SparkSeq)}", node_position(value, sql)
        )
    return _decimal(value, clause, sql)


def _decimal(literal: exp.Expr | None, clause: str, sql: str | None) -> Decimal:
    text = literal.name if isinstance(literal, exp.Literal) else ""
    try:
        number = Decimal(text.strip())
    except InvalidOperation:
        number = None
    if number is None or not number.is_finite():
        shown = literal.sql(dialect=SparkSeq) if literal is not None else "nothing"
        raise BadIntervalError(f"{clause} needs a number, got {shown}", node_position(literal, sql))
    return number
