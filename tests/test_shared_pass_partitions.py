"""Property tests: the sorted shared pass (:mod:`udafs.workers.shared`) finds exactly the
partitions Spark's grouping makes in rows sorted by their keys — NULL equal to NULL, NaN
to NaN, -0.0 to 0.0, composite keys, any batch boundaries — and gathers whole partitions
into calls without splitting one or losing a row."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from udafs.workers.shared import partition_starts, whole_partitions

FLOATS = st.sampled_from([None, float("nan"), -0.0, 0.0, 1.5, -2.0, math.inf])
STRINGS = st.sampled_from([None, "", "a", "b", "ab"])
INTS = st.one_of(st.none(), st.integers(-3, 3), st.just(2 ** 62))


def grouping_key(row: tuple) -> tuple:
    """A key as Spark groups it: NaN one value, -0.0 = 0.0, NULL one value."""
    return tuple("NaN" if isinstance(v, float) and math.isnan(v) else (0.0 if v == 0 else v) for v in row)


def order_key(row: tuple) -> tuple:
    """Spark's ascending order: NULLs first, NaN above every other double."""
    def one(v: object) -> tuple:
        if v is None:
            return (0, 0)
        if isinstance(v, float) and math.isnan(v):
            return (2, 0)
        return (1, v)
    return tuple(one(v) for v in row)


@st.composite
def sorted_batches(draw: st.DrawFn) -> tuple[list[tuple], list[pa.RecordBatch]]:
    """Rows of (double, string, bigint) keys sorted as Spark sorts them (ties in any order),
    cut into record batches at random rows (empty batches included)."""
    rows = draw(st.lists(st.tuples(FLOATS, STRINGS, INTS), max_size=40))
    rows.sort(key=order_key)
    table = pa.table({"kd": pa.array([r[0] for r in rows], pa.float64()),
                      "ks": pa.array([r[1] for r in rows], pa.string()),
                      "ki": pa.array([r[2] for r in rows], pa.int64()),
                      "row": pa.array(range(len(rows)), pa.int64())})
    cuts = sorted(draw(st.lists(st.integers(0, len(rows)), max_size=6)))
    bounds = [0, *cuts, len(rows)]
    return rows, [b for lo, hi in zip(bounds, bounds[1:]) for b in table.slice(lo, hi - lo).to_batches() or
                  [pa.RecordBatch.from_pylist([], schema=table.schema)]]


@settings(max_examples=400, deadline=None)
@given(data=sorted_batches(), rows_per_call=st.integers(1, 50))
def test_whole_partitions_are_spark_groups(data: tuple[list[tuple], list[pa.RecordBatch]], rows_per_call: int) -> None:
    rows, batches = data
    want = [len(list(g)) for _, g in itertools.groupby(rows, key=grouping_key)]
    got, seen = [], []
    for table, starts in whole_partitions(iter(batches), ["kd", "ks", "ki"], rows_per_call):
        ends = [*starts[1:].tolist(), table.num_rows]
        assert starts[0] == 0 and all(a < b for a, b in zip(starts.tolist(), ends))
        got += [b - a for a, b in zip(starts.tolist(), ends)]
        seen += table.column("row").to_pylist()
    assert got == want
    assert seen == list(range(len(rows)))


def test_starts_after_the_previous_batch() -> None:
    batch = pa.RecordBatch.from_pydict({"k": pa.array([1.0, float("nan"), float("nan"), None, None])})
    previous = pa.RecordBatch.from_pydict({"k": pa.array([-0.0])})
    assert partition_starts(batch, ["k"], None).tolist() == [1, 3]
    assert partition_starts(batch, ["k"], previous).tolist() == [0, 1, 3]
    same = pa.RecordBatch.from_pydict({"k": pa.array([0.0, 0.0])})
    assert partition_starts(same, ["k"], previous).tolist() == []
    assert partition_starts(same, [], previous).tolist() == []  # no keys: one partition
    assert np.array_equal(partition_starts(batch.slice(0, 1), ["k"], None), np.zeros(0))
