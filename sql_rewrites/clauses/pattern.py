"""Stand-alone pattern strings: ``'SEQ(VK, BK, !REC, VC+)'``.

The Spark layer's BI-friendly functions (e.g. ``seq_count(ts, type_col, 'SEQ(A, B)',
INTERVAL 10 MINUTES)``) take the pattern as a string and every symbol as a *type
value* (as with ``TYPE BY``). This module parses such strings with the very grammar
and errors of the PATTERN clause (positions are within the string) and compiles them
into an engine :class:`~udafs.plan.Plan`.

>>> from sql_rewrites.clauses.pattern import compile_type_pattern
>>> p = compile_type_pattern("SEQ(view, buy, !'return')", within=600_000_000)
>>> p.type_values, p.plan.describe()
(('view', 'buy', 'return'), 'SEQ(view, buy, !return)')
>>> p.mask_sql("action")  # doctest: +ELLIPSIS
"CAST((CASE WHEN `action` = 'view' THEN 1 ELSE 0 END) | ... THEN 4 ELSE 0 END) AS BIGINT)"
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from sql_rewrites.clauses.exclusive_symbols import mask_expression
from sql_rewrites.clauses.symbols import check_edge_negation, check_spelling, compile_pattern
from sql_rewrites.clauses.windows import WindowSpec
from sql_rewrites.syntax.dialect import SparkSeq, parse_into
from sql_rewrites.syntax.expressions import MatchPattern
from udafs.plan import CountType, Measure, MeasureKind, Plan


def parse_pattern(text: str) -> MatchPattern:
    """Parse ``'SEQ(...)'`` into a :class:`MatchPattern`.

    Raises
    ------
    SqlParseError
        With line, column (within ``text``) and the underlined offending text.
    """
    return parse_into(MatchPattern, text)  # type: ignore[return-value]


@dataclass(frozen=True)
class TypePattern:
    """A compiled pattern whose symbols are type values.

    ``type_values[k]`` is the value of mask bit ``k``; ``plan`` counts matches
    (``COUNT(*)`` named ``count``) unless other measures were asked for.
    """

    pattern: MatchPattern
    type_values: tuple[str, ...]
    plan: Plan

    def mask_expression(self, type_column: str) -> exp.Expr:
        """The BIGINT per-row symbol mask over ``type_column`` as a sqlglot tree."""
        column = exp.column(exp.to_identifier(type_column, quoted=True))
        return mask_expression(
            (k, exp.EQ(this=column.copy(), expression=exp.Literal.string(value)))
            for k, value in enumerate(self.type_values)
        )

    def mask_sql(self, type_column: str) -> str:
        """:meth:`mask_expression` as Spark SQL text (identifiers and values quoted)."""
        return self.mask_expression(type_column).sql(dialect=SparkSeq)


def compile_type_pattern(
    text: str,
    *,
    within: int | None = None,
    slide: int | None = None,
    count_type: CountType = CountType.BIGINT,
    measures: tuple[Measure, ...] = (Measure(MeasureKind.COUNT_STAR, name="count"),),
    parsed: MatchPattern | None = None,
) -> TypePattern:
    """Parse and check a pattern string whose symbols are type values.

    Parameters
    ----------
    text : str
        ``'SEQ(A, !B, C+)'``; names and ``'quoted values'`` are both type values.
    within, slide : int, optional
        Window length and slide in engine units (microseconds for timestamps; see
        :func:`sql_rewrites.clauses.windows.interval_text_length`).
    count_type : CountType
        Type of counts.
    measures : tuple of Measure
        Engine measures (symbol indices refer to ``type_values``).
    parsed : MatchPattern, optional
        ``text`` already parsed (e.g. the pattern of a
        :class:`~sql_rewrites.syntax.expressions.PatternArgument`, positions within ``text``).

    Raises
    ------
    SqlParseError, OnlyNegationError, TooManySymbolsError, AmbiguousSymbolError,
    EdgeNegationWithoutWindowError, NonPositiveWindowError, SlideWithoutWithinError
    """
    pattern = parsed if parsed is not None else parse_pattern(text)
    compiled = compile_pattern(pattern, text)
    for symbol in compiled.symbols:
        check_spelling(symbol, text)
    WindowSpec.checked(within, slide)
    check_edge_negation(compiled, within is not None, text)
    plan = Plan(
        symbols=tuple(s.name for s in compiled.symbols),
        elements=compiled.elements,
        negations=compiled.negations,
        within=within,
        slide=slide,
        measures=measures,
        count_type=count_type,
    )
    return TypePattern(pattern, plan.symbols, plan)


