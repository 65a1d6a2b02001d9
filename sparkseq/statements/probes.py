"""Where in the user's text a Spark analysis error of a MATCH_AGGREGATE statement lies.

Spark analyses the SQL the compiler generated, so its query context points into
generated text. To place the error in the user's text, the user's own pieces are
analysed again, one at a time, as *probes* whose text is the user's, so that Spark's
indices are offsets into the user's text (plus a known prefix):

1. each operator, innermost first, is analysed from its generated SQL and kept as a
   temporary view (a *stand-in* with the operator's output columns);
2. when an operator fails, its source is probed (``SELECT * FROM <source as written>``,
   nested operators replaced by their stand-ins), then each DEFINE condition
   (``SELECT CASE WHEN <condition as written> THEN 1 END FROM <source as written>``, the
   defined symbol's own qualifier blanked: ``VK.action`` reads ``   action``);
3. when every operator builds, the statement is probed with each outermost operator's
   text (source to closing parenthesis) replaced by its stand-in's name, padded with
   blanks so that every other character keeps its offset: an error in the query around
   the operators lands where the user wrote it.

A probe's error counts only when it is of the same kind (error class) as the error
being placed. When no probe reproduces it, the error is placed by the name Spark gives
(an unknown function or column of the operator), else at the operator's keyword. Probes
are only analysed, never run, in a scratch session (:func:`probe_session`: a scratch copy,
:mod:`sparkseq.statements.scratch`, or on a Spark Connect session a clone of its server session), and
only after the statement failed; their text is the user's verbatim by design (see above).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.errors import PySparkException
from pyspark.sql import SparkSession

from sparkseq.statements.scratch import analyse_sql, scratch_session
from sparkseq.statements.spark_errors import parameters_of, quiet_query_context_logger, same_condition, span_in
from sql_rewrites.analysis.user_text import define_conditions, keyword_span, named_reference, operator_span
from sql_rewrites.rewriter import OperatorExplanation
from sql_rewrites.syntax.statements import Statement

STAND_IN = "__sparkseq_probe_{}"
DEFINE_PREFIX = "SELECT CASE WHEN "
SOURCE_PREFIX = "SELECT * FROM "
#: Spark's message parameters that name the object an error is about.
NAME_PARAMETERS = ("routineName", "functionName", "objectName")


@dataclass(frozen=True)
class Located:
    """An error's place in the user's text (inclusive offsets), the error Spark raised there
    (its message speaks of the user's text, not of the generated SQL) and what the place is
    (``DEFINE of A``; empty for the statement itself)."""

    start: int
    end: int
    error: PySparkException
    context: str = ""


@contextlib.contextmanager
def probe_session(spark: Any) -> Iterator[Any | None]:
    """Where the probes for an error of ``spark`` run: its scratch copy on a classic session
    (:func:`~sparkseq.statements.scratch.scratch_session`); on a Spark Connect session, a clone of its
    server session (``cloneSession()``: temporary views, functions and settings copied, so
    the stand-ins never touch the user's session), released on leaving; None when neither
    can be had (the error is then placed at the statement). PySpark's logging of the
    probes' errors is silenced meanwhile (:func:`~sparkseq.statements.spark_errors.quiet_query_context_logger`)."""
    if getattr(spark, "_jsparkSession", None) is not None:
        with quiet_query_context_logger():
            yield scratch_session(spark)
        return
    try:
        clone = spark.cloneSession()
    except Exception:  # noqa: BLE001 - a server or client that cannot clone: no probes
        clone = None
    if clone is None:
        yield None
        return
    try:
        with quiet_query_context_logger():
            yield clone
    finally:
        with contextlib.suppress(Exception):  # releasing is best effort, as Spark's own stop()
            clone.stop()


def _analyse(session: Any, sql: str) -> None:
    """Analyse ``sql`` in ``session`` without running it: in the JVM of a classic session; on
    a Spark Connect session, ``spark.sql`` (its server analyses a query when it receives it,
    and runs nothing until rows are asked)."""
    if getattr(session, "_jsparkSession", None) is not None:
        analyse_sql(session, sql)
    else:
        session.sql(sql)


#: The FROM text a DEFINE probe reads (the source as written), or None to skip DEFINE probes.
SourceText = Callable[[OperatorExplanation], "str | None"]


def locate(session: SparkSession, failure: PySparkException, text: str, operators: Sequence[OperatorExplanation],
           statement: Statement | None = None, source_text: SourceText | None = None) -> Located | None:
    """Place ``failure`` — Spark's error on a statement of ``text`` whose operators are
    ``operators`` (innermost first) — in ``text`` (see module docstring).

    ``statement``, when given, is probed with its operators replaced (step 3);
    ``source_text`` overrides how a DEFINE probe reads its operator's source (default:
    the source as written in ``text``).
    """
    stand_ins: list[tuple[int, int, str]] = []
    for k, operator in enumerate(operators):
        name = STAND_IN.format(k)
        try:
            session.sql(operator.relation_sql).createOrReplaceTempView(name)
        except PySparkException as exc:
            if not same_condition(exc, failure):
                return None
            return _inside(session, exc, text, operator, stand_ins, source_text) or _by_name(exc, text, operator)
        span = operator_span(operator.query.node)
        if span is not None and span[1] - span[0] + 1 >= len(name):
            stand_ins = [s for s in stand_ins if not span[0] <= s[0] <= span[1]] + [(*span, name)]
    if statement is None:
        return None
    probe = _replaced(text, statement.start, statement.start + len(statement.text), stand_ins)
    return _probe(session, failure, probe, "", statement.start)


def _inside(session: SparkSession, failure: PySparkException, text: str, operator: OperatorExplanation,
            stand_ins: list[tuple[int, int, str]], source_text: SourceText | None) -> Located | None:
    """Probe a failing operator's source, then each DEFINE condition."""
    node = operator.query.node
    keyword = node.meta.get("start")
    source = None
    if node.meta.get("source_start") is not None and keyword is not None:
        source = _replaced(text, node.meta["source_start"], keyword, stand_ins)
        found = _probe(session, failure, SOURCE_PREFIX + source, SOURCE_PREFIX, node.meta["source_start"],
                       context="the source of MATCH_AGGREGATE")
        if found is not None:
            return found
    if source_text is not None:
        source = source_text(operator)
    if source is None:
        return None
    for symbol, start, condition in define_conditions(node, text):
        probe = f"{DEFINE_PREFIX}{condition} THEN 1 END FROM {source}"
        found = _probe(session, failure, probe, DEFINE_PREFIX, start, limit=len(condition),
                       context=f"DEFINE of {symbol}")
        if found is not None:
            return found
    return None


def _probe(session: SparkSession, failure: PySparkException, probe: str, prefix: str, offset: int,
           limit: int | None = None, context: str = "") -> Located | None:
    """Analyse ``probe``; its error of ``failure``'s kind, pointing into the user's text that
    starts at ``len(prefix)`` in the probe (``limit`` characters long, if given) and at
    ``offset`` in the script, placed in the script. An error about an expression that
    wraps the user's text (``CASE WHEN <condition> ...`` is not boolean) covers all of it."""
    try:
        _analyse(session, probe)
    except PySparkException as exc:
        if not same_condition(exc, failure):
            return None
        span = span_in(exc, probe)
        if span is None and limit is not None:  # an error without a place (a nested generator): all of the text
            span = len(prefix), len(prefix) + limit - 1
        if span is None:
            return None
        start, end = span[0] - len(prefix), span[1] - len(prefix)
        if end < 0 or (limit is not None and start >= limit):
            return None  # in the probe's own text, not the user's
        start = max(start, 0)
        if limit is not None:
            end = min(end, limit - 1)
        return Located(offset + start, offset + end, exc, context)
    return None


def _by_name(failure: PySparkException, text: str, operator: OperatorExplanation) -> Located | None:
    """The operator's function or column Spark names in ``failure``, else the operator's keyword."""
    node = operator.query.node
    wanted = {str(parameters_of(failure).get(key, "")).replace("`", "").split(".")[-1].casefold()
              for key in NAME_PARAMETERS} - {""}
    named = named_reference(node, wanted)
    if named is not None:
        return Located(named[0], named[1], failure, f"{named[2]} of MATCH_AGGREGATE")
    keyword = keyword_span(node)
    return Located(*keyword, failure, "MATCH_AGGREGATE") if keyword is not None else None


def _replaced(text: str, start: int, end: int, stand_ins: list[tuple[int, int, str]]) -> str:
    """``text[start:end]`` with each stand-in's span replaced by its name, padded with blanks
    (line breaks kept) so that the rest keeps its offsets."""
    chars = list(text[start:end])
    for lo, hi, name in stand_ins:
        if start <= lo and hi < end:
            for i in range(lo, hi + 1):
                offset = i - lo
                chars[i - start] = name[offset] if offset < len(name) else ("\n" if text[i] == "\n" else " ")
    return "".join(chars)


__all__ = ["Located", "SourceText", "locate", "probe_session"]
