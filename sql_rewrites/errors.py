"""Errors the SQL compiler raises, one class per mistake a user can make.

Every class derives from :class:`udafs.errors.SparkSeqError` (the project's one root)
through :class:`SqlRewriteError`, and from ``ValueError`` because each one reports bad
input. All of them are raised while parsing or analysing the statement, before any
Spark job starts (SEMANTICS.md section 7).

Errors that can point at the statement carry a :class:`SourcePosition` and show the
offending line with the bad text underlined::

    unknown column 'actoin' in DEFINE of VK; did you mean 'action'? ... at line 4, column 12
      4 |   DEFINE VK AS actoin = 'view'
        |                ^^^^^^
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass

from udafs.errors import SparkSeqError


@dataclass(frozen=True)
class SourcePosition:
    """Where something stands in the SQL text (1-based line and column).

    ``excerpt`` is the line of text followed by a line that underlines the span.
    ``start`` and ``end`` are the 0-based inclusive character offsets of the span in
    the text the position was computed on (when known), so that a caller who changed
    the text before compiling it (``{name}`` placeholders, the DataFrame API's
    arguments) can point back into what the user wrote. ``origin`` names that text
    when it is not a SQL statement (``define['A']``).
    """

    line: int
    column: int
    excerpt: str = ""
    start: int | None = None
    end: int | None = None
    origin: str = ""

    def describe(self) -> str:
        """``at line L, column C`` (or ``at <origin>, column C``) followed by the underlined excerpt, if known."""
        if self.origin:
            where = f"at {self.origin}, " + (f"line {self.line}, " if self.line != 1 else "")
            text = f"{where}column {self.column}"
        else:
            text = f"at line {self.line}, column {self.column}"
        return f"{text}\n{self.excerpt}" if self.excerpt else text


def name_shown(message: str, name: str, shown: str) -> str:
    """``message`` with every whole occurrence of the identifier ``name`` replaced by
    ``shown``: how a view name sparkseq generated becomes, in a compiler message, what
    the user wrote (a DataFrame, a placeholder). Whole identifiers only, so ``t`` in
    ``tt``, ``t_1`` or ``ts`` stays; quotes around the name stay.

    >>> name_shown("column a of t not found; t has ts", "t", "{df}")
    'column a of {df} not found; {df} has ts'
    """
    return re.sub(rf"(?<!\w){re.escape(name)}(?!\w)", lambda _: shown, message)


#: sqlglot's message for a syntax node that lacks a part: the part's name and the node's class.
_MISSING_PART = re.compile(r"Required keyword: '(\w+)' missing for <class '[\w.]*?(\w+)'>")


#: sqlglot's printed token (``<Token token_type: TokenType.ON, text: ON, line: 1, ...>``).
_TOKEN = re.compile(r"<Token token_type: TokenType\.(\w+), text: (.*?), line: \d+, col: \d+, start: \d+, "
                    r"end: \d+, comments: \[.*?\]>")
#: sqlglot's message for a missing relation name, with what it found instead.
_NAME_EXPECTED = re.compile(r"Expected (table|database) name but got (.*)")
#: sqlglot's name of a set operation (its Python class) in a message.
_SET_OPERATION = re.compile(r"(for )(Union|Except|Intersect)$")


def missing_part_message(message: str, previous: str | None) -> str:
    """sqlglot's ``message`` in SQL words where it names Python objects — a syntax node
    that lacks a part (its class), a token (its Python form) — given the text of the token
    before the place (the operator); any other message unchanged.

    >>> missing_part_message("Required keyword: 'expression' missing for <class 'sqlglot.expressions.core.And'>",
    ...                      "AND")
    'Expecting an expression after AND'
    >>> missing_part_message("Expected table name but got <Token token_type: TokenType.ON, text: ON, line: 1, "
    ...                      "col: 9, start: 8, end: 9, comments: []>", "JOIN")
    'Expecting a table name after JOIN, found ON'
    >>> missing_part_message("Expecting )", "x")
    'Expecting )'
    """
    missing = _MISSING_PART.fullmatch(message)
    if missing is None:
        message = _TOKEN.sub(lambda m: "the end of the statement" if m[1] == "SENTINEL" else m[2], message)
        message = _SET_OPERATION.sub(lambda m: m[1] + m[2].upper(), message)
        named = _NAME_EXPECTED.fullmatch(message)
        if named is None:
            return message
        what, found = named.groups()
        after = f" after {previous}" if previous else ""
        return f"Expecting a {what} name{after}" + (
            "" if found in ("None", "the end of the statement") else f", found {found}")
    part, node = missing.groups()
    what = {"high": "the upper bound of BETWEEN (x BETWEEN low AND high)"}.get(part)
    what = what or ("a name" if node == "Column" else "an expression")
    return f"Expecting {what} after {previous}" if previous else f"Expecting {what}"


def position_of(sql: str | None, start: int, end: int, origin: str = "") -> SourcePosition:
    """Build the position of ``sql[start:end + 1]`` with an underlined excerpt.

    Parameters
    ----------
    sql : str or None
        The whole statement text; ``None`` gives a position without excerpt.
    start, end : int
        0-based inclusive character offsets, as sqlglot tokens store them.
    origin : str, optional
        What ``sql`` is when it is not the statement (see :class:`SourcePosition`); it
        then labels the excerpt instead of the line number.
    """
    text = sql or ""
    start = max(0, min(start, len(text)))
    end = max(start, min(end, max(len(text) - 1, start)))
    line = text.count("\n", 0, start) + 1
    line_start = text.rfind("\n", 0, start) + 1
    column = start - line_start + 1
    if sql is None:
        return SourcePosition(line, column, origin=origin)
    line_end = text.find("\n", start)
    line_end = len(text) if line_end < 0 else line_end
    width = max(1, min(end, line_end - 1) - start + 1)
    gutter = f"{origin} | " if origin else f"{line:>4} | "
    excerpt = (
        f"{gutter}{text[line_start:line_end].expandtabs(1)}\n"
        f"{' ' * (len(gutter) - 2)}| {' ' * (column - 1)}{'^' * width}"
    )
    return SourcePosition(line, column, excerpt, start, end, origin)


class SqlRewriteError(SparkSeqError, ValueError):
    """Root of the compiler's errors; ``position`` points into the SQL when known."""

    def __init__(self, message: str, position: SourcePosition | None = None) -> None:
        self.message = message
        self.position = position
        super().__init__(f"{message} {position.describe()}" if position else message)

    def relocated(self, position: SourcePosition | None, message: str | None = None) -> SqlRewriteError:
        """The same error (same class) at ``position``, optionally with ``message`` instead
        of its own: how a caller that compiled a text derived from the user's points back
        into the user's text."""
        clone = copy.copy(self)
        SqlRewriteError.__init__(clone, self.message if message is None else message, position)
        return clone


class SqlParseError(SqlRewriteError):
    """The text is not valid SQL, or a MATCH_AGGREGATE clause is malformed.

    Attributes
    ----------
    line, col : int
        1-based position of the first character of the offending token.
    excerpt : str
        The offending line with the token underlined.
    description : str
        The message without position.
    """

    def __init__(self, description: str, position: SourcePosition) -> None:
        self.description = description
        self.line = position.line
        self.col = position.column
        self.excerpt = position.excerpt
        super().__init__(description, position)

    def relocated(self, position: SourcePosition | None, message: str | None = None) -> SqlRewriteError:
        if position is None:  # a parse error always has a position
            return self
        return type(self)(self.description if message is None else message, position)


class SparkAnalysisError(SqlRewriteError):
    """Spark's own parser or analyser refused a statement (an unknown function or column,
    arguments of the wrong type ...): Spark's message, placed in the user's text.

    Raised by the Spark layer (``sparkseq.sql`` and the script runner), which checks
    every statement with Spark's analyser before any runs. ``condition`` is Spark's
    error class (``UNRESOLVED_ROUTINE``); ``parameters`` its message parameters.
    """

    def __init__(self, message: str, position: SourcePosition | None = None, condition: str = "",
                 parameters: dict[str, str] | None = None) -> None:
        self.condition = condition
        self.parameters = dict(parameters or {})
        super().__init__(message, position)


class SchemaProviderError(SqlRewriteError):
    """The schema provider returned something unusable (e.g. an unparseable type)."""


class UnknownTableError(SqlRewriteError):
    """A MATCH_AGGREGATE source names a relation the schema provider does not know."""


class UnresolvedSourceError(SqlRewriteError):
    """The columns or types of a subquery / CTE source cannot be derived."""


class UnknownColumnError(SqlRewriteError):
    """A column is not a column of the MATCH_AGGREGATE source."""


class UnknownSymbolError(SqlRewriteError):
    """A symbol is used but neither DEFINEd nor covered by TYPE BY / HIERARCHY."""


class UnusedSymbolError(SqlRewriteError):
    """A symbol is DEFINEd but the PATTERN never mentions it."""


class DuplicateSymbolError(SqlRewriteError):
    """A symbol is DEFINEd twice."""


class AmbiguousSymbolError(SqlRewriteError):
    """One TYPE BY symbol is spelled with different letter case (two type values?)."""


class TooManySymbolsError(SqlRewriteError):
    """The pattern uses more symbols than fit the per-row 63-bit mask."""


class NonLocalDefineError(SqlRewriteError):
    """A DEFINE condition is not a local predicate on one row.

    Aggregates, window functions, subqueries and references to other symbols
    (cross-event predicates) are not supported in DEFINE.
    """


class NegatedMeasureError(SqlRewriteError):
    """A measure references a symbol that appears only negated in the pattern."""


class EdgeNegationWithoutWindowError(SqlRewriteError):
    """The pattern starts or ends with a negation but has no WITHIN."""


class OnlyNegationError(SqlRewriteError):
    """The pattern has no positive element."""


class QuantifierError(SqlRewriteError):
    """A quantifier the pattern cannot take: ``X{0}`` or ``X{0,m}`` (write ``X?`` / ``X*``),
    ``X{3,2}``, a bound too large for the engine, or a negated symbol with a quantifier
    (``!X{2}``, ``!X?``)."""


class AllOptionalPatternError(SqlRewriteError):
    """Every positive element of the pattern is optional (``SEQ(A?, B*)``): a match could
    bind no row at all."""


class QuantifierCombinationError(SqlRewriteError):
    """A quantified or optional element (``X{n,m}``, ``X?``, ``X*``) combined with what the
    engine does not count with it: a cross-event or iterator predicate on it, a selection
    strategy other than SKIP TILL ANY MATCH, UNCERTAIN, a concept roll-up of its position,
    or a streaming source."""


class WindowSpecError(SqlRewriteError):
    """Base of the WITHIN / SLIDE errors."""


class BadIntervalError(WindowSpecError):
    """A WITHIN / SLIDE value is malformed: unknown unit, fraction, not a literal."""


class NonPositiveWindowError(WindowSpecError):
    """WITHIN or SLIDE is zero or negative."""


class SlideWithoutWithinError(WindowSpecError):
    """SLIDE is given without WITHIN."""


class SlideLongerThanWithinError(WindowSpecError):
    """SLIDE is longer than WITHIN (Spark's ``window()`` refuses such a slide too)."""


class WindowTypeMismatchError(WindowSpecError):
    """An interval on a numeric ORDER BY column, or a number on a timestamp one."""


class OrderByError(SqlRewriteError):
    """ORDER BY is not one ascending column of a supported type."""


class PartitionByError(SqlRewriteError):
    """PARTITION BY holds something other than source columns."""


class UnknownMeasureError(SqlRewriteError):
    """A MEASURES entry is not one of the supported aggregates."""


class MissingMeasureAliasError(SqlRewriteError):
    """A MEASURES entry has no ``AS name``."""


class NonNumericMeasureError(SqlRewriteError):
    """SUM or AVG over a column that is not numeric."""


class UnsupportedMeasureTypeError(SqlRewriteError):
    """MIN or MAX over a column type the engine cannot carry exactly."""


class CubeError(SqlRewriteError):
    """An E-Cube clause is invalid: a bad position, roll-up target, duplicate item or cuboid."""


class DuplicateOutputColumnError(SqlRewriteError):
    """Two output columns of one MATCH_AGGREGATE would have the same name."""


class UnknownHierarchyError(SqlRewriteError):
    """HIERARCHY names a hierarchy the resolver does not know (or none was given)."""


class HierarchyError(SqlRewriteError):
    """A concept hierarchy is malformed (cycle, two parents) or lacks a node."""


class PredicateError(SqlRewriteError):
    """A WHERE predicate of MATCH_AGGREGATE is not supported: not a conjunction of
    comparisons, a column without a symbol, an ambiguous, negated or Kleene symbol in a
    cross-event comparison, a malformed Kleene iterator predicate (``B[i].c OP
    B[i-1].c [+ k]``), or types that cannot be compared exactly."""


class StrategyError(SqlRewriteError):
    """STRATEGY (or WHERE) is used where it is not supported (e.g. with CUBE / PATTERNS)."""


class StreamingError(SqlRewriteError):
    """A MATCH_AGGREGATE reads a streaming source in a way a live stream cannot answer
    (no watermark on the event time, a feature that would need unbounded state, ...)."""


class ImpreciseTimeError(SqlRewriteError):
    """``UNCERTAIN BETWEEN lo AND hi`` (imprecise timestamps) is malformed or combined with
    what expected aggregates do not support: bound columns of another type than ORDER BY,
    MIN / MAX / AVG, a COUNT TYPE other than DOUBLE, a selection strategy, cross-event
    predicates, CUBE / PATTERNS."""


class ParameterMarkerError(SqlRewriteError):
    """Positional parameter markers (``?``) that the rewritten statement would bind to
    other values than the statement as written: it holds them in another order, or
    one of them twice (named markers, ``:name``, have no order)."""


class AggregatePlacementError(SqlRewriteError):
    """A ``seq_*`` function (a grouped-aggregate Python UDF) stands where the compiler
    cannot place it: with DISTINCT, inside another aggregate, or beside other aggregates
    in a SELECT with GROUPING SETS / ROLLUP / CUBE or ``*`` (:mod:`sql_rewrites.generation.aggregates`)."""


class PersistentViewError(SqlRewriteError):
    """A persistent view (``CREATE VIEW``, ``ALTER VIEW ... AS``) over MATCH_AGGREGATE or
    ``seq_*`` that cannot be stored so that other sessions read it: it uses what lives only
    in one session (a concept hierarchy), or the session that creates it has no parser
    extension to keep the query as written."""
