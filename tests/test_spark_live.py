"""MATCH_AGGREGATE over a live stream == the batch MATCH_AGGREGATE over the same rows.

Each example writes random partitions as parquet files (:mod:`tests.live_cases`): rows
in a random arrival order (late ones included), one file per micro-batch, a real file
source with a watermark, a checkpoint in a temp dir. ``sparkseq.sql`` returns a
streaming DataFrame; ``foreachBatch`` collects what it emits. Then:

* SLIDE: every (partition, window) row once, equal to the batch row;
* WITHIN without SLIDE, no window: the last row emitted per partition equals the batch
  row, and no partition is emitted twice in a row with the same values;
* late rows: Spark's ``numRowsDroppedByWatermark`` equals the number of late rows.

A streaming query costs seconds per micro-batch, so examples are few and each holds
up to 12 partitions.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import sparkseq
from tests import live_cases, oracle, predicate_cases, sql_cases
from tests.doubles import with_non_finite
from tests.test_kernel_oracle import events, plans
from tests.test_kernel_predicates import ext_events, ext_plans
from udafs.plan import Element, Measure, MeasureKind, Plan, Strategy, ValueType

# no shrinking: a failing example is reported as found (each costs seconds of streaming)
SETTINGS = settings(max_examples=2, deadline=None, suppress_health_check=list(HealthCheck),
                    phases=[Phase.explicit, Phase.reuse, Phase.generate])
_runs = itertools.count()


def run_case(spark, tmp: Path, plan: Plan, groups: list[oracle.Events], seed: int, text_of,
             every_row_passes: bool = False) -> int:
    """Stream the case through ``text_of(source)`` and compare with the batch answer
    (returns the number of batch rows compared)."""
    rng = np.random.default_rng(seed)
    run = next(_runs)
    a = live_cases.arrival(plan, groups, delay=int(rng.integers(0, 4)), jitter=int(rng.integers(0, 6)),
                           files=int(rng.integers(2, 5)), rng=rng, every_row_passes=every_row_passes)
    source = tmp / f"src{run}"
    source.mkdir()
    files = live_cases.write_files(a, source, 1 << plan.elements[0].symbol)
    spark.readStream.schema(live_cases.SCHEMA).parquet(str(source)).withWatermark(
        "ts", f"{a.delay} seconds").createOrReplaceTempView("live_src")
    frame = sparkseq.sql(spark, text_of("live_src"))
    assert frame.isStreaming
    batches: list[tuple[int, list[dict]]] = []
    mode = "append" if plan.slide is not None else "update"
    query = (frame.writeStream.foreachBatch(live_cases.collector(batches)).outputMode(mode)
             .option("checkpointLocation", str(tmp / f"ck{run}")).start())
    try:
        for path in files:
            live_cases.release(path, source)
            query.processAllAvailable()
        dropped = sum(op["numRowsDroppedByWatermark"] for p in query.recentProgress for op in p["stateOperators"])
    finally:
        query.stop()
    live_cases.accepted_view(spark, a, "live_batch")
    want_rows = [r.asDict() for r in sparkseq.sql(spark, text_of("live_batch")).collect()]
    measures = [m.name for m in plan.measures]
    windows = plan.slide is not None
    want = live_cases.rows_by_key(want_rows, windows)
    emitted = [r for _, rows in sorted(batches, key=lambda b: b[0]) for r in rows]
    if windows:
        have = live_cases.rows_by_key(emitted, windows)
    else:
        have = last_per_partition(emitted, measures)
    live_cases.assert_rows_equal(have, want)
    assert dropped == int(a.late.sum())
    return len(want)


def last_per_partition(rows: list[dict], measures: list[str]) -> dict[tuple, dict]:
    """The last running result per partition (rows in emission order); a partition is
    emitted again only when its values changed."""
    last: dict[tuple, dict] = {}
    for r in rows:
        if r["g"] == live_cases.FLUSH:
            continue
        key = (r["g"], None)
        if key in last:
            assert [last[key][m] for m in measures] != [r[m] for m in measures], f"{key} re-emitted unchanged"
        last[key] = r
    return last


def plain_text(plan: Plan):
    def text(source: str) -> str:
        columns = ["g", *(["window_start", "window_end"] if plan.slide else []),
                   *(f"`{m.name}`" for m in plan.measures)]
        return (f"SELECT {', '.join(columns)} FROM "
                f"{sql_cases.match_aggregate(plan, source, timestamp=True, unit='SECONDS')}")
    return text


@st.composite
def cases(draw: st.DrawFn, **plan_options: object) -> tuple[Plan, list[oracle.Events], int]:
    plan = draw(plans(**plan_options, sql=True))  # SQL refuses SLIDE > WITHIN
    groups = draw(st.lists(events(plan, max_rows=12, max_ts=20), min_size=1, max_size=12))
    return plan, groups, draw(st.integers(0, 2**32 - 1))


@pytest.mark.parametrize("window", ["slide", "within", "none"])
def test_live_equals_batch(spark, tmp_path: Path, window: str) -> None:
    """Negation (leading / trailing with WITHIN), Kleene, every measure and count type."""
    @SETTINGS
    @given(cases(window=window, middle_negation=True, edges=window != "none"))
    def check(case: tuple[Plan, list[oracle.Events], int]) -> None:
        plan, groups, seed = case
        run_case(spark, tmp_path, plan, groups, seed, plain_text(plan))

    check()


def test_live_emits_windows_without_a_match(spark, tmp_path: Path) -> None:
    """Windows holding an instance but no match (COUNT 0, NULL sums) are emitted once,
    when the watermark passes them, like every other window: a long pattern with a
    negation over sparse partitions makes most windows such windows, late rows included."""
    plan = Plan(symbols=("S0", "S1", "S2", "S3"), elements=(Element(0), Element(1), Element(2)),
                negations=(0, 8, 0, 0), within=6, slide=2, columns=(ValueType.INT, ValueType.FLOAT),
                measures=(Measure(MeasureKind.COUNT_STAR, name="n"), Measure(MeasureKind.SUM, 2, 1, "s"),
                          Measure(MeasureKind.MAX, 0, 0, "hi")))
    rng = np.random.default_rng(7)
    groups = []
    for _ in range(30):
        n = int(rng.integers(1, 15))
        ts = sorted(rng.integers(0, 40, n).tolist())
        values = (rng.integers(-5, 5, n).tolist(), with_non_finite(rng, rng.normal(size=n)).tolist())
        groups.append(oracle.Events(ts, rng.choice([1, 2, 4, 8, 0], n).tolist(), values))
    compared = run_case(spark, tmp_path, plan, groups, 11, plain_text(plan))
    batch = sparkseq.sql(spark, plain_text(plan)("live_batch")).collect()
    zero = [r for r in batch if r["n"] == 0 and r["g"] != live_cases.FLUSH]
    assert compared == len(batch) and len(zero) > len(batch) // 2  # the comparison is mostly zero windows


# (key, second, type, v) per file; the watermark delay is 2 s (module docstring of the test below)
BACK_TO_BACK = [
    [("m", 1, "a", 1.0), ("m", 3, "b", 2.0), ("neg", 5, "n", 0.0), ("none", 4, "x", 0.0), ("late", 6, "a", 0.5)],
    [("between", 3, "a", 1.0), ("between", 4, "b", 5.0), ("m", 9, "a", 3.0), ("neg", 12, "n", 0.0)],
    [("late", 2, "b", 7.0), ("m", 7, "n", 0.0), ("m", 11, "b", 4.0), ("last", 13, "a", 1.0), ("last", 15, "n", 0.0),
     ("last", 16, "b", 2.0), ("neg", 20, "n", 0.0), ("m", 26, "a", 0.0)],
]


def test_back_to_back_batches_emit_every_window_the_watermark_passed(spark, tmp_path: Path) -> None:
    """``stream --available-now``, one file per micro-batch, back to back (no batch that
    only moves the watermark in between), two buckets for five keys. Spark drops a row as
    late by the watermark of the batch before (4 s for the last file: late's b at 2 s),
    so rows at or before the watermark of the batch that reads them still count:
    between's at 3 s and 4 s (watermark 4 s; a new key) and m's n at 7 s (watermark
    10 s; a key whose windows up to 4 s were written). Every window the final watermark (24 s) passed — those of
    neg (only rows of the negated symbol: COUNT 0), of last (all its rows in the last
    file) and [18 s, 24 s), which ends at it — is written once and equals the batch row
    over the rows Spark kept; the windows after it are not written."""
    from argparse import Namespace

    import pyarrow as pa
    import pyarrow.parquet as pq

    from sparkseq.commands import live_cli
    from sparkseq.running import live

    schema = "k STRING, ts TIMESTAMP, t STRING, v DOUBLE"
    source, staging = tmp_path / "src", tmp_path / "staging"
    source.mkdir()
    staging.mkdir()
    for f, rows in enumerate(BACK_TO_BACK):
        k, ts, t, v = (list(c) for c in zip(*rows))
        table = pa.table({"k": k, "ts": pa.array([live_cases.T0 + s * live_cases.SECOND for s in ts],
                                                 pa.timestamp("us", tz="UTC")), "t": t, "v": v})
        pq.write_table(table, staging / f"part-{f}.parquet")
        os.utime(staging / f"part-{f}.parquet", (1_000_000 + f, 1_000_000 + f))  # the file source's order
        live_cases.release(staging / f"part-{f}.parquet", source)
    text = ("SELECT k, window_start, window_end, n, sv FROM {} MATCH_AGGREGATE (PARTITION BY k ORDER BY ts "
            "PATTERN SEQ(a, !n, b) TYPE BY t MEASURES COUNT(*) AS n, SUM(b.v) AS sv "
            "WITHIN INTERVAL 6 SECONDS SLIDE INTERVAL 2 SECONDS) AS m")
    args = Namespace(source_dir=source, format="parquet", schema=schema, name="events", watermark="2 seconds",
                     watermark_column=None, checkpoint=tmp_path / "ck", output=tmp_path / "out", trigger="0 seconds",
                     available_now=True, max_files_per_trigger=1, master=None, text=None, file=None)
    spark.conf.set(live.BUCKETS_CONF, "2")
    try:
        query = live_cli.start(spark, text.format("events"), args)
        query.awaitTermination()
    finally:
        spark.conf.unset(live.BUCKETS_CONF)
    progress = sorted(query.recentProgress, key=lambda p: p["batchId"])
    marks = [p["eventTime"].get("watermark") for p in progress]
    reads = [p["numInputRows"] for p in progress]
    assert reads[:4] == [5, 4, 8, 0] and marks[1:4] == [f"2024-01-01T00:00:{s:02d}.000Z" for s in (4, 10, 24)]
    assert sum(op["numRowsDroppedByWatermark"] for p in progress for op in p["stateOperators"]) == 1
    kept = [r for rows in BACK_TO_BACK for r in rows if r[:2] != ("late", 2)]
    spark.createDataFrame([(k, live_cases.T0 // live_cases.SECOND + s, t, v) for k, s, t, v in kept],
                          "k STRING, s BIGINT, t STRING, v DOUBLE").selectExpr(
        "k", "timestamp_seconds(s) AS ts", "t", "v").createOrReplaceTempView("back_to_back_kept")
    batch = [r.asDict() for r in sparkseq.sql(spark, text.format("back_to_back_kept")).collect()]
    final = live_cases.T0 + 24 * live_cases.SECOND
    passed = [r for r in batch if r["window_end"].timestamp() * live_cases.SECOND <= final]
    assert len(passed) < len(batch)  # the windows after the final watermark stay open
    written = [r.asDict() for r in spark.read.parquet(str(args.output)).collect()]
    live_cases.assert_rows_equal(live_cases.rows_by_key([{**r, "g": r["k"]} for r in written], True),
                                 live_cases.rows_by_key([{**r, "g": r["k"]} for r in passed], True))
    start = live_cases.T0 // live_cases.SECOND
    by_key = {k: sorted((int(r["window_start"].timestamp()) - start, r["n"]) for r in written if r["k"] == k)
              for k in ("neg", "last", "between", "none", "m")}
    assert by_key["neg"] == [(0, 0), (2, 0), (4, 0), (8, 0), (10, 0), (12, 0), (16, 0), (18, 0)]
    assert by_key["between"] == [(-2, 0), (0, 1), (2, 1), (4, 0)] and by_key["none"] == []
    assert by_key["m"] == [(-4, 0), (-2, 1), (0, 1), (2, 0), (4, 0), (6, 1), (8, 1), (10, 0)]
    assert by_key["last"] == [(8, 0), (10, 0), (12, 0), (14, 0), (16, 0)]  # a13 n15 b16: the n forbids it


@pytest.mark.parametrize("strategy", [Strategy.SKIP_TILL_ANY_MATCH, Strategy.SKIP_TILL_NEXT_MATCH,
                                      Strategy.PARTITION_CONTIGUITY])
def test_live_predicates_and_strategies(spark, tmp_path: Path, strategy: Strategy) -> None:
    """Cross-event and iterator predicates and strategies, per SLIDE window; PARTITION
    CONTIGUITY ranks count rows of no symbol."""
    @settings(SETTINGS, max_examples=1)
    @given(st.data())
    def check(data: st.DataObject) -> None:
        plan = predicate_cases.sql_expressible(
            data.draw(ext_plans(window="slide", strategy=strategy, need_pred=True, sql=True)))
        groups = data.draw(st.lists(ext_events(plan, max_rows=12, max_ts=20), min_size=1, max_size=10))
        seed = data.draw(st.integers(0, 2**32 - 1))

        def text(source: str) -> str:
            columns = ["g", "window_start", "window_end", *(f"`{m.name}`" for m in plan.measures)]
            body = predicate_cases.match_aggregate(plan, source, seed=seed, timestamp=True, unit="SECONDS")
            return f"SELECT {', '.join(columns)} FROM {body}"

        run_case(spark, tmp_path, plan, groups, seed, text)

    check()


TICKERS = ("DELL", "IBM", "GS", "JPM", "Harvard", "MIT", "ANAT")
SECTORS = [("DELL", "Computer"), ("IBM", "Computer"), ("GS", "Finance"), ("JPM", "Finance"),
           ("Harvard", "Education"), ("MIT", "Education"), ("ANAT", "Insurance"), ("Computer", "Technology"),
           ("Finance", "Services"), ("Education", "Services"), ("Insurance", "Services")]
# one partition with a match for sure (DELL, GS, ANAT), NaN and infinity among its values
SURE_MATCH = oracle.Events(ts=[1, 2, 2, 4], mask=[0, 2, 3, 6],
                           values=([1, 2, None, 3], [0.5, 1.0, 2.5, None],
                                   [float("nan"), float("inf"), 1.0, float("nan")]))


@st.composite
def ticker_groups(draw: st.DrawFn, plan: Plan) -> list[oracle.Events]:
    """Partitions whose ``mask`` column is an index into :data:`TICKERS` (pattern companies
    drawn more often), values with NULLs, NaN and infinities."""
    groups = draw(st.lists(ext_events(plan, max_rows=14, max_ts=20), min_size=1, max_size=7))
    pick = st.sampled_from([0, 1, 2, 3, 4, 5, 6, 6, 2])
    return [SURE_MATCH, *(dataclasses.replace(ev, mask=draw(st.lists(pick, min_size=len(ev.ts), max_size=len(ev.ts))))
                          for ev in groups)]


def test_live_hierarchy_key_types_and_nan(spark, tmp_path: Path, isolated_hierarchies) -> None:
    """A concept hierarchy, a subquery view over the stream, partition keys of several
    types (NULL keys too), and MIN / MAX over NaN and infinities, against the batch answer."""
    sparkseq.register_hierarchy(spark, "sectors", SECTORS)
    # arrival() reads only the window and the measure names: every row is some company, so every row passes
    plan = Plan(symbols=tuple(f"S{k}" for k in range(7)), elements=(Element(0), Element(1)), negations=(0, 0, 0),
                within=6, slide=3,
                measures=tuple(Measure(MeasureKind.COUNT_STAR, name=n) for n in ("n", "lo", "hi", "total")))

    @settings(SETTINGS, max_examples=1)
    @given(ticker_groups(plan), st.integers(0, 2**32 - 1))
    def check(groups: list[oracle.Events], seed: int) -> None:
        def text(source: str) -> str:
            tickers = ", ".join(f"'{t}'" for t in TICKERS)
            return f"""
CREATE OR REPLACE TEMP VIEW {source}_ticks AS
  SELECT g, CASE WHEN g % 3 = 0 THEN NULL ELSE concat('k', g) END AS sk, CAST(g / 4 AS DECIMAL(10, 2)) AS dk,
         timestamp_seconds(g) AS tk, ts, element_at(array({tickers}), CAST(mask + 1 AS INT)) AS ticker, i, s
  FROM {source};
SELECT g, sk, dk, tk, window_start, window_end, n, lo, hi, total FROM {source}_ticks MATCH_AGGREGATE (
  PARTITION BY g, sk, dk, tk ORDER BY ts
  PATTERN SEQ(Computer, Finance+, !Education, ANAT) TYPE BY ticker HIERARCHY sectors
  MEASURES COUNT(*) AS n, MIN(Finance.s) AS lo, MAX(ANAT.s) AS hi, SUM(Finance.i) AS total
  WITHIN INTERVAL 6 SECONDS SLIDE INTERVAL 3 SECONDS) AS m"""

        assert run_case(spark, tmp_path, plan, groups, seed, text, every_row_passes=True) > 0

    check()


def test_live_source_in_a_cte_and_a_subquery_inside_a_larger_statement(spark, tmp_path: Path) -> None:
    """The stream reaches the operator through CTEs of two nested WITH clauses and a
    subquery, and a filter and a computed column stand around the operator's result:
    the same rows as in batch."""
    @settings(SETTINGS, max_examples=1)
    @given(cases(window="slide"))
    def check(case: tuple[Plan, list[oracle.Events], int]) -> None:
        plan, groups, seed = case
        measures = ", ".join(f"`{m.name}`" for m in plan.measures)

        def text(source: str) -> str:
            body = sql_cases.match_aggregate(plan, "(SELECT * FROM kept)", timestamp=True, unit="SECONDS")
            return f"""
WITH rows_of AS (SELECT g, ts, mask, i, f, s FROM {source})
SELECT g, window_start, window_end, {measures}
FROM (WITH kept AS (SELECT * FROM rows_of WHERE g <> {live_cases.FLUSH - 1})
      SELECT *, n + 1 AS n_plus_one FROM {body})
WHERE n_plus_one > 0"""

        run_case(spark, tmp_path, plan, groups, seed, text)

    check()
