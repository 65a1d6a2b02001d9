"""Init files for the Thrift server: SQL statements that set up what JDBC clients see.

An init file holds statements separated by ``;`` — plain Spark SQL and statements with
MATCH_AGGREGATE (rewritten by :func:`sparkseq.sql_api.rewrite`) — typically
``CREATE TEMP VIEW`` over data files and views with MATCH_AGGREGATE over those::

    -- views.sql
    CREATE TEMP VIEW clicks USING csv OPTIONS (path 'clicks.csv', header 'true', inferSchema 'true');
    CREATE TEMP VIEW funnels AS
    SELECT customer_id, funnels FROM clicks MATCH_AGGREGATE (
      PARTITION BY customer_id ORDER BY ts PATTERN SEQ(view, buy) TYPE BY action
      MEASURES COUNT(*) AS funnels WITHIN INTERVAL 10 MINUTES) AS m;

All or nothing: :func:`check` parses and analyses every statement before
:func:`run` executes any, and a mistake is an :class:`InitFileError` naming
``file:line:column`` with the offending line underlined. The check runs the
statements in a scratch copy of the session (its temporary views, functions and
settings; changes stay in the copy): statements that only touch that session —
``CREATE TEMP VIEW`` (also ``USING``), ``SET``, ``RESET``, ``USE`` — take effect there,
so later statements see their views; any other statement (``CREATE TABLE``, ``INSERT``, ``CACHE TABLE``,
global temporary or permanent views …) is only analysed, and statements reading a
relation it creates are analysed when they run. Queries (``SELECT``) are analysed,
never executed: use ``CACHE TABLE`` to warm data up.

Concept hierarchies (``CREATE [OR REPLACE] CONCEPT HIERARCHY name FROM relation``,
``DROP CONCEPT HIERARCHY [IF EXISTS] name``) may stand in an init file too: the check
reads and validates them in the scratch session (the session's own hierarchies are
copied there first), so later statements with ``HIERARCHY name`` are checked against
them; :func:`run` registers them in the session, where JDBC clients' MATCH_AGGREGATE
and ``seq_*`` calls see them.
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from pyspark.errors import AnalysisException, ParseException, PySparkException
from pyspark.sql import SparkSession

from sparkseq import hierarchies as registry
from sparkseq.sql_api import check_hierarchy_statement, run_hierarchy_statement
from sql_rewrites.errors import SqlRewriteError, UnknownTableError, position_of
from sql_rewrites.hierarchy_statements import DropHierarchy, HierarchyStatement, parse_hierarchy_statement
from sql_rewrites.rewriter import split_statements
from udafs.errors import SparkSeqError

#: Parsed statements that change only the session running them: the check executes
#: them in its scratch session (a temporary view, a setting, the current schema).
SESSION_LOCAL = frozenset({"SetCommand", "ResetCommand", "SetCatalogAndNamespace", "SetNamespaceCommand"})


class InitFileError(SparkSeqError, ValueError):
    """A statement of an init file is wrong; ``path``, ``line`` and ``column`` say where."""

    def __init__(self, path: Path, line: int | None, message: str, column: int | None = None,
                 excerpt: str = "") -> None:
        self.path, self.line, self.column, self.message = path, line, column, message
        where = str(path) + (f":{line}" if line else "") + (f":{column}" if line and column else "")
        super().__init__(f"{where}: {message}" + (f"\n{excerpt}" if excerpt else ""))


@dataclass(frozen=True)
class InitStatement:
    """One statement of an init file and where it stands."""

    text: str
    start: int  # offset of ``text`` in the file
    first_token: int  # offset of its first token (after any leading comment)
    match_aggregate: bool

    def positioned(self, file_text: str) -> str:
        """The statement preceded by blanks that keep its line and column as in the file,
        so positions Spark or the rewriter report are positions in the file."""
        return "".join(c if c == "\n" else " " for c in file_text[:self.start]) + self.text


@dataclass(frozen=True)
class InitFile:
    """An init file, split into statements (no Spark needed)."""

    path: Path
    text: str
    statements: tuple[InitStatement, ...]

    def error(self, message: str, start: int | None, end: int | None = None) -> InitFileError:
        """An :class:`InitFileError` at file offset ``start`` (underlining to ``end``)."""
        if start is None:
            return InitFileError(self.path, None, message)
        pos = position_of(self.text, start, start if end is None else end)
        return InitFileError(self.path, pos.line, message, pos.column, pos.excerpt)


def read(path: str | Path) -> InitFile:
    """Read and split an init file.

    Raises
    ------
    InitFileError
        The file cannot be read, or its text cannot be split into statements (e.g. an
        unterminated string).
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InitFileError(path, None, f"cannot read the init file: {exc}") from None
    try:
        statements = split_statements(text)
    except SqlRewriteError as exc:
        raise _rewrite_error(path, exc) from None
    located, cursor = [], 0
    for statement in statements:
        start = text.find(statement.text, cursor)
        cursor = start + len(statement.text)
        first = start if statement.prefix else statement.tokens[0].start  # EXPLAIN: tokens follow the keyword
        located.append(InitStatement(statement.text, start, first, statement.has_match_aggregate))
    return InitFile(path, text, tuple(located))


def check(spark: SparkSession, init: InitFile) -> None:
    """Parse and analyse every statement of ``init`` without changing ``spark`` (see module doc).

    Raises
    ------
    InitFileError
        At the first wrong statement.
    """
    # a copy of the session: its temporary views, functions and settings; changes stay in the copy
    scratch = SparkSession(spark.sparkContext, spark._jsparkSession.cloneSession())
    for hierarchy in registry.registered_hierarchies(spark).values():
        registry.register_hierarchy(scratch, hierarchy.name, hierarchy.parent_of.items())
    checker = _Checker(scratch, init)
    with _quiet_query_context_logger():
        for statement in init.statements:
            checker.check(statement)


def run(spark: SparkSession, init: InitFile) -> None:
    """Execute the statements of ``init`` in ``spark``, in order (after :func:`check`).

    Raises
    ------
    InitFileError
        When a statement fails now (e.g. a file that disappeared since the check).
    """
    with _quiet_query_context_logger():
        for statement in init.statements:
            try:
                kind = _hierarchy_statement(init, statement)
                if kind is not None:
                    run_hierarchy_statement(spark, kind, None)
                    continue
                spark.sql(_spark_sql(spark, init, statement))
            except SqlRewriteError as exc:
                raise _rewrite_error(init.path, exc) from None
            except PySparkException as exc:
                raise _spark_error(init, statement, exc) from None


class _Checker:
    """Checks statements in order in a scratch session, remembering what they create."""

    def __init__(self, scratch: SparkSession, init: InitFile) -> None:
        self.scratch, self.init = scratch, init
        self.pending: set[str] = set()  # relations created by statements that were only analysed

    def check(self, statement: InitStatement) -> None:
        try:
            kind = _hierarchy_statement(self.init, statement)
        except SqlRewriteError as exc:
            raise _rewrite_error(self.init.path, exc) from None
        if kind is not None:
            self._hierarchy(kind)
        elif not self._checked(statement):
            self.pending |= created_relations_of(self.init, statement)

    def _hierarchy(self, kind: HierarchyStatement) -> None:
        """Validate a hierarchy statement and apply it to the scratch session (a hierarchy
        over a relation an unexecuted statement creates is read when it runs)."""
        try:
            hierarchy = check_hierarchy_statement(self.scratch, kind, self.pending, {})
            if hierarchy is not None or isinstance(kind, DropHierarchy):
                run_hierarchy_statement(self.scratch, kind, hierarchy)
        except SqlRewriteError as exc:
            raise _rewrite_error(self.init.path, exc) from None

    def _checked(self, statement: InitStatement) -> bool:
        """Check one statement; True when it ran in the scratch session, False when it was
        only analysed or deferred (it reads a relation an unexecuted statement creates)."""
        try:
            return self._parse_and_analyse(_spark_sql(self.scratch, self.init, statement))
        except UnknownTableError as exc:
            if not self._pending(_quoted_relation(exc.message)):
                raise _rewrite_error(self.init.path, exc) from None
        except SqlRewriteError as exc:
            raise _rewrite_error(self.init.path, exc) from None
        except AnalysisException as exc:
            missing = (exc.getMessageParameters() or {}).get("relationName", "").replace("`", "")
            if exc.getCondition() != "TABLE_OR_VIEW_NOT_FOUND" or not self._pending(missing):
                raise _spark_error(self.init, statement, exc) from None
        except PySparkException as exc:
            raise _spark_error(self.init, statement, exc) from None
        return False

    def _parse_and_analyse(self, sql: str) -> bool:
        """Execute a session-local statement (True), or only analyse any other (False)."""
        jsession = self.scratch._jsparkSession
        plan = jsession.sessionState().sqlParser().parsePlan(sql)
        if _session_local(plan):
            jsession.sql(sql)
            return True
        skip = self.scratch.sparkContext._jvm.org.apache.spark.sql.execution.CommandExecutionMode.SKIP()
        jsession.sessionState().executePlan(plan, skip).assertAnalyzed()
        return False

    def _pending(self, name: str) -> bool:
        return bool(name) and name.casefold() in self.pending


def _quoted_relation(message: str) -> str:
    """The relation an :class:`UnknownTableError` names (``relation 'x' is not ...``)."""
    found = re.search(r"relation '([^']+)'", message)
    return found.group(1) if found else ""


def created_relations_of(init: InitFile, statement: InitStatement) -> set[str]:
    """Case-folded names of the relations ``statement`` creates (see :func:`sparkseq.sql_api.created_relations`)."""
    from sparkseq.sql_api import created_relations
    from sql_rewrites.rewriter import Statement

    code = init.text[statement.first_token:statement.start + len(statement.text)]  # without leading comments
    return created_relations(Statement(code, []))


def _hierarchy_statement(init: InitFile, statement: InitStatement) -> HierarchyStatement | None:
    """The CREATE / DROP CONCEPT HIERARCHY the statement is (positions as in the file), or None."""
    if statement.match_aggregate:
        return None
    text = statement.positioned(init.text)
    (parsed,) = split_statements(text)
    return parse_hierarchy_statement(parsed, text)


def _spark_sql(spark: SparkSession, init: InitFile, statement: InitStatement) -> str:
    """The statement as Spark SQL: positioned as in the file, MATCH_AGGREGATE rewritten."""
    from sparkseq.sql_api import rewrite

    text = statement.positioned(init.text)
    if not statement.match_aggregate:
        return text
    (sql,) = rewrite(spark, text)
    return sql


def _session_local(plan: object) -> bool:
    name = plan.getClass().getSimpleName()  # type: ignore[attr-defined]
    if name == "CreateViewCommand":
        return plan.viewType().toString() == "LocalTempView"  # type: ignore[attr-defined]
    if name == "CreateTempViewUsing":
        return not getattr(plan, "global")()  # a Scala field named like a Python keyword
    return name in SESSION_LOCAL


def _rewrite_error(path: Path, exc: SqlRewriteError) -> InitFileError:
    """A compiler error; its position is already one in the file (see :meth:`InitStatement.positioned`)."""
    pos = exc.position
    name = type(exc).__name__
    if pos is None:
        return InitFileError(path, None, f"{name}: {exc.message}")
    return InitFileError(path, pos.line, f"{name}: {exc.message}", pos.column, pos.excerpt)


def _spark_error(init: InitFile, statement: InitStatement, exc: PySparkException) -> InitFileError:
    """A Spark parse or analysis error, placed where Spark says, else at the statement.

    Positions inside the Spark SQL that a MATCH_AGGREGATE statement became are not
    positions in the file: those errors point at the statement.
    """
    message = _first_line(exc)
    start = end = None
    if not statement.match_aggregate:
        start, end = _spark_span(init.text, exc)
    if start is None:
        start = statement.first_token
        end = start + len(init.text[start:].split(None, 1)[0]) - 1
    return init.error(message, start, end)


def _spark_span(text: str, exc: PySparkException) -> tuple[int | None, int | None]:
    """File offsets of what ``exc`` points at: its query context, or a parse error's line and position."""
    contexts = exc.getQueryContext()
    if contexts and contexts[0].startIndex() >= 0:
        return contexts[0].startIndex(), contexts[0].stopIndex()
    if isinstance(exc, ParseException):
        origin = getattr(exc, "_origin", None)
        try:
            line, pos = origin.line().get(), origin.startPosition().get()  # type: ignore[union-attr]
        except Exception:  # noqa: BLE001 - no position known
            return None, None
        offset = sum(len(row) + 1 for row in text.split("\n")[:line - 1]) + pos
        return offset, offset
    return None, None


def _first_line(exc: PySparkException) -> str:
    """Spark's message without the SQL echo, plan dump, position and SQLSTATE suffixes."""
    message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    for marker in (" SQLSTATE:", "; line "):
        message = message.split(marker)[0]
    return message.strip()


@contextlib.contextmanager
def _quiet_query_context_logger() -> Iterator[None]:
    """PySpark logs every SQL error with a query context at ERROR before raising it;
    here the error is reported once, as an :class:`InitFileError`."""
    logger = logging.getLogger("SQLQueryContextLogger")
    disabled, logger.disabled = logger.disabled, True
    try:
        yield
    finally:
        logger.disabled = disabled


__all__ = ["InitFile", "InitFileError", "InitStatement", "check", "read", "run"]
