"""The streaming path: the Arrow UDTF handler on its own, then end to end on local Spark.

The handler must give the same rows as the grouped-aggregate UDF whatever the Arrow
batch boundaries, with several keys per bucket and keys spanning batches.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.errors import PythonException, SparkRuntimeException

import sparkseq
from sparkseq.spark.session import ARROW_BATCH_ROWS
from tests import oracle
from tests.doubles import identical, with_non_finite
from tests.spark_cases import assert_same, events_frame, expected, got
from tests.test_kernel_oracle import events, plans
from udafs.errors import CountOverflowError, InputDataError
from udafs.kernels import evaluate_group
from udafs.plan import Element, Measure, MeasureKind, Plan, ValueType
from udafs.workers.grouped import result_arrays
from udafs.workers.streaming import MatchStream

SUMS = Plan(symbols=("A", "B", "C"), elements=(Element(0), Element(1, kleene=True), Element(2)),
            negations=(0, 0, 4, 0), within=40, slide=10,
            measures=(Measure(MeasureKind.COUNT_STAR, name="n"), Measure(MeasureKind.SUM, 1, 0, "s"),
                      Measure(MeasureKind.MAX, 2, 1, "hi"), Measure(MeasureKind.AVG, 0, 1, "avg")),
            columns=(ValueType.INT, ValueType.FLOAT))


def random_rows(n_keys: int, rows_per_key: int, seed: int = 1) -> pa.RecordBatch:
    """Input in the UDTF layout (bucket, key, ts, mask, i, f), sorted by bucket then time;
    keys 0/1 share bucket 0 and 2/3 share bucket 1, so their rows interleave."""
    rng = np.random.default_rng(seed)
    key = np.repeat(np.arange(n_keys), rows_per_key)
    ts = rng.integers(0, 20 * rows_per_key, len(key))
    order = np.lexsort((ts, key // 2))
    ints = rng.integers(-9, 9, len(key))
    return pa.RecordBatch.from_arrays([
        pa.array((key // 2)[order]), pa.array([f"key{k}" for k in key[order]]), pa.array(ts[order]),
        pa.array(rng.integers(1, 8, len(key))[order]), pa.array(ints[order], mask=(ints % 5 == 0)[order]),
        pa.array(with_non_finite(rng, rng.normal(size=len(key)))[order])],
        names=["b", "customer", "ts", "mask", "i", "f"])


def run_handler(rows: pa.RecordBatch, plan: Plan, batch: int) -> pa.Table:
    handler = MatchStream()
    out = [t for s in range(0, rows.num_rows, batch)
           for t in handler.eval(rows.slice(s, batch), pa.array([plan.to_json()]))]
    return pa.concat_tables(out + list(handler.terminate()))


def per_key(rows: pa.RecordBatch, plan: Plan) -> pa.Table:
    """The expected rows: evaluate_group on each key's rows at once."""
    tables = []
    keys = rows.column(1).to_numpy(zero_copy_only=False)
    for k in sorted(set(keys)):
        sel = rows.filter(pa.array(keys == k))
        cols = [(sel.column(j).fill_null(0).to_numpy(), sel.column(j).is_valid().to_numpy(zero_copy_only=False))
                for j in (4, 5)]
        res = evaluate_group(plan, sel.column(2).to_numpy(), sel.column(3).to_numpy(), cols)
        arrays = result_arrays(plan, res)
        tables.append(pa.table([pa.array([k] * len(arrays[0]))] + arrays,
                               names=["k0", "window_start", "window_end", "n", "s", "hi", "avg"]))
    return pa.concat_tables(tables)


@pytest.mark.parametrize("batch", [1, 7, 64, 10_000])
def test_handler_is_independent_of_batch_boundaries(batch: int) -> None:
    rows = random_rows(n_keys=5, rows_per_key=60)
    have = run_handler(rows, SUMS, batch).rename_columns(["k0", "window_start", "window_end", "n", "s", "hi", "avg"])
    want = per_key(rows, SUMS)
    order = [("k0", "ascending"), ("window_start", "ascending")]
    have, want = have.sort_by(order), want.sort_by(order)
    assert have.column("k0").to_pylist() == want.column("k0").to_pylist()
    for name in ["window_start", "window_end", "n", "s", "hi"]:
        assert identical(have.column(name).to_pylist(), want.column(name).to_pylist()), name
    np.testing.assert_allclose(have.column("avg").to_numpy(zero_copy_only=False),
                               want.column("avg").to_numpy(zero_copy_only=False), rtol=1e-12)


@pytest.mark.parametrize("batch", [1, 5, 10_000])
def test_handler_groups_nan_keys_as_group_by_does(batch: int) -> None:
    """A DOUBLE partition key: its NaN rows are one partition (as GROUP BY makes them),
    not one per row, whatever the batches; -0.0 and 0.0 are one partition too."""
    rng = np.random.default_rng(3)
    n = 40
    key = rng.choice([np.nan, 1.0, -0.0, 0.0], n)
    ts = np.sort(rng.integers(0, 100, n))
    mask = rng.integers(1, 8, n)
    rows = pa.RecordBatch.from_arrays([pa.array(np.zeros(n, np.int64)), pa.array(key), pa.array(ts), pa.array(mask),
                                       pa.array(rng.integers(-9, 9, n)), pa.array(rng.normal(size=n))],
                                      names=["b", "k", "ts", "mask", "i", "f"])
    have = run_handler(rows, SUMS, batch)
    for group, sel in (("NaN", np.isnan(key)), ("1.0", key == 1.0), ("0.0", key == 0.0)):
        cols = [(rows.column(j).to_numpy()[sel], np.ones(sel.sum(), dtype=bool)) for j in (4, 5)]
        want = evaluate_group(SUMS, ts[sel], mask[sel], cols)
        keys = have.column(0).to_numpy(zero_copy_only=False)
        mine = have.filter(pa.array(np.isnan(keys) if group == "NaN" else keys == float(group)))
        assert mine.column("window_start").to_pylist() == want.window_start.tolist(), group
        assert mine.column(3).to_pylist() == want.values[0].tolist(), group  # k0, window_start, window_end, n


def test_handler_refuses_rows_out_of_time_order() -> None:
    rows = random_rows(n_keys=1, rows_per_key=10)
    backwards = rows.take(pa.array(np.arange(rows.num_rows)[::-1]))
    with pytest.raises(InputDataError, match='^partition {"customer":"key0"}: .* order'):
        run_handler(backwards, SUMS, 4)


def test_handler_overflow_names_the_partition() -> None:
    n = 70
    rows = pa.RecordBatch.from_arrays([pa.array(np.zeros(n, np.int64)), pa.array(["big"] * n),
                                       pa.array(np.arange(n)), pa.array(np.ones(n, np.int64))],
                                      names=["b", "customer", "ts", "mask"])
    plan = Plan(symbols=("A",), elements=(Element(0, kleene=True),), negations=(0, 0))
    with pytest.raises(CountOverflowError, match='in partition {"customer":"big"}'):
        run_handler(rows, plan, 16)


@contextlib.contextmanager
def batch_rows(spark, rows: int) -> Iterator[None]:
    """Arrow batches of ``rows`` rows, then the session's setting back (not Spark's default)."""
    old = spark.conf.get(ARROW_BATCH_ROWS)
    spark.conf.set(ARROW_BATCH_ROWS, str(rows))
    try:
        yield
    finally:
        spark.conf.set(ARROW_BATCH_ROWS, old)


@pytest.fixture
def small_batches(spark):
    """Arrow batches of 3 rows, so every key spans several ``eval`` calls."""
    with batch_rows(spark, 3):
        yield


@pytest.mark.parametrize("window", ["none", "within", "slide"])
def test_stream_matches_oracle(spark, small_batches, window: str) -> None:
    @settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.data())
    def check(data: st.DataObject) -> None:
        plan = data.draw(plans(window=window, sql=True))
        groups = [ev for ev in data.draw(st.lists(events(plan), min_size=1, max_size=25)) if oracle.cheap(plan, ev)]
        events_frame(spark, groups).createOrReplaceTempView("cases")
        df = sparkseq.aggregate(spark, plan, "cases", keys=["g"], values=["i", "f"], streaming=True)
        assert_same(plan, got(plan, df.collect()), expected(plan, groups))

    check()


def big_view(spark) -> None:
    """8 customers x 2,000 rows, times in [0, 5,000): many windows and batches per key."""
    spark.range(16_000).selectExpr(
        "concat('c', id % 8) AS customer", "CAST(pmod(xxhash64(id), 5000) AS BIGINT) AS ts",
        "shiftleft(1L, CAST(pmod(xxhash64(id, 1), 3) AS INT)) AS mask",
        "IF(id % 7 = 0, NULL, pmod(id, 11)) AS i", "sin(id) AS f").createOrReplaceTempView("big")


@pytest.mark.parametrize("ts_bounds", [None, (0, 4_999)], ids=["two-column sort", "packed sort key"])
def test_stream_equals_udaf_on_many_batches(spark, ts_bounds: tuple[int, int] | None) -> None:
    big_view(spark)
    kwargs = dict(keys=["customer"], values=["i", "f"])
    with batch_rows(spark, 500):
        stream = sparkseq.aggregate(spark, SUMS, "big", streaming=True, ts_bounds=ts_bounds, **kwargs).collect()
        batch = sparkseq.aggregate(spark, SUMS, "big", **kwargs).collect()
    assert len(batch) > 8 * 400 and sum(r.n for r in batch) > 1000
    key = lambda r: (r.customer, r.window_start)  # noqa: E731
    stream, batch = sorted(stream, key=key), sorted(batch, key=key)
    assert [r[:6] for r in stream] == [r[:6] for r in batch]
    np.testing.assert_allclose([np.nan if r.avg is None else r.avg for r in stream],
                               [np.nan if r.avg is None else r.avg for r in batch], rtol=1e-12)


def test_stream_rejects_times_outside_declared_bounds(spark) -> None:
    big_view(spark)
    with pytest.raises(SparkRuntimeException, match="outside the declared ts_bounds"):
        sparkseq.aggregate(spark, SUMS, "big", keys=["customer"], values=["i", "f"], streaming=True,
                           ts_bounds=(0, 1000)).collect()


def test_stream_overflow_names_the_partition(spark) -> None:
    spark.range(70).selectExpr("'cust-42' AS customer", "id AS ts", "1L AS mask").createOrReplaceTempView("many")
    plan = Plan(symbols=("A",), elements=(Element(0, kleene=True),), negations=(0, 0))
    with pytest.raises(PythonException, match='in partition {"customer":"cust-42"}'):
        sparkseq.aggregate(spark, plan, "many", keys=["customer"], streaming=True).collect()


def test_stream_sql_reads_like_the_recipe(spark) -> None:
    big_view(spark)
    sql = sparkseq.stream_query(spark, SUMS, "big", keys=["customer"], values=["i", "f"], ts_bounds=(10, 5_000))
    assert "SELECT pmod(xxhash64(`customer`), 562949953421312) AS `__sparkseq_b`" in sql  # 2**49 buckets
    assert "DISTRIBUTE BY `__sparkseq_b` SORT BY shiftleft(`__sparkseq_b`, 13) | (`__sparkseq_ts` - 10)" in sql
