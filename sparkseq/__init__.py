"""sparkseq: exact aggregates over all event-sequence pattern matches, in Spark SQL.

>>> import sparkseq
>>> spark = sparkseq.session()  # doctest: +SKIP
>>> clicks = spark.createDataFrame([
...     (1, "2024-05-01 10:00:00", "view"), (1, "2024-05-01 10:03:00", "view"), (1, "2024-05-01 10:05:00", "buy"),
...     (2, "2024-05-01 11:00:00", "view"), (2, "2024-05-01 11:30:00", "buy"),
... ], "customer_id INT, ts STRING, action STRING").selectExpr("customer_id", "timestamp(ts) AS ts", "action")
>>> clicks.createOrReplaceTempView("clicks")

MATCH_AGGREGATE in ``spark.sql`` (the session's parser extension), in
:func:`sparkseq.sql` (any session; several statements, ``{name}`` placeholders):

>>> spark.sql('''
...     SELECT customer_id, funnels FROM clicks MATCH_AGGREGATE (
...       PARTITION BY customer_id ORDER BY ts PATTERN SEQ(view, buy) TYPE BY action
...       MEASURES COUNT(*) AS funnels WITHIN INTERVAL 10 MINUTES) AS m ORDER BY customer_id''').show()
+-----------+-------+
|customer_id|funnels|
+-----------+-------+
|          1|      2|
|          2|      0|
+-----------+-------+
>>> sparkseq.sql(spark, "SELECT funnels FROM {c} MATCH_AGGREGATE (ORDER BY ts PATTERN SEQ(view, buy) "
...              "TYPE BY action MEASURES COUNT(*) AS funnels) AS m", c=clicks.where("customer_id = 2")).collect()
[Row(funnels=1)]

What a statement compiles to, without running it:

>>> text = sparkseq.explain(spark, "SELECT * FROM clicks MATCH_AGGREGATE (ORDER BY ts PATTERN SEQ(view, buy) "
...                         "TYPE BY action) AS m")
>>> print(text.splitlines()[4])
  pattern       SEQ(view, buy)

The same from Python arguments, over a DataFrame:

>>> clicks.transform(sparkseq.match_aggregate, partition_by="customer_id", order_by="ts",
...                  pattern="SEQ(view, buy)", type_by="action", within="10 minutes").orderBy("customer_id").collect()
[Row(customer_id=1, count=2), Row(customer_id=2, count=0)]
"""

from __future__ import annotations

from sparkseq.running.queries import QueryError, aggregate, stream_query, udaf_query
from sparkseq.spark import jvm_parser as _jvm_parser
from sparkseq.spark.hierarchies import drop_hierarchy, register_hierarchy
from sparkseq.spark.registration import engine_function, register, stream_function
from sparkseq.spark.session import ParserExtensionWarning, session
from sparkseq.statements import sql_api as _sql_api
from sparkseq.statements.cubes import Cube, CubeView, cube, drilldown, rollup
from sparkseq.statements.dataframes import match_aggregate
from sparkseq.statements.sql_api import explain, sql
from sparkseq.statements.workloads import collect_workload, plan_workload, release_workload, workload
from udafs.errors import CountOverflowError, InputDataError, PlanError, SparkSeqError
from udafs.plan import CountType, Element, Measure, MeasureKind, Plan, ValueType

# SQL text Spark's parser extension receives (spark.sql, JDBC, Spark Connect) goes through sparkseq.sql's
# front door; the Spark wiring below it does not import it.
_jvm_parser.connect_front_door(_sql_api)

__all__ = [
    "CountOverflowError", "CountType", "Cube", "CubeView", "Element", "InputDataError", "Measure", "MeasureKind",
    "ParserExtensionWarning", "Plan", "PlanError", "QueryError", "SparkSeqError", "ValueType", "aggregate",
    "collect_workload", "cube", "drilldown", "drop_hierarchy", "engine_function", "explain", "match_aggregate",
    "plan_workload", "register", "register_hierarchy", "rollup", "release_workload", "session", "sql",
    "stream_function", "stream_query", "udaf_query", "workload",
]
