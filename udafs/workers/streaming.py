"""The streaming path: an Arrow UDTF for partitions too large for one worker's memory.

A grouped-aggregate UDF holds a whole group in memory. For huge groups, sparkseq
feeds this UDTF instead (``pyspark.sql.functions.arrow_udtf``, Spark >= 4.1) with

    TABLE(SELECT bucket, <keys>, ts, mask, <values> FROM …
          DISTRIBUTE BY bucket SORT BY <bucket, ts | one packed 64-bit key>)

and the plan as a second (constant) argument, which arrives as a string column.
Rows of one bucket are contiguous and, within every key, in time order; several keys
may share a bucket (hash collisions, or on purpose when ``bucket`` is a few bits of
the key hash packed above the timestamp). ``eval`` finds bucket runs with numpy,
splits a run by key only when it holds more than one, and drives one evaluator per
open key; a key is finished when its bucket ends. ARCHITECTURE.md ("Spark facts")
explains why this beats ``PARTITION BY … ORDER BY`` on the UDTF call.

Input column layout (by position): bucket, K key columns, ts, mask, one column per
``plan.columns`` entry. Output: ``k0..k{K-1}``, ``window_start``, ``window_end``,
``m0..mk`` (see :func:`stream_ddl`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from udafs.errors import CountOverflowError, InputDataError, PlanError
from udafs.kernels import GroupResult
from udafs.kernels.incremental.streaming import StreamEvaluator
from udafs.plan import Plan
from udafs.workers.grouped import Verbatim, group_arrays, plan_of, result_arrays, result_fields, result_rows


def stream_ddl(plan: Plan, key_types: Sequence[str]) -> str:
    """Return type (DDL) of the streaming UDTF for ``plan`` and the key columns' SQL types."""
    fields = [(f"k{i}", t) for i, t in enumerate(key_types)] + result_fields(plan)
    return ", ".join(f"{n} {t}" for n, t in fields)


@dataclass
class _OpenKey:
    evaluator: StreamEvaluator  # O(window) state, not the key's rows
    key: list[pa.Array]  # the key's values, one 1-row array per key column
    name: str  # the key as JSON, for error messages


class MatchStream:
    """Arrow UDTF handler: ``eval(rows, plan)`` per Arrow batch, ``terminate`` per task."""

    def __init__(self) -> None:
        self._plan: Plan | None = None
        self._bucket: object = None
        self._open: dict[tuple, _OpenKey] = {}

    def eval(self, rows: pa.RecordBatch, plan: pa.Array) -> Iterator[pa.Table]:
        if rows.num_rows == 0:
            return
        if self._plan is None:
            self._plan = plan_of(plan)
        n_keys = rows.num_columns - 3 - len(self.plan.columns)
        out: list[pa.RecordBatch] = []
        bucket = rows.column(0).to_numpy(zero_copy_only=False)
        cuts = np.flatnonzero(bucket[1:] != bucket[:-1]) + 1
        for start, stop in zip(np.r_[0, cuts], np.r_[cuts, len(bucket)]):
            if bucket[start] != self._bucket:
                out += self._close_all()
                self._bucket = bucket[start]
            for key, part in _split_by_key(rows.slice(start, stop - start), n_keys):
                out += self._push(key, part, n_keys)
        if out:
            yield pa.Table.from_batches(out)

    @property
    def plan(self) -> Plan:
        """The plan, read from the first batch (every row carries the same one)."""
        if self._plan is None:
            raise PlanError("the streaming UDTF has not seen a batch (no plan yet)")
        return self._plan

    def terminate(self) -> Iterator[pa.Table]:
        out = self._close_all()
        if out:
            yield pa.Table.from_batches(out)

    def _push(self, key: tuple, part: pa.RecordBatch, n_keys: int) -> list[pa.RecordBatch]:
        state = self._open.get(key)
        if state is None:
            state = self._open[key] = self._open_key(part, n_keys)
        values = [part.column(j) for j in range(n_keys + 3, part.num_columns)]
        ts, mask, cols = group_arrays(self.plan, part.column(n_keys + 1), part.column(n_keys + 2), values)
        return self._emit(state, self._guard(state, state.evaluator.push, ts, mask, cols))

    def _open_key(self, part: pa.RecordBatch, n_keys: int) -> _OpenKey:
        key = [part.column(i).take([0]) for i in range(1, n_keys + 1)]  # a copy: a slice would pin the batch
        names = part.schema.names[1:n_keys + 1]
        name = json.dumps({n: k[0].as_py() for n, k in zip(names, key)}, default=str, separators=(",", ":"))
        return _OpenKey(StreamEvaluator(self.plan), key, name)

    def _close_all(self) -> list[pa.RecordBatch]:
        out: list[pa.RecordBatch] = []
        for state in self._open.values():
            out += self._emit(state, self._guard(state, state.evaluator.finish))
        self._open.clear()
        return out

    @staticmethod
    def _guard(state: _OpenKey, step: Callable[..., GroupResult | None], *args: object) -> GroupResult | None:
        try:
            return step(*args)
        except CountOverflowError as exc:
            raise exc.with_partition(Verbatim(state.name)) from None
        except InputDataError as exc:  # rows out of time order: the input was not sorted as required
            raise InputDataError(f"partition {state.name}: {exc} (is the input sorted by bucket and time, "
                                 "and are the declared ts_bounds right?)") from None

    def _emit(self, state: _OpenKey, res: GroupResult | None) -> list[pa.RecordBatch]:
        if res is None or (n := result_rows(res)) == 0:
            return []
        first = np.zeros(n, dtype=np.int64)
        arrays = [k.take(first) for k in state.key] + result_arrays(self.plan, res)
        names = [f"k{i}" for i in range(len(state.key))] + [n for n, _ in result_fields(self.plan)]
        return [pa.RecordBatch.from_arrays(arrays, names=names)]


#: The one NaN every NaN key value is replaced by for grouping: GROUP BY puts all NaN keys
#: in one group, while two NaN objects are different dictionary keys in Python.
_NAN = float("nan")


def _split_by_key(run: pa.RecordBatch, n_keys: int) -> Iterator[tuple[tuple, pa.RecordBatch]]:
    """The rows of one bucket run, per key (in arrival order within each key); keys
    compare as GROUP BY compares them (NaN equals NaN)."""
    cols = [run.column(i) for i in range(1, n_keys + 1)]
    if all(_constant(c) for c in cols):
        yield tuple(_group_value(c[0].as_py()) for c in cols), run
        return
    groups: dict[tuple, list[int]] = {}
    for i, key in enumerate(zip(*(c.to_pylist() for c in cols))):
        groups.setdefault(tuple(_group_value(v) for v in key), []).append(i)
    for key, idx in groups.items():
        yield key, run.take(pa.array(idx, type=pa.int64()))


def _group_value(value: object) -> object:
    return _NAN if isinstance(value, float) and value != value else value


def _constant(col: pa.Array) -> bool:
    if col.null_count:
        return col.null_count == len(col)
    try:
        same = pc.equal(col, col[0])
        if pa.types.is_floating(col.type) and col[0].as_py() != col[0].as_py():  # NaN: equal to NaN only
            same = pc.is_nan(col)
        return bool(pc.all(same).as_py())
    except pa.ArrowNotImplementedError:  # nested key types
        first = col[0].as_py()
        return all(v == first for v in col.to_pylist())
