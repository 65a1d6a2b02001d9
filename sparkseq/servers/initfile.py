"""Init files for the Thrift server: SQL statements that set up what JDBC clients see.

An init file holds statements separated by ``;`` — plain Spark SQL and statements with
MATCH_AGGREGATE (rewritten by :func:`sparkseq.statements.sql_api.rewrite`) — typically
``CREATE TEMP VIEW`` over data files and views with MATCH_AGGREGATE over those::

    -- views.sql
    CREATE TEMP VIEW clicks USING csv OPTIONS (path 'clicks.csv', header 'true', inferSchema 'true');
    CREATE TEMP VIEW funnels AS
    SELECT customer_id, funnels FROM clicks MATCH_AGGREGATE (
      PARTITION BY customer_id ORDER BY ts PATTERN SEQ(view, buy) TYPE BY action
      MEASURES COUNT(*) AS funnels WITHIN INTERVAL 10 MINUTES) AS m;

All or nothing: :func:`check` parses and analyses every statement — with the rules of
every sparkseq script (:mod:`sparkseq.statements.scripts`: a scratch copy of the session, temporary
views and settings taking effect there, relations created by other statements standing
in by their columns) — before :func:`run` executes any, and a mistake is an
:class:`InitFileError` naming ``file:line:column`` with the offending line underlined.
Queries (``SELECT``) are analysed, never executed: use ``CACHE TABLE`` to warm data up.

Concept hierarchies (``CREATE [OR REPLACE] CONCEPT HIERARCHY name FROM relation``,
``DROP CONCEPT HIERARCHY [IF EXISTS] name``) may stand in an init file too: the check
reads and validates them, so later statements with ``HIERARCHY name`` are checked
against them; :func:`run` registers them in the session, where JDBC clients'
MATCH_AGGREGATE and ``seq_*`` calls see them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import SparkSession

from sparkseq.statements.scripts import check_script, run_script
from sql_rewrites.errors import SqlRewriteError
from sql_rewrites.syntax.statements import Statement, split_statements
from udafs.errors import SparkSeqError


class InitFileError(SparkSeqError, ValueError):
    """A statement of an init file is wrong; ``path``, ``line`` and ``column`` say where."""

    def __init__(self, path: Path, line: int | None, message: str, column: int | None = None,
                 excerpt: str = "") -> None:
        self.path, self.line, self.column, self.message = path, line, column, message
        where = str(path) + (f":{line}" if line else "") + (f":{column}" if line and column else "")
        super().__init__(f"{where}: {message}" + (f"\n{excerpt}" if excerpt else ""))


@dataclass(frozen=True)
class InitFile:
    """An init file, split into statements (no Spark needed)."""

    path: Path
    text: str
    statements: tuple[Statement, ...]


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
        raise _file_error(path, exc) from None
    return InitFile(path, text, tuple(statements))


def check(spark: SparkSession, init: InitFile) -> None:
    """Parse and analyse every statement of ``init`` without changing ``spark`` (see module doc).

    Raises
    ------
    InitFileError
        At the first wrong statement.
    """
    if not init.statements:
        return
    try:
        check_script(spark, init.text)
    except SqlRewriteError as exc:
        raise _file_error(init.path, exc) from None


def run(spark: SparkSession, init: InitFile) -> None:
    """Check every statement of ``init``, then execute them in ``spark``, in order.

    Raises
    ------
    InitFileError
        At the first wrong statement (before any runs), or when a statement that could
        only be checked when it runs fails then.
    """
    if not init.statements:
        return
    try:
        for _ in run_script(spark, init.text, check_script(spark, init.text)):
            pass
    except SqlRewriteError as exc:
        raise _file_error(init.path, exc) from None


def _file_error(path: Path, exc: SqlRewriteError) -> InitFileError:
    """An error positioned in the file, as ``file:line:column: Class: message``."""
    pos = exc.position
    name = type(exc).__name__
    if pos is None:
        return InitFileError(path, None, f"{name}: {exc.message}")
    return InitFileError(path, pos.line, f"{name}: {exc.message}", pos.column, pos.excerpt)


__all__ = ["InitFile", "InitFileError", "check", "read", "run"]
