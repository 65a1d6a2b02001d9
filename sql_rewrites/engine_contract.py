"""What the generated SQL expects of the engine function (the Spark layer registers it).

The generated SQL calls, once per PARTITION BY group, a grouped-aggregate function::

    <engine_function(plan)>('<plan json>', __ts BIGINT, __mask BIGINT, v0, v1, ...)

where ``v_i`` is ``BIGINT`` for ``ValueType.INT`` columns and ``DOUBLE`` for
``ValueType.FLOAT`` ones (``plan.columns``). It must return
:func:`engine_result_type` ``(plan)``: an array of structs, one per output row of the
group (one without SLIDE, one per window with SLIDE), with fields

``window_start BIGINT, window_end BIGINT`` (NULL without SLIDE), ``m0 .. m{k-1}``
(one per ``plan.measures``, types from :func:`measure_engine_type`) and
``error STRING`` (NULL unless the group failed, e.g. a count overflowed BIGINT). The
function cannot see its group key, so it writes :data:`PARTITION_SLOT` where the key
belongs; the SQL replaces it with the key as JSON (``{"customer_id":42}``, or
:data:`ALL_ROWS` without PARTITION BY) and raises the message with ``raise_error``.
These match ``udafs.spark_udfs`` (``output_ddl``, ``PARTITION_SLOT``), which this
layer may not import; ``tests/test_sql_engine_contract.py`` checks they agree.
"""

from __future__ import annotations

from udafs.plan import CountType, Measure, MeasureKind, Plan, ValueType

WINDOW_START = "window_start"
WINDOW_END = "window_end"
ERROR = "error"
PARTITION_SLOT = "{partition}"
ALL_ROWS = "(all rows)"

COUNT_TYPE_SQL = {CountType.BIGINT: "BIGINT", CountType.DECIMAL: "DECIMAL(38, 0)", CountType.DOUBLE: "DOUBLE"}


def measure_field(index: int) -> str:
    """Struct field name of measure ``index``: ``m0``, ``m1``, ..."""
    return f"m{index}"


def engine_type(kind: MeasureKind, value_type: ValueType, count_type: CountType) -> str:
    """Spark SQL type of the engine's value for a measure.

    Counts, and sums of integer columns, follow the COUNT TYPE; MIN/MAX of integer
    columns are BIGINT; AVG and everything over floating columns DOUBLE.
    """
    if kind in (MeasureKind.COUNT_STAR, MeasureKind.COUNT):
        return COUNT_TYPE_SQL[count_type]
    if kind is MeasureKind.AVG or value_type is ValueType.FLOAT:
        return "DOUBLE"
    return COUNT_TYPE_SQL[count_type] if kind is MeasureKind.SUM else "BIGINT"


def measure_engine_type(measure: Measure, plan: Plan) -> str:
    """:func:`engine_type` of one measure of ``plan``."""
    value_type = plan.columns[measure.column] if measure.column is not None else ValueType.INT
    return engine_type(measure.kind, value_type, plan.count_type)


def engine_result_type(plan: Plan) -> str:
    """The engine function's return type as Spark DDL, e.g.
    ``ARRAY<STRUCT<window_start: BIGINT, window_end: BIGINT, m0: BIGINT, error: STRING>>``.
    """
    fields = [f"{WINDOW_START}: BIGINT", f"{WINDOW_END}: BIGINT"]
    fields += [f"{measure_field(i)}: {measure_engine_type(m, plan)}" for i, m in enumerate(plan.measures)]
    fields.append(f"{ERROR}: STRING")
    return f"ARRAY<STRUCT<{', '.join(fields)}>>"


def result_field_names(plan: Plan) -> tuple[str, ...]:
    """Field names of the result struct, in order."""
    return (WINDOW_START, WINDOW_END, *(measure_field(i) for i in range(len(plan.measures))), ERROR)
