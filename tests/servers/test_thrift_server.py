"""The Thrift/JDBC server with real clients on loopback: beeline (the Hive JDBC driver
shipped in the pyspark wheel), a Python DB-API client (impyla), and the
``python -m sparkseq thriftserver`` command in a subprocess.

The in-process server serves the shared test session (``spark`` fixture); its init
file builds views over a tiny table whose answers are worked out by hand below.
"""

from __future__ import annotations

import os
import queue
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import pyspark
import pytest

from sparkseq.servers import initfile, thrift
from tests.conftest import SUBPROCESS_JVM_OPTIONS, drop_unservable_views

JARS = Path(pyspark.__file__).resolve().parent / "jars"
ROOT = Path(__file__).resolve().parents[2]

#: customer 1: views at 10:00 and 10:01, buys at 10:02 (10.0) and 10:20 (20.0, too late);
#: customer 2: a view at 10:00, buys at 10:05 (5.0) and 10:06 (7.0); customer 3: a buy only.
CLICKS = """1,2024-05-01 10:00:00,view,
1,2024-05-01 10:01:00,view,
1,2024-05-01 10:02:00,buy,10.0
1,2024-05-01 10:20:00,buy,20.0
2,2024-05-01 10:00:00,view,
2,2024-05-01 10:05:00,buy,5.0
2,2024-05-01 10:06:00,buy,7.0
3,2024-05-01 10:00:00,buy,1.0
"""
#: SEQ(view, buy) WITHIN 10 minutes: (customer, matches, SUM(buy.price) over the matches).
EXPECTED = [(1, 2, 20.0), (2, 2, 12.0), (3, 0, None)]

INIT = """-- the views JDBC clients query
CREATE TEMP VIEW thrift_clicks (customer_id INT, ts TIMESTAMP, action STRING, price DOUBLE)
  USING csv OPTIONS (path '{csv}');

CREATE TEMP VIEW thrift_funnels AS
SELECT customer_id,
       seq_count(ts, action, 'SEQ(view, buy)', INTERVAL 10 MINUTES) AS funnels,
       seq_sum(ts, action, 'SEQ(view, buy)', INTERVAL 10 MINUTES, 'buy', price) AS revenue
FROM thrift_clicks GROUP BY customer_id;

CREATE TEMP VIEW thrift_ma AS
SELECT customer_id, n, revenue FROM thrift_clicks MATCH_AGGREGATE (
  PARTITION BY customer_id ORDER BY ts PATTERN SEQ(view, buy) TYPE BY action
  MEASURES COUNT(*) AS n, SUM(buy.price) AS revenue WITHIN INTERVAL 10 MINUTES) AS m;

-- a concept hierarchy, and an E-Cube over it: buy rolls up to purchase
CREATE TEMP VIEW thrift_actions AS SELECT * FROM VALUES ('view', 'browse'), ('buy', 'purchase') AS t(child, parent);
CREATE OR REPLACE CONCEPT HIERARCHY thrift_h FROM thrift_actions;
CREATE TEMP VIEW thrift_cube AS
SELECT customer_id, pattern, n FROM thrift_clicks MATCH_AGGREGATE (
  PARTITION BY customer_id ORDER BY ts PATTERN SEQ(view, buy) CUBE (CONCEPT ROLLUP 2)
  TYPE BY action HIERARCHY thrift_h MEASURES COUNT(*) AS n WITHIN INTERVAL 10 MINUTES) AS m
"""
MA_TEXT = ("SELECT customer_id, n FROM thrift_clicks MATCH_AGGREGATE (PARTITION BY customer_id ORDER BY ts "
           "PATTERN SEQ(view, buy) TYPE BY action MEASURES COUNT(*) AS n WITHIN INTERVAL 10 MINUTES) AS m "
           "ORDER BY customer_id")


#: beeline echoes its prompt before the first output line when its input is not a terminal
PROMPT = re.compile(r"^(\d+: jdbc:\S+> |(\. )+\.?> )+")


def free_port(_given: set[int] = set()) -> int:  # noqa: B006 - never the same port twice
    """A port nobody listens on; a server started later binds it, so remember what was handed out."""
    while True:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        if port not in _given:
            _given.add(port)
            return port


def listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


@pytest.fixture(scope="session")
def init_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("thrift")
    (folder / "clicks.csv").write_text(CLICKS)
    path = folder / "views.sql"
    path.write_text(INIT.format(csv=folder / "clicks.csv"))
    return path


@pytest.fixture(scope="session")
def server(spark, init_path: Path, thrift_server: thrift.ThriftServer) -> thrift.ThriftServer:
    # Other tests leave temporary views such as `odd view` in the shared session, which
    # Spark's Thrift server cannot serve (see test_views_needing_backticks_are_refused).
    drop_unservable_views(spark)
    init = initfile.read(init_path)
    initfile.check(spark, init)
    initfile.run(spark, init)
    return thrift_server


@dataclass
class Command:
    """``python -m sparkseq thriftserver`` running in a subprocess."""

    process: subprocess.Popen[str]
    port: int
    stderr: IO[str]
    _banner: str | None = None

    def banner(self) -> str:
        """The start-up text (read once: the server prints it once)."""
        if self._banner is None:
            self._banner = read_banner(self.process, self.stderr)
        return self._banner


@pytest.fixture(scope="module", autouse=True)
def command(request: pytest.FixtureRequest, init_path: Path, tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[Command | None]:
    """The command in a subprocess, started before this module's first test when its test
    will run, so that its Spark start-up overlaps the in-process tests."""
    if not any(item.name.startswith("test_command_") for item in request.session.items):
        yield None
        return
    port = free_port()
    folder = tmp_path_factory.mktemp("command")
    with (folder / "server.err").open("w+") as stderr:
        process = subprocess.Popen(sparkseq_command("--port", str(port), "--init-file", str(init_path),
                                                    "--warehouse", str(folder / "catalog")), cwd=ROOT,
                                   stdout=subprocess.PIPE, stderr=stderr, text=True)
        yield Command(process, port, stderr)
        if process.poll() is None:
            process.kill()
            process.wait()


@pytest.fixture(scope="module")
def dbapi(server: thrift.ThriftServer) -> Iterator[object]:
    impala = pytest.importorskip("impala.dbapi")
    # The server's default authentication (NONE) is SASL PLAIN accepting any user.
    connection = impala.connect(host=server.host, port=server.port, auth_mechanism="PLAIN", user="test",
                                password="unused", timeout=120)
    yield connection
    connection.close()


def query(connection: object, sql: str) -> list[tuple]:
    cursor = connection.cursor()  # type: ignore[attr-defined]
    try:
        cursor.execute(sql)
        return [tuple(row) for row in cursor.fetchall()]
    finally:
        cursor.close()


def beeline(port: int, sql: str) -> subprocess.CompletedProcess[str]:
    java = str(Path(os.environ["JAVA_HOME"]) / "bin" / "java") if os.environ.get("JAVA_HOME") else shutil.which("java")
    # a client JVM of a few seconds: C1 only, as the tests' other short JVMs (tests/conftest.py)
    command = [java or "java", *SUBPROCESS_JVM_OPTIONS.split(), "-cp", str(JARS / "*"),
               "org.apache.hive.beeline.BeeLine", "-u", f"jdbc:hive2://127.0.0.1:{port}/default", "-n", "test",
               "--outputformat=csv2", "--silent=true", "-e", sql]
    return subprocess.run(command, capture_output=True, text=True, timeout=180)


# --- beeline ---------------------------------------------------------------------------------


def test_beeline_queries_init_file_views_and_calls_functions(server: thrift.ThriftServer) -> None:
    sql = ("SELECT f.customer_id, f.funnels, f.revenue, m.n, m.revenue AS ma_revenue, "
           "seq_count(c.ts, c.action, 'SEQ(view, buy)') AS unbounded "
           "FROM thrift_funnels f JOIN thrift_ma m USING (customer_id) JOIN thrift_clicks c USING (customer_id) "
           "GROUP BY f.customer_id, f.funnels, f.revenue, m.n, m.revenue ORDER BY f.customer_id")
    done = beeline(server.port, sql)
    assert done.returncode == 0, done.stderr
    lines = [PROMPT.sub("", line) for line in done.stdout.splitlines() if line.strip()]
    assert lines[0] == "customer_id,funnels,revenue,n,ma_revenue,unbounded"
    # without a window, customer 1's late buy matches both views: 2 + 2 = 4
    assert lines[1:] == ["1,2,20.0,2,20.0,4", "2,2,12.0,2,12.0,2", "3,0,NULL,0,NULL,0"]


def test_beeline_shows_the_sparkseq_error(server: thrift.ThriftServer) -> None:
    done = beeline(server.port, "SELECT seq_count(ts, action, 'SEQ(view, ', INTERVAL 10 MINUTES) FROM thrift_clicks")
    assert done.returncode != 0
    # placed in the statement: the pattern's last comma
    assert "SqlParseError: Expecting a symbol: a name or a 'quoted type value' at line 1, column 39" in done.stderr


def test_beeline_sends_match_aggregate_text(server: thrift.ThriftServer) -> None:
    assert server.sql_text_unavailable is None
    done = beeline(server.port, MA_TEXT)
    assert done.returncode == 0, done.stderr
    lines = [PROMPT.sub("", line) for line in done.stdout.splitlines() if line.strip()]
    assert lines == ["customer_id,n", *(f"{c},{n}" for c, n, _ in EXPECTED)]
    done = beeline(server.port, MA_TEXT.replace("TYPE BY action", "TYPE BY actoin"))
    assert done.returncode != 0
    assert ("[USER_RAISED_EXCEPTION] UnknownColumnError: unknown column 'actoin' in TYPE BY; did you mean 'action'? "
            "(columns of thrift_clicks: customer_id, ts, action, price) at line 1, column 127") in done.stderr


# --- a Python DB-API client -----------------------------------------------------------------


def test_dbapi_reads_views(dbapi: object) -> None:
    assert query(dbapi, "SELECT customer_id, funnels, revenue FROM thrift_funnels ORDER BY customer_id") == EXPECTED
    cursor = dbapi.cursor()  # type: ignore[attr-defined]
    cursor.execute("SELECT customer_id, n, revenue FROM thrift_ma ORDER BY customer_id")
    assert [tuple(row) for row in cursor.fetchall()] == EXPECTED
    assert [(d[0], d[1]) for d in cursor.description] == [("customer_id", "INT"), ("n", "BIGINT"),
                                                          ("revenue", "DOUBLE")]
    cursor.close()


def test_dbapi_reads_a_cube_and_uses_init_file_hierarchies(dbapi: object) -> None:
    counts = [(c, n) for c, n, _ in EXPECTED]
    rows = query(dbapi, "SELECT pattern, customer_id, n FROM thrift_cube ORDER BY pattern, customer_id")
    assert rows == [("SEQ(view, buy)", c, n) for c, n in counts] + [("SEQ(view, purchase)", c, n) for c, n in counts]
    rows = query(dbapi, "SELECT customer_id, seq_count(ts, action, 'SEQ(browse, purchase) HIERARCHY thrift_h', "
                        "INTERVAL 10 MINUTES) FROM thrift_clicks GROUP BY customer_id ORDER BY customer_id")
    assert rows == counts


def test_dbapi_calls_window_functions(dbapi: object) -> None:
    rows = query(dbapi, "SELECT customer_id, w.window_start, w.count FROM (SELECT customer_id, "
                        "seq_count_windows(ts, action, 'SEQ(view, buy)', INTERVAL 10 MINUTES, INTERVAL 10 MINUTES) "
                        "AS ws FROM thrift_clicks GROUP BY customer_id) LATERAL VIEW inline(ws) w "
                        "WHERE w.count > 0 ORDER BY customer_id, w.window_start")
    assert [(c, str(start)[11:19], n) for c, start, n in rows] == [(1, "10:00:00", 2), (2, "10:00:00", 2)]


def test_dbapi_sees_views_the_driver_creates_later(spark, dbapi: object) -> None:
    spark.createDataFrame([(7, "x")], "k int, v string").createOrReplaceTempView("thrift_late")
    assert query(dbapi, "SELECT k, v FROM thrift_late") == [(7, "x")]


@pytest.mark.parametrize(("sql", "expected"), [
    ("SELECT * FROM thrift_nowhere", "TABLE_OR_VIEW_NOT_FOUND"),
    ("SELECT seq_count(ts, action, 'SEQ(view, !buy)') FROM thrift_clicks",
     "EdgeNegationWithoutWindowError: pattern SEQ(view, !buy) has a trailing negation"),
], ids=["unknown-view", "function-error"])
def test_dbapi_error_messages(dbapi: object, sql: str, expected: str) -> None:
    from impala.error import Error

    with pytest.raises(Error, match=re.escape(expected)):
        query(dbapi, sql)


def test_cache_of_global_temp_views_survives_disconnects(spark, server: thrift.ThriftServer) -> None:
    from impala.dbapi import connect

    spark.sql("CREATE OR REPLACE GLOBAL TEMP VIEW thrift_cached_g AS SELECT id FROM range(100)")
    spark.sql("CACHE TABLE global_temp.thrift_cached_g")
    spark.sql("CACHE TABLE thrift_cached_l AS SELECT id FROM range(50)")
    try:
        connection = connect(host=server.host, port=server.port, auth_mechanism="PLAIN")
        assert query(connection, "SELECT count(*) FROM global_temp.thrift_cached_g") == [(100,)]
        connection.close()
        assert spark.catalog.isCached("global_temp.thrift_cached_g")
        # Spark's single-session server uncaches every temporary view when a client
        # disconnects (docs/bi.md section 2): this documents that behaviour
        assert not spark.catalog.isCached("thrift_cached_l")
    finally:
        spark.sql("UNCACHE TABLE IF EXISTS global_temp.thrift_cached_g")
        spark.sql("DROP VIEW IF EXISTS global_temp.thrift_cached_g")
        spark.sql("DROP VIEW IF EXISTS thrift_cached_l")


def test_views_needing_backticks_are_refused(spark, server: thrift.ThriftServer) -> None:
    spark.sql("CREATE OR REPLACE TEMP VIEW `thrift odd` AS SELECT 1 AS x")
    try:
        with pytest.raises(thrift.ThriftServerError, match="temporary view 'thrift odd': Spark's Thrift server"):
            thrift.start(spark, port=free_port())
    finally:
        spark.catalog.dropTempView("thrift odd")


# --- init files ------------------------------------------------------------------------------

FIRST = "CREATE TEMP VIEW thrift_never AS SELECT 1 AS x;\n"


@pytest.mark.parametrize(("body", "where", "message"), [
    ("\nCREATE TEMP VIEW v AS SELEC 1", ":3:", "[PARSE_SYNTAX_ERROR] Syntax error at or near 'SELEC'"),
    ("SELECT x,\n       nope FROM thrift_never", ":3:8:", "[UNRESOLVED_COLUMN.WITH_SUGGESTION]"),
    ("SELECT * FROM thrift_nowhere", ":2:15:", "[TABLE_OR_VIEW_NOT_FOUND]"),
    ("SELECT * FROM thrift_clicks MATCH_AGGREGATE (ORDER BY ts\n  PATTERN SEQ(view) TYPE BY actoin) m",
     ":3:29:", "UnknownColumnError: unknown column 'actoin' in TYPE BY"),
    ("SELECT 'unterminated", ":2:", "SqlParseError"),
    ("SELECT * FROM thrift_clicks MATCH_AGGREGATE (ORDER BY ts\n  PATTERN SEQ(A) DEFINE A AS nofn(action)) m",
     ":3:30:", "SparkAnalysisError: DEFINE of A: [UNRESOLVED_ROUTINE]"),
], ids=["parse", "column", "table", "match-aggregate", "tokenize", "spark-in-define"])
def test_bad_init_file_names_file_line_and_changes_nothing(server: thrift.ThriftServer, spark, tmp_path: Path,
                                                           body: str, where: str, message: str) -> None:
    path = tmp_path / "bad.sql"
    path.write_text(FIRST + body)
    with pytest.raises(initfile.InitFileError) as caught:
        initfile.check(spark, initfile.read(path))
    assert str(caught.value).startswith(f"{path}{where}"), str(caught.value)
    assert message in str(caught.value)
    assert "thrift_never" not in thrift.relation_names(spark)


def test_init_file_may_read_what_earlier_statements_create(spark, tmp_path: Path) -> None:
    path = tmp_path / "create.sql"
    path.write_text("-- global temporary views and cached tables are created when the file runs\n"
                    "CREATE OR REPLACE GLOBAL TEMP VIEW thrift_g AS SELECT 1 AS x;\n"
                    "CACHE LAZY TABLE thrift_cached AS SELECT x FROM global_temp.thrift_g;\n"
                    "SELECT x FROM thrift_cached")
    init = initfile.read(path)
    try:
        initfile.check(spark, init)  # statements reading them are analysed when they run
        assert "global_temp.thrift_g" not in thrift.relation_names(spark)
        initfile.run(spark, init)
        assert spark.table("thrift_cached").collect()[0].x == 1
    finally:
        spark.sql("DROP VIEW IF EXISTS thrift_cached")
        spark.sql("DROP VIEW IF EXISTS global_temp.thrift_g")


# --- the command ----------------------------------------------------------------------------


def sparkseq_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "sparkseq", "thriftserver", *args]


def test_busy_port_is_refused_before_spark_starts(server: thrift.ThriftServer) -> None:
    with pytest.raises(thrift.PortInUseError, match=f"cannot listen on 127.0.0.1:{server.port}"):
        thrift.check_port("127.0.0.1", server.port)
    started = time.monotonic()
    done = subprocess.run(sparkseq_command("--port", str(server.port)), capture_output=True, text=True,
                          cwd=ROOT, timeout=60)
    assert done.returncode == 2
    assert f"PortInUseError: cannot listen on 127.0.0.1:{server.port}" in done.stderr
    assert time.monotonic() - started < 20  # no Spark session was started (that takes 10-20 s)


#: (statement, csv2 lines beeline prints) for SELECTs Spark cannot run as written, which the
#: parser extension sends to the rewriter (sql_rewrites.generation.aggregates); see CLICKS above.
SPLIT = [
    ("SELECT customer_id, count(*), seq_count(ts, action, 'SEQ(view, buy)', INTERVAL 10 MINUTES) "
     "FROM thrift_clicks GROUP BY customer_id ORDER BY customer_id",
     # Spark's own column names; beeline's csv2 "quotes" a field holding a comma with NUL characters
     ["customer_id,count(1),\x00seq_count(ts, action, SEQ(view, buy), INTERVAL '10' MINUTE)\x00", "1,4,2", "2,3,2",
      "3,1,0"]),
    ("SELECT customer_id AS id, seq_count(ts, action, 'SEQ(view, buy)') FILTER (WHERE action = 'view' OR price < 6) "
     "AS cheap FROM thrift_clicks GROUP BY customer_id HAVING max(price) > 1 ORDER BY 1",
     ["id,cheap", "1,0", "2,1"]),
    ("SELECT seq_count(ts, action, 'SEQ(view, buy)') AS n, seq_sum(ts, action, 'SEQ(view, buy)', NULL, 'buy', price) "
     "AS s, count(*) AS c FROM thrift_clicks WHERE customer_id > 100",
     ["n,s,c", "0,NULL,0"]),
]


def test_command_splits_seq_functions_beside_other_aggregates(command: Command) -> None:
    banner = command.banner()
    if "MATCH_AGGREGATE text from clients: yes" not in banner:
        pytest.skip("the parser extension needs a JDK's javac")
    done = beeline(command.port, ";\n".join(sql for sql, _ in SPLIT))
    assert done.returncode == 0, done.stderr
    lines = [PROMPT.sub("", line) for line in done.stdout.splitlines() if line.strip()]
    assert lines == [line for _, want in SPLIT for line in want]
    refused = beeline(command.port, "SELECT customer_id, seq_count(DISTINCT ts, action, 'SEQ(view)'), count(*) "
                                    "FROM thrift_clicks GROUP BY customer_id")
    assert refused.returncode != 0
    assert "AggregatePlacementError: seq_count(DISTINCT ...) is not supported" in refused.stderr


def test_command_serves_match_aggregate_text_and_stops_on_sigterm(command: Command) -> None:
    impala = pytest.importorskip("impala.dbapi")
    from impala.error import Error

    banner = command.banner()
    assert f"jdbc:hive2://127.0.0.1:{command.port}/default" in banner
    assert "thrift_ma" in banner and "thrift_cube" in banner and "seq_count" in banner
    connection = impala.connect(host="127.0.0.1", port=command.port, auth_mechanism="PLAIN", user="t", password="-")
    try:
        assert "MATCH_AGGREGATE text from clients: yes" in banner  # the shipped extension: no JDK needed
        assert query(connection, MA_TEXT) == [(c, n) for c, n, _ in EXPECTED]
        with pytest.raises(Error, match=r"UnknownColumnError: unknown column 'actoin' in TYPE BY"):
            query(connection, MA_TEXT.replace("TYPE BY action", "TYPE BY actoin"))
        # the init file's concept hierarchy, in MATCH_AGGREGATE text sent over JDBC
        hierarchical = MA_TEXT.replace("SEQ(view, buy) TYPE BY action",
                                       "SEQ(browse, purchase) TYPE BY action HIERARCHY thrift_h")
        assert query(connection, hierarchical) == [(c, n) for c, n, _ in EXPECTED]
        assert query(connection, "SELECT customer_id, n FROM thrift_ma ORDER BY customer_id") == \
            [(c, n) for c, n, _ in EXPECTED]
    finally:
        connection.close()
    command.process.send_signal(signal.SIGTERM)
    assert command.process.wait(timeout=60) == 0
    assert not listening(command.port)


def read_banner(process: subprocess.Popen[str], stderr: object, timeout: float = 150) -> str:
    """The server's start-up text, up to the line saying how to stop it."""
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in process.stdout], daemon=True).start()  # type: ignore[union-attr]
    deadline, banner = time.monotonic() + timeout, []
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=1.0)
        except queue.Empty:
            if process.poll() is None:
                continue
            stderr.seek(0)  # type: ignore[attr-defined]
            raise AssertionError(f"the server exited ({process.returncode}): {stderr.read()}") from None  # type: ignore[attr-defined]
        banner.append(line)
        if line.startswith("Stop with"):
            return "".join(banner)
    raise AssertionError(f"the server did not start within {timeout} s")
