"""Spark Connect clients (and a plain Connect server) for ``test_connect_server.py``.

A Connect client cannot share a Python process with the suite's classic SparkSession
(PySpark switches the whole process to Connect mode), so each runs here, in a
subprocess: ``python -m tests.connect_clients <scenario> <sc://url | port>``. A client
prints one JSON object — what it observed, check by check — as its last line.
"""

from __future__ import annotations

import json
import sys
import warnings
from collections.abc import Callable

CLICKS_MA = ("SELECT customer_id, n FROM cs_clicks MATCH_AGGREGATE (PARTITION BY customer_id ORDER BY ts "
             "PATTERN SEQ(view, buy) TYPE BY action MEASURES COUNT(*) AS n WITHIN INTERVAL 10 MINUTES) AS m "
             "ORDER BY customer_id")
OWN = [(1, "view", 1), (1, "buy", 2), (1, "pay", 3), (2, "view", 1), (2, "buy", 0)]
OWN_MA = ("SELECT k, n FROM {src} MATCH_AGGREGATE (PARTITION BY k ORDER BY t PATTERN SEQ(A, B) "
          "DEFINE A AS action = {a}, B AS action = {b} MEASURES COUNT(*) AS n) AS m ORDER BY k")

STEPS = [("buy", "get"), ("pay", "get"), ("view", "look")]
HIERARCHY_MA = ("SELECT k, n FROM own MATCH_AGGREGATE (PARTITION BY k ORDER BY t PATTERN SEQ(view, get) "
                "TYPE BY action HIERARCHY steps MEASURES COUNT(*) AS n) AS m ORDER BY k")


def own_query(src: str = "own", a: str = "'view'", b: str = "'buy'") -> str:
    return OWN_MA.replace("{src}", src).replace("{a}", a).replace("{b}", b)


def observe(checks: dict[str, Callable[[], object]]) -> dict[str, object]:
    """Each check's result (rows as lists), or ``"error: <first line>"``."""
    seen: dict[str, object] = {}
    for name, check in checks.items():
        try:
            value = check()
        except Exception as exc:  # noqa: BLE001 - the test asserts on the message
            value = f"error: {type(exc).__name__}: {str(exc).strip().splitlines()[0]}"
        seen[name] = _plain(value)
    return seen


def _plain(item: object) -> object:
    """Rows (tuples) as lists, also inside lists of result sets."""
    if isinstance(item, tuple):
        return list(item)
    return [_plain(i) for i in item] if isinstance(item, list) else item


def plain_client(url: str) -> dict[str, object]:
    """A client with only pyspark: what the sparkseq Connect server offers through ``spark.sql``."""
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.remote(url).getOrCreate()
    first = observe({"table": lambda: spark.table("cs_ma").orderBy("customer_id").collect()})  # before any SQL
    spark.createDataFrame(OWN, "k int, action string, t int").createOrReplaceTempView("own")
    frame = spark.table("own").where("k = 1")
    reordered = own_query(a="?", b="?").replace("A AS action = ?, B AS action = ?", "B AS action = ?, A AS action = ?")
    seen = observe({
        "init_view": lambda: spark.sql("SELECT * FROM cs_ma ORDER BY customer_id").collect(),
        "seq_count": lambda: spark.sql("SELECT customer_id, seq_count(ts, action, 'SEQ(view, buy)', INTERVAL 10 "
                                       "MINUTES) FROM cs_clicks GROUP BY customer_id ORDER BY 1").collect(),
        "match_aggregate": lambda: spark.sql(CLICKS_MA).collect(),
        "hierarchy": lambda: spark.sql(CLICKS_MA.replace(
            "SEQ(view, buy) TYPE BY action", "SEQ(browse, purchase) TYPE BY action HIERARCHY cs_h")).collect(),
        "named": lambda: spark.sql(own_query(a=":a", b=":b"), args={"a": "view", "b": "buy"}).collect(),
        "positional": lambda: spark.sql(own_query(a="?", b="?"), args=["view", "buy"]).collect(),
        "reordered": lambda: spark.sql(reordered, args=["buy", "view"]).collect(),
        "dataframe": lambda: spark.sql(own_query("{src}"), src=frame).collect(),
        "error": lambda: spark.sql(CLICKS_MA.replace("TYPE BY action", "TYPE BY actoin")).collect(),
    })
    seen["sparkseq_imported"] = "sparkseq" in sys.modules
    return {**first, **seen}


def sparkseq_client(url: str) -> dict[str, object]:
    """A client with sparkseq: the Python API on a Connect session."""
    import sparkseq

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        spark = sparkseq.session(url)
    spark.createDataFrame(OWN, "k int, action string, t int").createOrReplaceTempView("own")
    query = own_query()
    script = f"{query};\n{own_query(b=repr('pay'))}"
    seen = observe({
        "session": lambda: type(spark).__module__,
        "warnings": lambda: [str(w.message) for w in caught],
        "sql": lambda: sparkseq.sql(spark, query).collect(),
        "sql_dataframe": lambda: sparkseq.sql(spark, own_query("{src}"), src=spark.table("own")).collect(),
        "spark_sql": lambda: spark.sql(query).collect(),
        "explain": lambda: sparkseq.explain(spark, query).splitlines()[4].strip(),
        "explain_active": lambda: sparkseq.explain(None, query).splitlines()[4].strip(),
        "function": lambda: spark.sql("SELECT k, seq_count(t, action, 'SEQ(view, buy)') FROM own GROUP BY k "
                                      "ORDER BY k").collect(),
        "hierarchy": lambda: sorted(sparkseq.register_hierarchy(spark, "steps", STEPS).parent_of.items()),
        "hierarchy_function": lambda: spark.sql("SELECT k, seq_count(t, action, 'SEQ(view, get) HIERARCHY steps') "
                                                "FROM own GROUP BY k ORDER BY k").collect(),
        "hierarchy_sql": lambda: sparkseq.sql(spark, HIERARCHY_MA).collect(),
        "workload": lambda: [frame.collect() for frame in sparkseq.workload(spark, script)],
        "release": lambda: len(sparkseq.release_workload(spark, script)),
        "cube": lambda: cube_rows(spark),
    })
    return seen


def cube_rows(spark: object) -> list[list[object]]:
    """An E-Cube statement, then a concept roll-up of its base pattern: (pattern, k, n) rows."""
    import sparkseq

    cube = sparkseq.cube(spark, "SELECT k, pattern, n FROM own MATCH_AGGREGATE (PARTITION BY k ORDER BY t "
                                "PATTERN SEQ(view, buy) CUBE (CONCEPT ROLLUP 2) TYPE BY action HIERARCHY steps "
                                "MEASURES COUNT(*) AS n) AS m")
    rolled = sparkseq.rollup(cube.at("SEQ(view, buy)"), position=2, to="get")
    return [[view.pattern, *row] for view in (cube.at("SEQ(view, buy)"), rolled)
            for row in view.df.orderBy("k").select("k", "n").collect()]


def api_client(url: str) -> dict[str, object]:
    """A client with sparkseq: every case of :mod:`tests.api_cases` on a Connect session."""
    import sparkseq
    from tests import api_cases

    return api_cases.answers(sparkseq.session(url))


def fallback_client(url: str) -> dict[str, object]:
    """A client with sparkseq, of a Connect server started without sparkseq's extension."""
    import sparkseq

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        spark = sparkseq.session(url)
    spark.createDataFrame(OWN, "k int, action string, t int").createOrReplaceTempView("own")
    return observe({
        "warnings": lambda: [f"{w.category.__name__}: {w.message}" for w in caught],
        "sql": lambda: sparkseq.sql(spark, own_query()).collect(),
        "explain": lambda: sparkseq.explain(spark, own_query()).splitlines()[4].strip(),
        "spark_sql": lambda: spark.sql(own_query()).collect(),
    })


def errors_client(url: str) -> dict[str, object]:
    """A client with only pyspark running statements read from stdin (JSON: ``[[id, text,
    args], ...]``) through ``spark.sql``, each collected: ``{id: the whole error text, or
    "ok"}`` — the messages a Connect client sees."""
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.remote(url).getOrCreate()
    return _errors(lambda text, args: spark.sql(text, args=args) if args is not None else spark.sql(text))


def sparkseq_errors_client(url: str) -> dict[str, object]:
    """:func:`errors_client` through ``sparkseq.sql`` (the statement rewritten in this client),
    and through the DataFrame API for entries ``[id, text, args, {table, **arguments}]``
    (as ``<id>#dataframe``): ``{id: the error as the user reads it (a sparkseq error with its
    class), or "ok"}``."""
    import sparkseq

    spark = sparkseq.session(url)

    def run(text: str, args: object, frame: dict | None = None) -> object:
        if frame is None:
            return sparkseq.sql(spark, text, args=args)  # type: ignore[arg-type]
        arguments = dict(frame)
        return sparkseq.match_aggregate(spark.table(arguments.pop("table")), **arguments)

    return _errors(run)


def _errors(run: Callable[..., object]) -> dict[str, object]:
    seen: dict[str, object] = {}
    for name, *given in json.loads(sys.stdin.read()):
        try:
            run(*given).collect()  # type: ignore[attr-defined]
            seen[name] = "ok"
        except Exception as exc:  # noqa: BLE001 - the test asserts on the message
            module = type(exc).__module__
            seen[name] = f"{type(exc).__name__}: {exc}" if module.startswith(("sql_rewrites", "sparkseq")) else str(exc)
    return seen


def plain_server(port: str) -> None:
    """A Spark Connect server without sparkseq's extension (the JVM starts without it),
    on which ``sparkseq.session()`` then warns; serves until stdin closes."""
    import os

    from pyspark.sql import SparkSession

    import sparkseq
    from sparkseq.servers.connect import server_conf

    os.environ["PYSPARK_PYTHON"] = sys.executable
    builder = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
    for key, value in server_conf("127.0.0.1", int(port)).items():
        builder = builder.config(key, value)
    builder.getOrCreate().sparkContext.setLogLevel("ERROR")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sparkseq.session("local[1]")
    print(json.dumps({"warnings": [f"{w.category.__name__}: {w.message}" for w in caught]}), flush=True)
    sys.stdin.read()


SCENARIOS: dict[str, Callable[[str], object]] = {
    "plain": plain_client, "sparkseq": sparkseq_client, "fallback": fallback_client, "plain-server": plain_server,
    "errors": errors_client, "sparkseq-errors": sparkseq_errors_client, "api": api_client,
}

if __name__ == "__main__":
    result = SCENARIOS[sys.argv[1]](sys.argv[2])
    if result is not None:
        print(json.dumps(result, default=str), flush=True)
