"""``sparkseq.match_aggregate``: MATCH_AGGREGATE over a DataFrame, from Python arguments.

>>> import sparkseq
>>> clicks = spark.sql("SELECT * FROM VALUES "
...     "(1, TIMESTAMP'2024-05-01 10:00:00', 'view', 'kindle', NULL), "
...     "(1, TIMESTAMP'2024-05-01 10:02:00', 'buy', 'kindle', 99.0), "
...     "(2, TIMESTAMP'2024-05-01 11:00:00', 'view', 'kindle', NULL), "
...     "(2, TIMESTAMP'2024-05-01 11:01:00', 'recommendation', 'case', NULL), "
...     "(2, TIMESTAMP'2024-05-01 11:03:00', 'buy', 'kindle', 95.0) AS t(customer_id, ts, action, item, price)")
>>> result = clicks.transform(sparkseq.match_aggregate, partition_by="customer_id", order_by="ts",
...     pattern="SEQ(VK, BK, !REC)", define={"VK": "action = 'view' AND item = 'kindle'",
...     "BK": "action = 'buy' AND item = 'kindle'", "REC": "action = 'recommendation'"},
...     measures={"funnels": "COUNT(*)", "revenue": "SUM(BK.price)"}, within="10 minutes")
>>> result.orderBy("customer_id").collect()
[Row(customer_id=1, funnels=1, revenue=Decimal('99.0')), Row(customer_id=2, funnels=1, revenue=Decimal('95.0'))]

Each argument is one clause of the operator, written as in SQL (docs/sql-reference.md
§2-3): column names, ``SEQ(...)`` patterns, conditions and aggregates as SQL text, as in
``DataFrame.filter("...")``. The call builds the same syntax tree the SQL parser builds
for ``SELECT * FROM <df> MATCH_AGGREGATE (...)`` and hands it to the same compiler, so the
plan, the generated Spark SQL, the result and every error are those of the SQL form.

Every argument is parsed on its own, as exactly the one thing it must be (a column, a
condition, a pattern ...): an argument cannot reach into another clause, and no text is
pasted into SQL. Errors point at the argument that holds the mistake: instead of a line
of a statement they name the argument and the column in its text::

    UnknownColumnError: unknown column 'actoin' in DEFINE of VK; did you mean 'action'? ... at define['VK'], column 1
      define['VK'] | actoin = 'view'
                   | ^^^^^^

Arguments given as Python values are shown as the SQL they stand for (``within=
timedelta(minutes=10)`` is ``INTERVAL 600000000 MICROSECONDS``). Errors that belong to
no argument (two output columns with one name, say) point at the first argument
involved, or carry no position.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from pyspark.errors import PySparkException
from pyspark.sql import DataFrame

from sparkseq.running import live
from sparkseq.running.execution_paths import PathReplacer
from sparkseq.spark import hierarchies as registry
from sparkseq.spark.catalog import SessionSchemas
from sparkseq.spark.gateway import is_connect_session
from sparkseq.spark.jvm_parser import origins_comment, with_origins
from sparkseq.spark.registration import engine_function
from sparkseq.statements.probes import locate, probe_session
from sparkseq.statements.scripts import check_literal_setting
from sparkseq.statements.spark_errors import as_error, is_spark_error, message_of, quiet_query_context_logger
from sql_rewrites.analysis.arguments import ArgumentDocument, Duration, OperatorStatement, operator_statement
from sql_rewrites.analysis.user_text import quoted_identifier
from sql_rewrites.errors import SqlRewriteError
from sql_rewrites.logical.hierarchy import HierarchyResolver
from sql_rewrites.rewriter import OperatorExplanation, rewrite_tree


def match_aggregate(df: DataFrame, *, order_by: str, pattern: str | None = None,
                    partition_by: str | Iterable[str] | None = None, define: Mapping[str, str] | None = None,
                    type_by: str | None = None, hierarchy: str | None = None,
                    measures: Mapping[str, str] | None = None, within: Duration | None = None,
                    slide: Duration | None = None, count_type: str | None = None, where: str | None = None,
                    strategy: str | None = None, patterns: Iterable[str] | None = None,
                    cube: Iterable[str] | None = None, hierarchies: HierarchyResolver | None = None) -> DataFrame:
    """MATCH_AGGREGATE over ``df`` (module docstring); usable with ``df.transform``.

    Parameters
    ----------
    df : DataFrame
        The events.
    order_by : str
        The event-time column (``ORDER BY``).
    pattern : str
        ``"SEQ(A, B+, !C)"`` (``PATTERN``); or give ``patterns``.
    partition_by : str or iterable of str, optional
        Column(s) of ``PARTITION BY``.
    define : mapping, optional
        Symbol -> condition (``DEFINE symbol AS condition``).
    type_by, hierarchy : str, optional
        ``TYPE BY column``, ``HIERARCHY name``.
    measures : mapping, optional
        Output name -> aggregate (``MEASURES aggregate AS name``), e.g.
        ``{"n": "COUNT(*)", "revenue": "SUM(B.price)"}``. Default ``COUNT(*) AS count``.
    within, slide : str, int or timedelta, optional
        ``"10 minutes"`` or ``"INTERVAL 10 MINUTES"`` or a ``timedelta`` for a timestamp
        event time; an int (or ``"600"``) for a numeric one.
    count_type : str, optional
        ``"BIGINT"``, ``"DECIMAL"`` or ``"DOUBLE"``.
    where, strategy : str, optional
        ``WHERE`` (cross-event predicates) and ``STRATEGY`` (section 14).
    patterns, cube : iterable of str, optional
        E-Cube (section 13): the cuboids' patterns (``PATTERNS``), or the roll-ups of
        ``pattern`` (``["CONCEPT ROLLUP 1", "PATTERN ROLLUP 3"]``).
    hierarchies : HierarchyResolver, optional
        As for :func:`sparkseq.sql`.

    Returns
    -------
    DataFrame
        The partition keys, ``window_start``/``window_end`` with ``slide``, and the measures.

    Raises
    ------
    SqlRewriteError
        The errors of the SQL form (incl. Spark's own, as SparkAnalysisError), placed
        in the argument holding the mistake; before any Spark job starts.
    """
    spark = df.sparkSession
    check_literal_setting(spark)
    view = f"_sparkseq_{uuid.uuid4().hex}"
    given = {"partition_by": partition_by, "order_by": order_by, "pattern": pattern, "cube": cube,
             "patterns": patterns, "define": define, "type_by": type_by, "hierarchy": hierarchy, "measures": measures,
             "within": within, "slide": slide, "count_type": count_type, "where": where, "strategy": strategy}
    statement = operator_statement(view, given)
    df.createOrReplaceTempView(view)  # what the compiler reads the columns from
    try:
        return _run(spark, statement, view, hierarchies, df)
    finally:
        spark.catalog.dropTempView(view)  # the result's plan holds the DataFrame's (_frame)


def _frame(spark: Any, sql: str, view: str, df: DataFrame, operators: tuple[OperatorExplanation, ...],
           document: ArgumentDocument) -> DataFrame:
    """``spark.sql(sql)``, whose plan holds ``df``'s wherever ``sql`` reads ``view``. A
    classic session analyses the statement now, with the view; a Spark Connect session
    only when the result is used, after the view is dropped, so there ``df`` travels with
    the statement as a DataFrame argument (``spark.sql(text, name=df)``: the view's name
    replaced by a placeholder, the other braces doubled). An error raised while the job
    runs points at the argument holding the DEFINE condition (:func:`with_origins`; on
    Connect, the places are those in the text the server parses, where ``df`` has the name
    ``spark.sql`` gives it — one as long)."""
    if not is_connect_session(spark):
        return spark.sql(with_origins(spark, sql, operators, document.text, document.origin))
    from pyspark.sql.connect.sql_formatter import SQLStringFormatter

    name = re.compile(f"`?{re.escape(view)}`?")
    text = name.sub("{source}", sql.replace("{", "{{").replace("}", "}}"))
    parsed = name.sub(SQLStringFormatter(spark).format("{source}", source=df), sql)
    return spark.sql(origins_comment(parsed, operators, document.text, document.origin) + text, source=df)


def _run(spark: Any, statement: OperatorStatement, view: str, hierarchies: HierarchyResolver | None,
         df: DataFrame) -> DataFrame:
    tree, document = statement.tree, statement.document
    resolver = registry.resolver(spark, hierarchies)
    try:
        sql, operators = rewrite_tree(tree, document.text, SessionSchemas(spark),
                                      lambda plan: engine_function(spark, plan), hierarchies=resolver,
                                      replace=PathReplacer(spark, live.replacer(spark, document.text,
                                                                                  place=document.origin)))
    except SqlRewriteError as exc:
        raise document.relocate(exc, view) from None
    try:
        with quiet_query_context_logger():
            return _frame(spark, sql, view, df, operators, document)  # a job's errors point at define[...]
    except PySparkException as exc:
        if not is_spark_error(exc):
            raise
        raise _spark_error(spark, exc, document, operators, view) from None


def _spark_error(spark: Any, exc: PySparkException, document: ArgumentDocument,
                 operators: tuple[OperatorExplanation, ...], view: str) -> SqlRewriteError:
    source = quoted_identifier(view)
    with probe_session(spark) as session:
        located = locate(session, exc, document.text, operators, None, lambda _: source) if session else None
    if located is None:
        return as_error(exc, None, f"{message_of(exc)} (in the Spark SQL the MATCH_AGGREGATE became)")
    message = message_of(located.error)
    return as_error(located.error, document.position(located.start, located.end),
                    f"{located.context}: {message}" if located.context else message)


__all__ = ["match_aggregate"]
