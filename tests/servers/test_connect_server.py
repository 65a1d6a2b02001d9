"""Spark Connect: ``python -m sparkseq connect-server`` and sparkseq's API on Connect sessions.

Two servers start once for the module, in subprocesses and side by side: the sparkseq
Connect server (init file below) and a plain Spark Connect server whose JVM started
without sparkseq's extension. Clients run in subprocesses too
(:mod:`tests.servers.connect_clients`: a Connect client cannot share a process with the
suite's classic session); each prints what it observed, asserted here.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import pytest

from tests.servers.test_thrift_server import CLICKS, free_port, listening, read_banner

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 480  # two Spark drivers start side by side; a loaded 2-core machine took 120 s for one
CLIENT_TIMEOUT_S = 300

INIT = """CREATE TEMP VIEW cs_clicks (customer_id INT, ts TIMESTAMP, action STRING, price DOUBLE)
  USING csv OPTIONS (path '{csv}');
CREATE TEMP VIEW cs_ma AS
SELECT customer_id, n FROM cs_clicks MATCH_AGGREGATE (
  PARTITION BY customer_id ORDER BY ts PATTERN SEQ(view, buy) TYPE BY action
  MEASURES COUNT(*) AS n WITHIN INTERVAL 10 MINUTES) AS m;
CREATE TEMP VIEW cs_actions AS SELECT * FROM VALUES ('view', 'browse'), ('buy', 'purchase') AS t(child, parent);
CREATE OR REPLACE CONCEPT HIERARCHY cs_h FROM cs_actions
"""
#: SEQ(view, buy) WITHIN 10 minutes over test_thrift_server.CLICKS, per customer
FUNNELS = [[1, 2], [2, 2], [3, 0]]
#: SEQ(view, buy) without a window over tests.servers.connect_clients.OWN, per k
OWN = [[1, 1], [2, 0]]


@dataclass
class Server:
    process: subprocess.Popen[str]
    port: int
    stderr: IO[str]

    @property
    def url(self) -> str:
        return f"sc://127.0.0.1:{self.port}"


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, Server, str, str]]:
    """(sparkseq server, plain server, the sparkseq server's banner, the plain server's report)."""
    folder = tmp_path_factory.mktemp("connect")
    (folder / "clicks.csv").write_text(CLICKS)
    (folder / "views.sql").write_text(INIT.format(csv=folder / "clicks.csv"))
    ours = _spawn(folder, "ours", [sys.executable, "-m", "sparkseq", "connect-server", "--in-memory-catalog",
                                   "--init-file", str(folder / "views.sql")], stdin=None)
    plain = _spawn(folder, "plain", [sys.executable, "-m", "tests.servers.connect_clients", "plain-server"],
                   stdin=subprocess.PIPE)
    try:
        banner = read_banner(ours.process, ours.stderr, timeout=START_TIMEOUT_S)
        report = _read_line(plain, START_TIMEOUT_S)
        yield ours, plain, banner, report
    finally:
        for server in (ours, plain):
            if server.process.poll() is None:
                server.process.kill()
                server.process.wait()
            server.stderr.close()


def _spawn(folder: Path, name: str, command: list[str], stdin: int | None) -> Server:
    port = free_port()
    stderr = (folder / f"{name}.err").open("w+")
    args = [*command, "--port", str(port)] if "connect-server" in command else [*command, str(port)]
    process = subprocess.Popen(args, cwd=ROOT, stdin=stdin, stdout=subprocess.PIPE, stderr=stderr, text=True)
    return Server(process, port, stderr)


def _read_line(server: Server, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    assert server.process.stdout is not None
    line = server.process.stdout.readline()  # the plain server prints one line once it serves
    if not line or time.monotonic() > deadline:
        server.stderr.seek(0)
        raise AssertionError(f"the plain Connect server did not start: {server.stderr.read()[-3000:]}")
    return line


def client(scenario: str, url: str, timeout: float = CLIENT_TIMEOUT_S) -> dict[str, object]:
    done = subprocess.run([sys.executable, "-m", "tests.servers.connect_clients", scenario, url], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


# --- a client with only pyspark --------------------------------------------------------------


def test_plain_client_writes_match_aggregate_in_spark_sql(servers: tuple[Server, Server, str, str]) -> None:
    ours, _, banner, _ = servers
    assert f"URL        {ours.url}" in banner
    assert "views      cs_actions, cs_clicks, cs_ma" in banner
    assert "MATCH_AGGREGATE in clients' spark.sql: yes" in banner
    seen = client("plain", ours.url)
    assert seen.pop("sparkseq_imported") is False
    # the init file's views, functions and hierarchy, copied into the client's own session
    assert seen.pop("table") == FUNNELS  # spark.table() as the client's first request
    assert seen.pop("init_view") == FUNNELS
    assert seen.pop("seq_count") == FUNNELS
    assert seen.pop("match_aggregate") == FUNNELS
    assert seen.pop("hierarchy") == FUNNELS  # SEQ(browse, purchase): view and buy roll up to them
    # the client's own temporary view, parameters and DataFrame arguments
    assert seen.pop("named") == OWN
    assert seen.pop("positional") == OWN
    assert seen.pop("dataframe") == OWN[:1]
    assert str(seen.pop("reordered")).startswith("error: SparkRuntimeException: [USER_RAISED_EXCEPTION] "
                                                 "ParameterMarkerError: positional parameter markers (?)")
    assert "UnknownColumnError: unknown column 'actoin' in TYPE BY; did you mean 'action'?" in str(seen.pop("error"))
    assert seen == {}


# --- a client with sparkseq --------------------------------------------------------------------


def test_sparkseq_api_on_a_connect_session(servers: tuple[Server, Server, str, str]) -> None:
    ours = servers[0]
    seen = client("sparkseq", ours.url)
    assert seen.pop("session") == "pyspark.sql.connect.session"
    assert seen.pop("warnings") == []
    assert seen.pop("sql") == OWN
    assert seen.pop("sql_dataframe") == OWN  # {src} placeholder filled by Connect's own formatter
    assert seen.pop("spark_sql") == OWN  # rewritten by the server
    assert seen.pop("explain") == "pattern       SEQ(A, B)"
    assert seen.pop("explain_active") == "pattern       SEQ(A, B)"
    assert seen.pop("function") == OWN
    assert seen.pop("hierarchy") == [["buy", "get"], ["pay", "get"], ["view", "look"]]
    # k=1: view then buy and pay, both 'get'; k=2: the buy comes before the view
    assert seen.pop("hierarchy_function") == [[1, 2], [2, 0]]
    assert seen.pop("hierarchy_sql") == [[1, 2], [2, 0]]
    assert seen.pop("workload") == [OWN, [[1, 1], [2, 0]]]
    assert seen.pop("release") == 1
    assert seen.pop("cube") == [["SEQ(view, buy)", 1, 1], ["SEQ(view, buy)", 2, 0],
                                ["SEQ(view, get)", 1, 2], ["SEQ(view, get)", 2, 0]]
    assert seen == {}


def test_the_python_api_on_connect_answers_as_on_a_local_session(servers: tuple[Server, Server, str, str], spark,
                                                                  isolated_hierarchies: None) -> None:
    """Every case of tests/support/api_cases.py — the DataFrame API (once a view dropped before the
    server analysed its result: TABLE_OR_VIEW_NOT_FOUND), sparkseq.sql with a key big enough
    for the time-split and streaming paths, EXPLAIN, workloads (written, collected), E-Cubes,
    the Plan-level queries (the streaming UDTF registered as a table function), functions,
    hierarchies, a live stream — gives on a Connect session what it gives on a local one."""
    from tests.support import api_cases

    with ThreadPoolExecutor(1) as pool:  # the Connect client runs while the local session answers
        remote_run = pool.submit(client, "api", servers[0].url, timeout=3 * CLIENT_TIMEOUT_S)
        local = api_cases.answers(spark)
        remote = remote_run.result()
    assert [name for name, value in local.items() if str(value).startswith("error: ")] == []
    assert remote.keys() == local.keys()
    for name, value in local.items():
        assert remote[name] == value, name


# --- fallbacks: a JVM without the extension -------------------------------------------------


def test_without_the_extension_sparkseq_says_to_use_sparkseq_sql(servers: tuple[Server, Server, str, str]) -> None:
    _, plain, _, report = servers
    # sparkseq.session() in a process whose Spark started without the extension
    [classic] = json.loads(report)["warnings"]
    assert classic.startswith("ParserExtensionWarning: spark.sql does not accept MATCH_AGGREGATE in this session: "
                              "this SparkSession's JVM was started without sparkseq's parser extension")
    assert classic.endswith("use sparkseq.sql(spark, text) for MATCH_AGGREGATE")
    seen = client("fallback", plain.url)
    [remote] = seen.pop("warnings")
    assert remote == (f"ParserExtensionWarning: spark.sql does not accept MATCH_AGGREGATE in this session: the Spark "
                      f"Connect server at {plain.url} was started without sparkseq's parser extension (python -m "
                      "sparkseq connect-server starts one with it); use sparkseq.sql(spark, text)")
    assert seen.pop("sql") == OWN
    assert seen.pop("explain") == "pattern       SEQ(A, B)"
    assert "PARSE_SYNTAX_ERROR" in str(seen.pop("spark_sql"))
    assert seen == {}


# --- the command ------------------------------------------------------------------------------


def test_busy_port_and_sigterm(servers: tuple[Server, Server, str, str]) -> None:
    ours = servers[0]
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "sparkseq", "connect-server", "--port", str(ours.port)],
                          capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 2
    assert f"PortInUseError: cannot listen on 127.0.0.1:{ours.port}" in done.stderr
    assert time.monotonic() - started < 20  # refused before a Spark session started
    ours.process.send_signal(signal.SIGTERM)
    assert ours.process.wait(timeout=60) == 0
    assert not listening(ours.port)
