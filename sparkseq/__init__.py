"""sparkseq: exact aggregates over all event-sequence pattern matches, in Spark SQL.

>>> import sparkseq
>>> spark = sparkseq.session()            # doctest: +SKIP  local Spark, functions registered
>>> spark.sql('''
...     SELECT customer_id, funnels FROM clicks MATCH_AGGREGATE (
...       PARTITION BY customer_id ORDER BY ts PATTERN SEQ(view, buy) TYPE BY action
...       MEASURES COUNT(*) AS funnels WITHIN INTERVAL 10 MINUTES) AS m''').show()  # doctest: +SKIP
>>> sparkseq.sql(spark, "CREATE TEMP VIEW f AS SELECT ... MATCH_AGGREGATE (...) ...; SELECT ...")  # doctest: +SKIP
>>> print(sparkseq.explain("SELECT ... MATCH_AGGREGATE (...) ...", spark))  # doctest: +SKIP
>>> clicks.transform(sparkseq.match_aggregate, partition_by="customer_id", order_by="ts",
...                  pattern="SEQ(view, buy)", type_by="action", within="10 minutes")  # doctest: +SKIP
>>> sparkseq.aggregate(spark, plan, "events", keys=["user"]).show()  # doctest: +SKIP  (a hand-built Plan)
"""

from __future__ import annotations

from sparkseq.cubes import Cube, CubeView, cube, drilldown, rollup
from sparkseq.dataframes import match_aggregate
from sparkseq.hierarchies import drop_hierarchy, register_hierarchy
from sparkseq.queries import QueryError, aggregate, stream_query, udaf_query
from sparkseq.registration import engine_function, register, stream_function
from sparkseq.session import ParserExtensionWarning, session
from sparkseq.sql_api import explain, sql
from sparkseq.workloads import collect_workload, plan_workload, release_workload, workload
from udafs.errors import CountOverflowError, InputDataError, PlanError, SparkSeqError
from udafs.plan import CountType, Element, Measure, MeasureKind, Plan, ValueType

__all__ = [
    "CountOverflowError", "CountType", "Cube", "CubeView", "Element", "InputDataError", "Measure", "MeasureKind",
    "ParserExtensionWarning", "Plan", "PlanError", "QueryError", "SparkSeqError", "ValueType", "aggregate",
    "collect_workload", "cube", "drilldown", "drop_hierarchy", "engine_function", "explain", "match_aggregate",
    "plan_workload", "register", "register_hierarchy", "rollup", "release_workload", "session", "sql",
    "stream_function", "stream_query", "udaf_query", "workload",
]
