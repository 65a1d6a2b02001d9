"""The shared pass of a workload as a grouped-map Arrow function (``applyInArrow``).

A grouped-aggregate UDF returns one value per group, and PySpark turns a returned
``array<struct>`` into Arrow through Python objects (about 2.5 µs per struct: 4 s for
the 1.7 million window rows of 20 sliding-window statements over 200 partitions).
A grouped-map function returns a ``pyarrow.Table`` that Spark takes as it is, so a
workload's pass — many statements, many windows each — uses one: for each partition
it evaluates every plan of the :class:`~udafs.multiplan.MultiPlan` and returns the
rows ``keys..., plan, window_start, window_end, f0 .. fK, error`` (the layout of
:func:`udafs.contract.multi_result_fields`, keys first).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pyarrow as pa

from udafs import contract
from udafs.errors import CountOverflowError
from udafs.kernels.many import evaluate_many
from udafs.multiplan import MultiPlan
from udafs.spark_udfs import arrow_type, column_arrays, multi_result_arrays, out_of_memory, parse_multi_plan
from udafs.worker_faults import kill_if_armed

Column = tuple[np.ndarray, np.ndarray]


def shared_pass(multi_json: str, ts: str, mask: str, values: Sequence[str],
                names: Sequence[str]) -> Callable[[tuple, pa.Table], pa.Table]:
    """The ``applyInArrow`` function of a MultiPlan.

    Parameters
    ----------
    multi_json : str
        ``MultiPlan.to_json()``.
    ts, mask, values : str
        Input column names of the int64 time, the int64 mask and the value columns.
    names : sequence of str
        Output names for ``plan``, the window bounds and the fields (keys keep theirs).
    """
    def run(key: tuple, table: pa.Table) -> pa.Table:
        kill_if_armed()
        mp = parse_multi_plan(multi_json)
        arrays = _evaluate(mp, table, ts, mask, values, key)
        n = len(arrays[0])
        keys = [pa.repeat(k, n) for k in key]
        key_names = [c for c in table.column_names if c not in (ts, mask, *values)]
        return pa.Table.from_arrays([*keys, *arrays], names=[*key_names, *names])

    return run


def _evaluate(mp: MultiPlan, table: pa.Table, ts: str, mask: str, values: Sequence[str],
              key: tuple) -> list[pa.Array]:
    fields = contract.multi_result_fields(mp)
    t = table.column(ts).combine_chunks().to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    m = table.column(mask).combine_chunks().to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    cols = [column_arrays(table.column(v).combine_chunks(), vt) for v, vt in zip(values, mp.columns)]
    try:
        results = evaluate_many(mp, t, m, cols)
    except CountOverflowError as exc:
        message = str(exc.with_partition(tuple(k.as_py() for k in key)))
        return [pa.nulls(1, arrow_type(sql)) for _, sql in fields] + [pa.array([message])]
    except MemoryError:  # numpy's failed allocation; the worker itself is still alive
        message = out_of_memory(repr(tuple(k.as_py() for k in key)), len(t))
        return [pa.nulls(1, arrow_type(sql)) for _, sql in fields] + [pa.array([message])]
    return multi_result_arrays(mp, results)


__all__ = ["shared_pass"]
