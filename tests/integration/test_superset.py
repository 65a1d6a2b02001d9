"""Superset against sparkseq's Thrift server, its charts rendered in a real browser.

Superset (``.venv-superset``, pinned in ``superset-requirements.txt`` with every package
of the tested environment in ``superset-constraints.txt``) runs with
``examples/bi/superset/superset_config.py`` — the ``hive+sparkthrift://`` dialect of
``sparkthrift_dialect.py`` — under gunicorn on a loopback port, its metadata in SQLite
in a temporary ``SUPERSET_HOME``. The server is ``python -m sparkseq thriftserver
--warehouse DIR`` in a subprocess; a JDBC client (impyla) creates the table ``clicks``
over the sample CSV and the persistent view ``kindle_funnels`` over MATCH_AGGREGATE, as
a BI team would with beeline or dbt (Superset's SQL Lab cannot send MATCH_AGGREGATE:
it parses SQL itself). Through Superset's REST API the test then registers the
database, checks its table list and that SQL Lab refuses MATCH_AGGREGATE text (and that
``''`` in a pattern string becomes ``CONCAT(...)``), makes a dataset of each, gives ``clicks`` a
``seq_count`` metric, and saves two table charts — conversions by item (the
metric, and an ad-hoc ``seq_count`` whose pattern quotes its symbols as ``\\'``) and the
top Kindle funnels of the view. Headless Chromium (the OS's ``chromium`` and
``chromium-driver``, driven by Superset's Selenium: ``superset_browser.py``) logs in,
opens each chart, saves a PNG (copied to ``.sparkseq-tmp/superset/``) and reads the
table it shows; those numbers must equal the server's answer to the same
``seq_count`` / MATCH_AGGREGATE text sent by a JDBC client.

Run by ``bash .ci/integration`` (which installs Chromium when missing). The first run
installs Superset and prepares its metadata database (``superset db upgrade``,
``fab create-admin``, ``superset init``: a few minutes), kept in ``.venv-superset``
for later runs.
"""

from __future__ import annotations

import http.cookiejar
import json
import os
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_dbt import Server, client_rows, kill, start_server
from tests.servers.test_thrift_server import free_port

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
REQUIREMENTS = HERE / "superset-requirements.txt"
CONSTRAINTS = HERE / "superset-constraints.txt"
BROWSER_SCRIPT = HERE / "superset_browser.py"
CONFIG = ROOT / "examples" / "bi" / "superset"
SUPERSET_VENV = ROOT / ".venv-superset"
#: The metadata database after ``db upgrade``, ``fab create-admin`` and ``init``, copied for each run.
TEMPLATE = SUPERSET_VENV / "superset-home-template"
SCREENSHOTS = ROOT / ".sparkseq-tmp" / "superset"
CLICKS_CSV = ROOT / "sparkseq" / "data" / "clicks.csv"
ADMIN, PASSWORD = "admin", "admin-test-password"
#: Superset encrypts database passwords with it; a test-only value, the same for the template.
SECRET_KEY = "sparkseq-superset-test-only-secret"

#: The view's query, and the answer the chart over it must show when sent as text by a client.
KINDLE_FUNNELS = """SELECT customer_id, funnels, revenue FROM default.clicks MATCH_AGGREGATE (
  PARTITION BY customer_id ORDER BY ts
  PATTERN SEQ(VK, BK, !REC, VC, BC)
  DEFINE VK  AS action = 'view' AND item = 'kindle', BK AS action = 'buy' AND item = 'kindle',
         REC AS action = 'recommendation',
         VC  AS action = 'view' AND item = 'case',   BC AS action = 'buy' AND item = 'case'
  MEASURES COUNT(*) AS funnels, SUM(BC.price) AS revenue
  WITHIN INTERVAL 10 MINUTES) AS m"""
CONVERSIONS = "seq_count(ts, action, 'SEQ(view, buy)', INTERVAL 30 MINUTES)"
#: The same pattern with quoted symbols, written as Superset users must (\' rather than '').
QUOTED_CONVERSIONS = "seq_count(ts, action, 'SEQ(\\'view\\', \\'buy\\')', INTERVAL 30 MINUTES)"


def superset_env(home: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("PYSPARK", "SPARK", "VIRTUAL_ENV", "PYTHONPATH"))}
    env.update(SUPERSET_HOME=str(home), SUPERSET_CONFIG_PATH=str(CONFIG / "superset_config.py"),
               SUPERSET_SECRET_KEY=SECRET_KEY, PYTHONPATH=str(CONFIG), FLASK_APP="superset",
               PATH=f"{SUPERSET_VENV / 'bin'}:{os.environ.get('PATH', '')}")
    return env


def run_superset(home: Path, *args: str) -> None:
    done = subprocess.run([str(SUPERSET_VENV / "bin" / "superset"), *args], env=superset_env(home),
                          capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, f"superset {' '.join(args)}:\n{done.stdout}\n{done.stderr}"


def superset_installed() -> Path:
    """.venv-superset from the pinned requirements, and a prepared metadata database; made once."""
    stamp = SUPERSET_VENV / ".requirements"
    wanted = REQUIREMENTS.read_text() + CONSTRAINTS.read_text()
    if not (stamp.exists() and stamp.read_text() == wanted):
        shutil.rmtree(SUPERSET_VENV, ignore_errors=True)
        python = os.environ.get("PYTHON", "python3.11")  # as .ci/bootstrap.sh: a Python 3.11 of the machine
        subprocess.run([python, "-m", "venv", str(SUPERSET_VENV)], check=True)
        subprocess.run([str(SUPERSET_VENV / "bin" / "pip"), "install", "--disable-pip-version-check", "-q",
                        "-r", str(REQUIREMENTS), "-c", str(CONSTRAINTS)], check=True)
        TEMPLATE.mkdir()
        run_superset(TEMPLATE, "db", "upgrade")
        run_superset(TEMPLATE, "fab", "create-admin", "--username", ADMIN, "--firstname", "Test", "--lastname",
                     "Admin", "--email", "admin@example.org", "--password", PASSWORD)
        run_superset(TEMPLATE, "init")
        stamp.write_text(wanted)
    return TEMPLATE


class Superset:
    """Superset's REST API with a logged-in admin: a JWT for the API, a CSRF token for writes."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
        self.headers = {"Content-Type": "application/json", "Referer": url}
        login = {"username": ADMIN, "password": PASSWORD, "provider": "db", "refresh": True}
        self.headers["Authorization"] = "Bearer " + self.call("POST", "/api/v1/security/login", login)["access_token"]
        self.headers["X-CSRFToken"] = self.call("GET", "/api/v1/security/csrf_token/")["result"]

    def call(self, method: str, path: str, body: object = None) -> Any:
        status, answer = self.answer(method, path, body)
        assert status < 300, f"{method} {path}: {status} {answer}"
        return answer

    def answer(self, method: str, path: str, body: object = None) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method, headers=self.headers)
        try:
            with self.opener.open(request, timeout=600) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            text = error.read().decode()
            try:
                return error.code, json.loads(text)
            except ValueError:
                return error.code, text[:3000]


def execute(port: int, sql: str) -> None:
    """A statement without rows (DDL), sent by a JDBC client."""
    impala = pytest.importorskip("impala.dbapi")
    connection = impala.connect(host="127.0.0.1", port=port, auth_mechanism="PLAIN", user="bi-team", password="-",
                                timeout=300)
    try:
        cursor = connection.cursor()
        cursor.execute(sql)
        cursor.close()
    finally:
        connection.close()


def rison_schema(schema: str) -> str:
    return urllib.parse.quote(f"(schema_name:{schema},force:!t)")


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("superset")


@pytest.fixture(scope="module")
def superset(workspace: Path) -> Iterator[str]:
    """Superset under gunicorn on a free loopback port, with a copy of the prepared metadata database."""
    home = workspace / "superset-home"
    shutil.copytree(superset_installed(), home)
    port = free_port()
    log = (workspace / "superset.log").open("w+")
    process = subprocess.Popen([str(SUPERSET_VENV / "bin" / "gunicorn"), "-w", "1", "-k", "gthread", "--threads", "4",
                                "--timeout", "600", "-b", f"127.0.0.1:{port}", "superset.app:create_app()"],
                               env=superset_env(home), cwd=workspace, stdout=log, stderr=subprocess.STDOUT,
                               start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 300
        while True:
            if process.poll() is not None:
                log.seek(0)
                raise AssertionError(f"Superset exited ({process.returncode}): {log.read()[-5000:]}")
            try:
                with urllib.request.urlopen(url + "/health", timeout=10) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            assert time.monotonic() < deadline, "Superset did not answer /health within 300 s"
            time.sleep(2)
        yield url
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)  # gunicorn's master and worker, started in their own group
            try:
                process.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        log.close()


@pytest.fixture(scope="module")
def server(workspace: Path) -> Iterator[Server]:
    started = start_server(workspace, workspace / "warehouse", free_port())
    yield started
    kill(started)


def test_superset_renders_seq_count_and_match_aggregate_view_charts(workspace: Path, server: Server,
                                                                     superset: str) -> None:
    assert Path("/usr/bin/chromium").exists() and Path("/usr/bin/chromedriver").exists(), \
        "headless Chromium is needed: apt-get install chromium chromium-driver (bash .ci/integration does)"
    begun = time.monotonic()
    port = server.port
    # what a BI team does with beeline or dbt: a table of the data, a persistent view over MATCH_AGGREGATE
    execute(port, f"""CREATE TABLE default.clicks
      (customer_id INT, ts TIMESTAMP, action STRING, item STRING, price DECIMAL(10,2))
      USING csv OPTIONS (path '{CLICKS_CSV}', header 'true')""")
    execute(port, f"CREATE OR REPLACE VIEW default.kindle_funnels AS\n{KINDLE_FUNNELS}")

    api = Superset(superset)
    database = api.call("POST", "/api/v1/database/", {
        "database_name": "sparkseq", "sqlalchemy_uri": f"hive+sparkthrift://superset@127.0.0.1:{port}/default",
        "expose_in_sqllab": True})["id"]
    listed = api.call("GET", f"/api/v1/database/{database}/tables/?q={rison_schema('default')}")["result"]
    print(f"Superset's table list of default: {listed}")
    assert {"clicks", "kindle_funnels"} <= {entry["value"] for entry in listed}

    # MATCH_AGGREGATE text in SQL Lab: Superset parses the statement itself first, and refuses it
    status, refused = api.answer("POST", "/api/v1/sqllab/execute/", {
        "database_id": database, "schema": "default", "sql": KINDLE_FUNNELS, "runAsync": False, "client_id": "ma-text"})
    print(f"SQL Lab on MATCH_AGGREGATE text: {status} {refused}")
    assert status == 422 and refused["errors"][0]["error_type"] == "INVALID_SQL_ERROR"

    def dataset(table: str) -> int:
        return api.call("POST", "/api/v1/dataset/", {"database": database, "schema": "default",
                                                     "table_name": table})["id"]

    clicks, funnels = dataset("clicks"), dataset("kindle_funnels")
    metrics = [{"id": metric["id"], "metric_name": metric["metric_name"], "expression": metric["expression"]}
               for metric in api.call("GET", f"/api/v1/dataset/{clicks}")["result"]["metrics"]]  # COUNT(*)
    api.call("PUT", f"/api/v1/dataset/{clicks}", {"metrics": [
        *metrics, {"metric_name": "conversions", "expression": CONVERSIONS, "d3format": ",d"}]})

    # '' in a pattern string: Superset's SQL parser turns the literal into CONCAT(...), which loses the quotes
    doubled = {"expressionType": "SQL", "label": "doubled", "sqlExpression": QUOTED_CONVERSIONS.replace("\\'", "''")}
    asked = {"datasource": {"id": clicks, "type": "table"}, "result_type": "query", "result_format": "json",
             "queries": [{"columns": ["item"], "metrics": [doubled]}]}
    sent = api.call("POST", "/api/v1/chart/data", asked)["result"][0]["query"]
    print(f"Superset's SQL for a pattern with '' quotes: {sent}")
    assert "CONCAT(" in sent

    def chart(name: str, dataset_id: int, params: dict[str, Any]) -> int:
        params = {"datasource": f"{dataset_id}__table", "viz_type": "table", "adhoc_filters": [],
                  "show_cell_bars": False, "server_pagination": False, **params}
        return api.call("POST", "/api/v1/chart/", {"slice_name": name, "viz_type": "table", "datasource_id": dataset_id,
                                                   "datasource_type": "table", "params": json.dumps(params)})["id"]

    by_item = chart("Conversions by item (seq_count)", clicks, {
        "query_mode": "aggregate", "groupby": ["item"], "row_limit": 100,
        "metrics": ["conversions", {"expressionType": "SQL", "sqlExpression": QUOTED_CONVERSIONS,
                                    "label": "quoted_conversions"}],
        "timeseries_limit_metric": "conversions", "order_desc": True,
        "column_config": {"quoted_conversions": {"d3NumberFormat": ",d"}}})
    top = chart("Top Kindle funnels (MATCH_AGGREGATE view)", funnels, {
        "query_mode": "raw", "all_columns": ["customer_id", "funnels", "revenue"], "row_limit": 10,
        "order_by_cols": [json.dumps(["funnels", False]), json.dumps(["customer_id", True])],
        "column_config": {"revenue": {"d3NumberFormat": ",.2f"}}})
    print(f"Superset set up in {time.monotonic() - begun:.0f} s")

    browsed = subprocess.run([str(SUPERSET_VENV / "bin" / "python"), str(BROWSER_SCRIPT), superset, ADMIN, PASSWORD,
                              str(workspace), str(by_item), str(top)],
                             capture_output=True, text=True, timeout=1200)
    assert browsed.returncode == 0, browsed.stdout + browsed.stderr
    shown = json.loads(browsed.stdout.strip().splitlines()[-1])
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    for name, chart_id in (("conversions-by-item", by_item), ("top-kindle-funnels", top)):
        kept = SCREENSHOTS / f"{name}.png"
        shutil.copyfile(shown[str(chart_id)]["png"], kept)
        print(f"chart {chart_id} rendered in {shown[str(chart_id)]['seconds']} s: {kept}")

    def number(text: str) -> Decimal:
        return Decimal(text.replace(",", ""))

    expected_items = {item: count for item, count in client_rows(
        port, f"SELECT item, {CONVERSIONS} FROM default.clicks GROUP BY item")}
    headers, rows = shown[str(by_item)]["headers"], shown[str(by_item)]["rows"]
    print(f"{headers}: {rows}\nsparkseq: {expected_items}")
    assert headers == ["item", "conversions", "quoted_conversions"]
    assert {item: (number(a), number(b)) for item, a, b in rows} == {
        item: (count, count) for item, count in expected_items.items()}
    assert sum(expected_items.values()) > 0

    expected_top = client_rows(port, f"SELECT * FROM ({KINDLE_FUNNELS}) AS f ORDER BY funnels DESC, customer_id "
                                     "LIMIT 10")
    headers, rows = shown[str(top)]["headers"], shown[str(top)]["rows"]
    print(f"{headers}: {rows}\nsparkseq: {expected_top}")
    assert headers == ["customer_id", "funnels", "revenue"]
    assert [tuple(number(cell) for cell in row) for row in rows] == [
        (customer, count, revenue) for customer, count, revenue in expected_top]
    assert len(rows) == 10 and expected_top[0][1] > 0
