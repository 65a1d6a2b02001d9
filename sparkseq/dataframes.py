"""``sparkseq.match_aggregate``: MATCH_AGGREGATE over a DataFrame, from Python arguments.

>>> import sparkseq
>>> clicks = spark.sql("SELECT * FROM VALUES "
...     "(1, TIMESTAMP'2024-05-01 10:00:00', 'view', 'kindle', NULL), "
...     "(1, TIMESTAMP'2024-05-01 10:02:00', 'buy', 'kindle', 99.0), "
...     "(2, TIMESTAMP'2024-05-01 11:00:00', 'view', 'kindle', NULL), "
...     "(2, TIMESTAMP'2024-05-01 11:01:00', 'recommendation', 'case', NULL), "
...     "(2, TIMESTAMP'2024-05-01 11:03:00', 'buy', 'kindle', 95.0) AS t(customer_id, ts, action, item, price)")
>>> result = clicks.transform(sparkseq.match_aggregate, partition_by="customer_id", order_by="ts",
...     pattern="SEQ(VK, BK, !REC)", define={"VK": "action = 'view' AND item = 'kindle'",
...     "BK": "action = 'buy' AND item = 'kindle'", "REC": "action = 'recommendation'"},
...     measures={"funnels": "COUNT(*)", "revenue": "SUM(BK.price)"}, within="10 minutes")
>>> result.orderBy("customer_id").collect()
[Row(customer_id=1, funnels=1, revenue=Decimal('99.0')), Row(customer_id=2, funnels=1, revenue=Decimal('95.0'))]

Each argument is one clause of the operator, written as in SQL (docs/sql-reference.md
§2-3): column names, ``SEQ(...)`` patterns, conditions and aggregates as SQL text, as in
``DataFrame.filter("...")``. The call builds the same syntax tree the SQL parser builds
for ``SELECT * FROM <df> MATCH_AGGREGATE (...)`` and hands it to the same compiler, so the
plan, the generated Spark SQL, the result and every error are those of the SQL form.

Every argument is parsed on its own, as exactly the one thing it must be (a column, a
condition, a pattern ...): an argument cannot reach into another clause, and no text is
pasted into SQL. Errors point at the argument that holds the mistake: instead of a line
of a statement they name the argument and the column in its text::

    UnknownColumnError: unknown column 'actoin' in DEFINE of VK; did you mean 'action'? ... at define['VK'], column 1
      define['VK'] | actoin = 'view'
                   | ^^^^^^

Arguments given as Python values are shown as the SQL they stand for (``within=
timedelta(minutes=10)`` is ``INTERVAL 600000000 MICROSECONDS``). Errors that belong to
no argument (two output columns with one name, say) point at the first argument
involved, or carry no position.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from pyspark.errors import PySparkException
from pyspark.sql import DataFrame
from sqlglot import exp
from sqlglot.tokens import TokenType

from sparkseq import hierarchies as registry
from sparkseq.catalog import SessionSchemas
from sparkseq.probes import locate, quoted
from sparkseq.registration import engine_function
from sparkseq.scratch import scratch_session
from sparkseq.scripts import check_literal_setting
from sparkseq.spark_errors import as_error, is_spark_error, message_of, quiet_query_context_logger
from sql_rewrites.dialect import parse_fragment
from sql_rewrites.errors import SourcePosition, SqlParseError, SqlRewriteError, position_of
from sql_rewrites.expressions import MatchAggregate, MatchCube, MatchPattern, MatchPatterns, MatchRollup
from sql_rewrites.hierarchy import HierarchyResolver
from sql_rewrites.parser import COUNT_TYPES
from sql_rewrites.rewriter import OperatorExplanation, rewrite_tree
from udafs.plan import Strategy

Duration = str | int | timedelta
NUMBER = re.compile(r"\s*[-+]?\d+\s*")


@dataclass(frozen=True)
class Argument:
    """One argument's text and where it stands in the document the tree is parsed from."""

    label: str  # as the user wrote it: define['VK']
    text: str
    start: int
    end: int  # exclusive


class _Document:
    """The arguments laid out one per line; fragments are parsed with positions in it."""

    def __init__(self) -> None:
        self.arguments: list[Argument] = []
        self.text = ""

    def add(self, label: str, text: str) -> Argument:
        start = len(self.text) + (1 if self.text else 0)
        self.text = f"{self.text}\n{text}" if self.text else text
        argument = Argument(label, text, start, start + len(text))
        self.arguments.append(argument)
        return argument

    def parse(self, into: type[exp.Expr], label: str, text: object, what: str,
              lead: TokenType | None = None) -> exp.Expr:
        if not isinstance(text, str):
            raise TypeError(f"{label} must be a str (SQL text), got {type(text).__name__}")
        argument = self.add(label, text)
        return parse_fragment(into, self.text, argument.start, argument.end, what, lead)

    def position(self, start: int, end: int) -> SourcePosition | None:
        """A document span as a position in the argument holding it."""
        for argument in self.arguments:
            if argument.start <= start <= argument.end:
                last = max(argument.start, min(end, argument.end - 1))
                return position_of(argument.text, start - argument.start, last - argument.start, argument.label)
        return None

    def relocate(self, exc: SqlRewriteError, view: str) -> SqlRewriteError:
        """A compiler error positioned in the document, positioned in its argument instead."""
        position = exc.position
        if position is not None and position.start is not None and position.end is not None:
            position = self.position(position.start, position.end)
        return exc.relocated(position, exc.message.replace(view, "the DataFrame"))


def match_aggregate(df: DataFrame, *, order_by: str, pattern: str | None = None,
                    partition_by: str | Iterable[str] | None = None, define: Mapping[str, str] | None = None,
                    type_by: str | None = None, hierarchy: str | None = None,
                    measures: Mapping[str, str] | None = None, within: Duration | None = None,
                    slide: Duration | None = None, count_type: str | None = None, where: str | None = None,
                    strategy: str | None = None, patterns: Iterable[str] | None = None,
                    cube: Iterable[str] | None = None, hierarchies: HierarchyResolver | None = None) -> DataFrame:
    """MATCH_AGGREGATE over ``df`` (module docstring); usable with ``df.transform``.

    Parameters
    ----------
    df : DataFrame
        The events.
    order_by : str
        The event-time column (``ORDER BY``).
    pattern : str
        ``"SEQ(A, B+, !C)"`` (``PATTERN``); or give ``patterns``.
    partition_by : str or iterable of str, optional
        Column(s) of ``PARTITION BY``.
    define : mapping, optional
        Symbol -> condition (``DEFINE symbol AS condition``).
    type_by, hierarchy : str, optional
        ``TYPE BY column``, ``HIERARCHY name``.
    measures : mapping, optional
        Output name -> aggregate (``MEASURES aggregate AS name``), e.g.
        ``{"n": "COUNT(*)", "revenue": "SUM(B.price)"}``. Default ``COUNT(*) AS count``.
    within, slide : str, int or timedelta, optional
        ``"10 minutes"`` or ``"INTERVAL 10 MINUTES"`` or a ``timedelta`` for a timestamp
        event time; an int (or ``"600"``) for a numeric one.
    count_type : str, optional
        ``"BIGINT"``, ``"DECIMAL"`` or ``"DOUBLE"``.
    where, strategy : str, optional
        ``WHERE`` (cross-event predicates) and ``STRATEGY`` (section 14).
    patterns, cube : iterable of str, optional
        E-Cube (section 13): the cuboids' patterns (``PATTERNS``), or the roll-ups of
        ``pattern`` (``["CONCEPT ROLLUP 1", "PATTERN ROLLUP 3"]``).
    hierarchies : HierarchyResolver, optional
        As for :func:`sparkseq.sql`.

    Returns
    -------
    DataFrame
        The partition keys, ``window_start``/``window_end`` with ``slide``, and the measures.

    Raises
    ------
    SqlRewriteError
        The errors of the SQL form (incl. Spark's own, as SparkAnalysisError), placed
        in the argument holding the mistake; before any Spark job starts.
    """
    spark = df.sparkSession
    check_literal_setting(spark)
    document = _Document()
    view = f"_sparkseq_{uuid.uuid4().hex}"
    node = MatchAggregate(this=exp.Table(this=exp.to_identifier(view, quoted=True)))
    given = {"partition_by": partition_by, "order_by": order_by, "pattern": pattern, "cube": cube,
             "patterns": patterns, "define": define, "type_by": type_by, "hierarchy": hierarchy, "measures": measures,
             "within": within, "slide": slide, "count_type": count_type, "where": where, "strategy": strategy}
    try:
        _clauses(document, node, given)
    except SqlRewriteError as exc:
        raise document.relocate(exc, view) from None
    df.createOrReplaceTempView(view)
    try:
        return _run(spark, document, node, view, hierarchies)
    finally:
        spark.catalog.dropTempView(view)  # the result's plan holds the DataFrame's (as spark.sql does)


def _run(spark: Any, document: _Document, node: MatchAggregate, view: str,
         hierarchies: HierarchyResolver | None) -> DataFrame:
    tree = exp.select("*").from_(node)
    resolver = registry.resolver(spark, hierarchies)
    try:
        sql, operators = rewrite_tree(tree, document.text, SessionSchemas(spark),
                                      lambda plan: engine_function(spark, plan), hierarchies=resolver)
    except SqlRewriteError as exc:
        raise document.relocate(exc, view) from None
    try:
        with quiet_query_context_logger():
            return spark.sql(sql)
    except PySparkException as exc:
        if not is_spark_error(exc):
            raise
        raise _spark_error(spark, exc, document, operators, view) from None


def _spark_error(spark: Any, exc: PySparkException, document: _Document, operators: tuple[OperatorExplanation, ...],
                 view: str) -> SqlRewriteError:
    session = scratch_session(spark)
    located = locate(session, exc, document.text, operators, None, lambda _: quoted(view)) if session else None
    if located is None:
        return as_error(exc, None, f"{message_of(exc)} (in the Spark SQL the MATCH_AGGREGATE became)")
    message = message_of(located.error)
    return as_error(located.error, document.position(located.start, located.end),
                    f"{located.context}: {message}" if located.context else message)


def _clauses(document: _Document, node: MatchAggregate, given: Mapping[str, Any]) -> None:
    """Parse every given argument into its clause of ``node``, in the grammar's order."""
    for name, clause in CLAUSES:
        value = given[name]
        if value is not None:
            arg, tree = clause(document, value)
            node.set(arg, tree)
    if node.args.get("pattern") is None and node.args.get("patterns") is None:
        raise TypeError("match_aggregate needs pattern= (or patterns=)")
    if node.args.get("pattern") is not None and node.args.get("patterns") is not None:
        raise TypeError("match_aggregate takes pattern= or patterns=, not both")


def _partition_by(document: _Document, value: str | Iterable[str]) -> tuple[str, list[exp.Expr]]:
    if isinstance(value, str):
        return "partition_by", [document.parse(exp.Column, "partition_by", value, "a column")]
    return "partition_by", [document.parse(exp.Column, f"partition_by[{i}]", v, "a column")
                            for i, v in enumerate(value)]


def _order_by(document: _Document, value: str) -> tuple[str, exp.Expr]:
    return "order", exp.Order(expressions=[document.parse(exp.Ordered, "order_by", value, "a column")])


def _pattern(document: _Document, value: str) -> tuple[str, exp.Expr]:
    return "pattern", document.parse(MatchPattern, "pattern", value, "a pattern SEQ(...)")


def _patterns(document: _Document, value: Iterable[str]) -> tuple[str, exp.Expr]:
    return "patterns", MatchPatterns(expressions=[
        document.parse(MatchPattern, f"patterns[{i}]", v, "a pattern SEQ(...)") for i, v in enumerate(value)])


def _cube(document: _Document, value: Iterable[str]) -> tuple[str, exp.Expr]:
    return "cube", MatchCube(expressions=[
        document.parse(MatchRollup, f"cube[{i}]", v, "CONCEPT ROLLUP or PATTERN ROLLUP") for i, v in enumerate(value)])


def _define(document: _Document, value: Mapping[str, str]) -> tuple[str, list[exp.Expr]]:
    definitions: list[exp.Expr] = []
    for symbol, text in value.items():
        condition = document.parse(exp.Condition, f"define[{symbol!r}]", text, "a condition")
        argument = document.arguments[-1]
        definition = exp.Alias(this=condition, alias=exp.to_identifier(symbol))
        definition.meta.update(condition_start=argument.start, condition_end=argument.end - 1)
        definitions.append(definition)
    return "define", definitions


def _type_by(document: _Document, value: str) -> tuple[str, exp.Expr]:
    return "type_by", document.parse(exp.Column, "type_by", value, "a column")


def _hierarchy(document: _Document, value: str) -> tuple[str, exp.Expr]:
    return "hierarchy", document.parse(exp.Identifier, "hierarchy", value, "a hierarchy name")


def _measures(document: _Document, value: Mapping[str, str]) -> tuple[str, list[exp.Expr]]:
    return "measures", [exp.Alias(this=document.parse(exp.Condition, f"measures[{name!r}]", text, "an aggregate"),
                                  alias=exp.to_identifier(name)) for name, text in value.items()]


def _duration(label: str) -> Callable[[_Document, Duration], tuple[str, exp.Expr]]:
    def clause(document: _Document, value: Duration) -> tuple[str, exp.Expr]:
        if isinstance(value, timedelta):
            micros = (value.days * 86_400 + value.seconds) * 1_000_000 + value.microseconds
            value = f"INTERVAL {micros} MICROSECONDS"
        elif isinstance(value, int) and not isinstance(value, bool):
            value = str(value)
        lead = None if isinstance(value, str) and NUMBER.fullmatch(value) else TokenType.INTERVAL
        return label, document.parse(exp.Interval, label, value, "an interval or a number", lead)

    return clause


def _keyword(label: str, allowed: tuple[str, ...]) -> Callable[[_Document, str], tuple[str, exp.Expr]]:
    def clause(document: _Document, value: str) -> tuple[str, exp.Expr]:
        argument = document.add(label, str(value))
        words = " ".join(str(value).split()).upper()
        if words not in allowed:
            raise SqlParseError(f"{label} must be one of {', '.join(allowed)}",
                                position_of(document.text, argument.start, max(argument.start, argument.end - 1)))
        return label, exp.var(words)

    return clause


def _where(document: _Document, value: str) -> tuple[str, exp.Expr]:
    return "where", document.parse(exp.Condition, "where", value, "a condition")


#: argument name -> parser into ``(MatchAggregate arg, tree)``, in the grammar's clause order
CLAUSES: tuple[tuple[str, Callable[[_Document, Any], tuple[str, Any]]], ...] = (
    ("partition_by", _partition_by),
    ("order_by", _order_by),
    ("pattern", _pattern),
    ("cube", _cube),
    ("patterns", _patterns),
    ("define", _define),
    ("type_by", _type_by),
    ("hierarchy", _hierarchy),
    ("measures", _measures),
    ("within", _duration("within")),
    ("slide", _duration("slide")),
    ("count_type", _keyword("count_type", COUNT_TYPES)),
    ("where", _where),
    ("strategy", _keyword("strategy", Strategy.sql_choices())),
)


__all__ = ["match_aggregate"]
