"""A MATCH_AGGREGATE operator built from Python arguments (``sparkseq.match_aggregate``).

Each argument is one clause of the operator, written as in SQL. Every argument is
parsed on its own, as exactly the one thing it must be (a column, a condition, a
pattern ...), into the syntax tree the SQL parser builds for ``SELECT * FROM <view>
MATCH_AGGREGATE (...)``: an argument cannot reach into another clause, and no text is
pasted into SQL. The arguments are laid out one per line in a *document* that the
fragments are parsed from, so every node keeps a position, and an error is placed in
the argument holding the mistake (:meth:`ArgumentDocument.relocate`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlglot import exp
from sqlglot.tokens import TokenType

from sql_rewrites.errors import SourcePosition, SqlParseError, SqlRewriteError, name_shown, position_of
from sql_rewrites.syntax.dialect import parse_fragment
from sql_rewrites.syntax.expressions import MatchAggregate, MatchCube, MatchPattern, MatchPatterns, MatchRollup
from sql_rewrites.syntax.parser import COUNT_TYPES
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


class ArgumentDocument:
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

    def origin(self, start: int, end: int) -> tuple[str, int, int, str]:
        """A document span (inclusive offsets) in the argument holding it: the argument's
        text, the span's offsets in it and its label (the whole document when no argument holds it)."""
        for argument in self.arguments:
            if argument.start <= start <= argument.end:
                last = min(end, argument.end - 1)
                return argument.text, start - argument.start, last - argument.start, argument.label
        return self.text, start, end, ""

    def relocate(self, exc: SqlRewriteError, view: str) -> SqlRewriteError:
        """A compiler error positioned in the document, positioned in its argument instead."""
        position = exc.position
        if position is not None and position.start is not None and position.end is not None:
            position = self.position(position.start, position.end)
        return exc.relocated(position, name_shown(exc.message, view, "the DataFrame"))


@dataclass(frozen=True)
class OperatorStatement:
    """``SELECT * FROM <view> MATCH_AGGREGATE (...)`` built from arguments, and their document."""

    tree: exp.Select
    document: ArgumentDocument


def operator_statement(view: str, given: Mapping[str, Any]) -> OperatorStatement:
    """``SELECT * FROM <view> MATCH_AGGREGATE (...)`` with each given argument (``None`` = not
    given) parsed into its clause, and the document the arguments were parsed from.

    Raises
    ------
    SqlRewriteError
        A clause that does not parse, positioned in its argument.
    TypeError
        No pattern, or both ``pattern`` and ``patterns``; an argument that is not text.
    """
    document = ArgumentDocument()
    node = MatchAggregate(this=exp.Table(this=exp.to_identifier(view, quoted=True)))
    try:
        _clauses(document, node, given)
    except SqlRewriteError as exc:
        raise document.relocate(exc, view) from None
    return OperatorStatement(exp.select("*").from_(node), document)


def _clauses(document: ArgumentDocument, node: MatchAggregate, given: Mapping[str, Any]) -> None:
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


def _partition_by(document: ArgumentDocument, value: str | Iterable[str]) -> tuple[str, list[exp.Expr]]:
    if isinstance(value, str):
        return "partition_by", [document.parse(exp.Column, "partition_by", value, "a column")]
    return "partition_by", [document.parse(exp.Column, f"partition_by[{i}]", v, "a column")
                            for i, v in enumerate(value)]


def _order_by(document: ArgumentDocument, value: str) -> tuple[str, exp.Expr]:
    return "order", exp.Order(expressions=[document.parse(exp.Ordered, "order_by", value, "a column")])


def _pattern(document: ArgumentDocument, value: str) -> tuple[str, exp.Expr]:
    return "pattern", document.parse(MatchPattern, "pattern", value, "a pattern SEQ(...)")


def _patterns(document: ArgumentDocument, value: Iterable[str]) -> tuple[str, exp.Expr]:
    return "patterns", MatchPatterns(expressions=[
        document.parse(MatchPattern, f"patterns[{i}]", v, "a pattern SEQ(...)") for i, v in enumerate(value)])


def _cube(document: ArgumentDocument, value: Iterable[str]) -> tuple[str, exp.Expr]:
    return "cube", MatchCube(expressions=[
        document.parse(MatchRollup, f"cube[{i}]", v, "CONCEPT ROLLUP or PATTERN ROLLUP") for i, v in enumerate(value)])


def _define(document: ArgumentDocument, value: Mapping[str, str]) -> tuple[str, list[exp.Expr]]:
    definitions: list[exp.Expr] = []
    for symbol, text in value.items():
        condition = document.parse(exp.Condition, f"define[{symbol!r}]", text, "a condition")
        argument = document.arguments[-1]
        definition = exp.Alias(this=condition, alias=exp.to_identifier(symbol))
        definition.meta.update(condition_start=argument.start, condition_end=argument.end - 1)
        definitions.append(definition)
    return "define", definitions


def _type_by(document: ArgumentDocument, value: str) -> tuple[str, exp.Expr]:
    return "type_by", document.parse(exp.Column, "type_by", value, "a column")


def _hierarchy(document: ArgumentDocument, value: str) -> tuple[str, exp.Expr]:
    return "hierarchy", document.parse(exp.Identifier, "hierarchy", value, "a hierarchy name")


def _measures(document: ArgumentDocument, value: Mapping[str, str]) -> tuple[str, list[exp.Expr]]:
    return "measures", [exp.Alias(this=document.parse(exp.Condition, f"measures[{name!r}]", text, "an aggregate"),
                                  alias=exp.to_identifier(name)) for name, text in value.items()]


def _duration(label: str) -> Callable[[ArgumentDocument, Duration], tuple[str, exp.Expr]]:
    def clause(document: ArgumentDocument, value: Duration) -> tuple[str, exp.Expr]:
        if isinstance(value, timedelta):
            micros = (value.days * 86_400 + value.seconds) * 1_000_000 + value.microseconds
            value = f"INTERVAL {micros} MICROSECONDS"
        elif isinstance(value, int) and not isinstance(value, bool):
            value = str(value)
        lead = None if isinstance(value, str) and NUMBER.fullmatch(value) else TokenType.INTERVAL
        return label, document.parse(exp.Interval, label, value, "an interval or a number", lead)

    return clause


def _keyword(label: str, allowed: tuple[str, ...]) -> Callable[[ArgumentDocument, str], tuple[str, exp.Expr]]:
    def clause(document: ArgumentDocument, value: str) -> tuple[str, exp.Expr]:
        argument = document.add(label, str(value))
        words = " ".join(str(value).split()).upper()
        if words not in allowed:
            raise SqlParseError(f"{label} must be one of {', '.join(allowed)}",
                                position_of(document.text, argument.start, max(argument.start, argument.end - 1)))
        return label, exp.var(words)

    return clause


def _where(document: ArgumentDocument, value: str) -> tuple[str, exp.Expr]:
    return "where", document.parse(exp.Condition, "where", value, "a condition")


#: argument name -> parser into ``(MatchAggregate arg, tree)``, in the grammar's clause order
CLAUSES: tuple[tuple[str, Callable[[ArgumentDocument, Any], tuple[str, Any]]], ...] = (
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


__all__ = ["ArgumentDocument", "Duration", "OperatorStatement", "operator_statement"]
