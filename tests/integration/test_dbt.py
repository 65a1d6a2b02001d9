"""dbt against sparkseq's Thrift server: the project in examples/bi/dbt, run as a BI team would.

dbt-core and dbt-spark[PyHive] live in their own virtual environment (``.venv-dbt``,
pinned in ``dbt-requirements.txt`` beside this file; dbt's dependencies do not mix with
sparkseq's). The server is ``python -m sparkseq thriftserver --warehouse DIR`` in a
subprocess: ``dbt seed``, ``dbt run`` of the first day and then of the rest (the
incremental model appends the second day), ``dbt test``; then the server is killed
(``kill -9``: an unclean stop), started again on the same warehouse, the view models
answer as before without dbt having run, and ``dbt run`` / ``dbt test`` work again.

Run by ``bash .ci/integration`` (it installs dbt on first use: about a minute), not by
the main test command.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import pytest

from tests.servers.test_thrift_server import free_port, query, read_banner

ROOT = Path(__file__).resolve().parents[2]
PROJECT = ROOT / "examples" / "bi" / "dbt"
REQUIREMENTS = Path(__file__).resolve().parent / "dbt-requirements.txt"
DBT_VENV = ROOT / ".venv-dbt"
SCHEMA = "kindle"



def model_query(name: str) -> str:
    """The SELECT of model ``name`` as a client sends it: dbt's config line and comments
    dropped, ``{{ ref('clicks') }}`` the seed's table."""
    lines = (PROJECT / "models" / f"{name}.sql").read_text().splitlines()
    body = [line for line in lines if line.strip() and not line.startswith(("--", "{{ config"))]
    return "\n".join(body).replace("{{ ref('clicks') }}", f"{SCHEMA}.clicks")


#: What the view model must answer: its MATCH_AGGREGATE, sent as text by a JDBC client.
KINDLE_FUNNELS = model_query("kindle_funnels") + " ORDER BY customer_id"


def dbt_executable() -> Path:
    """dbt in its own virtual environment, installed from the pinned requirements once."""
    stamp = DBT_VENV / ".requirements"
    wanted = REQUIREMENTS.read_text()
    if not (stamp.exists() and stamp.read_text() == wanted):
        shutil.rmtree(DBT_VENV, ignore_errors=True)
        python = os.environ.get("PYTHON", "python3.11")  # as .ci/bootstrap.sh: a Python 3.11 of the machine
        subprocess.run([python, "-m", "venv", str(DBT_VENV)], check=True)
        subprocess.run([str(DBT_VENV / "bin" / "pip"), "install", "--disable-pip-version-check", "-q", "-r",
                        str(REQUIREMENTS)], check=True)
        stamp.write_text(wanted)
    return DBT_VENV / "bin" / "dbt"


@dataclass
class Server:
    process: subprocess.Popen[str]
    port: int
    stderr: IO[str]


def start_server(folder: Path, warehouse: Path, port: int) -> Server:
    stderr = (folder / f"server-{port}-{len(list(folder.glob('server-*')))}.err").open("w+")
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    process = subprocess.Popen([sys.executable, "-m", "sparkseq", "thriftserver", "--port", str(port),
                                "--warehouse", str(warehouse)], cwd=folder, env=env, stdout=subprocess.PIPE,
                               stderr=stderr, text=True)
    read_banner(process, stderr)
    return Server(process, port, stderr)


def kill(server: Server) -> None:
    if server.process.poll() is None:
        server.process.kill()
        server.process.wait()
    server.stderr.close()


@pytest.fixture(scope="module")
def dbt() -> Path:
    return dbt_executable()


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("dbt")
    shutil.copytree(PROJECT, folder / "project")
    return folder


def run_dbt(dbt: Path, workspace: Path, port: int, *args: str) -> str:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PYSPARK", "SPARK", "VIRTUAL_ENV"))}
    env.update(SPARKSEQ_THRIFT_PORT=str(port), SPARKSEQ_DBT_SCHEMA=SCHEMA, DBT_PROFILES_DIR=str(workspace / "project"),
               DBT_SEND_ANONYMOUS_USAGE_STATS="false", NO_COLOR="1", DBT_USE_COLORS="false")
    done = subprocess.run([str(dbt), *args], cwd=workspace / "project", env=env, capture_output=True, text=True,
                          timeout=900)
    output = done.stdout + done.stderr
    print(f"$ dbt {' '.join(args)}\n{output}")
    assert done.returncode == 0, output
    return output


def assert_all_passed(output: str) -> None:
    """dbt's summary line: ``Done. PASS=8 WARN=0 ERROR=0 SKIP=0 NO-OP=0 TOTAL=8`` (a failed test counts as ERROR)."""
    summary = re.search(r"PASS=(\d+) WARN=(\d+) ERROR=(\d+) SKIP=(\d+).*TOTAL=(\d+)", output)
    assert summary is not None, output
    passed, _, errors, skipped, total = map(int, summary.groups())
    assert errors == skipped == 0 and passed == total > 0, summary.group(0)


def client_rows(port: int, sql: str) -> list[tuple]:
    impala = pytest.importorskip("impala.dbapi")
    connection = impala.connect(host="127.0.0.1", port=port, auth_mechanism="PLAIN", user="dbt-test", password="-",
                                timeout=300)
    try:
        return query(connection, sql)
    finally:
        connection.close()


@pytest.fixture(scope="module")
def first_server(workspace: Path) -> Iterator[Server]:
    server = start_server(workspace, workspace / "warehouse", free_port())
    yield server
    kill(server)


def test_dbt_seed_run_test_then_restart(dbt: Path, workspace: Path, first_server: Server) -> None:
    port = first_server.port
    assert "Completed successfully" in run_dbt(dbt, workspace, port, "seed")
    first = run_dbt(dbt, workspace, port, "run", "--vars", "{through_day: '2024-05-01'}")
    assert "PASS=3" in first  # kindle_funnels (view), item_conversions (table), daily_funnels (incremental)
    run_dbt(dbt, workspace, port, "run")  # daily_funnels appends 2024-05-02
    assert_all_passed(run_dbt(dbt, workspace, port, "test"))

    expected = client_rows(port, KINDLE_FUNNELS)
    assert sum(funnels for _, funnels, _ in expected) > 0
    assert client_rows(port, f"SELECT * FROM {SCHEMA}.kindle_funnels ORDER BY customer_id") == expected
    days = client_rows(port, f"SELECT day, count(*) FROM {SCHEMA}.daily_funnels GROUP BY day ORDER BY day")
    assert [str(day) for day, _ in days] == ["2024-05-01", "2024-05-02"]
    conversions = client_rows(port, f"SELECT * FROM {SCHEMA}.item_conversions ORDER BY item")
    shown = client_rows(port, f"SHOW CREATE TABLE {SCHEMA}.kindle_funnels")[0][0]
    assert "MATCH_AGGREGATE" in shown and "sparkseq_agg_" not in shown

    kill(first_server)  # an unclean stop: kill -9
    second = start_server(workspace, workspace / "warehouse", free_port())
    try:
        # nothing re-run: the views and tables are in the metastore, the view compiled again when read
        assert client_rows(second.port, f"SELECT * FROM {SCHEMA}.kindle_funnels ORDER BY customer_id") == expected
        assert client_rows(second.port, f"SELECT * FROM {SCHEMA}.item_conversions ORDER BY item") == conversions
        again = run_dbt(dbt, workspace, second.port, "run")
        assert "PASS=3" in again
        assert_all_passed(run_dbt(dbt, workspace, second.port, "test"))
        assert client_rows(second.port, f"SELECT * FROM {SCHEMA}.kindle_funnels ORDER BY customer_id") == expected
    finally:
        kill(second)
