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

Concept hierarchies. ``CREATE [OR REPLACE] CONCEPT HIERARCHY name FROM relation`` and
``DROP CONCEPT HIERARCHY [IF EXISTS] name`` are run here (:mod:`sparkseq.hierarchies`);
the session's hierarchies resolve ``HIERARCHY name``. A hierarchy whose relation
exists is read and validated while the text is checked, before any statement runs
(one small job reading that relation); one built from a relation the text itself
creates is read when its statement runs, and queries using it are analysed then.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator
from typing import Any, Union

import sqlglot
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T
from sqlglot import exp
from sqlglot.errors import SqlglotError

from sparkseq.catalog import PendingRelation, SessionSchemas
from sparkseq.explaining import describe_statement
from sparkseq import hierarchies as registry
from sparkseq.functions import check_calls
from sparkseq.registration import PYTHON_AGGREGATES, engine_function, engine_function_name
from sparkseq.session import is_session
from sql_rewrites.dialect import parse_statement, SparkSeq
from sql_rewrites.errors import HierarchyError, SqlRewriteError, UnknownHierarchyError, UnknownTableError
from sql_rewrites.hierarchy import ConceptHierarchy, HierarchyResolver, resolve_hierarchy
from sql_rewrites.hierarchy_statements import (
    CreateHierarchy,
    DropHierarchy,
    HierarchyStatement,
    parse_hierarchy_statement,
)
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
        Concept hierarchies for ``HIERARCHY`` (see :mod:`sql_rewrites.hierarchy`),
        consulted before those registered in the session (:mod:`sparkseq.hierarchies`).
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
    check_literal_setting(spark)
    kinds = [parse_hierarchy_statement(s, text) for s in statements]
    loaded = _check_all(spark, text, statements, kinds, hierarchies)
    schemas: dict = {}  # read once while no statement changes the relation (evict_changed)
    for number, (statement, kind) in enumerate(zip(statements, kinds)):
        if kind is not None:
            run_hierarchy_statement(spark, kind, loaded.get(number))
            yield statement.text, spark.createDataFrame([], T.StructType([]))
            continue
        # analysed again: earlier statements may have changed the catalog and the hierarchies
        resolver = registry.resolver(spark, hierarchies)
        rewritten = _explained(text, statement, SessionSchemas(spark, cache=schemas), resolver,
                               _registering(spark)).rewritten
        frame = spark.sql(rewritten, args=args) if args is not None else spark.sql(rewritten)
        evict_changed(schemas, statement)
        yield statement.text, frame


def rewrite(spark: SparkSession, text: str, *, hierarchies: HierarchyResolver | None = None,
            function_hierarchies: bool = True) -> list[str]:
    """Each statement of ``text`` as the plain Spark SQL :func:`sql` would run (nothing runs).

    Engine functions are registered, so the returned SQL can be passed to
    ``spark.sql`` — e.g. by a client of the session's Thrift/JDBC server. With
    ``function_hierarchies`` false, ``HIERARCHY name`` in ``seq_*`` patterns is not looked
    up ahead: the functions registered in the session carry the hierarchies they know
    (a Spark Connect client registers its own) and report an unknown one when they run.
    """
    check_literal_setting(spark)
    schemas = SessionSchemas(spark)
    resolver = registry.resolver(spark, hierarchies)
    return [_explained(text, s, schemas, resolver, _registering(spark), check_hierarchies=function_hierarchies).rewritten
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
        Where relation schemas come from: a session's catalog (classic or Spark
        Connect), or a schema provider
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
        try:
            explained = _explained(text, statement, schemas, resolver, engine_function_name, pretty=True)
            parts.append(describe_statement(explained, number, len(statements)))
        except PendingRelation as pending:
            parts.append(f"-- statement {number} of {len(statements)}\n{statement.text}\n\n(reads {pending.name}, "
                         "which an earlier statement creates: analysed when it runs)")
        created |= created_relations(statement)
    return "\n\n".join(parts)


ESCAPED_LITERALS = "spark.sql.parser.escapedStringLiterals"


def check_literal_setting(spark: SparkSession) -> None:
    """Refuse sessions whose parser reads backslashes in literals as text: sparkseq prints
    literals with escapes (:mod:`sql_rewrites.literals`), which such a parser would misread."""
    if str(spark.conf.get(ESCAPED_LITERALS, "false")).strip().lower() == "true":
        raise SqlRewriteError(f"{ESCAPED_LITERALS}=true (the legacy rule: backslashes in string literals are "
                              "text) is not supported by sparkseq; set it to false")


def _pending_aware(source: Source, created: set[str]) -> SchemaProvider:
    """The schema provider of ``source`` that raises :class:`PendingRelation` for ``created`` names."""
    if is_session(source):
        return SessionSchemas(source, pending=created)  # type: ignore[arg-type]
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
               kinds: list[HierarchyStatement | None], hierarchies: HierarchyResolver | None,
               explained: dict[int, StatementExplanation] | None = None) -> dict[int, ConceptHierarchy]:
    """Analyse every statement now, except where it reads a relation created before it.

    Returns the hierarchies read and validated for CREATE CONCEPT HIERARCHY statements
    (by statement index), to be registered when their statements run. ``explained``, when
    given, receives each analysed statement's explanation (by statement index).
    """
    created: set[str] = set()
    overlay: registry.Overlay = {}
    loaded: dict[int, ConceptHierarchy] = {}
    schemas: dict = {}  # relations no earlier statement creates do not change while checking
    for number, (statement, kind) in enumerate(zip(statements, kinds)):
        if kind is not None:
            hierarchy = check_hierarchy_statement(spark, kind, created, overlay)
            if hierarchy is not None:
                loaded[number] = hierarchy
            continue
        resolver = registry.resolver(spark, hierarchies, overlay)
        try:
            result = _explained(text, statement, SessionSchemas(spark, pending=created, cache=schemas), resolver,
                                engine_function_name)
        except PendingRelation:
            pass  # analysed when it runs, after the statement creating the relation (or hierarchy)
        else:
            if explained is not None:
                explained[number] = result
        created |= created_relations(statement)
    return loaded


def evict_changed(schemas: dict, statement: Statement) -> None:
    """Forget the cached schemas (:class:`~sparkseq.catalog.SessionSchemas`) once a statement
    that is not a query has run: it may create, replace or drop any relation (names may be
    written qualified or not, so nothing finer is safe)."""
    first = statement.text.split(None, 1)[0].upper() if statement.text.strip() else ""
    if first not in ("SELECT", "WITH", "FROM", "VALUES", "TABLE"):
        schemas.clear()


def check_hierarchy_statement(spark: SparkSession, kind: HierarchyStatement, created: set[str],
                               overlay: registry.Overlay) -> ConceptHierarchy | None:
    """Check a hierarchy statement against the session as earlier statements leave it."""
    key, exists = kind.name.casefold(), registry.exists(spark, overlay, kind.name)
    if isinstance(kind, DropHierarchy):
        if not exists and not kind.if_exists:
            raise UnknownHierarchyError(f"concept hierarchy {kind.name} does not exist"
                                        f"{registry.known_names(spark, overlay)}", kind.name_position)
        overlay[key] = registry.DROPPED
        return None
    if exists and not kind.replace:
        raise HierarchyError(f"concept hierarchy {kind.name} already exists; use CREATE OR REPLACE CONCEPT "
                             "HIERARCHY to replace it", kind.name_position)
    if kind.source_key in created:
        overlay[key] = registry.PENDING  # read when the statement runs
        return None
    hierarchy = _load(spark, kind)
    overlay[key] = hierarchy
    return hierarchy


def _load(spark: SparkSession, kind: CreateHierarchy) -> ConceptHierarchy:
    pairs = registry.load_pairs(spark, kind.name, kind.source, kind.source_position)
    return registry.build_at(kind.name, pairs, kind.source_position)


def run_hierarchy_statement(spark: SparkSession, kind: HierarchyStatement,
                             hierarchy: ConceptHierarchy | None) -> None:
    if isinstance(kind, DropHierarchy):
        registry.drop_hierarchy(spark, kind.name, if_exists=True)  # checked before the text ran
    else:
        registry.register_hierarchy(spark, kind.name, (hierarchy or _load(spark, kind)).parent_of.items())


def _explained(text: str, statement: Statement, schemas: SchemaProvider, hierarchies: HierarchyResolver | None,
               name_for: Callable[[Plan], str], pretty: bool = False, check_hierarchies: bool = True
               ) -> StatementExplanation:
    """:func:`explain_statement`, with a friendlier message for relations Spark does not know
    (``check_hierarchies``: look up the ``HIERARCHY`` of ``seq_*`` patterns)."""
    try:
        explained = explain_statement(statement, text, schemas, name_for, hierarchies=hierarchies, pretty=pretty,
                                      python_aggregates=PYTHON_AGGREGATES)
    except UnknownTableError as exc:
        if not isinstance(schemas, SessionSchemas) or not schemas.missing:
            raise
        name = schemas.missing[-1]
        known = schemas.known_relations()
        hint = f"; tables and views: {', '.join(known)}" if known else "; the session has no tables or views"
        raise UnknownTableError(f"relation '{name}' is not a table or view of this Spark session{hint}",
                                exc.position) from None
    check_function_calls(explained.rewritten, hierarchies, check_hierarchies=check_hierarchies)
    return explained


def check_function_calls(spark_sql: str, hierarchies: HierarchyResolver | None = None, *,
                         check_hierarchies: bool = True) -> None:
    """Check literal arguments of ``seq_*`` function calls (:func:`sparkseq.functions.check_calls`),
    with ``check_hierarchies`` their patterns' ``HIERARCHY`` names too."""
    if not SEQ_CALL.search(spark_sql):
        return
    try:
        tree = sqlglot.parse_one(spark_sql, read=SparkSeq)
    except SqlglotError:
        return  # Spark syntax sqlglot does not know: the functions check themselves when they run
    check_calls(tree, (lambda name: resolve_hierarchy(hierarchies, name)) if check_hierarchies else None)


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


__all__ = ["sql", "run_statements", "rewrite", "explain", "created_relations", "evict_changed", "check_function_calls",
           "check_hierarchy_statement", "run_hierarchy_statement"]
