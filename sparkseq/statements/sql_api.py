"""``sparkseq.sql``: run SQL with MATCH_AGGREGATE in a SparkSession; ``sparkseq.explain``.

>>> import sparkseq
>>> spark = sparkseq.session()  # doctest: +SKIP
>>> df = spark.sql("SELECT * FROM VALUES (7, TIMESTAMP'2024-05-01 10:00:00', 'view'), "
...                "(7, TIMESTAMP'2024-05-01 10:04:00', 'buy') AS t(customer_id, ts, action)")
>>> sparkseq.sql(spark, '''
...     SELECT customer_id, funnels FROM {clicks} MATCH_AGGREGATE (
...       PARTITION BY customer_id ORDER BY ts PATTERN SEQ(view, buy) TYPE BY action
...       MEASURES COUNT(*) AS funnels WITHIN INTERVAL 10 MINUTES) AS m''', clicks=df).show()
+-----------+-------+
|customer_id|funnels|
+-----------+-------+
|          7|      1|
+-----------+-------+

The text may hold several statements separated by ``;``. Each MATCH_AGGREGATE is
replaced by plain Spark SQL (:mod:`sql_rewrites`) that calls the engine function
registered for its plan; statements without it go to Spark unchanged. The
statements run in order and the DataFrame of the last one is returned. Keyword
arguments fill ``{name}`` placeholders as in ``spark.sql`` (:mod:`sparkseq.statements.placeholders`).

All or nothing. Every statement — plain Spark SQL too — is parsed and analysed before
the first one runs (:mod:`sparkseq.statements.scripts`), so a mistake anywhere in the text raises a
:class:`~sql_rewrites.errors.SqlRewriteError` placed in the text before any statement
runs or any Spark job starts: the compiler's errors, and Spark's own as
:class:`~sql_rewrites.errors.SparkAnalysisError` / :class:`~sql_rewrites.errors.SqlParseError`.
What cannot be checked ahead (:mod:`sparkseq.statements.scripts` lists it) is checked right before
the statement runs.

Concept hierarchies. ``CREATE [OR REPLACE] CONCEPT HIERARCHY name FROM relation`` and
``DROP CONCEPT HIERARCHY [IF EXISTS] name`` are run here (:mod:`sparkseq.spark.hierarchies`);
the session's hierarchies resolve ``HIERARCHY name``. A hierarchy whose relation
exists is read and validated while the text is checked, before any statement runs
(one small job reading that relation); one built from a relation the text itself
creates is read when its statement runs, and queries using it are analysed then.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Iterator
from typing import Any, Union, cast

from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession

from sparkseq.running import live
from sparkseq.running.execution_paths import PathReplacer
from sparkseq.spark import hierarchies as registry
from sparkseq.spark.catalog import PendingRelation, SessionSchemas
from sparkseq.spark.registration import engine_function, engine_function_name
from sparkseq.spark.session import is_session
from sparkseq.statements.explaining import LIVE_VIEW_PREFIX, describe_statement
from sparkseq.statements.placeholders import format_text
from sparkseq.statements.scratch import scratch_session
from sparkseq.statements.scripts import (
    check_literal_setting,
    check_script,
    compile_statement,
    run_script,
    spark_error,
)
from sparkseq.statements.spark_errors import quiet_query_context_logger
from sql_rewrites.errors import SqlRewriteError
from sql_rewrites.hierarchy_statements import CreateHierarchy, parse_hierarchy_statement
from sql_rewrites.logical.hierarchy import HierarchyResolver
from sql_rewrites.logical.schema import Catalog, ColumnTypes, SchemaProvider
from sql_rewrites.rewriter import StatementExplanation
from sql_rewrites.statement_effects import created_relations, view_query_span
from sql_rewrites.syntax.statements import split_statements

Source = Union[SparkSession, SchemaProvider, None]


def sql(spark: SparkSession, text: str, *, hierarchies: HierarchyResolver | None = None,
        args: dict[str, Any] | list[Any] | None = None, **dataframes: Any) -> DataFrame:
    """Run ``text`` (SQL with MATCH_AGGREGATE, one or more statements) in ``spark``.

    Parameters
    ----------
    spark : SparkSession
        A session with sparkseq's functions registered (:func:`sparkseq.spark.session`);
        engine functions are registered on demand.
    text : str
        Statements separated by ``;``. Tables, views and temporary views of the
        session, CTEs and subqueries may be MATCH_AGGREGATE sources.
    hierarchies : HierarchyResolver, optional
        Concept hierarchies for ``HIERARCHY`` (see :mod:`sql_rewrites.logical.hierarchy`),
        consulted before those registered in the session (:mod:`sparkseq.spark.hierarchies`).
    args : dict or list, optional
        Parameter values for ``:name`` (or ``?``) markers, passed to every statement
        as ``spark.sql(..., args=args)``.
    **dataframes
        Values of ``{name}`` placeholders, formatted as ``spark.sql(text, **kwargs)``
        formats them (a DataFrame becomes a temporary view; :mod:`sparkseq.statements.placeholders`).

    Returns
    -------
    DataFrame
        The last statement's result (for DDL, what ``spark.sql`` returns for it).

    Raises
    ------
    SqlRewriteError
        A mistake in any statement — the compiler's, or Spark's parse or analysis error
        (:class:`~sql_rewrites.errors.SparkAnalysisError`) — before any statement runs,
        placed in ``text`` (see :mod:`sparkseq.statements.scripts` for what is checked when it runs).
    ValueError
        When ``text`` holds no statement.

    Examples
    --------
    >>> import sparkseq
    >>> df = spark.sql("SELECT * FROM VALUES (1, 1, 'a'), (1, 2, 'a'), (1, 3, 'b') AS t(k, ts, kind)")
    >>> sparkseq.sql(spark, "SELECT k, n FROM {events} MATCH_AGGREGATE (PARTITION BY k ORDER BY ts "
    ...              "PATTERN SEQ(a, b) TYPE BY kind MEASURES COUNT(*) AS n) AS m", events=df).collect()
    [Row(k=1, n=2)]
    """
    result: DataFrame | None = None
    for _, frame in run_statements(spark, text, hierarchies=hierarchies, args=args, **dataframes):
        result = frame
    assert result is not None
    return result


def run_statements(spark: SparkSession, text: str, *, hierarchies: HierarchyResolver | None = None,
                   args: dict[str, Any] | list[Any] | None = None,
                   **dataframes: Any) -> Iterator[tuple[str, DataFrame]]:
    """Run the statements of ``text`` one by one, yielding ``(statement, DataFrame)`` each.

    Every statement is checked before the first is yielded (see :func:`sql`). A
    statement runs when the iteration reaches it (``spark.sql``: DDL at once, a query
    when its DataFrame is used), so a consumer that shows each result before asking
    for the next sees the statements take effect in order, as in a SQL shell.
    """
    formatted = format_text(spark, text, dataframes)
    keep = False
    try:
        try:
            checked = check_script(spark, formatted.text, hierarchies=hierarchies, args=args)
            keep = any(created_relations(c.statement) for c in checked)  # a view may read the DataFrames
            place = (lambda start, end: (formatted.original, *formatted.source_span(start, end), "")) \
                if formatted.pieces else None
            streams = live.replacer(spark, formatted.text, place=place)  # operators over streams (running.live)
            for statement, frame in run_script(spark, formatted.text, checked, hierarchies=hierarchies, args=args,
                                               replace_for=lambda number: PathReplacer(spark, streams), place=place):
                start, end = formatted.source_span(statement.start, statement.start + len(statement.text) - 1)
                yield formatted.original[start:end + 1], frame
        except SqlRewriteError as exc:
            raise formatted.relocate(exc) from None
    finally:
        formatted.clear(keep=keep)


def rewrite(spark: SparkSession, text: str, *, hierarchies: HierarchyResolver | None = None,
            function_hierarchies: bool = True) -> list[str]:
    """Each statement of ``text`` as the plain Spark SQL :func:`sql` would run.

    Engine functions are registered, so the returned SQL can be passed to
    ``spark.sql`` — e.g. by a client of the session's Thrift/JDBC server, or by the
    parser extension behind ``spark.sql`` itself. The execution path of every operator is
    chosen as :func:`sql` chooses it (:mod:`sparkseq.running.execution_paths`), with no Spark job:
    over a source whose size Spark's estimate cannot bound, the statement counts its keys
    as it runs and a huge key runs time-split or streaming instead of in one worker's
    memory. With
    ``function_hierarchies`` false, ``HIERARCHY name`` in ``seq_*`` patterns is not looked
    up ahead: the functions registered in the session carry the hierarchies they know
    (a Spark Connect client registers its own) and report an unknown one when they run.
    """
    return [explained.rewritten for explained in rewrite_explained(spark, text, hierarchies=hierarchies,
                                                                   function_hierarchies=function_hierarchies)]


def rewrite_explained(spark: SparkSession, text: str, *, hierarchies: HierarchyResolver | None = None,
                      function_hierarchies: bool = True, streaming: bool = True) -> list[StatementExplanation]:
    """:func:`rewrite`, each statement with what it became (its operators, analysed). The
    query of a persistent view (``CREATE VIEW``), and any statement without ``streaming``
    (a view's stored query), never takes the streaming path: it calls a table function,
    which Spark resolves by name inside a view, and sparkseq's are temporary functions."""
    check_literal_setting(spark)
    schemas = SessionSchemas(spark)
    resolver = registry.resolver(spark, hierarchies)
    return [compile_statement(text, s, schemas, resolver, functools.partial(engine_function, spark),
                              replace=PathReplacer(spark, streaming=streaming and view_query_span(s) is None),
                              check_hierarchies=function_hierarchies)
            for s in split_statements(text)]


def placed_error(spark: SparkSession, text: str, error: PySparkException,
                 explained: StatementExplanation) -> SqlRewriteError:
    """Spark's parse or analysis ``error`` on ``explained`` — the one statement ``text``, as
    :func:`rewrite_explained` rewrote it — placed in ``text`` as :func:`sql` places it."""
    with quiet_query_context_logger():
        return spark_error(scratch_session(spark), error, text, split_statements(text)[0], explained)


def explain(source: Source, text: str | None = None, *, hierarchies: HierarchyResolver | None = None) -> str:
    """What :func:`sql` would do with ``text``, as readable text; nothing runs.

    For every statement: the statement, then per MATCH_AGGREGATE its pattern, each
    symbol with its condition (DEFINE, TYPE BY or HIERARCHY), the partition keys, the
    event time, WITHIN / SLIDE, the measures with their types, the engine function
    with its result type and the plan; finally the Spark SQL that runs.

    Parameters
    ----------
    source : SparkSession, schema mapping or callable, or None
        Where relation schemas come from: a session's catalog (classic or Spark
        Connect), or a schema provider as for :func:`sql_rewrites.rewrite` (no Spark
        needed); None: the active SparkSession, if any. First, as in :func:`sql`.
    text : str
        One or more statements.
    hierarchies : HierarchyResolver, optional
        As for :func:`sql`.

    The former order ``explain(text, source=None)`` still works, with a
    :class:`DeprecationWarning`: a string first argument is taken as the text (a source
    is never a string).

    Examples
    --------
    >>> schema = {"clicks": {"id": "bigint", "ts": "timestamp", "action": "string"}}
    >>> text = explain(schema, "SELECT * FROM clicks MATCH_AGGREGATE (PARTITION BY id ORDER BY ts "
    ...                "PATTERN SEQ(view, buy) TYPE BY action WITHIN INTERVAL 10 MINUTES) AS m")
    >>> print(text.splitlines()[4])
      pattern       SEQ(view, buy)
    """
    if isinstance(source, str):
        if isinstance(text, str):
            raise TypeError("explain(source, text): source is a SparkSession or a schema provider, not a string")
        warnings.warn("explain(text, source) is deprecated: pass the source first, as in sparkseq.sql: "
                      "explain(spark, text)", DeprecationWarning, stacklevel=2)
        source, text = text, source
    if text is None:
        raise TypeError("explain(source, text) needs the statement text")
    if source is None:
        source = SparkSession.getActiveSession()
    parts: list[str] = []
    created: set[str] = set()
    statements = split_statements(text)
    session = source if is_session(source) else None
    overlay: registry.Overlay = {}
    for number, statement in enumerate(statements, 1):
        kind = parse_hierarchy_statement(statement, text)
        if kind is not None:
            overlay[kind.name.casefold()] = registry.PENDING if isinstance(kind, CreateHierarchy) else registry.DROPPED
            what = (f"registers concept hierarchy {kind.name} from {kind.source}" if isinstance(kind, CreateHierarchy)
                    else f"drops concept hierarchy {kind.name}")
            parts.append(f"-- statement {number} of {len(statements)}\n{statement.text}\n\n({what}; "
                         "run by sparkseq.sql)")
            continue
        schemas = _pending_aware(source, created)
        resolver = registry.resolver(session, hierarchies, overlay)
        replace = PathReplacer(session, live.replacer(session, text, register=False) if session is not None
                               else None, register=False)
        try:
            explained = compile_statement(text, statement, schemas, resolver, engine_function_name, pretty=True,
                                          replace=replace)
            # the decision each operator runs on, as made once for the SQL above (none for a live operator)
            paths = [None if op.function_name.startswith(LIVE_VIEW_PREFIX) else replace.choices.get(i)
                     for i, op in enumerate(explained.operators)]
            parts.append(describe_statement(explained, number, len(statements), paths))
        except PendingRelation as pending:
            parts.append(f"-- statement {number} of {len(statements)}\n{statement.text}\n\n(reads {pending.name}, "
                         "which an earlier statement creates: analysed when it runs)")
        created |= created_relations(statement)
    return "\n\n".join(parts)


def _pending_aware(source: Source, created: set[str]) -> SchemaProvider:
    """The schema provider of ``source`` that raises :class:`PendingRelation` for ``created`` names."""
    if is_session(source):
        return SessionSchemas(source, pending=created)
    provider = cast(Union[SchemaProvider, None], source)  # not a session: a schema provider or None
    if not created:
        return provider or {}
    catalog = Catalog(provider or {})

    def lookup(name: str) -> ColumnTypes | None:
        if name.casefold() in created:
            raise PendingRelation(name)
        found = catalog.lookup(name)
        return None if found is None else {c.name: c.dtype for c in found.columns}

    return lookup


__all__ = ["sql", "run_statements", "rewrite", "rewrite_explained", "placed_error", "explain"]
