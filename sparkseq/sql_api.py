"""``sparkseq.sql``: run SQL with MATCH_AGGREGATE in a SparkSession; ``sparkseq.explain``.

>>> import sparkseq
>>> spark = sparkseq.session()  # doctest: +SKIP
>>> sparkseq.sql(spark, '''
...     SELECT customer_id, funnels FROM clicks MATCH_AGGREGATE (
...       PARTITION BY customer_id ORDER BY ts PATTERN SEQ(view, buy) TYPE BY action
...       MEASURES COUNT(*) AS funnels WITHIN INTERVAL 10 MINUTES) AS m''').show()  # doctest: +SKIP

The text may hold several statements separated by ``;``. Each MATCH_AGGREGATE is
replaced by plain Spark SQL (:mod:`sql_rewrites`) that calls the engine function
registered for its plan; statements without it go to Spark unchanged. The
statements run in order and the DataFrame of the last one is returned.

Errors. Every statement is parsed and analysed before the first one runs, so a
mistake anywhere in the text raises its :class:`~sql_rewrites.errors.SqlRewriteError`
before any Spark job starts. The one exception is a statement reading a relation that
an earlier statement of the same text creates (``CREATE TEMP VIEW v …; SELECT … FROM v
MATCH_AGGREGATE …``): it is analysed right before it runs, once ``v`` exists.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator
from typing import Any, Union

import sqlglot
from pyspark.sql import DataFrame, SparkSession
from sqlglot import exp
from sqlglot.errors import SqlglotError

from sparkseq.catalog import PendingRelation, SessionSchemas
from sparkseq.explaining import describe_statement
from sparkseq.functions import check_calls
from sparkseq.registration import engine_function, engine_function_name
from sql_rewrites.dialect import parse_statement
from sql_rewrites.errors import SqlRewriteError, UnknownTableError
from sql_rewrites.hierarchy import HierarchyResolver
from sql_rewrites.rewriter import Statement, StatementExplanation, explain_statement, split_statements
from sql_rewrites.schema import Catalog, SchemaProvider, table_name
from udafs.plan import Plan

Source = Union[SparkSession, SchemaProvider, None]
SEQ_CALL = re.compile(r"\bseq_\w+\s*\(", re.IGNORECASE)  # a call of a BI function (not __sparkseq_ names)


def sql(spark: SparkSession, text: str, *, hierarchies: HierarchyResolver | None = None,
        args: dict[str, Any] | list[Any] | None = None) -> DataFrame:
    """Run ``text`` (SQL with MATCH_AGGREGATE, one or more statements) in ``spark``.

    Parameters
    ----------
    spark : SparkSession
        A session with sparkseq's functions registered (:func:`sparkseq.session`);
        engine functions are registered on demand.
    text : str
        Statements separated by ``;``. Tables, views and temporary views of the
        session, CTEs and subqueries may be MATCH_AGGREGATE sources.
    hierarchies : HierarchyResolver, optional
        Concept hierarchies for ``HIERARCHY`` (see :mod:`sql_rewrites.hierarchy`).
    args : dict or list, optional
        Parameter values for ``:name`` (or ``?``) markers, passed to every statement
        as ``spark.sql(..., args=args)``.

    Returns
    -------
    DataFrame
        The last statement's result (for DDL, what ``spark.sql`` returns for it).

    Raises
    ------
    SqlRewriteError
        A parse or analysis error in any statement, before any statement runs
        (see the module docstring for statements reading relations the text creates).
    ValueError
        When ``text`` holds no statement.
    """
    result: DataFrame | None = None
    for _, result in run_statements(spark, text, hierarchies=hierarchies, args=args):
        pass
    assert result is not None
    return result


def run_statements(spark: SparkSession, text: str, *, hierarchies: HierarchyResolver | None = None,
                   args: dict[str, Any] | list[Any] | None = None) -> Iterator[tuple[str, DataFrame]]:
    """Run the statements of ``text`` one by one, yielding ``(statement, DataFrame)`` each.

    Every statement is checked before the first is yielded (see :func:`sql`). A
    statement runs when the iteration reaches it (``spark.sql``: DDL at once, a query
    when its DataFrame is used), so a consumer that shows each result before asking
    for the next sees the statements take effect in order, as in a SQL shell.
    """
    statements = split_statements(text)
    if not statements:
        raise ValueError("no SQL statement to run")
    _check_all(spark, text, statements, hierarchies)
    for statement in statements:  # analysed again: earlier statements may have changed the catalog
        rewritten = _explained(text, statement, SessionSchemas(spark), hierarchies, _registering(spark)).rewritten
        yield statement.text, (spark.sql(rewritten, args=args) if args is not None else spark.sql(rewritten))


def rewrite(spark: SparkSession, text: str, *, hierarchies: HierarchyResolver | None = None) -> list[str]:
    """Each statement of ``text`` as the plain Spark SQL :func:`sql` would run (nothing runs).

    Engine functions are registered, so the returned SQL can be passed to
    ``spark.sql`` — e.g. by a client of the session's Thrift/JDBC server.
    """
    schemas = SessionSchemas(spark)
    return [_explained(text, s, schemas, hierarchies, _registering(spark)).rewritten
            for s in split_statements(text)]


def explain(text: str, source: Source = None, *, hierarchies: HierarchyResolver | None = None) -> str:
    """What :func:`sql` would do with ``text``, as readable text; nothing runs.

    For every statement: the statement, then per MATCH_AGGREGATE its pattern, each
    symbol with its condition (DEFINE, TYPE BY or HIERARCHY), the partition keys, the
    event time, WITHIN / SLIDE, the measures with their types, the engine function
    with its result type and the plan; finally the Spark SQL that runs.

    Parameters
    ----------
    text : str
        One or more statements.
    source : SparkSession, schema mapping or callable, optional
        Where relation schemas come from: a session's catalog, or a schema provider
        as for :func:`sql_rewrites.rewrite` (no Spark needed). Default: the active
        SparkSession, if any.
    hierarchies : HierarchyResolver, optional
        As for :func:`sql`.

    Examples
    --------
    >>> schema = {"clicks": {"id": "bigint", "ts": "timestamp", "action": "string"}}
    >>> text = explain("SELECT * FROM clicks MATCH_AGGREGATE (PARTITION BY id ORDER BY ts "
    ...                "PATTERN SEQ(view, buy) TYPE BY action WITHIN INTERVAL 10 MINUTES) AS m", schema)
    >>> print(text.splitlines()[4])
      pattern       SEQ(view, buy)
    """
    if source is None:
        source = SparkSession.getActiveSession()
    parts, created = [], set()
    statements = split_statements(text)
    for number, statement in enumerate(statements, 1):
        schemas = _pending_aware(source, created)
        try:
            explained = _explained(text, statement, schemas, hierarchies, engine_function_name, pretty=True)
            parts.append(describe_statement(explained, number, len(statements)))
        except PendingRelation as pending:
            parts.append(f"-- statement {number} of {len(statements)}\n{statement.text}\n\n(reads {pending.name}, "
                         "which an earlier statement creates: analysed when it runs)")
        created |= created_relations(statement)
    return "\n\n".join(parts)


def _pending_aware(source: Source, created: set[str]) -> SchemaProvider:
    """The schema provider of ``source`` that raises :class:`PendingRelation` for ``created`` names."""
    if isinstance(source, SparkSession):
        return SessionSchemas(source, pending=created)
    if not created:
        return source or {}
    catalog = Catalog(source or {})

    def lookup(name: str) -> dict[str, object] | None:
        if name.casefold() in created:
            raise PendingRelation(name)
        found = catalog.lookup(name)
        return None if found is None else {c.name: c.dtype for c in found.columns}

    return lookup


# --- statement by statement --------------------------------------------------------------


def _check_all(spark: SparkSession, text: str, statements: list[Statement],
               hierarchies: HierarchyResolver | None) -> None:
    """Analyse every statement now, except where it reads a relation created before it."""
    created: set[str] = set()
    for statement in statements:
        try:
            _explained(text, statement, SessionSchemas(spark, pending=created), hierarchies, engine_function_name)
        except PendingRelation:
            pass  # analysed when it runs, after the statement creating the relation
        created |= created_relations(statement)


def _explained(text: str, statement: Statement, schemas: SchemaProvider, hierarchies: HierarchyResolver | None,
               name_for: Callable[[Plan], str], pretty: bool = False) -> StatementExplanation:
    """:func:`explain_statement`, with a friendlier message for relations Spark does not know."""
    try:
        explained = explain_statement(statement, text, schemas, name_for, hierarchies=hierarchies, pretty=pretty)
    except UnknownTableError as exc:
        if not isinstance(schemas, SessionSchemas) or not schemas.missing:
            raise
        name = schemas.missing[-1]
        known = schemas.known_relations()
        hint = f"; tables and views: {', '.join(known)}" if known else "; the session has no tables or views"
        raise UnknownTableError(f"relation '{name}' is not a table or view of this Spark session{hint}",
                                exc.position) from None
    check_function_calls(explained.rewritten)
    return explained


def check_function_calls(spark_sql: str) -> None:
    """Check literal arguments of ``seq_*`` function calls (:func:`sparkseq.functions.check_calls`)."""
    if not SEQ_CALL.search(spark_sql):
        return
    try:
        tree = sqlglot.parse_one(spark_sql, read="spark")
    except SqlglotError:
        return  # Spark syntax sqlglot does not know: the functions check themselves when they run
    check_calls(tree)


def _registering(spark: SparkSession) -> Callable[[Plan], str]:
    return functools.partial(engine_function, spark)


def created_relations(statement: Statement) -> set[str]:
    """Case-folded names of the relations a statement creates (views, tables, cached tables)."""
    first = statement.text.split(None, 1)[0].upper() if statement.text.strip() else ""
    if first not in ("CREATE", "CACHE"):
        return set()
    try:
        tree = parse_statement(statement.text)  # SparkSeq: the view may hold a MATCH_AGGREGATE
    except (SqlglotError, SqlRewriteError):
        return set()
    target = tree.this if isinstance(tree, (exp.Create, exp.Cache)) else None
    if isinstance(target, exp.Schema):
        target = target.this
    if not isinstance(target, exp.Table):
        return set()
    name = table_name(target)
    if isinstance(tree, exp.Create) and _is_global_temp(tree):
        name = f"global_temp.{name}"
    return {name.casefold()}


def _is_global_temp(create: exp.Create) -> bool:
    props = create.args.get("properties")
    return props is not None and any(isinstance(p, exp.GlobalProperty) for p in props.expressions)


__all__ = ["sql", "run_statements", "rewrite", "explain", "created_relations", "check_function_calls"]
