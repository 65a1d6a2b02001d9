"""Spark's own parse and analysis errors as sparkseq errors, placed in the user's text.

Spark reports a mistake in the SQL text it was given: a query context with start and
stop indices (``UNRESOLVED_COLUMN``, ``UNRESOLVED_ROUTINE``, ``DATATYPE_MISMATCH`` ...)
or, for a syntax error, a line and a position. A statement without MATCH_AGGREGATE
reaches Spark as the user wrote it, so those indices are offsets into the user's
statement (:func:`statement_error`). A statement with MATCH_AGGREGATE reaches Spark
rewritten, and Spark's indices point into generated SQL; :mod:`sparkseq.statements.probes`
finds the place in the user's text by analysing the user's own expressions again.

The result is a :class:`~sql_rewrites.errors.SparkAnalysisError` (or, for a syntax
error, a :class:`~sql_rewrites.errors.SqlParseError`) with Spark's message — without
the echoed SQL, plan dump and SQLSTATE suffix — and the line, column and excerpt of the
user's text.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator

from pyspark.errors import AnalysisException, ParseException, PySparkException
from pyspark.logger import PySparkLogger

from sql_rewrites.errors import SourcePosition, SparkAnalysisError, SqlParseError, SqlRewriteError, position_of
from sql_rewrites.syntax.statements import Statement

#: PySpark's logger of SQL errors with a query context: it prints each one as a JSON line
#: on stderr before the exception is raised, also for errors sparkseq catches and reports.
QUERY_CONTEXT_LOGGER = "SQLQueryContextLogger"
BACKTICKED = re.compile(r"`((?:[^`]|``)+)`")
#: Names sparkseq gives to what it generates (``__sparkseq_events``, ``sparkseq_agg_<digest>``),
#: which Spark's messages about generated SQL may quote: a qualifier, an entry of a list of
#: suggestions, the engine function.
INTERNAL_QUALIFIER = re.compile(r"`__sparkseq_\w+`\.")
INTERNAL_ENTRY = re.compile(r"`__sparkseq_\w+`, |, `__sparkseq_\w+`(?=[],)])")
ENGINE_FUNCTION = re.compile(r"`?sparkseq_agg_[0-9a-f]+`?")


def message_of(exc: BaseException) -> str:
    """Spark's message, first line only, without the SQLSTATE and ``; line N pos M`` suffixes
    (of a JVM error py4j reports, the JVM's message, not py4j's ``An error occurred while
    calling o42.sql``)."""
    text = str(exc).strip()
    java = getattr(exc, "java_exception", None)
    if java is not None:
        try:
            text = str(java.getMessage() or java.toString()).strip()
        except Exception:  # noqa: BLE001 - the JVM is gone: py4j's text
            pass
    message = text.splitlines()[0] if text else type(exc).__name__
    for marker in (" SQLSTATE:", "; line "):
        message = message.split(marker)[0]
    return message.strip()


def without_internal_names(message: str) -> str:
    """``message`` without the names of generated SQL: qualifiers of internal relations
    dropped, internal columns dropped from lists, the engine function named as such.

    >>> without_internal_names("`__sparkseq_events`.`actoin` ... [`__sparkseq_events`.`action`, `__sparkseq_ts`]")
    '`actoin` ... [`action`]'
    """
    message = INTERNAL_QUALIFIER.sub("", message)
    message = INTERNAL_ENTRY.sub("", message)
    return ENGINE_FUNCTION.sub("sparkseq's engine function", message)


def condition_of(exc: BaseException) -> str:
    """Spark's error class (``UNRESOLVED_ROUTINE``), or ``""``."""
    getter = getattr(exc, "getCondition", None)
    return (getter() or "") if getter is not None else ""


def same_condition(a: BaseException, b: BaseException) -> bool:
    """Whether two errors are of one kind (``UNRESOLVED_COLUMN.WITH_SUGGESTION`` and
    ``UNRESOLVED_COLUMN.WITHOUT_SUGGESTION`` are)."""
    return condition_of(a).split(".")[0] == condition_of(b).split(".")[0]


def parameters_of(exc: BaseException) -> dict[str, str]:
    """Spark's message parameters (``{"routineName": "`no_such_fn`", ...}``)."""
    getter = getattr(exc, "getMessageParameters", None)
    return dict(getter() or {}) if getter is not None else {}


def named_objects(exc: BaseException) -> set[str]:
    """Case-folded name parts the error's parameters write in backticks (```spark_catalog`.`default`.`t```
    gives ``spark_catalog``, ``default`` and ``t``): the objects the error is about."""
    names = set()
    for value in parameters_of(exc).values():
        for quoted in BACKTICKED.findall(str(value)):
            names.add(quoted.replace("``", "`").casefold())
    return names


def span_in(exc: PySparkException, sql: str) -> tuple[int, int] | None:
    """Offsets ``(start, end)`` (inclusive) in ``sql`` — the text Spark was given — of what
    ``exc`` points at: its query context, or a syntax error's line and position."""
    contexts = exc.getQueryContext() if hasattr(exc, "getQueryContext") else []
    for context in contexts:
        # a context naming an object (a view's stored text) is not about ``sql``
        if not context.objectType() and context.startIndex() >= 0:
            return context.startIndex(), max(context.startIndex(), context.stopIndex())
    if isinstance(exc, ParseException):
        origin = getattr(exc, "_origin", None)
        try:
            line, pos = origin.line().get(), origin.startPosition().get()  # type: ignore[union-attr]
        except Exception:  # noqa: BLE001 - Spark knows no position
            return None
        offset = sum(len(row) + 1 for row in sql.split("\n")[:line - 1]) + pos
        return offset, offset
    return None


def as_error(exc: PySparkException, position: SourcePosition | None, message: str | None = None) -> SqlRewriteError:
    """``exc`` as a sparkseq error at ``position`` (a syntax error as :class:`SqlParseError`),
    without the names of generated SQL (:func:`without_internal_names`)."""
    text = without_internal_names(message or message_of(exc))
    if isinstance(exc, ParseException) and position is not None:
        return SqlParseError(text, position)
    return SparkAnalysisError(text, position, condition_of(exc), parameters_of(exc))


def statement_error(exc: PySparkException, text: str, statement: Statement) -> SqlRewriteError:
    """A Spark error about a statement Spark received verbatim (``statement.text``), placed
    in ``text``, the whole script; at the statement's first token when Spark knows no place."""
    span = span_in(exc, statement.text)
    if span is None:
        return as_error(exc, first_token_position(text, statement))
    start, end = (statement.start + offset for offset in span)
    return as_error(exc, position_of(text, start, end))


def first_token_position(text: str, statement: Statement) -> SourcePosition:
    """The position of a statement's first keyword (``EXPLAIN`` included), or of its start."""
    if statement.tokens and not statement.prefix:
        first = statement.tokens[0]
        return position_of(text, first.start, first.end)
    return position_of(text, statement.start, statement.start + len(statement.keyword or " ") - 1)


def is_spark_error(exc: BaseException) -> bool:
    """True for Spark's parse and analysis errors (what checking a statement may raise)."""
    return isinstance(exc, (AnalysisException, ParseException))


@contextlib.contextmanager
def quiet_query_context_logger() -> Iterator[None]:
    """Silence PySpark's JSON logging of SQL errors while sparkseq catches and reports them.
    (PySpark's own class: a plain ``logging.Logger`` of that name breaks PySpark's calls.)"""
    logger = PySparkLogger.getLogger(QUERY_CONTEXT_LOGGER)
    disabled, logger.disabled = logger.disabled, True
    try:
        yield
    finally:
        logger.disabled = disabled


__all__ = ["as_error", "condition_of", "first_token_position", "is_spark_error", "message_of", "named_objects",
           "parameters_of", "quiet_query_context_logger", "same_condition", "span_in", "statement_error",
           "without_internal_names"]
