"""One process of ``tests/servers/test_spark_persistent_views.py``: ``python persistent_view_driver.py
<step> <folder>`` works in a Hive metastore (Derby, one process at a time) and warehouse
under ``folder`` and prints what it saw as one JSON line after :data:`MARK`.

* ``create``: a sparkseq session creates a table and persistent views over it — through
  ``spark.sql`` and ``sparkseq.sql`` — and reads them back; what Spark or sparkseq refuses
  is recorded with its message;
* ``read``: a new sparkseq process reads every view (also from another current database,
  and with a temporary view shadowing the table), and serves them to a Spark Connect
  client (``connect-client``, a process of its own) and to a JDBC client of the
  in-process Thrift server, each of which creates a view of its own;
* ``plain``: Spark without sparkseq reads the views and records its errors.
"""

from __future__ import annotations

import functools
import json
import socket
import subprocess
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

MARK = "PERSISTENT-VIEWS-RESULT:"
#: SEQ(view, buy) per k: a has views at 1 and 3, buys at 2 and 4 -> (1,2), (1,4), (3,4); b one pair.
ROWS = [("a", 1, "view"), ("a", 2, "buy"), ("a", 3, "view"), ("a", 4, "buy"), ("b", 1, "view"), ("b", 5, "buy")]
#: The same table name in another database, whose answer differs.
OTHER_ROWS = [("z", 1, "view"), ("z", 2, "buy")]
MA = ("SELECT k, n FROM t MATCH_AGGREGATE (PARTITION BY k ORDER BY ts PATTERN SEQ(view, buy) TYPE BY action "
      "MEASURES COUNT(*) AS n) AS m")
SEQ = "SELECT k, seq_count(ts, action, 'SEQ(view, buy)') AS n FROM t GROUP BY k"
MIXED = "SELECT k, count(*) AS c, seq_count(ts, action, 'SEQ(view, buy)') AS n FROM t GROUP BY k"
#: The query of funnel_ma as written: odd case and spacing, a comment inside, over two lines.
MA_WRITTEN = MA.replace("SELECT k, n FROM t", "select k,  n   -- the pairs\n  FROM t")
#: The views of the create step: name -> the statement that creates it (through spark.sql).
CREATED = {
    # odd spacing and case, a column list with a comment, comments before and after the query
    "funnel_ma": "create   or replace view funnel_ma (k COMMENT 'customer', n) AS\n  /* pairs */ " + MA_WRITTEN
                 + " -- end",
    "funnel_seq": "CREATE VIEW funnel_seq AS " + SEQ,
    "funnel_mixed": "CREATE VIEW funnel_mixed AS " + MIXED,  # the rewriter splits this SELECT
    "funnel_over": "CREATE VIEW funnel_over AS SELECT k, n * 10 AS n10 FROM funnel_ma",  # a view over a view
}
#: Permanent SQL table functions of the create step: name -> body (a seq_* query; a view over MATCH_AGGREGATE).
FUNCTIONS = {"funnel_fn": SEQ, "funnel_fn_view": "SELECT k, n FROM funnel_ma"}
#: Views read in every step, with the rows each holds.
EXPECTED = {
    "funnel_ma": [["a", 3], ["b", 1]],
    "funnel_seq": [["a", 3], ["b", 1]],
    "funnel_mixed": [["a", 4, 3], ["b", 2, 1]],
    "funnel_over": [["a", 30], ["b", 10]],
    "funnel_sql": [["a", 3]],
    "funnel_altered": [["a", 3], ["b", 1]],
}


def hive_conf(folder: Path) -> dict[str, str]:
    return {
        "spark.sql.catalogImplementation": "hive",
        "spark.sql.warehouse.dir": str(folder / "warehouse"),
        "spark.hadoop.javax.jdo.option.ConnectionURL": f"jdbc:derby:;databaseName={folder}/metastore_db;create=true",
        "spark.sql.shuffle.partitions": "2",
    }


def rows(frame: Any) -> list[list[Any]]:
    return sorted([list(r) for r in frame.collect()])


def outcome(action: Callable[[], Any]) -> dict[str, Any]:
    """What ``action`` returned, or its error's class, condition and message."""
    try:
        return {"value": action()}
    except Exception as exc:  # noqa: BLE001 - recorded for the test to judge
        condition = getattr(exc, "getCondition", lambda: None)()
        contexts: list[Any] = getattr(exc, "getQueryContext", lambda: [])()
        return {"error": type(exc).__name__, "condition": condition, "message": str(exc),
                "contexts": [str(c.fragment()) for c in contexts]}


def each(names: Iterable[str], action: Callable[[str], Any]) -> dict[str, dict[str, Any]]:
    """:func:`outcome` of ``action(name)`` per name."""
    return {name: outcome(functools.partial(action, name)) for name in names}


def function_rows(spark: Any) -> dict[str, Any]:
    return each(FUNCTIONS, lambda name: rows(spark.sql(f"SELECT * FROM {name}()")))


def view_texts(spark: Any, name: str) -> dict[str, Any]:
    described = {r[0]: r[1] for r in spark.sql(f"DESCRIBE EXTENDED {name}").collect()}
    return {"show": spark.sql(f"SHOW CREATE TABLE {name}").collect()[0][0], "text": described.get("View Text"),
            "original": described.get("View Original Text")}


def create(folder: Path) -> dict[str, Any]:
    import sparkseq

    spark = sparkseq.session("local[2]", conf=hive_conf(folder), check_workers=False, progress=False)
    spark.createDataFrame(ROWS, "k string, ts int, action string").write.saveAsTable("t")
    spark.sql("CREATE DATABASE other")
    spark.createDataFrame(OTHER_ROWS, "k string, ts int, action string").write.saveAsTable("other.t")
    out: dict[str, Any] = {"created": each(CREATED, lambda name: spark.sql(CREATED[name]).collect())}
    # a script through sparkseq.sql: the view, then a query reading it (checked before either runs)
    out["script"] = outcome(lambda: rows(sparkseq.sql(
        spark, f"CREATE VIEW funnel_sql AS {MA} WHERE n > 2;\nSELECT * FROM funnel_sql")))
    spark.sql("CREATE VIEW funnel_altered AS SELECT 'x' AS k, 0L AS n")
    out["altered"] = outcome(lambda: spark.sql(f"ALTER VIEW funnel_altered AS {MA}").collect())
    out["functions"] = each(FUNCTIONS, lambda name: spark.sql(
        f"CREATE FUNCTION {name}() RETURNS TABLE (k STRING, n BIGINT) RETURN {FUNCTIONS[name]}").collect())
    out["rows"] = each(EXPECTED, lambda name: rows(spark.table(name)))
    out["function_rows"] = function_rows(spark)
    out["texts"] = {name: view_texts(spark, name) for name in ("funnel_ma", "funnel_seq", "funnel_mixed", "funnel_sql")}
    # what cannot be stored, with the message saying why and what to do
    spark.createDataFrame(ROWS, "k string, ts int, action string").createOrReplaceTempView("temp_clicks")
    spark.createDataFrame([("view", "browse"), ("buy", "purchase")], "child string, parent string") \
        .createOrReplaceTempView("actions")
    sparkseq.sql(spark, "CREATE CONCEPT HIERARCHY acts FROM actions")
    refused: dict[str, Callable[[], Any]] = {
        "hierarchy_sparkseq_sql": lambda: sparkseq.sql(spark, "CREATE VIEW v_h AS " + MA.replace(
            "TYPE BY action", "TYPE BY action HIERARCHY acts")),
        "hierarchy_spark_sql": lambda: spark.sql("CREATE VIEW v_h AS SELECT k, seq_count(ts, action, "
                                                 "'SEQ(browse, purchase) HIERARCHY acts') AS n FROM t GROUP BY k"),
        "temp_view_source": lambda: spark.sql("CREATE VIEW v_tmp AS " + MA.replace("FROM t", "FROM temp_clicks")),
        "no_alias": lambda: spark.sql("CREATE VIEW v_alias AS SELECT k, seq_count(ts, action, 'SEQ(view, buy)') "
                                      "FROM t GROUP BY k"),
        "function_ma": lambda: spark.sql(f"CREATE FUNCTION f_ma() RETURNS TABLE (k STRING, n BIGINT) RETURN {MA}"),
    }
    out["refused"] = {name: outcome(action) for name, action in refused.items()}
    spark.conf.set("sparkseq.path", "streaming")
    out["refused"]["forced_streaming"] = outcome(lambda: spark.sql("CREATE VIEW v_stream AS " + MA).collect())
    spark.conf.unset("sparkseq.path")
    spark.sql(f"CREATE TEMP VIEW funnel_temp AS {MA}")  # still a session's own, as before
    out["temp_view"] = outcome(lambda: rows(spark.table("funnel_temp")))
    out["tables"] = sorted(r["tableName"] for r in spark.sql("SHOW TABLES").collect() if not r["isTemporary"])
    return out


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def read(folder: Path) -> dict[str, Any]:
    import sparkseq
    from sparkseq.servers import connect as connect_server
    from sparkseq.servers import thrift
    from sparkseq.spark import jvm_parser

    port = free_port()
    spark = sparkseq.session("local[2]", conf={**hive_conf(folder), **connect_server.server_conf("127.0.0.1", port)},
                             check_workers=False, progress=False)
    out: dict[str, Any] = {"rows": each(EXPECTED, lambda name: rows(spark.table(name)))}
    out["spark_sql"] = outcome(lambda: rows(spark.sql("SELECT k, n10 FROM funnel_over WHERE n10 > 10")))
    out["function_rows"] = function_rows(spark)
    out["stream"] = outcome(lambda: spark.readStream.table("funnel_ma").isStreaming)  # Spark refuses
    # names in a view resolve in the database it was created in, whatever the reader's current one
    spark.sql("USE other")
    out["from_other_database"] = each(("funnel_ma", "funnel_seq", "funnel_over"),
                                      lambda name: rows(spark.table(f"default.{name}")))
    spark.sql("USE default")
    # a temporary view named like the table stands in for nothing inside a persistent view
    spark.sql("CREATE TEMP VIEW t AS SELECT 'q' AS k, 1 AS ts, 'view' AS action")
    out["temp_view_shadow"] = outcome(lambda: rows(spark.table("funnel_ma")))
    spark.catalog.dropTempView("t")
    jvm_parser.uninstall(spark)  # the extension without sparkseq's Python driver
    out["no_rewriter"] = outcome(lambda: rows(spark.table("funnel_ma")))
    jvm_parser.install(spark)
    server = connect_server.start(spark, "127.0.0.1", port)
    done = subprocess.run([sys.executable, __file__, "connect-client", server.url], capture_output=True, text=True,
                          timeout=600)
    lines = [line for line in done.stdout.splitlines() if line.startswith(MARK)]
    out["connect"] = json.loads(lines[-1][len(MARK):]) if lines else {"failed": done.stderr[-4000:]}
    out["connect_view_text"] = outcome(lambda: view_texts(spark, "funnel_connect"))
    out["jdbc"] = jdbc(spark, thrift)
    out["jdbc_view_text"] = outcome(lambda: view_texts(spark, "funnel_jdbc"))
    return out


def jdbc(spark: Any, thrift: Any) -> dict[str, Any]:
    """The views through the in-process Thrift server, with a DB-API client (impyla)."""
    from impala.dbapi import connect  # type: ignore[import-untyped]

    out: dict[str, Any] = {}
    with thrift.start(spark, port=free_port()) as server:
        connection = connect(host=server.host, port=server.port, auth_mechanism="PLAIN", user="test",
                             password="unused", timeout=300)
        try:
            def query(sql: str, fetch: bool = True) -> list[list[Any]]:
                cursor = connection.cursor()
                try:
                    cursor.execute(sql)
                    return sorted([list(row) for row in cursor.fetchall()]) if fetch else []
                finally:
                    cursor.close()

            out["funnel_ma"] = outcome(lambda: query("SELECT k, n FROM funnel_ma"))
            out["funnel_seq"] = outcome(lambda: query("SELECT k, n FROM funnel_seq"))
            out["create"] = outcome(lambda: query(f"CREATE VIEW funnel_jdbc AS {MA}", fetch=False))
            out["funnel_jdbc"] = outcome(lambda: query("SELECT k, n FROM funnel_jdbc"))
        finally:
            connection.close()
    return out


def connect_client(url: str) -> dict[str, Any]:
    """A Spark Connect client of the read step's server: reads views, creates one with sparkseq.sql."""
    from pyspark.sql import SparkSession

    import sparkseq

    spark = SparkSession.builder.remote(url).getOrCreate()
    out = each(("funnel_ma", "funnel_seq", "funnel_over"), lambda name: rows(spark.table(name)))
    out["create"] = outcome(lambda: sparkseq.sql(spark, f"CREATE VIEW funnel_connect AS {MA}").collect())
    out["funnel_connect"] = outcome(lambda: rows(spark.sql("SELECT * FROM funnel_connect")))
    return out


def plain(folder: Path) -> dict[str, Any]:
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master("local[1]").appName("plain")
    for key, value in {**hive_conf(folder), "spark.ui.enabled": "false"}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("OFF")
    out: dict[str, Any] = {"rows": each(EXPECTED, lambda name: rows(spark.table(name)))}
    out["function_rows"] = function_rows(spark)
    out["tables"] = sorted(r["tableName"] for r in spark.sql("SHOW TABLES").collect())
    return out


def main() -> None:
    step, where = sys.argv[1], sys.argv[2]
    if step == "connect-client":
        result = connect_client(where)
    else:
        result = {"create": create, "read": read, "plain": plain}[step](Path(where))
    print(MARK + json.dumps(result, default=str), flush=True)


if __name__ == "__main__":
    main()
