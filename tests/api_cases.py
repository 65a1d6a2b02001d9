"""The whole Python API of sparkseq, run on any session: what ``tests/test_connect_server.py``
runs on a Spark Connect session (in a client subprocess, :mod:`tests.connect_clients`) and
on the suite's local session, to compare the answers.

:func:`answers` sets up its own temporary views and concept hierarchy, runs every case —
the DataFrame API, ``sparkseq.sql`` (DataFrame arguments, scripts, a key big enough to take
the time-split and streaming paths under small thresholds), EXPLAIN, workloads, E-Cubes,
the Plan-level queries, the registered functions, hierarchies, a live stream — and returns
what each gave, as JSON values (rows as lists), or ``"error: ..."``.
"""

from __future__ import annotations

import contextlib
import json
import random
import shutil
import tempfile
from collections.abc import Callable, Iterator
from typing import Any

import sparkseq
from sparkseq import Element, Measure, MeasureKind, Plan, ValueType

STEPS = [("buy", "get"), ("pay", "get"), ("view", "look")]
MA = ("SELECT k, n, paid FROM api_clicks MATCH_AGGREGATE (PARTITION BY k ORDER BY t PATTERN SEQ(view, !pay, buy) "
      "TYPE BY action MEASURES COUNT(*) AS n, SUM(buy.price) AS paid WITHIN 40) AS m ORDER BY k")
NO_WINDOW = MA.replace(" WITHIN 40", "")
#: NO_WINDOW reading two value columns: a shape the JVM path does not count. A Connect client
#: has no JVM path (sparkseq.running.jvm_path), so for EXPLAIN to read the same on both sessions the
#: statement must take the Python path on the local one too.
NO_WINDOW_PYTHON = NO_WINDOW.replace("AS paid", "AS paid, MAX(view.t) AS seen")
CUBE = ("SELECT k, pattern, n FROM api_clicks MATCH_AGGREGATE (PARTITION BY k ORDER BY t PATTERN SEQ(view, buy) "
        "CUBE (CONCEPT ROLLUP 2) TYPE BY action HIERARCHY api_steps MEASURES COUNT(*) AS n WITHIN 40) AS m")
SCRIPT = f"{MA};\n{MA.replace('buy', 'pay')};\n{NO_WINDOW}"
#: path thresholds under which key 1 (90 rows) is big: split over 50 rows, streamed over 60
SMALL = {"sparkseq.timeSplit.splitRows": "50", "sparkseq.timeSplit.chunkRows": "20", "sparkseq.streaming.rows": "60"}


def rows() -> list[tuple[int, str, int, int]]:
    """(k, action, t, price): key 1 of 90 rows, keys 2 to 4 of 12."""
    rng = random.Random(5)
    return [(k, rng.choice(["view", "view", "buy", "pay"]), rng.randint(0, 600), rng.randint(1, 9))
            for k, n in [(1, 90), (2, 12), (3, 12), (4, 12)] for _ in range(n)]


def setup(spark: Any) -> None:
    """The views ``api_clicks`` and ``api_masked`` (a symbol mask for the Plan-level API) and
    the hierarchy ``api_steps``."""
    spark.createDataFrame(rows(), "k int, action string, t int, price int").createOrReplaceTempView("api_clicks")
    spark.sql("SELECT k, t, CASE action WHEN 'view' THEN 1 WHEN 'buy' THEN 2 ELSE 0 END AS mask, price "
              "FROM api_clicks").createOrReplaceTempView("api_masked")
    sparkseq.register_hierarchy(spark, "api_steps", STEPS)


@contextlib.contextmanager
def small_thresholds(spark: Any) -> Iterator[None]:
    for key, value in SMALL.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key in SMALL:
            spark.conf.unset(key)


def answers(spark: Any) -> dict[str, object]:
    """Every case's answer on ``spark`` (module docstring), as JSON values."""
    from tests.connect_clients import observe

    setup(spark)
    folder = tempfile.mkdtemp(prefix="sparkseq-api-")
    try:
        seen = observe({name: (lambda case=case: case(spark, folder)) for name, case in CASES.items()})
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return json.loads(json.dumps(seen, default=str))


def _by_api(spark: Any, **arguments: object) -> Any:
    return sparkseq.match_aggregate(spark.table("api_clicks"), partition_by="k", order_by="t", **arguments)


def _funnel(spark: Any) -> Any:
    return _by_api(spark, pattern="SEQ(A, !P, B)", define={"A": "action = 'view'", "P": "action = 'pay'",
                                                          "B": "action = 'buy'"},
                   measures={"n": "COUNT(*)", "paid": "SUM(B.price)"}, within=40).orderBy("k").collect()


def _big_key(spark: Any, run: Callable[[], object]) -> object:
    with small_thresholds(spark):
        return run()


def _cube(spark: Any) -> list:
    cube = sparkseq.cube(spark, CUBE)
    base = cube.at("SEQ(view, buy)")
    views = [base, sparkseq.rollup(base, position=2, to="get"),
             sparkseq.drilldown(cube.at("SEQ(view, get)"), position=2, to="pay")]
    return [[view.pattern, view.from_cube, view.df.orderBy("k").select("k", "n").collect()] for view in views]


def _live(spark: Any, folder: str) -> list:
    """A MATCH_AGGREGATE over a stream of files, SLIDE windows appended to a memory sink."""
    events = [(1, "view", "2024-05-01 10:00:00"), (1, "buy", "2024-05-01 10:02:00"),
              (2, "view", "2024-05-01 10:03:00"), (2, "buy", "2024-05-01 10:30:00"), (3, "view", "2024-05-01 11:30:00")]
    spark.createDataFrame(events, "k int, action string, ts string").selectExpr(
        "k", "action", "timestamp(ts) AS ts").write.parquet(f"{folder}/live")
    spark.readStream.schema("k int, action string, ts timestamp").parquet(f"{folder}/live").withWatermark(
        "ts", "1 minute").createOrReplaceTempView("api_live")
    by_sql = sparkseq.sql(spark, "SELECT k, window_start, n FROM api_live MATCH_AGGREGATE (PARTITION BY k ORDER BY ts "
                                 "PATTERN SEQ(view, buy) TYPE BY action MEASURES COUNT(*) AS n WITHIN INTERVAL 10 "
                                 "MINUTES SLIDE INTERVAL 10 MINUTES) AS m")
    by_api = sparkseq.match_aggregate(spark.table("api_live"), partition_by="k", order_by="ts",
                                      pattern="SEQ(view, buy)", type_by="action", within="10 minutes",
                                      slide="10 minutes")
    return [[frame.isStreaming, _appended(spark, frame, name)]
            for frame, name in ((by_sql, "api_live_sql"), (by_api, "api_live_api"))]


def _appended(spark: Any, frame: Any, name: str) -> list:
    """What a streaming ``frame`` appends to a memory sink from the files there are."""
    query = frame.writeStream.format("memory").queryName(name).outputMode("append").start()
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    return spark.table(name).orderBy("k", "window_start").collect()


def _plan() -> Plan:
    return Plan(symbols=("A", "B"), elements=(Element(0), Element(1)), negations=(0, 0, 0), within=40,
                measures=(Measure(MeasureKind.COUNT_STAR, name="n"), Measure(MeasureKind.SUM, 1, 0, "paid")),
                columns=(ValueType.INT,))


def _plan_level(spark: Any, streaming: bool) -> list:
    frame = sparkseq.aggregate(spark, _plan(), "api_masked", keys=["k"], ts="t", values=["price"], streaming=streaming)
    return frame.orderBy("k").collect()


def _sql(spark: Any, text: str, **values: object) -> list:
    return sparkseq.sql(spark, text, **values).collect()


def _error(run: Callable[[], object]) -> str:
    try:
        run()
    except Exception as exc:  # noqa: BLE001 - the message is the answer
        return f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
    return "no error"


def _workload(spark: Any, folder: str) -> list:
    shared = [frame.collect() for frame in sparkseq.workload(spark, SCRIPT)]
    released = len(sparkseq.release_workload(spark, SCRIPT))
    written = [frame.orderBy("k").collect() for frame in sparkseq.workload(spark, SCRIPT, output=f"{folder}/out")]
    collected = [(r.arrow.to_pylist() if r.arrow is not None else None, r.frame.collect())
                 for r in sparkseq.collect_workload(spark, SCRIPT)]
    groups = [[m.statement for m in g.members] for g in sparkseq.plan_workload(spark, SCRIPT).groups]
    return [shared, released, written, collected, groups]


def _hierarchies(spark: Any) -> list:
    sparkseq.register_hierarchy(spark, "api_tmp", [("view", "any"), ("buy", "any")])
    counted = spark.sql("SELECT k, seq_count(t, action, 'SEQ(any, any) HIERARCHY api_tmp') AS n FROM api_clicks "
                        "GROUP BY k ORDER BY k").collect()
    sparkseq.drop_hierarchy(spark, "api_tmp")
    text = MA.replace("TYPE BY action", "TYPE BY action HIERARCHY api_tmp").replace("view, !pay, buy", "any, any")
    return [counted, _error(lambda: _sql(spark, text))]


CASES: dict[str, Callable[[Any, str], object]] = {
    "match_aggregate": lambda spark, _: _funnel(spark),
    "match_aggregate_slide": lambda spark, _: spark.table("api_clicks").where("k > 1").transform(
        sparkseq.match_aggregate, partition_by="k", order_by="t", pattern="SEQ(view, buy)", type_by="action",
        within=30, slide=10).orderBy("k", "window_start").collect(),
    "match_aggregate_cube": lambda spark, _: _by_api(spark, pattern="SEQ(view, buy)", cube=["CONCEPT ROLLUP 2"],
                                                     type_by="action", hierarchy="api_steps").orderBy(
        "pattern", "k").collect(),
    "match_aggregate_big_key": lambda spark, _: _big_key(spark, lambda: [_funnel(spark), _by_api(
        spark, pattern="SEQ(view, buy)", type_by="action").orderBy("k").collect()]),
    "match_aggregate_error": lambda spark, _: _error(lambda: _by_api(spark, pattern="SEQ(A, B)", define={
        "A": "actoin = 'view'", "B": "action = 'buy'"})),
    "sql": lambda spark, _: _sql(spark, MA),
    "sql_big_key": lambda spark, _: _big_key(spark, lambda: [_sql(spark, MA), _sql(spark, NO_WINDOW),
                                                             _sql(spark, CUBE + " ORDER BY pattern, k")]),
    "sql_dataframe": lambda spark, _: _sql(spark, MA.replace("FROM api_clicks", "FROM {src}"),
                                           src=spark.table("api_clicks").where("k < 3")),
    "sql_script": lambda spark, _: _sql(spark, "CREATE OR REPLACE TEMP VIEW api_early AS SELECT * FROM api_clicks "
                                               f"WHERE t < 300; {MA.replace('FROM api_clicks', 'FROM api_early')}"),
    "spark_sql": lambda spark, _: spark.sql(MA).collect(),
    "explain": lambda spark, _: sparkseq.explain(spark, MA).split("Spark SQL:")[0],
    "explain_big_key": lambda spark, _: _big_key(spark, lambda: sparkseq.explain(spark, NO_WINDOW_PYTHON).split(
        "Spark SQL:")[0]),
    "workload": _workload,
    "cube": lambda spark, _: _cube(spark),
    "aggregate": lambda spark, _: _plan_level(spark, streaming=False),
    "aggregate_streaming": lambda spark, _: _plan_level(spark, streaming=True),
    "udaf_query": lambda spark, _: spark.sql(sparkseq.udaf_query(
        spark, _plan(), "api_masked", keys=["k"], ts="t", values=["price"])).orderBy("k").collect(),
    "function_names": lambda spark, _: [sparkseq.engine_function(spark, _plan()),
                                        sparkseq.stream_function(spark, _plan(), ["int"])],
    "seq_count": lambda spark, _: spark.sql(
        "SELECT k, seq_count(t, action, 'SEQ(view, buy)', 40) AS n, seq_sum(t, action, 'SEQ(view, buy)', NULL, "
        "'buy', price) AS s, seq_count(t, action, 'SEQ(view, get) HIERARCHY api_steps') AS g FROM api_clicks "
        "GROUP BY k ORDER BY k").collect(),
    "hierarchies": lambda spark, _: _hierarchies(spark),
    "live": _live,
}
