"""``sparkseq.match_aggregate``: the DataFrame form of MATCH_AGGREGATE compiles to the same
plan as the SQL form, returns the same rows, and reports the same errors placed in the
argument that holds the mistake."""

from __future__ import annotations

import random
import re
from datetime import timedelta

import pytest

import sparkseq
from sparkseq.running.execution_paths import CHUNK_ROWS_CONF, PATH_CONF, SPLIT_ROWS_CONF
from sql_rewrites import errors as E
from tests.sql_cases import jobs_started

pytestmark = pytest.mark.usefixtures("isolated_hierarchies")

ENGINE = re.compile(r"sparkseq_agg_[0-9a-f]{12}")
ARGS = dict(partition_by=["customer_id"], order_by="ts", pattern="SEQ(VK, BK, !REC)",
            define={"VK": "action = 'view'", "BK": "action = 'buy' AND BK.price > 1", "REC": "action = 'rec'"},
            measures={"n": "COUNT(*)", "revenue": "SUM(BK.price)"}, within="10 minutes", slide="5 minutes")
SQL = """SELECT * FROM api_clicks MATCH_AGGREGATE (PARTITION BY customer_id ORDER BY ts PATTERN SEQ(VK, BK, !REC)
  DEFINE VK AS action = 'view', BK AS action = 'buy' AND BK.price > 1, REC AS action = 'rec'
  MEASURES COUNT(*) AS n, SUM(BK.price) AS revenue WITHIN INTERVAL 10 MINUTES SLIDE INTERVAL 5 MINUTES) AS m"""


@pytest.fixture(scope="module")
def clicks(spark):  # noqa: ANN201
    frame = spark.sql("""SELECT * FROM VALUES
        (1, TIMESTAMP'2024-05-01 10:00:00', 'view', 1.50BD), (1, TIMESTAMP'2024-05-01 10:01:00', 'buy', 9.99BD),
        (1, TIMESTAMP'2024-05-01 10:02:00', 'view', 1.50BD), (1, TIMESTAMP'2024-05-01 10:03:00', 'rec', 0.00BD),
        (1, TIMESTAMP'2024-05-01 10:04:00', 'buy', 5.00BD), (2, TIMESTAMP'2024-05-01 11:00:00', 'view', 2.00BD),
        (2, TIMESTAMP'2024-05-01 11:30:00', 'buy', 7.00BD) AS t(customer_id, ts, action, price)""")
    frame.createOrReplaceTempView("api_clicks")
    return frame


def engine_of(frame) -> set[str]:  # noqa: ANN001
    """The engine functions a DataFrame's plan calls (named by a digest of the engine plan)."""
    return set(ENGINE.findall(frame._jdf.queryExecution().analyzed().toString()))


@pytest.mark.parametrize("within", ["10 minutes", "INTERVAL 10 MINUTES", timedelta(minutes=10)],
                         ids=["words", "sql", "timedelta"])
def test_same_plan_and_rows_as_the_sql_form(spark, clicks, within: object) -> None:  # noqa: ANN001
    by_sql = sparkseq.sql(spark, SQL)
    by_api = clicks.transform(sparkseq.match_aggregate, **{**ARGS, "within": within})
    assert engine_of(by_api) == engine_of(by_sql) and len(engine_of(by_sql)) == 1
    assert by_api.columns == by_sql.columns == ["customer_id", "window_start", "window_end", "n", "revenue"]
    order = ["customer_id", "window_start"]
    assert by_api.orderBy(order).collect() == by_sql.orderBy(order).collect()
    assert not [t for t in spark.catalog.listTables() if t.name.startswith("_sparkseq_")]


def test_numeric_time_and_listed_cuboids(spark, clicks) -> None:  # noqa: ANN001
    frame = clicks.selectExpr("customer_id", "CAST(unix_seconds(ts) AS BIGINT) AS t", "action")
    rows = sparkseq.match_aggregate(frame, partition_by="customer_id", order_by="t", type_by="action",
                                    patterns=["SEQ(view, buy)", "SEQ(view, view)"], within=600)
    got = {(r.customer_id, r.pattern, r["count"]) for r in rows.collect()}
    assert got == {(1, "SEQ(view, buy)", 3), (1, "SEQ(view, view)", 1), (2, "SEQ(view, buy)", 0),
                   (2, "SEQ(view, view)", 0)}


ERRORS = [  # (id, arguments changed, error, message, argument, column)
    ("unknown-column", {"define": {**ARGS["define"], "VK": "actoin = 'view'"}}, E.UnknownColumnError,
     r"unknown column 'actoin' in DEFINE of VK.*columns of the DataFrame", "define['VK']", 1),
    ("spark-unknown-function", {"define": {**ARGS["define"], "REC": "action = 'rec' OR no_fn(price)"}},
     E.SparkAnalysisError, r"^DEFINE of REC: \[UNRESOLVED_ROUTINE\] .*`no_fn`", "define['REC']", 19),
    ("pattern-syntax", {"pattern": "SEQ(VK,, BK)"}, E.SqlParseError, r"Expecting a symbol", "pattern", 8),
    ("no-injection", {"define": {**ARGS["define"], "VK": "action = 'view') AS m; DROP TABLE x; --"}},
     E.SqlParseError, r"not several statements", "define['VK']", 22),
    ("months", {"within": "1 month"}, E.BadIntervalError, r"months and years have no fixed length", "within", 1),
    ("count-type", {"count_type": "long"}, E.SqlParseError, r"count_type must be one of BIGINT, DECIMAL, DOUBLE",
     "count_type", 1),
    ("order-by", {"order_by": "tss"}, E.UnknownColumnError, r"unknown column 'tss' in ORDER BY", "order_by", 1),
    ("measure", {"measures": {"n": "COUNT(*)", "s": "STDDEV(BK.price)"}}, E.UnknownMeasureError,
     r"measure s = STDDEV", "measures['s']", 1),
    ("partition-by", {"partition_by": ["customer_id", "customer"]}, E.UnknownColumnError,
     r"unknown column 'customer'", "partition_by[1]", 1),
]


@pytest.mark.parametrize(("changed", "error", "message", "argument", "column"), [e[1:] for e in ERRORS],
                         ids=[e[0] for e in ERRORS])
def test_errors_point_at_the_argument(spark, clicks, changed: dict, error: type, message: str,  # noqa: ANN001
                                      argument: str, column: int) -> None:
    before = jobs_started(spark)
    with pytest.raises(error, match=message) as caught:
        sparkseq.match_aggregate(clicks, **{**ARGS, **changed})
    position = caught.value.position
    assert (position.origin, position.column) == (argument, column), str(caught.value)
    assert position.excerpt.startswith(f"{argument} | ")
    assert f"at {argument}, column {column}" in str(caught.value)
    assert jobs_started(spark) == before
    assert not [t for t in spark.catalog.listTables() if t.name.startswith("_sparkseq_")]


@pytest.fixture()
def small_split_thresholds(spark):  # noqa: ANN201
    spark.conf.set(SPLIT_ROWS_CONF, "50")
    spark.conf.set(CHUNK_ROWS_CONF, "40")
    yield
    for key in (SPLIT_ROWS_CONF, CHUNK_ROWS_CONF, PATH_CONF):
        spark.conf.unset(key)


def test_a_big_key_takes_the_path_the_sql_form_takes(spark, small_split_thresholds) -> None:  # noqa: ANN001
    """A key over the split threshold runs in time chunks (several tasks), as the SQL form
    does, with the grouped path's answer."""
    rng = random.Random(7)
    rows = [("big" if i < 300 else f"s{i % 4}", rng.randint(0, 2000), rng.choice("ABCN")) for i in range(340)]
    frame = spark.createDataFrame(rows, "k string, t bigint, type string")
    args = dict(partition_by="k", order_by="t", pattern="SEQ(A, B, !N, C)", type_by="type",
                measures={"n": "COUNT(*)", "last": "MAX(C.t)"}, within=60)
    split = sparkseq.match_aggregate(frame, **args)
    assert "_chunk" in split._jdf.queryExecution().analyzed().toString()
    spark.conf.set(PATH_CONF, "grouped")
    grouped = sparkseq.match_aggregate(frame, **args)
    assert "_chunk" not in grouped._jdf.queryExecution().analyzed().toString()
    want = grouped.orderBy("k").collect()
    assert sum(r.n for r in want) > 0
    assert split.orderBy("k").collect() == want


def test_a_streaming_dataframe_gets_a_live_operator(spark, tmp_path) -> None:  # noqa: ANN001
    """Over a streaming DataFrame (a file source with a watermark) the result is a live
    operator: its last running count per key equals the batch answer over the same rows."""
    source = tmp_path / "events"
    source.mkdir()
    schema = "k string, ts timestamp, type string"
    rows = [("a", f"2024-05-01 10:00:0{s}", t) for s, t in enumerate("ABAB")] + [("b", "2024-05-01 10:00:05", "A")]
    spark.createDataFrame(rows, "k string, ts string, type string").selectExpr(
        "k", "CAST(ts AS TIMESTAMP) AS ts", "type").write.mode("overwrite").parquet(str(source / "part"))
    stream = spark.readStream.schema(schema).parquet(str(source / "part")).withWatermark("ts", "1 second")
    args = dict(partition_by="k", order_by="ts", pattern="SEQ(A, B)", type_by="type", measures={"n": "COUNT(*)"})
    live = sparkseq.match_aggregate(stream, **args)
    assert live.isStreaming
    batches: list = []
    query = (live.writeStream.foreachBatch(lambda df, epoch: batches.append(df.collect())).outputMode("update")
             .option("checkpointLocation", str(tmp_path / "checkpoint")).start())
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    last = {r.k: r.n for batch in batches for r in batch}
    batch = sparkseq.match_aggregate(spark.read.schema(schema).parquet(str(source / "part")), **args)
    assert last == {r.k: r.n for r in batch.collect() if r.n} == {"a": 3}
