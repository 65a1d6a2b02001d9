"""The compiler's entry points: SparkSeq SQL text in, plain Spark SQL text out.

>>> from sql_rewrites import rewrite
>>> schema = {"clicks": {"id": "bigint", "ts": "timestamp", "action": "string"}}
>>> sql = '''SELECT id, n FROM clicks MATCH_AGGREGATE (PARTITION BY id ORDER BY ts
...   PATTERN SEQ(A, B) DEFINE A AS action = 'a', B AS action = 'b'
...   MEASURES COUNT(*) AS n) AS m'''
>>> out = rewrite(sql, schema, lambda plan: "sparkseq_match")
>>> "MATCH_AGGREGATE" in out, "sparkseq_match(" in out
(False, True)
>>> rewrite("SELECT 1; select  2", schema, lambda plan: "f")  # passes through verbatim
'SELECT 1;\\nselect  2'

Statements are split at top-level semicolons; those without MATCH_AGGREGATE (and
without calls of the ``python_aggregates`` given, :mod:`sql_rewrites.generation.aggregates`) are
returned verbatim (so Spark syntax sqlglot does not know still works), the others are
parsed, analysed, rewritten and printed by sqlglot's Spark generator; a statement whose
aggregates need no split also comes back verbatim.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Union

from sqlglot import exp

from sql_rewrites.analysis.analyzer import Analyzer
from sql_rewrites.engine_contract import engine_result_type
from sql_rewrites.errors import SqlParseError, position_of
from sql_rewrites.generation.aggregates import PythonAggregate, split_python_aggregates
from sql_rewrites.generation.generate import generate
from sql_rewrites.hierarchy_statements import parse_hierarchy_statement
from sql_rewrites.logical.hierarchy import HierarchyResolver
from sql_rewrites.logical.query import MatchAggregateQuery
from sql_rewrites.logical.schema import SchemaProvider
from sql_rewrites.syntax.dialect import parse_tokens
from sql_rewrites.syntax.expressions import MatchAggregate
from sql_rewrites.syntax.markers import print_statement, print_tree
from sql_rewrites.syntax.parser import SparkSeqParser
from sql_rewrites.syntax.statements import Statement, split_statements
from udafs.multiplan import MultiPlan
from udafs.plan import Plan

EngineFunction = Callable[[Union[Plan, MultiPlan]], str]  # an E-Cube's plan is a MultiPlan
#: Lower-case name -> the grouped-aggregate Python functions of the session (``seq_*``).
PythonAggregates = Mapping[str, PythonAggregate]
#: An operator's replacement: the expression in its place and the name of what computes it.
Replaced = tuple[exp.Expr, str]
#: ``(ordinal, query) -> (replacement, name) | None`` (see :func:`explain_statement`).
Replacement = Callable[[int, MatchAggregateQuery], "Replaced | None"]


@dataclass(frozen=True)
class OperatorExplanation:
    """One rewritten MATCH_AGGREGATE: its analysis, plan and generated SQL."""

    query: MatchAggregateQuery
    function_name: str
    replacement: exp.Expr = field(compare=False, repr=False)  # in the rewritten statement's tree
    pretty: bool = False

    @functools.cached_property
    def generated_sql(self) -> str:
        """The replacement as Spark SQL: printed when asked for (EXPLAIN), not while
        rewriting (with the mask builders' copies removed, planning a workload of 120
        statements went from 1.67 to 1.3 s, ad hoc)."""
        return print_tree(self.replacement, self.pretty)

    @property
    def relation_sql(self) -> str:
        """``SELECT * FROM <the replacement>``: the operator's output on its own, as Spark SQL."""
        return print_tree(exp.select("*").from_(self.replacement.copy()))

    @property
    def plan(self) -> Plan | MultiPlan:
        """The engine plan (an E-Cube's: a MultiPlan, one plan per cuboid)."""
        return self.query.plan

    def as_dict(self) -> dict[str, object]:
        """JSON-friendly summary (what EXPLAIN shows)."""
        return {
            "alias": self.query.alias,
            "pattern": self.plan.describe(),
            "plan": self.plan.to_json(),
            "engine_function": self.function_name,
            "engine_result_type": engine_result_type(self.plan),
            "outputs": [(o.name, o.type_text) for o in self.query.outputs],
            "sql": self.generated_sql,
        }


@dataclass(frozen=True)
class StatementExplanation:
    """One input statement and what it became."""

    original: str
    rewritten: str
    operators: tuple[OperatorExplanation, ...]


def explain(
    sql: str,
    schema: SchemaProvider,
    engine_function: EngineFunction,
    *,
    hierarchies: HierarchyResolver | None = None,
    pretty: bool = False,
    python_aggregates: PythonAggregates | None = None,
) -> list[StatementExplanation]:
    """Rewrite every statement and report, per MATCH_AGGREGATE, its plan and SQL.

    Parameters
    ----------
    sql : str
        One or more statements separated by semicolons.
    schema : SchemaProvider
        ``{relation: {column: Spark type}}`` or a callable (see :mod:`sql_rewrites.logical.schema`).
    engine_function : callable
        ``engine_function(plan) -> name`` of the registered engine function for that
        plan (contract in :mod:`sql_rewrites.engine_contract`).
    hierarchies : HierarchyResolver, optional
        Concept hierarchies for ``HIERARCHY`` (see :mod:`sql_rewrites.logical.hierarchy`).
    pretty : bool
        Format rewritten statements over several lines.
    python_aggregates : mapping, optional
        The grouped-aggregate Python functions of the session (``seq_*``): a SELECT that
        calls them beside other aggregates, with FILTER, in HAVING / ORDER BY or without
        GROUP BY is split (:mod:`sql_rewrites.generation.aggregates`).

    Raises
    ------
    SqlRewriteError
        Any parse or analysis error, before anything is rewritten.
    """
    return [
        explain_statement(statement, sql, schema, engine_function, hierarchies=hierarchies, pretty=pretty,
                          python_aggregates=python_aggregates)
        for statement in split_statements(sql)
    ]


def explain_statement(
    statement: Statement,
    sql: str,
    schema: SchemaProvider,
    engine_function: EngineFunction,
    *,
    hierarchies: HierarchyResolver | None = None,
    pretty: bool = False,
    replace: Replacement | None = None,
    python_aggregates: PythonAggregates | None = None,
) -> StatementExplanation:
    """Rewrite one statement of ``sql`` (from :func:`split_statements`) on its own.

    ``replace(ordinal, query)``, when given, may return the replacement of the statement's
    ``ordinal``-th operator (innermost first) instead of its own rewrite, with the name
    to report for it — how a workload reads an operator from its group's shared result
    (:mod:`sql_rewrites.generation.shared`).

    Error positions stay those of the whole text ``sql``. A caller that runs a script
    statement by statement uses this to analyse each statement against the catalog as
    the statements before it left it (see :func:`explain` for the parameters).

    ``CREATE / DROP CONCEPT HIERARCHY`` statements read a relation's rows, so only
    :func:`sparkseq.sql` runs them; here they raise :class:`SqlParseError`.
    """
    if parse_hierarchy_statement(statement, sql) is not None:
        first = statement.tokens[0]
        raise SqlParseError(
            "CONCEPT HIERARCHY statements are run by sparkseq.sql (which reads the relation's rows), "
            "not rewritten to Spark SQL; give the compiler hierarchies through hierarchies=",
            position_of(sql, first.start, first.end),
        )
    if statement.has_match_aggregate:
        return _rewrite_statement(statement, sql, schema, engine_function, hierarchies, pretty, replace,
                                  python_aggregates)
    if python_aggregates and statement.calls(python_aggregates):
        return _split_aggregates(statement, sql, python_aggregates, pretty)
    return StatementExplanation(statement.text, statement.text, ())


def rewrite_statements(
    sql: str,
    schema: SchemaProvider,
    engine_function: EngineFunction,
    *,
    hierarchies: HierarchyResolver | None = None,
    pretty: bool = False,
    python_aggregates: PythonAggregates | None = None,
) -> list[str]:
    """Each statement of ``sql`` as plain Spark SQL (see :func:`explain`)."""
    return [e.rewritten for e in explain(sql, schema, engine_function, hierarchies=hierarchies, pretty=pretty,
                                         python_aggregates=python_aggregates)]


def rewrite(
    sql: str,
    schema: SchemaProvider,
    engine_function: EngineFunction,
    *,
    hierarchies: HierarchyResolver | None = None,
    pretty: bool = False,
    python_aggregates: PythonAggregates | None = None,
) -> str:
    """``sql`` with every MATCH_AGGREGATE replaced by plain Spark SQL.

    Statements are joined by ``";\\n"``; see :func:`explain` for the parameters.
    """
    return ";\n".join(rewrite_statements(sql, schema, engine_function, hierarchies=hierarchies, pretty=pretty,
                                          python_aggregates=python_aggregates))


def _rewrite_statement(
    statement: Statement,
    sql: str,
    schema: SchemaProvider,
    engine_function: EngineFunction,
    hierarchies: HierarchyResolver | None,
    pretty: bool,
    replace: Replacement | None = None,
    python_aggregates: PythonAggregates | None = None,
) -> StatementExplanation:
    tokens = statement.tokens
    tree = parse_tokens(tokens, sql)
    if not any(isinstance(n, MatchAggregate) for n in tree.walk()):
        keyword = next(t for t in tokens if t.text.upper() in SparkSeqParser.TABLE_OPERATOR_PARSERS)
        raise SqlParseError(
            "MATCH_AGGREGATE (...) must follow a table, view or subquery in FROM or JOIN of a query",
            position_of(sql, keyword.start, keyword.end),
        )
    rewritten, operators = rewrite_tree(tree, sql, schema, engine_function, hierarchies=hierarchies, pretty=pretty,
                                        replace=replace, python_aggregates=python_aggregates)
    return StatementExplanation(statement.text, statement.prefix + rewritten, operators)


def rewrite_tree(
    tree: exp.Expr,
    sql: str | None,
    schema: SchemaProvider,
    engine_function: EngineFunction,
    *,
    hierarchies: HierarchyResolver | None = None,
    pretty: bool = False,
    replace: Replacement | None = None,
    python_aggregates: PythonAggregates | None = None,
) -> tuple[str, tuple[OperatorExplanation, ...]]:
    """Analyse and rewrite every MATCH_AGGREGATE of a parsed ``tree`` (changed in place);
    returns the Spark SQL and each operator's explanation, innermost first.

    ``sql`` is the text the tree's token positions refer to (for error positions). This is
    the entry for trees that were not parsed from one statement (the DataFrame API builds
    the operator from separately parsed arguments); see :func:`explain_statement`.
    """
    analyzer = Analyzer(schema, hierarchies=hierarchies, sql=sql)
    queries = analyzer.analyze_tree(tree)  # all errors surface before any rewriting
    operators = []
    for ordinal, query in enumerate(queries):  # innermost first: an outer operator sees its input rewritten
        shared = replace(ordinal, query) if replace is not None else None
        if shared is not None:
            replacement, name = shared
        else:
            name = engine_function(query.plan)
            replacement = generate(query, name, source=query.node.this)
        operators.append(OperatorExplanation(query, name, replacement, pretty))
        query.node.replace(replacement)
    tree, _ = split_python_aggregates(tree, python_aggregates or {}, sql)
    printed = print_tree(tree, pretty) if sql is None else print_statement(tree, sql, pretty=pretty)
    return printed, tuple(operators)


def _split_aggregates(statement: Statement, sql: str, python_aggregates: PythonAggregates,
                      pretty: bool) -> StatementExplanation:
    """A statement without MATCH_AGGREGATE that calls Python aggregates: split the SELECTs
    that need it (:mod:`sql_rewrites.generation.aggregates`); any other statement comes back verbatim,
    also one sqlglot cannot parse (Spark then reports on it)."""
    try:
        tree = parse_tokens(statement.tokens, sql)
    except SqlParseError:
        return StatementExplanation(statement.text, statement.text, ())
    tree, changed = split_python_aggregates(tree, python_aggregates, sql)
    if not changed:
        return StatementExplanation(statement.text, statement.text, ())
    return StatementExplanation(statement.text, statement.prefix + print_statement(tree, sql, pretty=pretty), ())


__all__ = [
    "rewrite",
    "rewrite_statements",
    "explain",
    "explain_statement",
    "rewrite_tree",
    "StatementExplanation",
    "OperatorExplanation",
    "Replaced",
    "Replacement",
]
