"""The engine function's SQL contract: the one description both sides import.

The compiler (``sql_rewrites``) generates SQL that calls, once per PARTITION BY group,
the grouped-aggregate function the Spark layer registers for the plan
(``udafs.workers.grouped.plan_aggregate``; the plan is bound into the function, not passed)::

    <engine function of the plan>(ts BIGINT, mask BIGINT, v0, v1, ...)

``v_i`` is :func:`value_type` of ``plan.columns[i]`` (BIGINT for ``ValueType.INT``,
DOUBLE for ``ValueType.FLOAT``, any ``DECIMAL(p, s)`` for ``ValueType.DECIMAL``, whose
unscaled integers the engine reads). A plan with a contiguity strategy
(:func:`takes_seq`: STRICT_CONTIGUITY or PARTITION_CONTIGUITY) takes one more
argument right after ``mask``::

    <engine function of the plan>(ts BIGINT, mask BIGINT, seq BIGINT, v0, v1, ...)

``seq`` is the contiguity rank of the row, computed before any row is filtered out:
``DENSE_RANK() OVER (ORDER BY ts)`` over the whole input for STRICT_CONTIGUITY,
``DENSE_RANK() OVER (PARTITION BY <keys> ORDER BY ts)`` for PARTITION_CONTIGUITY
(docs/predicates-and-strategies.md, section 6). Other plans never take it. A plan over
imprecise timestamps (:func:`takes_bounds`: ``plan.uncertain`` set) takes each row's
first and last possible time next (NULL: the row's ``ts``)::

    <engine function of the plan>(ts BIGINT, mask BIGINT, lo BIGINT, hi BIGINT, v0, v1, ...)

The function returns :func:`result_type` ``(plan)``:
an array of structs, one per output row of the group (one without SLIDE, one per
window with SLIDE), with fields ``window_start BIGINT, window_end BIGINT`` (NULL
without SLIDE), ``m0 .. m{k-1}`` (one per ``plan.measures``, typed by
:func:`measure_type`) and ``error STRING`` (NULL unless the group failed, e.g. a count
overflowed BIGINT). The function cannot see its group key, so it writes
:data:`PARTITION_SLOT` where the key belongs; the SQL replaces it with the key as JSON
(``{"customer_id":42}``, or :data:`ALL_ROWS` without PARTITION BY) and raises the
message with ``raise_error``.

Pure Python (imports only :mod:`udafs.plan`), so the compiler may import it without
pyarrow or Spark. Types are Spark SQL DDL text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from udafs.plan import CountType, Measure, MeasureKind, Plan, ValueType

if TYPE_CHECKING:
    from udafs.multiplan import MultiPlan

WINDOW_START = "window_start"
WINDOW_END = "window_end"
ERROR = "error"
PARTITION_SLOT = "{partition}"
ALL_ROWS = "(all rows)"

BIGINT, DOUBLE, STRING, DECIMAL = "BIGINT", "DOUBLE", "STRING", "DECIMAL(38, 0)"
COUNT_TYPE_SQL = {CountType.BIGINT: BIGINT, CountType.DECIMAL: DECIMAL, CountType.DOUBLE: DOUBLE}
#: SQL type a plan-level caller casts a value column to (a compiled DECIMAL(p, s) column is
#: passed unchanged: the engine reads unscaled integers, whatever the scale).
VALUE_TYPE_SQL = {ValueType.INT: BIGINT, ValueType.FLOAT: DOUBLE, ValueType.DECIMAL: DECIMAL}



def takes_seq(plan: Plan) -> bool:
    """True when ``plan``'s engine function takes the contiguity rank ``seq`` after ``mask``."""
    return plan.strategy.contiguous


def takes_bounds(plan: Plan) -> bool:
    """True when ``plan``'s engine function takes ``lo, hi`` (possible times) after ``mask``."""
    return plan.uncertain is not None


def measure_field(index: int) -> str:
    """Struct field name of measure ``index``: ``m0``, ``m1``, ..."""
    return f"m{index}"


def value_type(vt: ValueType) -> str:
    """The SQL type a value column is cast to before it reaches the engine."""
    return VALUE_TYPE_SQL[vt]


def engine_type(kind: MeasureKind, vt: ValueType, count_type: CountType) -> str:
    """SQL type of the engine's value for a measure (SEMANTICS section 5).

    Counts, and sums of integer columns, follow the COUNT TYPE; MIN/MAX of integer
    columns are BIGINT; AVG and everything over floating columns DOUBLE. Over a DECIMAL
    column every value measure is an exact unscaled integer, DECIMAL(38, 0): SUM, MIN,
    MAX, and AVG rounded half up to ``Measure.places`` more places (Spark's ``avg``).
    The funnel measures (SEMANTICS section 10): ``STEPS(*)`` is an array of counts in the
    COUNT TYPE (:func:`steps_type`: ``ARRAY<BIGINT>``, ``ARRAY<DECIMAL(38, 0)>`` or
    ``ARRAY<DOUBLE>``), ``MAX_STEP()`` a BIGINT step number whatever the COUNT TYPE.
    """
    if kind is MeasureKind.STEPS:
        return steps_type(count_type)
    if kind is MeasureKind.MAX_STEP:
        return BIGINT
    if kind in (MeasureKind.COUNT_STAR, MeasureKind.COUNT):
        return COUNT_TYPE_SQL[count_type]
    if vt is ValueType.DECIMAL:
        return DECIMAL
    if kind is MeasureKind.AVG or vt is ValueType.FLOAT:
        return DOUBLE
    return COUNT_TYPE_SQL[count_type] if kind is MeasureKind.SUM else BIGINT


def steps_type(count_type: CountType) -> str:
    """SQL type of ``STEPS(*)``: an array of one count per prefix, in the COUNT TYPE.

    >>> steps_type(CountType.DECIMAL)
    'ARRAY<DECIMAL(38, 0)>'
    """
    return f"ARRAY<{COUNT_TYPE_SQL[count_type]}>"


def measure_type(plan: Plan, measure: Measure) -> str:
    """:func:`engine_type` of one measure of ``plan``."""
    vt = plan.columns[measure.column] if measure.column is not None else ValueType.INT
    return engine_type(measure.kind, vt, plan.count_type)


def result_fields(plan: Plan) -> list[tuple[str, str]]:
    """``(name, SQL type)`` of one result row without ``error``: window bounds, then ``m0..mk``."""
    fields = [(WINDOW_START, BIGINT), (WINDOW_END, BIGINT)]
    return fields + [(measure_field(j), measure_type(plan, m)) for j, m in enumerate(plan.measures)]


def result_type(plan: Plan) -> str:
    """The engine function's return type, e.g.
    ``ARRAY<STRUCT<window_start: BIGINT, window_end: BIGINT, m0: BIGINT, error: STRING>>``.
    """
    fields = [*result_fields(plan), (ERROR, STRING)]
    return f"ARRAY<STRUCT<{', '.join(f'{name}: {sql}' for name, sql in fields)}>>"


def result_field_names(plan: Plan) -> tuple[str, ...]:
    """Field names of the result struct, in order (``error`` last)."""
    return (*(name for name, _ in result_fields(plan)), ERROR)


__all__ = [
    "WINDOW_START", "WINDOW_END", "ERROR", "PARTITION_SLOT", "ALL_ROWS", "COUNT_TYPE_SQL", "VALUE_TYPE_SQL",
    "DECIMAL",
    "measure_field", "takes_seq", "takes_bounds", "value_type", "engine_type", "steps_type", "measure_type",
    "result_fields",
    "result_type", "result_field_names",
    "PLAN_INDEX", "multi_result_fields", "multi_result_type",
]


# --- several plans in one function (udafs.multiplan.MultiPlan, E-Cube queries) ----------

PLAN_INDEX = "plan"


def multi_result_fields(mp: "MultiPlan") -> list[tuple[str, str]]:
    """``(name, SQL type)`` of one row of a multi-plan function, without ``error``:
    ``plan`` (index into ``mp.plans``), window bounds, then one ``m{f}`` per field."""
    fields = [(PLAN_INDEX, BIGINT), (WINDOW_START, BIGINT), (WINDOW_END, BIGINT)]
    for f in range(len(mp.fields)):
        plan, measure = mp.field_owner(f)
        fields.append((measure_field(f), measure_type(mp.plans[plan], mp.plans[plan].measures[measure])))
    return fields


def multi_result_type(mp: "MultiPlan") -> str:
    """The multi-plan function's return type (``error`` last, as for one plan)."""
    fields = [*multi_result_fields(mp), (ERROR, STRING)]
    return f"ARRAY<STRUCT<{', '.join(f'{name}: {sql}' for name, sql in fields)}>>"
