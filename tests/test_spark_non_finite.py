"""NaN and ±inf in a measured DOUBLE column, on every surface and path, against Spark's
own aggregates over the explicit matches.

The reference is a self-join: every match of SEQ(a, b) as a row, then Spark's ``sum``,
``avg``, ``max`` and ``min`` over them. Each partition is one case: a NaN or an
infinity bound by the matches, or held by a row no match binds (which must change
nothing), and +inf beside -inf (NaN).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import sparkseq
from sparkseq.running.execution_paths import CHUNK_ROWS_CONF, PATH_CONF, SPLIT_ROWS_CONF
from tests.doubles import same_double

NAN, INF = math.nan, math.inf
ROWS = [  # (k, ts, t, x)
    (1, 0, "a", NAN), (1, 1, "b", 3.0),                       # a's NaN is not summed
    (2, 0, "a", INF), (2, 1, "b", 3.0),                       # nor a's +inf
    (3, -1, "b", NAN), (3, 0, "a", 1.0), (3, 1, "b", 3.0),    # a b row no match binds
    (4, 0, "a", 1.0), (4, 1, "b", INF), (4, 2, "b", -INF),    # +inf + -inf = NaN
    (5, 0, "a", 1.0), (5, 1, "b", NAN),                       # a bound NaN
    (6, 0, "a", 1.0), (6, 1, "b", INF), (6, 2, "b", 2.0),     # a bound +inf
    (7, 0, "a", 1.0), (7, 1, "b", -INF), (7, 2, "a", NAN),    # an a row after every b
    (8, 0, "a", -INF), (8, 1, "a", 2.0), (8, 2, "b", 0.0),    # a's -inf bound: MIN/SUM of a
]
MEASURES = {"n": "COUNT(*)", "sb": "SUM(b.x)", "ab": "AVG(b.x)", "sa": "SUM(a.x)", "xa": "MAX(a.x)",
            "nb": "MIN(b.x)"}
NAMES = list(MEASURES)
REFERENCE = """SELECT a.k, count(*) AS n, sum(b.x) AS sb, avg(b.x) AS ab, sum(a.x) AS sa, max(a.x) AS xa,
                      min(b.x) AS nb
               FROM nf a JOIN nf b ON a.k = b.k AND a.t = 'a' AND b.t = 'b' AND a.ts < b.ts GROUP BY a.k"""
Rows = dict[int, list[object]]


@pytest.fixture(scope="module")
def reference(spark) -> Rows:  # noqa: ANN001
    spark.createDataFrame(ROWS, "k int, ts bigint, t string, x double").createOrReplaceTempView("nf")
    want = by_key(spark.sql(REFERENCE).collect())
    assert math.isnan(want[4][1]) and want[6][1] == INF and want[3][1] == 3.0  # the cases are what they say
    return want


def by_key(rows: Iterable, names: list[str] = NAMES) -> Rows:
    return {r["k"]: [r[n] for n in names] for r in rows}


def assert_rows(have: Rows, want: Rows, names: list[str] = NAMES) -> None:
    assert sorted(have) == sorted(want)
    for k, row in want.items():
        for name, h, w in zip(names, have[k], row):
            assert (h is None) == (w is None) and (w is None or same_double(float(h), float(w))), (k, name, h, w)


def statement(pattern: str = "SEQ(a, b)", clauses: str = "", source: str = "nf", measures: dict = MEASURES) -> str:
    listed = ", ".join(f"{v} AS {k}" for k, v in measures.items())
    return (f"SELECT * FROM {source} MATCH_AGGREGATE (PARTITION BY k ORDER BY ts PATTERN {pattern} TYPE BY t "
            f"MEASURES {listed} {clauses}) AS m")


VARIANTS = {
    "plain": statement(),
    "within": statement(clauses="WITHIN 10"),
    "negation": statement("SEQ(a, !c, b)"),
    "kleene": statement("SEQ(a+, b)"),
    "predicate": statement(clauses="WHERE b.ts > a.ts WITHIN 10"),
}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_match_aggregate(spark, reference: Rows, variant: str) -> None:  # noqa: ANN001
    """sparkseq.sql and spark.sql (the parser extension), with WITHIN, negation, Kleene and a predicate."""
    text = VARIANTS[variant]
    want = dict(reference)
    if variant == "kleene":  # a+ also binds partition 8's {a0, a1}: a third match
        want[8] = [3, 0.0, 0.0, -INF, 2.0, 0.0]
    assert_rows(by_key(sparkseq.sql(spark, text).collect()), want)
    if variant == "plain":
        assert_rows(by_key(spark.sql(text).collect()), reference)


def test_sliding_windows(spark, reference: Rows) -> None:  # noqa: ANN001
    """WITHIN 100 SLIDE 100: the window [0, 100) holds every match; partition 3's b row at
    -1 alone in [-100, 0) gives a zero row whose sums are NULL (not NaN)."""
    rows = sparkseq.sql(spark, statement(clauses="WITHIN 100 SLIDE 100")).collect()
    assert_rows(by_key(r for r in rows if r["window_start"] == 0), reference)
    [early] = [r for r in rows if r["window_start"] == -100]
    assert early["k"] == 3 and early["n"] == 0 and early["sb"] is None and early["nb"] is None


def test_dataframe_api(spark, reference: Rows) -> None:  # noqa: ANN001
    frame = sparkseq.match_aggregate(spark.table("nf"), partition_by="k", order_by="ts", pattern="SEQ(a, b)",
                                     type_by="t", measures=MEASURES)
    assert_rows(by_key(frame.collect()), reference)


def test_seq_functions(spark, reference: Rows) -> None:  # noqa: ANN001
    names = ["sb", "ab", "xa", "nb"]
    rows = spark.sql("""SELECT k, seq_sum(ts, t, 'SEQ(a, b)', NULL, 'b', x) AS sb,
                               seq_avg(ts, t, 'SEQ(a, b)', NULL, 'b', x) AS ab,
                               seq_max(ts, t, 'SEQ(a, b)', NULL, 'a', x) AS xa,
                               seq_min(ts, t, 'SEQ(a, b)', NULL, 'b', x) AS nb FROM nf GROUP BY k""").collect()
    want = {k: [v[NAMES.index(n)] for n in names] for k, v in reference.items()}
    assert_rows(by_key(rows, names), want, names)


def test_workload_shared_pass(spark, reference: Rows) -> None:  # noqa: ANN001
    """Two statements over one source share one pass (the workload's sharing group)."""
    results = sparkseq.collect_workload(spark, f"{VARIANTS['plain']};\n{VARIANTS['within']};")
    for result in results:
        assert result.arrow is not None
        assert_rows(by_key(result.arrow.to_pylist()), reference)


@pytest.mark.parametrize("path", ["time-split", "streaming"])
@pytest.mark.parametrize("clauses", ["WITHIN 10", ""])
def test_forced_paths(spark, reference: Rows, path: str, clauses: str) -> None:  # noqa: ANN001
    """The time split (WITHIN only) and the streaming path (the carried sums without WITHIN)."""
    if path == "time-split" and not clauses:
        pytest.skip("the time split needs WITHIN")
    spark.conf.set(PATH_CONF, path)
    try:
        text = statement(clauses=clauses)
        assert path in sparkseq.explain(spark, text)
        assert_rows(by_key(sparkseq.sql(spark, text).collect()), reference)
    finally:
        spark.conf.unset(PATH_CONF)


SPLIT_VALUES = {10: {18: INF}, 11: {37: -INF}, 12: {18: INF, 36: -INF}, 13: {18: NAN}, 14: {}}
"""Keys of 60 rows a0 b1 a2 ... b59 (x = ts): which rows hold a non-finite x instead. Cut into
chunks of ten time units, a18, a36 and b37 lie in the context of the chunk after theirs,
bound there by (a18, b19) and (a36, b37), which the chunk's T1 and T0 both count."""


def test_time_split_cut_into_chunks(spark, small_thresholds: None) -> None:  # noqa: ANN001
    """Keys big enough to be cut into time chunks (the time split proper, not one chunk per
    key): an infinity bound in a chunk's context stays an infinity (chunk results are
    differences, and inf - inf is NaN), +inf and -inf together and NaN give NaN."""
    rows = [(k, ts, "ab"[ts % 2], float(values.get(ts, ts))) for k, values in SPLIT_VALUES.items()
            for ts in range(60)]
    spark.createDataFrame(rows, "k int, ts bigint, t string, x double").createOrReplaceTempView("nf_split")
    names = ["n", "sa", "sb", "ab"]
    measures = {"n": "COUNT(*)", "sa": "SUM(a.x)", "sb": "SUM(b.x)", "ab": "AVG(b.x)"}
    want = by_key(spark.sql("""SELECT a.k, count(*) AS n, sum(a.x) AS sa, sum(b.x) AS sb, avg(b.x) AS ab
                               FROM nf_split a JOIN nf_split b ON a.k = b.k AND a.t = 'a' AND b.t = 'b'
                                 AND a.ts < b.ts AND b.ts - a.ts < 5 GROUP BY a.k""").collect(), names)
    assert want[10][1] == INF and want[11][2] == -INF and math.isnan(want[12][1]) and math.isnan(want[13][1])
    spark.conf.set(PATH_CONF, "time-split")
    spark.conf.set(SPLIT_ROWS_CONF, "20")
    spark.conf.set(CHUNK_ROWS_CONF, "10")
    frame = sparkseq.sql(spark, statement(clauses="WITHIN 5", source="nf_split", measures=measures))
    assert "_chunk" in frame._jdf.queryExecution().analyzed().toString()
    assert_rows(by_key(frame.collect(), names), want, names)


def test_e_cube(spark, reference: Rows, isolated_hierarchies: None) -> None:  # noqa: ANN001
    """CONCEPT ROLLUP of a to its parent X: both cuboids have the same matches here."""
    sparkseq.register_hierarchy(spark, "nfh", [("a", "X"), ("b", "Y")])
    text = statement(clauses="CUBE (CONCEPT ROLLUP 1) HIERARCHY nfh")
    rows = sparkseq.sql(spark, text).collect()
    patterns = sorted({r["pattern"] for r in rows})
    assert len(patterns) == 2, patterns
    for p in patterns:
        assert_rows(by_key(r for r in rows if r["pattern"] == p), reference)


def test_imprecise_timestamps(spark, reference: Rows) -> None:  # noqa: ANN001
    """Point intervals (lo = hi): the expected sums are the sums."""
    names = ["n", "sb", "sa"]
    text = statement(measures={n: MEASURES[n] for n in names}).replace(
        "ORDER BY ts", "ORDER BY ts UNCERTAIN BETWEEN ts AND ts STEP 1")
    want = {k: [v[NAMES.index(n)] for n in names] for k, v in reference.items()}
    assert_rows(by_key(sparkseq.sql(spark, text).collect(), names), want, names)


@pytest.mark.parametrize("clauses", ["", "WITHIN INTERVAL 100 SECONDS SLIDE INTERVAL 100 SECONDS"])
def test_live_stream(spark, reference: Rows, tmp_path: Path, clauses: str) -> None:  # noqa: ANN001
    """A file stream with a watermark: without WITHIN (the carried sums) the last running
    row per partition, with SLIDE the window [1000 s, 1100 s) once the watermark passes it."""
    source = tmp_path / "src"
    source.mkdir()
    spark.readStream.schema("k bigint, ts timestamp, t string, x double").parquet(str(source)) \
        .withWatermark("ts", "0 seconds").createOrReplaceTempView("nf_live")
    batches: list[list[dict]] = []
    query = (sparkseq.sql(spark, statement(clauses=clauses, source="nf_live")).writeStream
             .foreachBatch(lambda df, _: batches.append([r.asDict() for r in df.collect()]))
             .outputMode("append" if clauses else "update")
             .option("checkpointLocation", str(tmp_path / "ck")).start())
    try:
        flushes = [[(99, t, "a", 0.0)] for t in (5000, 9000)]
        for n, part in enumerate([[(k, ts + 1000, t, x) for k, ts, t, x in ROWS], *flushes]):
            # the later files move the watermark past every window; NaN stays NaN (pandas would write NULL)
            pq.write_table(arrow_rows(part), tmp_path / f"part{n}.parquet")
            os.replace(tmp_path / f"part{n}.parquet", source / f"part{n}.parquet")  # a file source reads whole files
            query.processAllAvailable()
    finally:
        query.stop()
    last: dict[int, dict] = {}  # the last running row; with SLIDE the latest window (partition 3's
    for r in (r for rows in batches for r in rows if r["k"] != 99):  # b at 999 s has one of its own)
        if r["k"] not in last or not clauses or r["window_start"] > last[r["k"]]["window_start"]:
            last[r["k"]] = r
    assert_rows({k: [r[n] for n in NAMES] for k, r in last.items()}, reference)



def arrow_rows(rows: list[tuple]) -> pa.Table:
    """(k, seconds, t, x) rows as a table of the stream's schema."""
    k, ts, t, x = (list(c) for c in zip(*rows))
    return pa.table({"k": pa.array(k, pa.int64()), "ts": pa.array([s * 10**6 for s in ts], pa.timestamp("us")),
                     "t": pa.array(t), "x": pa.array(x, pa.float64())})
