"""What the generated SQL expects of the engine function (the Spark layer registers it).

The contract itself — arguments, the ``ARRAY<STRUCT<window_start, window_end, m0 ...,
error>>`` result, the ``{partition}`` slot — is written down once, in
:mod:`udafs.contract`, which both this compiler and the Spark wrappers
(``udafs.workers.grouped``) import. This module names it in the compiler's terms.
"""

from __future__ import annotations

from udafs.contract import (
    ALL_ROWS,
    COUNT_TYPE_SQL,
    ERROR,
    PARTITION_SLOT,
    WINDOW_END,
    WINDOW_START,
    engine_type,
    measure_field,
    multi_result_type,
    result_field_names,
    result_type,
)
from udafs.multiplan import MultiPlan
from udafs.plan import Plan


def engine_result_type(plan: Plan | MultiPlan) -> str:
    """The engine function's return type as Spark DDL (:func:`udafs.contract.result_type`,
    or :func:`udafs.contract.multi_result_type` for an E-Cube's MultiPlan)."""
    return multi_result_type(plan) if isinstance(plan, MultiPlan) else result_type(plan)


__all__ = [
    "ALL_ROWS", "COUNT_TYPE_SQL", "ERROR", "PARTITION_SLOT", "WINDOW_END", "WINDOW_START", "engine_result_type",
    "engine_type", "measure_field", "result_field_names",
]
