"""The shared pass of a workload: Arrow functions that evaluate a
:class:`~udafs.multiplan.MultiPlan` over a group's engine input rows.

A grouped-aggregate UDF returns one value per group, and PySpark turns a returned
``array<struct>`` into Arrow through Python objects (about 2.5 µs per struct: 4 s for
the 1.7 million window rows of 20 sliding-window statements over 200 partitions). These
functions return Arrow tables that Spark takes as they are, with the rows
``keys..., plan, window_start, window_end, f0 .. fK, error`` (the layout of
:func:`udafs.contract.multi_result_fields`, keys first). Two forms:

* :func:`sorted_pass` (``mapInArrow`` over rows sorted by the partition keys and time):
  whole partitions are gathered into calls of about :data:`ROWS_PER_CALL` rows; when
  every plan has SLIDE (:func:`udafs.kernels.multiplan.partitions.laid_end_to_end`) one engine
  call evaluates all of them laid end to end on one time axis, otherwise one call per
  partition. Partition boundaries are found by comparing adjacent keys in Arrow, so the
  keys must be of types whose equality Arrow decides as Spark's grouping does (numbers,
  binary-collated strings, binary, booleans, dates, timestamps; the caller checks);
* :func:`grouped_pass` (``groupBy(keys).applyInArrow``): one call per partition, for
  keys of any other type.

A count too large for its type (or an allocation that fails) in one partition gives
that partition one row carrying the error message, which the caller raises when the
rows are read; the other partitions' rows are kept.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from udafs import contract
from udafs.errors import CountOverflowError
from udafs.kernels.multiplan.many import evaluate_many
from udafs.kernels.multiplan.partitions import evaluate_partitions, laid_end_to_end
from udafs.multiplan import MultiPlan
from udafs.workers.faults import with_worker_fault
from udafs.workers.grouped import arrow_type, column_arrays, multi_result_arrays, out_of_memory, parse_multi_plan

Column = tuple[np.ndarray, np.ndarray]

ROWS_PER_CALL = 100_000
"""Rows gathered before :func:`sorted_pass` calls the engine (whole partitions only; a
partition holding more is evaluated whole, alone). ``bench/sharing.py --kernel``: 20
ten-step statements over 200 partitions of ~9,400 rows in 19 such calls laid end to end,
0.83-0.85 s of engine against 1.06-1.22 s one partition per call; calls of 10 to 200
partitions all took about the same (ad hoc)."""


def sorted_pass(multi_json: str, keys: Sequence[str], ts: str, mask: str, values: Sequence[str],
                names: Sequence[str]) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The ``mapInArrow`` function of a MultiPlan over rows sorted by ``keys`` (then time).

    Parameters
    ----------
    multi_json : str
        ``MultiPlan.to_json()``.
    keys : sequence of str
        The partition key columns (none: all rows are one partition).
    ts, mask, values : str
        Input column names of the int64 time, the int64 mask and the value columns.
    names : sequence of str
        Output names for ``plan``, the window bounds and the fields (keys keep theirs).
    """
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        mp = parse_multi_plan(multi_json)
        for table, starts in whole_partitions(batches, keys, ROWS_PER_CALL):
            yield from _evaluated(mp, table, starts, keys, ts, mask, values, names).to_batches()

    return run


def grouped_pass(multi_json: str, keys: Sequence[str], ts: str, mask: str, values: Sequence[str],
                 names: Sequence[str]) -> Callable[[tuple, pa.Table], pa.Table]:
    """The ``groupBy(keys).applyInArrow`` function of a MultiPlan (one partition per call);
    parameters as :func:`sorted_pass`."""
    def run(key: tuple, table: pa.Table) -> pa.Table:
        mp = parse_multi_plan(multi_json)
        return _evaluated(mp, table, np.zeros(1, dtype=np.int64), keys, ts, mask, values, names)

    return run


def whole_partitions(batches: Iterator[pa.RecordBatch], keys: Sequence[str],
                     rows: int) -> Iterator[tuple[pa.Table, np.ndarray]]:
    """Tables of whole partitions from batches sorted by ``keys``, with the first row of
    each partition in the table: batches are gathered until they hold ``rows`` rows and a
    partition starts after their first row, then cut before the last partition (which may
    go on in the next batch). A partition is never split; an empty input gives none."""
    pending: list[pa.RecordBatch] = []
    starts: list[int] = [0]  # partitions starting in pending, at these rows
    size = 0
    previous: pa.RecordBatch | None = None  # the last row seen
    for batch in batches:
        if not batch.num_rows:
            continue
        starts += (size + partition_starts(batch, keys, previous)).tolist()
        previous = batch.slice(batch.num_rows - 1)
        pending.append(batch)
        size += batch.num_rows
        if size >= rows and len(starts) > 1:
            table = pa.Table.from_batches(pending)
            cut = starts[-1]  # the last partition may go on in the next batch
            yield table.slice(0, cut), np.array(starts[:-1], dtype=np.int64)
            pending, starts, size = table.slice(cut).to_batches(), [0], size - cut
    if size:
        yield pa.Table.from_batches(pending), np.array(starts, dtype=np.int64)


def partition_starts(batch: pa.RecordBatch, keys: Sequence[str], previous: pa.RecordBatch | None) -> np.ndarray:
    """Rows of ``batch`` (after row 0 when ``previous`` is None; row 0 too after the row
    ``previous``) whose keys differ from the row before: equal as Spark groups them (NULL
    equals NULL, NaN equals NaN, -0.0 equals 0.0)."""
    n = batch.num_rows
    skip = 1 if previous is None else 0
    new = np.zeros(n - skip, dtype=bool)
    for k in keys:
        column = batch.column(k)
        before = column.slice(0, n - 1) if previous is None else pa.concat_arrays([previous.column(k),
                                                                                   column.slice(0, n - 1)])
        new |= _differ(before, column.slice(skip))
    return np.flatnonzero(new) + skip


def _differ(a: pa.Array, b: pa.Array) -> np.ndarray:
    """Row by row: do ``a`` and ``b`` hold different keys, compared as :func:`partition_starts` says?
    (Keys of the types the caller lets through: numbers, strings, binary, booleans, dates,
    timestamps.)"""
    differ = pc.not_equal(a, b)
    if pa.types.is_floating(a.type):
        differ = pc.and_not(differ, pc.and_(pc.is_nan(a), pc.is_nan(b)))
    a_null, b_null = pc.is_null(a), pc.is_null(b)
    either = pc.or_(a_null, b_null)
    return pc.if_else(either, pc.xor(a_null, b_null), differ).to_numpy(zero_copy_only=False)


@with_worker_fault  # the worker's version, found by name when the closures above are unpickled
def _evaluated(mp: MultiPlan, table: pa.Table, starts: np.ndarray, keys: Sequence[str], ts: str, mask: str,
               values: Sequence[str], names: Sequence[str]) -> pa.Table:
    """The output rows of the partitions of ``table`` starting at rows ``starts``."""
    t = table.column(ts).combine_chunks().to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    m = table.column(mask).combine_chunks().to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    cols = [column_arrays(table.column(v).combine_chunks(), vt) for v, vt in zip(values, mp.columns)]
    if len(starts) > 1 and laid_end_to_end(mp):
        try:
            laid = evaluate_partitions(mp, t, m, cols, starts)
        except (CountOverflowError, MemoryError):  # one partition's: found and reported one by one
            laid = None
        if laid is not None:
            results, parts = laid
            rows = np.concatenate([p for p in parts if p is not None] or [np.zeros(0, dtype=np.int64)])
            at = pa.array(starts[rows])
            return _table(table, keys, [table.column(k).take(at) for k in keys], multi_result_arrays(mp, results),
                          names)
    ends = [*starts[1:].tolist(), len(t)]
    pieces = []
    for lo, hi in zip(starts.tolist(), ends):
        arrays = _one_partition(mp, t[lo:hi], m[lo:hi], [(v[lo:hi], ok[lo:hi]) for v, ok in cols],
                                table.slice(lo, 1), keys)
        n = len(arrays[0])
        pieces.append(_table(table, keys, [pa.repeat(table.column(k)[lo], n) for k in keys], arrays, names))
    return pa.concat_tables(pieces) if len(pieces) != 1 else pieces[0]


def _one_partition(mp: MultiPlan, t: np.ndarray, m: np.ndarray, cols: list[Column], first: pa.Table,
                   keys: Sequence[str]) -> list[pa.Array]:
    fields = contract.multi_result_fields(mp)
    try:
        results = evaluate_many(mp, t, m, cols)
    except CountOverflowError as exc:
        message = str(exc.with_partition(tuple(first.column(k)[0].as_py() for k in keys)))
        return [pa.nulls(1, arrow_type(sql)) for _, sql in fields] + [pa.array([message])]
    except MemoryError:  # numpy's failed allocation; the worker itself is still alive
        message = out_of_memory(repr(tuple(first.column(k)[0].as_py() for k in keys)), len(t))
        return [pa.nulls(1, arrow_type(sql)) for _, sql in fields] + [pa.array([message])]
    return multi_result_arrays(mp, results)


def _table(table: pa.Table, keys: Sequence[str], key_arrays: list, arrays: list[pa.Array],
           names: Sequence[str]) -> pa.Table:
    """Output rows: the keys (-0.0 as 0.0, as Spark's grouping gives it), then ``arrays``."""
    key_fields = [table.schema.field(k) for k in keys]
    key_arrays = [pc.add(a, pa.scalar(0.0, f.type)) if pa.types.is_floating(f.type) else a
                  for a, f in zip(key_arrays, key_fields)]
    return pa.Table.from_arrays([*key_arrays, *arrays], schema=pa.schema(
        [*key_fields, *(pa.field(name, a.type) for name, a in zip(names, arrays))]))


__all__ = ["ROWS_PER_CALL", "grouped_pass", "partition_starts", "sorted_pass",
           "whole_partitions"]
