"""Column references inside one MATCH_AGGREGATE: what a name may refer to.

Inside the clause a column may be written bare (``action``), qualified by the source's
alias or table name (``c.action``), or - in DEFINE only - qualified by the symbol
being defined (``VK.action``, as in MATCH_RECOGNIZE), which is stripped. A qualifier
naming another symbol is a cross-event predicate, which is not supported.
"""

from __future__ import annotations

import difflib

from sqlglot import exp

from sql_rewrites.errors import NonLocalDefineError, UnknownColumnError
from sql_rewrites.logical.schema import ColumnSchema, RelationSchema
from sql_rewrites.syntax.dialect import SparkSeq
from sql_rewrites.syntax.expressions import MatchAggregate, node_position
from sql_rewrites.syntax.parser import SparkSeqParser

NOT_LOCAL = (exp.AggFunc, exp.Window, exp.Subquery, exp.Query)
#: MATCH_AGGREGATE's one-word clause keywords, which a column may be named like.
CLAUSE_KEYWORDS = frozenset(k for k in SparkSeqParser.MATCH_AGGREGATE_CLAUSE_PARSERS if " " not in k)


class ColumnScope:
    """Resolves column references against the source's schema (case-insensitive)."""

    def __init__(self, node: MatchAggregate, source: RelationSchema, sql: str | None = None) -> None:
        self.source = source
        self.sql = sql
        this = node.this
        qualifier = this.alias_or_name if isinstance(this, (exp.Table, exp.Subquery)) else node.this.alias
        self.qualifiers = {qualifier.casefold()} if qualifier else set()

    def find(self, column: exp.Column, context: str) -> ColumnSchema:
        """The source column ``column`` names (qualifier checked), for ``context``.

        Raises
        ------
        UnknownColumnError
        """
        qualifier = column.table
        if qualifier and qualifier.casefold() not in self.qualifiers:
            raise UnknownColumnError(
                f"{context}: {column.sql(dialect=SparkSeq)} has qualifier {qualifier}, which is not the "
                f"MATCH_AGGREGATE source ({self._source_names()})",
                node_position(column, self.sql),
            )
        found = self.source.find(column.name)
        if found is None:
            keyword = not qualifier and not column.this.quoted and column.name.upper() in CLAUSE_KEYWORDS
            raise UnknownColumnError(self._unknown_message(column.name, context, keyword),
                                     node_position(column, self.sql))
        return found

    def _unknown_message(self, name: str, context: str, keyword: bool = False) -> str:
        names = self.source.names
        close = difflib.get_close_matches(name, names, n=1) or difflib.get_close_matches(
            name.casefold(), [n.casefold() for n in names], n=1
        )
        hint = f"; did you mean '{close[0]}'?" if close else ""
        clause = (f"; {name} is read as a column here: if it begins the {name.upper()} clause, the expression "
                  "before it is incomplete" if keyword else "")
        return (f"unknown column '{name}' in {context}{hint} (columns of {self.source.name}: {', '.join(names)})"
                f"{clause}")

    def _source_names(self) -> str:
        return ", ".join(sorted(self.qualifiers)) or "unnamed"

    def local_condition(self, condition: exp.Expr, symbol: str, other_symbols: set[str]) -> exp.Expr:
        """A copy of a DEFINE condition checked to be local and with columns resolved.

        ``symbol.col`` loses its qualifier; ``other.col`` for another symbol raises
        :class:`NonLocalDefineError`, as do aggregates, windows and subqueries.
        """
        condition = condition.copy()
        context = f"DEFINE of {symbol}"
        for node in list(condition.walk()):
            if isinstance(node, NOT_LOCAL):
                raise NonLocalDefineError(
                    f"{context}: {node.sql(dialect=SparkSeq)} is not a predicate on one row; DEFINE allows "
                    "only row-local conditions (no aggregates, window functions or subqueries)",
                    node_position(node, self.sql),
                )
            if isinstance(node, exp.Column) and not _is_lambda_variable(node):
                self._resolve_define_column(node, symbol, other_symbols, context)
        return condition

    def _resolve_define_column(self, column: exp.Column, symbol: str, others: set[str], context: str) -> None:
        qualifier = column.table.casefold()
        if qualifier and qualifier == symbol.casefold() and qualifier not in self.qualifiers:
            column.set("table", None)
        elif qualifier and qualifier in others and qualifier not in self.qualifiers:
            raise NonLocalDefineError(
                f"{context}: {column.sql(dialect=SparkSeq)} refers to another symbol's row; cross-event "
                "predicates are not supported, DEFINE may only test the row itself",
                node_position(column, self.sql),
            )
        if column.table and column.table.casefold() not in self.qualifiers and self.source.find(column.table):
            return  # struct field access: <struct column>.<field>
        self.find(column, context)


def _is_lambda_variable(column: exp.Column) -> bool:
    if column.table:
        return False
    parent = column.parent
    while parent is not None:
        if isinstance(parent, exp.Lambda) and any(p.name == column.name for p in parent.expressions):
            return True
        parent = parent.parent
    return False
