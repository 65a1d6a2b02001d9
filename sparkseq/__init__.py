"""sparkseq: exact aggregates over all event-sequence pattern matches, in Spark SQL.

>>> import sparkseq
>>> spark = sparkseq.session()            # doctest: +SKIP  local Spark, functions registered
>>> sparkseq.aggregate(spark, plan, "events", keys=["user"]).show()  # doctest: +SKIP
"""

from __future__ import annotations

from sparkseq.queries import QueryError, aggregate, stream_query, udaf_query
from sparkseq.registration import engine_function, register, stream_function
from sparkseq.session import session
from udafs.errors import CountOverflowError, InputDataError, PlanError, SparkSeqError
from udafs.plan import CountType, Element, Measure, MeasureKind, Plan, ValueType

__all__ = [
    "CountOverflowError", "CountType", "Element", "InputDataError", "Measure", "MeasureKind", "Plan", "PlanError",
    "QueryError", "SparkSeqError", "ValueType", "aggregate", "engine_function", "register", "session",
    "stream_function", "stream_query", "udaf_query",
]
