"""The live operator in the JVM (``sparkseq/jvm/SparkSeqLive.java``) == the batch answer, and == the Python one.

Random plans of the JVM live shapes (:func:`sql_rewrites.generation.live.jvm_live_shape`: SEQ of 1-6
positive elements; with SLIDE middle negation and COUNT, SUM, AVG, MIN, MAX of one column,
without SLIDE COUNT(*) and COUNT(X), negation only without WITHIN) stream through both live
operators (``sparkseq.path=jvm`` and ``grouped``), each compared with the batch
MATCH_AGGREGATE over the rows that were not late (:func:`tests.spark.test_spark_live.run_case`:
ties, late rows, NULL, NaN and infinities). Then: a count past BIGINT fails both operators
with the same message naming the partition, and is exact as DECIMAL; a checkpoint written by
one operator is refused by the other, and JVM state of another layout version is refused;
where the class cannot load the stream runs on the Python operator after one warning
(tests/spark/test_spark_jvm_without_jar.py).
kill -9 and restart: tests/spark/test_spark_live_state.py (its statement runs on the JVM operator).
"""

from __future__ import annotations

import dataclasses
import math
import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import sparkseq
from sparkseq.running import live
from sparkseq.spark.jvm_path import jvm_path_missing
from sql_rewrites.errors import StreamingError
from sql_rewrites.generation.live import jvm_live_shape
from tests.kernels.test_kernel_oracle import events, plans
from tests.spark.test_spark_live import plain_text, run_case
from tests.spark.test_spark_live_state import FUNNEL, stream_args, write_json_files
from tests.support import live_cases, oracle
from tests.support.doubles import with_non_finite
from udafs.plan import CountType, Element, Measure, MeasureKind, Plan, ValueType

SETTINGS = settings(max_examples=2, deadline=None, suppress_health_check=list(HealthCheck),
                    phases=[Phase.explicit, Phase.reuse, Phase.generate])
COUNTS = (MeasureKind.COUNT_STAR, MeasureKind.COUNT)


@st.composite
def jvm_live_plans(draw: st.DrawFn, window: str) -> Plan:
    """Random plans cut down to the JVM live shapes (module docstring)."""
    negation = window != "within" and draw(st.booleans())
    plan = draw(plans(max_len=6, max_kleene=0, window=window, middle_negation=negation, sql=True))
    column = draw(st.integers(0, 1))  # the one value column read (i BIGINT, f DOUBLE), with SLIDE
    kept = [m for m in plan.measures
            if m.kind in COUNTS or (plan.slide is not None and m.column == column)]
    negations = (0, *plan.negations[1:-1], 0) if window != "within" else (0,) * (plan.length + 1)
    count_type = draw(st.sampled_from([CountType.BIGINT, CountType.DECIMAL]))
    plan = dataclasses.replace(plan, negations=negations, measures=tuple(kept), count_type=count_type)
    read = sorted({m.column for m in plan.measures if m.column is not None})
    compiled = dataclasses.replace(plan, columns=tuple(plan.columns[c] for c in read),
                                   measures=tuple(dataclasses.replace(m, column=None if m.column is None else 0)
                                                  for m in plan.measures))
    assert jvm_live_shape(compiled) is None, jvm_live_shape(compiled)  # what the SQL compiles to
    return plan


@pytest.fixture(autouse=True)
def jvm_loads(spark) -> None:
    """Else ``sparkseq.path=jvm`` would run the Python operator (after a warning)."""
    assert jvm_path_missing(spark) is None


@pytest.mark.parametrize("window", ["slide", "within", "none"])
def test_random_jvm_live_plans_match_the_batch_answer_on_both_operators(spark, tmp_path: Path, window: str) -> None:
    @SETTINGS
    @given(jvm_live_plans(window), st.data())
    def check(plan: Plan, data: st.DataObject) -> None:
        groups = data.draw(st.lists(events(plan, max_rows=12, max_ts=20), min_size=1, max_size=8))
        seed = data.draw(st.integers(0, 2**32 - 1))
        for path in ("jvm", "grouped"):
            run_case(spark, tmp_path, plan, groups, seed, plain_text(plan), path=path)

    check()


def test_zero_count_windows_and_non_finite_sums_on_the_jvm_operator(spark, tmp_path: Path) -> None:
    """Sparse partitions and a negation make most windows hold no match (COUNT 0, NULL
    sums, emitted once like the others); DOUBLE values hold NaN and infinities."""
    plan = Plan(symbols=("S0", "S1", "S2", "S3"), elements=(Element(0), Element(1), Element(2)),
                negations=(0, 8, 0, 0), within=6, slide=2, columns=(ValueType.INT, ValueType.FLOAT),
                measures=(Measure(MeasureKind.COUNT_STAR, name="n"), Measure(MeasureKind.SUM, 2, 1, "s"),
                          Measure(MeasureKind.MAX, 0, 1, "hi"), Measure(MeasureKind.AVG, 2, 1, "a")))
    rng = np.random.default_rng(3)
    groups = []
    for _ in range(30):
        n = int(rng.integers(1, 15))
        ts = sorted(rng.integers(0, 40, n).tolist())
        values = ([None] * n, with_non_finite(rng, rng.normal(size=n), share=0.2).tolist())
        groups.append(oracle.Events(ts, rng.choice([1, 2, 4, 8, 0], n).tolist(), values))
    assert run_case(spark, tmp_path, plan, groups, 5, plain_text(plan), path="jvm") > 100


WIDE = """SELECT g, window_start, window_end, n, s, a, lo, hi FROM {source} MATCH_AGGREGATE (
  PARTITION BY g ORDER BY ts PATTERN SEQ(A, !C, B) TYPE BY tp
  MEASURES COUNT(*) AS n, SUM(B.d) AS s, AVG(B.d) AS a, MIN(A.d) AS lo, MAX(B.d) AS hi
  WITHIN INTERVAL 20 SECONDS SLIDE INTERVAL 10 SECONDS) AS m"""


def test_wide_decimals_on_both_operators_equal_the_batch_answer(spark, tmp_path: Path) -> None:
    """A DECIMAL(30, 4) value column, whose unscaled integers pass BIGINT (the JVM operator reads
    it as its plain text and keeps it as a BigInteger in its state), with NULLs, ties and
    negative values: SUM, AVG, MIN and MAX of every window equal the batch answer, on both
    operators. Files are cut in time order and the watermark lags by a second, so no row is late."""
    rng = np.random.default_rng(11)
    n = 300
    ts = np.sort(rng.integers(0, 120, n))
    unit = pa.array([None if rng.random() < 0.1 else live_cases.Decimal(int(rng.integers(-10**9, 10**9)))
                     * live_cases.Decimal("1234567890123.4567") for _ in range(n)], pa.decimal128(30, 4))
    table = pa.table({"g": pa.array(rng.integers(0, 4, n), pa.int32()),
                      "ts": pa.array(live_cases.T0 + ts * live_cases.SECOND, pa.timestamp("us", tz="UTC")),
                      "tp": pa.array(rng.choice(["A", "B", "C"], n, p=[0.45, 0.45, 0.1])), "d": unit})
    assert max(abs(v) for v in unit.to_pylist() if v is not None) * 10**4 > 2**63
    schema = "g INT, ts TIMESTAMP, tp STRING, d DECIMAL(30, 4)"
    spark.createDataFrame(table, schema).createOrReplaceTempView("wide_batch")
    want = live_cases.rows_by_key([r.asDict() for r in sparkseq.sql(spark, WIDE.format(source="wide_batch")).collect()],
                                  windows=True)
    assert len(want) > 30 and any(r["s"] is None for r in want.values()) and any(r["n"] > 1 for r in want.values())
    cuts = np.searchsorted(ts, [40, 80, 10**9])  # three files of whole seconds, in time order
    flush = pa.table({"g": pa.array([live_cases.FLUSH], pa.int32()),
                      "ts": pa.array([live_cases.T0 + 10**6 * live_cases.SECOND], pa.timestamp("us", tz="UTC")),
                      "tp": pa.array(["A"]), "d": pa.array([None], pa.decimal128(30, 4))})
    for path in ("jvm", "grouped"):
        source = tmp_path / f"wide_{path}"
        source.mkdir()
        spark.readStream.schema(schema).parquet(str(source)).withWatermark("ts", "1 second") \
            .createOrReplaceTempView("wide_live")
        spark.conf.set("sparkseq.path", path)
        try:
            frame = sparkseq.sql(spark, WIDE.format(source="wide_live"))
        finally:
            spark.conf.unset("sparkseq.path")
        batches: list[tuple[int, list[dict]]] = []
        query = (frame.writeStream.foreachBatch(live_cases.collector(batches)).outputMode("append")
                 .option("checkpointLocation", str(tmp_path / f"ck_wide_{path}")).start())
        try:
            for f, (lo, hi) in enumerate(zip([0, *cuts[:-1]], cuts)):
                pq.write_table(table.slice(lo, hi - lo), tmp_path / "part.parquet")
                os.replace(tmp_path / "part.parquet", source / f"part-{f}.parquet")
                query.processAllAvailable()
            pq.write_table(flush, tmp_path / "part.parquet")
            os.replace(tmp_path / "part.parquet", source / "part-9.parquet")
            query.processAllAvailable()
        finally:
            query.stop()
        emitted = [r for _, rows in sorted(batches, key=lambda b: b[0]) for r in rows]
        live_cases.assert_rows_equal(live_cases.rows_by_key(emitted, windows=True), want)


def one_key_stream(spark, tmp: Path, name: str, count_type: CountType, path: str) -> list[dict]:
    """SEQ(A, A, A, A, A, A) over 5,000 rows of one key at distinct seconds, all in one SLIDE
    window (windows align to the epoch: [T0 - 7,200 s, T0 + 12,800 s)), so C(5000, 6) > 2^63
    matches; then a far row that closes it."""
    plan = Plan(symbols=("S0",), elements=(Element(0),) * 6, negations=(0,) * 7, within=20_000, slide=20_000,
                measures=(Measure(MeasureKind.COUNT_STAR, name="n"),), count_type=count_type)
    source = tmp / f"src_{name}"
    source.mkdir()
    n = 5_000
    table = pa.table({"g": pa.array([7] * n + [live_cases.FLUSH], pa.int32()),
                      "ts": pa.array([live_cases.T0 + s * live_cases.SECOND for s in [*range(n), 10**6]],
                                     pa.timestamp("us", tz="UTC")),
                      "mask": pa.array([1] * (n + 1), pa.int64()), "i": pa.nulls(n + 1, pa.int64()),
                      "f": pa.nulls(n + 1, pa.float64()), "s": pa.nulls(n + 1, pa.float64())})
    pq.write_table(table, source / "part-0.parquet")
    spark.readStream.schema(live_cases.SCHEMA).parquet(str(source)).withWatermark("ts", "1 second") \
        .createOrReplaceTempView("one_key")
    spark.conf.set("sparkseq.path", path)
    try:
        frame = sparkseq.sql(spark, plain_text(plan)("one_key"))
    finally:
        spark.conf.unset("sparkseq.path")
    batches: list[tuple[int, list[dict]]] = []
    query = (frame.writeStream.foreachBatch(live_cases.collector(batches)).outputMode("append")
             .option("checkpointLocation", str(tmp / f"ck_{name}")).trigger(availableNow=True).start())
    query.awaitTermination()  # the last, data-less micro-batch moves the watermark past the window
    return [r for _, rows in batches for r in rows if r["g"] != live_cases.FLUSH]


def test_a_count_past_bigint_fails_both_operators_alike_and_is_exact_as_decimal(spark, tmp_path: Path) -> None:
    failures = []
    for path in ("jvm", "grouped"):
        with pytest.raises(Exception) as info:
            one_key_stream(spark, tmp_path, f"big_{path}", CountType.BIGINT, path)
        failures.append(live.failure_message(str(info.value)))
    assert failures[0] == failures[1]
    assert "does not fit" in failures[0] and '{"g":7}' in failures[0]
    rows = one_key_stream(spark, tmp_path, "decimal", CountType.DECIMAL, "jvm")
    assert [int(r["n"]) for r in rows] == [math.comb(5_000, 6)]


def test_a_checkpoint_of_one_operator_is_refused_by_the_other(spark, tmp_path: Path) -> None:
    """The JVM operator's state names its layout version and statement; a run that would use
    the other operator on the checkpoint is refused before it starts, naming both."""
    write_json_files(tmp_path / "src", files=2, keys=3, seconds_per_file=15)
    text = FUNNEL.format(source="events")
    for path, other, wrote in (("jvm", "grouped", "JVM"), ("grouped", "jvm", "Python")):
        args = stream_args(tmp_path, path, max_files_per_trigger=None)
        spark.conf.set("sparkseq.path", path)
        try:
            from sparkseq.commands import live_cli

            live_cli.start(spark, text, args).awaitTermination()
            spark.conf.set("sparkseq.path", other)
            with pytest.raises(StreamingError, match=f"written by sparkseq's {wrote} live operator"):
                live_cli.start(spark, text, args)
        finally:
            spark.conf.unset("sparkseq.path")
    blobs = [bytes(r[0]) for r in spark.read.format("statestore").load(str(tmp_path / "ck_jvm"))
             .select("value.groupState.state").collect()]
    states = [live.jvm_state(b) for b in blobs]
    assert len(states) == 3 and all(s is not None and s.next_window is not None for s in states)
    older = blobs[0][:4] + bytes([0]) + blobs[0][5:]
    with pytest.raises(StreamingError, match="layout version 0; this sparkseq reads layout version 2"):
        live.jvm_state(older)
