"""Scripts: statements separated by ``;``, every one checked before the first one runs.

The one runner behind :func:`sparkseq.sql` / :func:`sparkseq.statements.sql_api.run_statements`,
:func:`sparkseq.workload` and the Thrift server's init files (:mod:`sparkseq.servers.initfile`).

**Checking** (:func:`check_script`) walks the statements in order in a scratch copy of
the session (:mod:`sparkseq.statements.scratch`), so that each statement is checked against the
catalog as the statements before it will leave it:

* a MATCH_AGGREGATE statement is compiled (all of the compiler's errors), then — like
  every other statement — parsed and analysed by Spark itself. Analysis resolves every
  table, column and function and checks every type, but runs nothing: commands are
  analysed with ``CommandExecutionMode.SKIP`` and queries are never executed. Consecutive
  queries (a workload's usual script) are analysed together, as subqueries of one select
  (:func:`sparkseq.statements.scratch.analyse_together`: 20 statements in about half the time); if
  that fails, one by one, so the error raised is still the first failing statement's;
* statements that change only the session — ``CREATE TEMP VIEW`` (also ``USING``),
  ``DROP VIEW`` of a temporary view, ``SET``, ``RESET``, ``USE``, ``DECLARE VARIABLE`` — are
  executed in the scratch copy, so later statements see their effect;
* a statement creating a relation in the catalog (``CREATE TABLE … AS``, ``CREATE
  TABLE (columns)``, ``CREATE VIEW``, ``CACHE TABLE … AS``) is analysed only, and an
  empty temporary view with the columns it defines stands in for it in the scratch
  copy: later statements reading it are checked against those columns;
* concept hierarchy statements are validated (:func:`check_hierarchy_statement`);
* a MATCH_AGGREGATE over a streaming source becomes a live operator
  (:mod:`sparkseq.running.live`), registered in the scratch copy only, so that Spark analyses
  the statement around it; its stream-specific errors come here too.

What cannot be checked ahead is checked right before the statement runs (*deferred*):
a statement whose analysis fails on an object the scratch copy cannot reproduce — a
global temporary view, a qualified name or a view with a column list created earlier in
the script, a relation an earlier statement drops or alters, a database or function it
creates —; every statement after one whose effect on the catalog cannot be read
(e.g. an ``ALTER`` sqlglot cannot parse, a deferred ``USE``); a statement with ``:name``
or ``?`` parameter markers when ``args`` are given (Spark binds them when it runs).
Spark Connect sessions have no scratch copy: there, statements get the compiler's
checks ahead and Spark's when they run. A script of one statement needs none: it is
compiled, and ``spark.sql`` analyses it completely before running any of it.

Errors are sparkseq errors placed in the script: the compiler's, and Spark's own parse
and analysis errors as :class:`~sql_rewrites.errors.SqlParseError` /
:class:`~sql_rewrites.errors.SparkAnalysisError` with the line and column of the user's
text (:mod:`sparkseq.statements.spark_errors`, :mod:`sparkseq.statements.probes`).

**Running** (:func:`run_script`) compiles each statement again against the real
catalog (registering its engine functions) — a script of one statement was compiled
against the session itself, so its run reuses that compile unless an operator takes
another path — and hands it to ``spark.sql`` — DDL runs at
once, a query when its DataFrame is used — statement by statement, lazily, so a caller
that shows each result before asking for the next sees the statements take effect in
order, as in a SQL shell. An analysis error now (a deferred statement's) is placed in
the script the same way; errors while running are Spark's.
"""

from __future__ import annotations

import enum
import functools
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from py4j.protocol import Py4JError, Py4JJavaError
from pyspark.errors import AnalysisException, PySparkException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from sparkseq.running import live
from sparkseq.spark import hierarchies as registry
from sparkseq.spark.catalog import PendingRelation, SessionSchemas
from sparkseq.spark.gateway import jvm
from sparkseq.spark.jvm_parser import Place, view_extension_missing, with_origins
from sparkseq.spark.registration import PYTHON_AGGREGATES, engine_function, engine_function_name, stand_in_function
from sparkseq.statements.probes import locate, probe_session
from sparkseq.statements.scratch import analyse, analyse_together, class_name, parse_plan, scratch_session
from sparkseq.statements.spark_errors import (
    as_error,
    condition_of,
    first_token_position,
    is_spark_error,
    message_of,
    named_objects,
    quiet_query_context_logger,
    statement_error,
)
from sql_rewrites.analysis.seq_functions import check_statement_calls
from sql_rewrites.errors import (
    HierarchyError,
    PersistentViewError,
    SqlRewriteError,
    UnknownHierarchyError,
    UnknownTableError,
    position_of,
)
from sql_rewrites.hierarchy_statements import (
    CreateHierarchy,
    DropHierarchy,
    HierarchyStatement,
    parse_hierarchy_statement,
)
from sql_rewrites.logical.hierarchy import ConceptHierarchy, HierarchyResolver, resolve_hierarchy
from sql_rewrites.logical.schema import ResolvedColumns, SchemaProvider
from sql_rewrites.rewriter import (
    EngineFunction,
    Replacement,
    Statement,
    StatementExplanation,
    explain_statement,
    split_statements,
)
from sql_rewrites.statement_effects import (
    changed_relations,
    created_relations,
    creates_permanent_function,
    effects_unknown,
    has_parameter_markers,
    spelled_names,
    view_query_span,
)

#: Parsed statements that change only the session running them (executed in the scratch copy).
SESSION_LOCAL = frozenset({"SetCommand", "ResetCommand", "SetCatalogAndNamespace", "SetNamespaceCommand",
                           "CreateVariable", "DropVariable"})
#: First keywords of statements that change only session state when they run.
SESSION_KEYWORDS = frozenset({"SET", "RESET", "USE", "DECLARE"})
#: Errors of executing a data source view that a statement writing files may cure.
DATA_ERRORS = frozenset({"PATH_NOT_FOUND", "UNABLE_TO_INFER_SCHEMA"})
ESCAPED_LITERALS = "spark.sql.parser.escapedStringLiterals"


class Outcome(enum.Enum):
    """What checking did with a statement."""

    EXECUTED = "executed in the scratch copy"
    ANALYSED = "analysed"
    DEFERRED = "checked when it runs"


@dataclass(frozen=True)
class Checked:
    """One statement after checking: its number (0-based), what kind it is, and what the
    check prepared for running it."""

    number: int
    statement: Statement
    hierarchy: HierarchyStatement | None = None
    loaded: ConceptHierarchy | None = None  # a CREATE CONCEPT HIERARCHY's validated pairs
    explanation: StatementExplanation | None = None  # its operators, analysed (not for deferred ones)
    deferred: bool = False
    analysed: Any = field(default=None, repr=False, compare=False)  # Spark's analysed plan in the scratch copy
    # compiled against the session itself with nothing run before it (a script of one
    # statement): running it needs no second compile unless an operator changes path (run_checked)
    final: bool = False

    @functools.cached_property
    def result_schema(self) -> T.StructType | None:
        """The columns of a query statement's result as Spark's analysis in the scratch copy
        found them (names, types, nullability); None when the check did not analyse it (a
        script of one statement, a deferred statement, a statement that is not a query)."""
        if self.analysed is None or not self.statement.is_query:
            return None
        return T.StructType.fromJson(json.loads(self.analysed.schema().json()))


def check_script(spark: SparkSession, text: str, *, hierarchies: HierarchyResolver | None = None,
                 args: dict[str, Any] | list[Any] | None = None) -> list[Checked]:
    """Check every statement of ``text`` (module docstring); nothing in ``spark`` changes.

    Raises
    ------
    SqlRewriteError
        The first mistake, placed in ``text``.
    ValueError
        When ``text`` holds no statement.
    """
    statements = split_statements(text)
    if not statements:
        raise ValueError("no SQL statement to run")
    check_literal_setting(spark)
    # one statement needs no scratch copy: spark.sql analyses a statement completely before
    # it runs any of it, so its errors come before anything changes (placed by run_script)
    checker = _Checker(spark, text, hierarchies, args, scratch=len(statements) > 1)
    with quiet_query_context_logger():
        return checker.check_all(statements)


def run_script(spark: SparkSession, text: str, checked: list[Checked], *,
               hierarchies: HierarchyResolver | None = None, args: dict[str, Any] | list[Any] | None = None,
               replace_for: Callable[[int], Replacement | None] | None = None,
               place: Place | None = None) -> Iterator[tuple[Statement, DataFrame]]:
    """Run checked statements in order, yielding ``(statement, DataFrame)`` as each runs
    (module docstring). ``replace_for(number)`` may give a statement's operator replacements
    (how a workload reads shared results, :func:`sql_rewrites.rewriter.explain_statement`);
    ``place`` says where a span of ``text`` lies in what the user wrote, when that is
    another text (``{name}`` placeholders filled in)."""
    schemas: dict = {}  # read once while no statement changes the relation (evict_changed)
    for item in checked:
        replace = replace_for(item.number) if replace_for is not None else None
        yield item.statement, run_checked(spark, text, item, schemas, hierarchies=hierarchies, args=args,
                                          replace=replace, place=place)


def run_checked(spark: SparkSession, text: str, item: Checked, schemas: dict, *,
                hierarchies: HierarchyResolver | None = None, args: dict[str, Any] | list[Any] | None = None,
                replace: Replacement | None = None, place: Place | None = None) -> DataFrame:
    """Run one checked statement of :func:`run_script` (``schemas``: the relation schemas
    read by the statements before it, forgotten here once a statement may change them)."""
    if item.hierarchy is not None:
        run_hierarchy_statement(spark, item.hierarchy, item.loaded)
        return spark.createDataFrame([], T.StructType([]))
    explanation = _reused(spark, item, replace)
    if explanation is None:
        resolver = registry.resolver(spark, hierarchies)
        explanation = compile_statement(text, item.statement, SessionSchemas(spark, cache=schemas), resolver,
                                        functools.partial(engine_function, spark), replace=replace)
    frame = run_checked_sql(spark, text, item.statement, explanation, args, place)
    evict_changed(schemas, item.statement)
    return frame


def _reused(spark: SparkSession, item: Checked, replace: Replacement | None) -> StatementExplanation | None:
    """The check's compile of ``item`` when it is what running needs (:attr:`Checked.final`,
    every operator on the grouped path with its engine function, registered here — a
    ``replace`` hook that replaces an operator, or a live operator of the check, needs the
    compile again); else None. The hook remembers what it decided (it sees each operator
    once more in that compile)."""
    checked = item.explanation
    if not item.final or checked is None:
        return None
    operators = checked.operators
    if any(op.function_name != engine_function_name(op.plan) for op in operators):
        return None
    if replace is not None and any(replace(ordinal, op.query) is not None for ordinal, op in enumerate(operators)):
        return None
    for op in operators:
        engine_function(spark, op.plan)
    return checked


def run_checked_sql(spark: SparkSession, text: str, statement: Statement, explanation: StatementExplanation | None,
                    args: dict[str, Any] | list[Any] | None = None, place: Place | None = None) -> DataFrame:
    """``spark.sql`` of a statement of ``text`` (as rewritten in ``explanation``, if any), with
    Spark's parse and analysis errors placed in ``text`` (:func:`spark_error`), and errors
    raised while its job runs at the DEFINE condition in what the user wrote (``place``:
    :func:`sparkseq.spark.jvm_parser.with_origins`).

    A persistent view over MATCH_AGGREGATE or ``seq_*`` is created from the statement as
    written: the session's parser extension compiles it and stores the user's query
    (:mod:`sparkseq.spark.jvm_parser`), which a new session compiles again when it reads the view."""
    sql = explanation.rewritten if explanation is not None else statement.text
    if creates_sparkseq_view(statement, explanation):
        why_not = view_extension_missing(spark)
        if why_not is not None:
            raise PersistentViewError(
                f"a persistent view over MATCH_AGGREGATE or seq_* functions is created through sparkseq's parser "
                f"extension, which keeps the query as written for the sessions that read the view, and {why_not}; "
                "create a temporary view (CREATE TEMP VIEW) instead", first_token_position(text, statement))
        sql = statement.text
    elif explanation is not None:
        sql = with_origins(spark, sql, explanation.operators, text, place)
    try:
        with quiet_query_context_logger():
            return spark.sql(sql, args=args) if args is not None else spark.sql(sql)
    except PySparkException as exc:
        if not is_spark_error(exc):
            raise
        with probe_session(spark) as session:
            raise spark_error(session, exc, text, statement, explanation) from None


def creates_sparkseq_view(statement: Statement, explanation: StatementExplanation | None) -> bool:
    """Whether ``statement`` creates or replaces a persistent view whose query uses
    MATCH_AGGREGATE or calls sparkseq's functions."""
    if view_query_span(statement) is None:
        return False
    changed = explanation is not None and explanation.rewritten != statement.text
    return changed or statement.has_match_aggregate or statement.calls(PYTHON_AGGREGATES)


def spark_error(session: SparkSession | None, exc: PySparkException, text: str, statement: Statement,
                explanation: StatementExplanation | None) -> SqlRewriteError:
    """Spark's error on ``statement`` placed in ``text``: directly for a statement Spark saw as
    written, by probing in ``session`` (a scratch session) for one with MATCH_AGGREGATE."""
    if explanation is None or not explanation.operators:
        return statement_error(exc, text, statement)
    located = locate(session, exc, text, explanation.operators, statement) if session is not None else None
    if located is None:
        return as_error(exc, first_token_position(text, statement),
                        f"{message_of(exc)} (in the Spark SQL this MATCH_AGGREGATE statement became)")
    message = message_of(located.error)
    return as_error(located.error, position_of(text, located.start, located.end),
                    f"{located.context}: {message}" if located.context else message)


# --- checking ------------------------------------------------------------------------------


class _ScriptSchemas(SessionSchemas):
    """The compiler's schema provider over the scratch copy: a relation the scratch copy does
    not reproduce is pending (the statement is checked when it runs)."""

    def __init__(self, spark: SparkSession, unreproduced: set[str], parts: set[str], cache: dict) -> None:
        super().__init__(spark, pending=unreproduced, cache=cache)
        self.parts = parts

    def __call__(self, name: str) -> ResolvedColumns | None:
        found = super().__call__(name)
        if found is None and name.split(".")[-1].casefold() in self.parts:
            raise PendingRelation(name)
        return found


class _Checker:
    """Checks statements in order (module docstring), remembering what the scratch copy cannot
    reproduce of what they do."""

    def __init__(self, spark: SparkSession, text: str, hierarchies: HierarchyResolver | None,
                 args: dict[str, Any] | list[Any] | None, scratch: bool = True) -> None:
        self.spark, self.text, self.hierarchies, self.args = spark, text, hierarchies, args
        self.scratch = scratch_session(spark) if scratch else None
        self.alone = not scratch  # a script of one statement: compiled against the session itself
        self.created: set[str] = set()  # relations the script creates (case-folded, as written)
        self.unreproduced: set[str] = set()  # objects the scratch copy does not hold as the script leaves them
        self.stand_ins: set[str] = set()  # relations an empty temporary view stands in for in the scratch copy
        self.opaque = False  # an earlier statement's effect on the catalog is unknown
        self.wrote = False  # an earlier statement writes data (files, tables)
        self.overlay: registry.Overlay = {}
        self.schemas: dict = {}
        self.batch: set[str] = set()  # sources found not streaming (live.replacer), forgotten with the schemas

    @property
    def parts(self) -> set[str]:
        return {name.split(".")[-1] for name in self.unreproduced}

    def check_all(self, statements: list[Statement]) -> list[Checked]:
        """Every statement checked in order. Consecutive queries are compiled one by one and
        analysed by Spark together (:func:`sparkseq.statements.scratch.analyse_together`): a query
        changes nothing later statements see. If that analysis fails, each is analysed
        alone, so the first error found is the first statement's, as one by one."""
        checked: list[Checked] = []
        queries: list[tuple[int, Statement, StatementExplanation]] = []
        for number, statement in enumerate(statements):
            if not self._analysable_together(statement):
                checked += self._analysed(queries)
                queries = []
                checked.append(self.check(number, statement))
                continue
            try:
                explanation = self._compile(statement)
            except PendingRelation:
                checked += self._analysed(queries)
                queries = []
                checked.append(self._deferred(number, statement))
                continue
            except Exception:
                self._analysed(queries)  # an earlier query's error comes first
                raise
            queries.append((number, statement, explanation))
        return checked + self._analysed(queries)

    def check(self, number: int, statement: Statement) -> Checked:
        kind = parse_hierarchy_statement(statement, self.text)
        if kind is not None:
            loaded = check_hierarchy_statement(self.spark, kind, self.created, self.overlay)
            return Checked(number, statement, hierarchy=kind, loaded=loaded)
        try:
            explanation = self._compile(statement)
        except PendingRelation:
            return self._deferred(number, statement)
        return self._spark_checked(number, statement, explanation)

    def _deferred(self, number: int, statement: Statement) -> Checked:
        self._follow(statement, Outcome.DEFERRED, None)
        return Checked(number, statement, deferred=True)

    def _spark_checked(self, number: int, statement: Statement, explanation: StatementExplanation) -> Checked:
        outcome, analysed = self._spark_check(statement, explanation)
        self._follow(statement, outcome, analysed)
        return Checked(number, statement, explanation=explanation, deferred=outcome is Outcome.DEFERRED,
                       analysed=analysed, final=self.alone)

    def _analysable_together(self, statement: Statement) -> bool:
        """A query Spark may analyse with others in the scratch copy (no parameters to bind
        when it runs, not a hierarchy statement)."""
        return (self.scratch is not None and statement.is_query
                and not (self.args is not None and has_parameter_markers(statement))
                and parse_hierarchy_statement(statement, self.text) is None)

    def _analysed(self, queries: list[tuple[int, Statement, StatementExplanation]]) -> list[Checked]:
        """Compiled queries checked by Spark: together, else (one query, or an error) alone."""
        if len(queries) > 1:
            assert self.scratch is not None  # _analysable_together
            try:
                plans = analyse_together(self.scratch, [e.rewritten for _, _, e in queries])
            except (PySparkException, Py4JError, ValueError):
                pass  # analysed alone below: the first error is placed there
            else:
                out = []
                for (number, statement, explanation), plan in zip(queries, plans):
                    self._follow(statement, Outcome.ANALYSED, plan)
                    out.append(Checked(number, statement, explanation=explanation, analysed=plan, final=self.alone))
                return out
        return [self._spark_checked(number, statement, explanation) for number, statement, explanation in queries]

    def _compile(self, statement: Statement) -> StatementExplanation:
        """The statement compiled (unchanged without MATCH_AGGREGATE; ``seq_*`` arguments checked)."""
        resolver = registry.resolver(self.spark, self.hierarchies, self.overlay)
        if self.scratch is None:  # no scratch copy: every relation the script creates is pending
            schemas: SchemaProvider = SessionSchemas(self.spark, pending=self.created, cache=self.schemas)
            return compile_statement(self.text, statement, schemas, resolver, engine_function_name,
                                     replace=live.replacer(self.spark, self.text, register=False, batch=self.batch))
        schemas = _ScriptSchemas(self.scratch, self.unreproduced, self.parts, self.schemas)
        # live operators over streaming sources are registered in the scratch copy only, so
        # that Spark analyses the statement around them there
        return compile_statement(self.text, statement, schemas, resolver,
                                 functools.partial(stand_in_function, self.scratch),
                                 replace=live.replacer(self.scratch, self.text, batch=self.batch))

    def _spark_check(self, statement: Statement, explanation: StatementExplanation | None
                     ) -> tuple[Outcome, Any]:
        """Parse and analyse (or, if session-local, execute) the statement in the scratch copy."""
        if self.scratch is None:
            return Outcome.ANALYSED, None
        if self.args is not None and has_parameter_markers(statement):
            return Outcome.DEFERRED, None
        sql = explanation.rewritten if explanation is not None else statement.text
        try:
            plan = parse_plan(self.scratch, sql)
            if _session_local(plan):
                self.scratch._jsparkSession.sql(sql)
                return Outcome.EXECUTED, None
            analysed = analyse(self.scratch, plan)
            if class_name(analysed) == "DropTempViewCommand":
                self.scratch._jsparkSession.sql(sql)
                return Outcome.EXECUTED, None
            return Outcome.ANALYSED, analysed
        except (PySparkException, Py4JJavaError) as exc:
            if self._reproduction_failed(exc, statement):
                return Outcome.DEFERRED, None
            if not isinstance(exc, PySparkException):
                raise as_error(exc, first_token_position(self.text, statement)) from None
            raise spark_error(self.scratch, exc, self.text, statement, explanation) from None

    def _reproduction_failed(self, exc: BaseException, statement: Statement) -> bool:
        """Whether an error may come from what the scratch copy does not reproduce: an object
        it lacks, or a statement other than a query naming a relation a stand-in replaces
        (a stand-in is a view over no rows: it cannot be written, altered or dropped)."""
        if self.opaque:
            return True
        if not isinstance(exc, AnalysisException):
            return False
        if named_objects(exc) & self.parts:
            return True
        if not statement.is_query and spelled_names(statement) & (self.parts | self.stand_ins):
            return True
        return self.wrote and condition_of(exc).split(".")[0] in DATA_ERRORS

    def _follow(self, statement: Statement, outcome: Outcome, analysed: Any) -> None:
        """Record what the statement does that the scratch copy does not hold."""
        created = created_relations(statement)
        self.created |= created
        if not statement.is_query:
            self.schemas.clear()
            self.batch.clear()
        if outcome is Outcome.EXECUTED:
            return
        if outcome is Outcome.DEFERRED and statement.keyword in SESSION_KEYWORDS:
            self.opaque = True  # e.g. USE of a database the script creates: names resolve elsewhere now
        for name in created:
            if outcome is not Outcome.ANALYSED or self.scratch is None or not self._stand_in(name, analysed):
                self.unreproduced.add(name)
        changed = changed_relations(statement)
        if effects_unknown(statement):
            self.opaque = True  # what it creates or changes is unknown
        for name in changed or ():
            self.unreproduced.add(name)
            if self.scratch is not None and name in self.stand_ins:
                self.scratch.catalog.dropTempView(name)  # stood in for what this statement drops or alters
                self.stand_ins.discard(name)
        if not statement.is_query and statement.keyword not in SESSION_KEYWORDS:
            self.wrote = True

    def _stand_in(self, name: str, analysed: Any) -> bool:
        """Make an empty temporary view with the columns the analysed statement defines for
        ``name`` in the scratch copy; False when it cannot (a qualified name, no schema)."""
        if "." in name or analysed is None:
            return False
        schema = _defined_schema(analysed)
        if schema is None:
            return False
        assert self.scratch is not None
        try:
            frame = self.scratch._jsparkSession.createDataFrame(jvm(self.scratch).java.util.ArrayList(), schema)
            frame.createOrReplaceTempView(name)
        except (PySparkException, Py4JError):
            return False
        self.stand_ins.add(name)
        return True


def _defined_schema(analysed: Any) -> Any:
    """The JVM schema of the relation an analysed CREATE / CACHE statement defines, or None
    (unknown, or renamed by a column list)."""
    try:
        if _column_list(analysed):
            return None
    except Py4JError:
        pass
    for path in (("query",), ("plan",), ("table", "schema"), ("tableSchema",)):
        try:
            value = analysed
            for attribute in path:
                value = getattr(value, attribute)()
            return value.schema() if path[-1] in ("query", "plan") else value
        except Py4JError:
            continue
    return None


def _column_list(analysed: Any) -> bool:
    return bool(analysed.userSpecifiedColumns().size())


def _session_local(plan: Any) -> bool:
    name = class_name(plan)
    if name == "CreateViewCommand":
        return plan.viewType().toString() == "LocalTempView"
    if name == "CreateTempViewUsing":
        return not getattr(plan, "global")()  # a Scala field named like a Python keyword
    return name in SESSION_LOCAL


# --- statements ---------------------------------------------------------------------------


def compile_statement(text: str, statement: Statement, schemas: SchemaProvider, hierarchies: HierarchyResolver | None,
                      name_for: EngineFunction, *, pretty: bool = False,
                      replace: Replacement | None = None, check_hierarchies: bool = True) -> StatementExplanation:
    """:func:`~sql_rewrites.rewriter.explain_statement`, with a friendlier message for relations
    Spark does not know and the literal arguments of ``seq_*`` calls checked (with
    ``check_hierarchies``, the ``HIERARCHY`` names of their patterns too); SELECTs mixing
    ``seq_*`` calls with Spark's aggregates are split (:data:`PYTHON_AGGREGATES`).

    A persistent view (``CREATE VIEW``, ``ALTER VIEW ... AS``) may use no concept hierarchy:
    hierarchies live in the session that registered them, a view is read by any session
    (:class:`~sql_rewrites.errors.PersistentViewError`, placed at the ``HIERARCHY`` name)."""
    if statement.has_match_aggregate and creates_permanent_function(statement):
        raise PersistentViewError(
            "a permanent SQL function cannot hold MATCH_AGGREGATE: Spark would store its body as the SQL it "
            "compiles to, which calls functions registered in this session only; create a persistent view of the "
            "query (CREATE VIEW name AS ...) and select from it in the function, or create a TEMPORARY FUNCTION",
            first_token_position(text, statement))
    asked: list[str] = []
    if view_query_span(statement) is not None:
        hierarchies, check_hierarchies = (lambda name: asked.append(name)), True  # knows none; notes the names
    try:
        explained = explain_statement(statement, text, schemas, name_for, hierarchies=hierarchies, pretty=pretty,
                                      replace=replace, python_aggregates=PYTHON_AGGREGATES)
        # the calls as the user wrote them (the rewrite moves, never changes, their literal arguments)
        check_function_calls(statement.text, hierarchies, check_hierarchies=check_hierarchies,
                             written=(text, statement.start))
    except UnknownHierarchyError as exc:
        if not asked:
            raise
        raise PersistentViewError(
            f"a persistent view cannot use concept hierarchy {asked[-1]}: hierarchies are registered per session "
            "(CREATE CONCEPT HIERARCHY, sparkseq.register_hierarchy), and a view is read by other sessions and "
            "processes; create a temporary view (CREATE TEMP VIEW), or name the hierarchy's values in the pattern's "
            "DEFINE conditions (A AS action IN ('view', 'browse'))", exc.position) from None
    except UnknownTableError as exc:
        if not isinstance(schemas, SessionSchemas) or not schemas.missing:
            raise
        name = schemas.missing[-1]
        known = schemas.known_relations()
        hint = f"; tables and views: {', '.join(known)}" if known else "; the session has no tables or views"
        raise UnknownTableError(f"relation '{name}' is not a table or view of this Spark session{hint}",
                                exc.position) from None
    return explained


def check_function_calls(spark_sql: str, hierarchies: HierarchyResolver | None = None, *,
                         check_hierarchies: bool = True, written: tuple[str, int] | None = None) -> None:
    """Check literal arguments of ``seq_*`` function calls (:func:`sql_rewrites.analysis.seq_functions.check_calls`),
    with ``check_hierarchies`` their patterns' ``HIERARCHY`` names too (else a call naming
    one is left to the function, which knows the hierarchies of its session). ``written``:
    the script and the offset in it of ``spark_sql``, when that is the statement as the user
    wrote it — errors are then placed in the script; else in the pattern they are about."""
    resolve = (lambda name: resolve_hierarchy(hierarchies, name)) if check_hierarchies else None
    if written is None:
        check_statement_calls(spark_sql, resolve)
        return
    text, offset = written
    try:
        check_statement_calls(spark_sql, resolve, written=True)
    except SqlRewriteError as exc:
        where = exc.position
        if where is None or where.start is None:
            raise
        raise exc.relocated(position_of(text, offset + where.start, offset + (where.end or where.start))) from None


def check_literal_setting(spark: SparkSession) -> None:
    """Refuse sessions whose parser reads backslashes in literals as text: sparkseq prints
    literals with escapes (:mod:`sql_rewrites.syntax.literals`), which such a parser would misread."""
    if str(spark.conf.get(ESCAPED_LITERALS, "false")).strip().lower() == "true":
        raise SqlRewriteError(f"{ESCAPED_LITERALS}=true (the legacy rule: backslashes in string literals are "
                              "text) is not supported by sparkseq; set it to false")


def evict_changed(schemas: dict, statement: Statement) -> None:
    """Forget the cached schemas (:class:`~sparkseq.spark.catalog.SessionSchemas`) once a statement
    that is not a query has run: it may create, replace or drop any relation (names may be
    written qualified or not, so nothing finer is safe)."""
    if not statement.is_query:
        schemas.clear()


def check_hierarchy_statement(spark: SparkSession, kind: HierarchyStatement, created: set[str],
                              overlay: registry.Overlay) -> ConceptHierarchy | None:
    """Check a hierarchy statement against the session as earlier statements leave it
    (``overlay``: what they do to hierarchies; ``created``: relations they create, read
    only when the statement runs)."""
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
    """Register or drop a checked hierarchy (``hierarchy``: its pairs, read while checking)."""
    if isinstance(kind, DropHierarchy):
        registry.drop_hierarchy(spark, kind.name, if_exists=True)  # checked before the text ran
    else:
        registry.register_hierarchy(spark, kind.name, (hierarchy or _load(spark, kind)).parent_of.items())


__all__ = ["Checked", "Outcome", "check_function_calls", "check_hierarchy_statement",
           "check_literal_setting", "check_script", "compile_statement", "evict_changed",
           "run_checked", "run_checked_sql", "run_hierarchy_statement", "run_script", "spark_error"]
