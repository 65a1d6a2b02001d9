"""A scratch copy of a SparkSession, where statements are analysed without running.

``cloneSession()`` copies a session's state — temporary views, functions, settings,
current database — into a new session over the same SparkContext; changes to the copy
stay in the copy, while tables, databases and global temporary views are shared. The
script checker (:mod:`sparkseq.statements.scripts`) and the error probes (:mod:`sparkseq.statements.probes`)
work there: a statement is parsed by the session's own parser and analysed with
``CommandExecutionMode.SKIP`` (commands are analysed, not executed), and statements that
change only session state (a temporary view, a setting) are executed in the copy.

Spark Connect sessions have no JVM session in this process: :func:`scratch_session`
returns ``None`` for them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pyspark.sql import SparkSession

from sparkseq.spark.gateway import jvm


def scratch_session(spark: SparkSession) -> SparkSession | None:
    """A copy of ``spark``'s session state (see module docstring), or ``None`` without a JVM session."""
    jsession = getattr(spark, "_jsparkSession", None)
    if jsession is None:
        return None
    return SparkSession(spark.sparkContext, jsession.cloneSession())


def parse_plan(spark: SparkSession, sql: str) -> Any:
    """Spark's parsed (unresolved) plan of one statement; raises Spark's ``ParseException``."""
    return spark._jsparkSession.sessionState().sqlParser().parsePlan(sql)


def analyse(spark: SparkSession, plan: Any) -> Any:
    """The analysed plan of ``plan`` (from :func:`parse_plan`) — no command runs, no job
    starts; raises Spark's ``AnalysisException``."""
    skip = jvm(spark).org.apache.spark.sql.execution.CommandExecutionMode.SKIP()
    execution = spark._jsparkSession.sessionState().executePlan(plan, skip)
    execution.assertAnalyzed()
    return execution.analyzed()


def analyse_sql(spark: SparkSession, sql: str) -> Any:
    """:func:`analyse` of :func:`parse_plan`."""
    return analyse(spark, parse_plan(spark, sql))


def analyse_together(spark: SparkSession, queries: Sequence[str]) -> list[Any]:
    """The analysed plans of several queries from ONE analysis (each a subquery of one
    select; about half the time of analysing them one by one) — no job starts; raises
    Spark's ``ParseException`` / ``AnalysisException`` when any of them fails (which one,
    and where, analysing each alone tells)."""
    text = "SELECT * FROM " + ",\n".join(f"({query}\n) AS `__sparkseq_query_{i}`" for i, query in enumerate(queries))
    node = analyse_sql(spark, text).child()  # the select's Project over a left-deep tree of joins
    aliased = []
    while class_name(node) == "Join":
        aliased.append(node.right())
        node = node.left()
    aliased.append(node)
    if len(aliased) != len(queries) or any(class_name(a) != "SubqueryAlias" for a in aliased):
        raise ValueError("unexpected plan of queries analysed together")
    return [a.child() for a in reversed(aliased)]


def class_name(plan: Any) -> str:
    """A JVM plan node's simple class name (``CreateViewCommand``)."""
    return str(plan.getClass().getSimpleName())


__all__ = ["analyse", "analyse_sql", "analyse_together", "class_name", "parse_plan", "scratch_session"]
