"""What ``python -m sparkseq`` prints is for the user: no traceback, no warning of
PySpark's, a syntax error placed in the user's text, the same relation arguments for
``sql`` and ``explain``, results headed by their statement's first line of code.

The commands run for real in subprocesses (each starts its own Spark); Ctrl-C is a
SIGINT sent to the process group of a running ``stream`` or ``sql``, as a terminal sends it.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from pyspark.errors import PySparkException

import sparkseq
from sparkseq.commands import cli
from sql_rewrites.errors import SqlParseError
from tests.test_spark_live_state import FUNNEL, write_json_files
from tests.test_spark_live_state import SCHEMA as STREAM_SCHEMA

ROOT = Path(__file__).resolve().parent.parent
CLICKS_DDL = "customer_id INT, ts TIMESTAMP, action STRING, item STRING, price DECIMAL(10,2)"
#: A script whose statement follows a comment; its result is cut by --limit long before
#: the engine's output for 2,000 customers has been read.
FUNNEL_SCRIPT = """-- the Kindle funnel, per customer
/* two steps */
SELECT customer_id, funnels FROM clicks MATCH_AGGREGATE (
  PARTITION BY customer_id ORDER BY ts
  PATTERN SEQ(VK, BK)
  DEFINE VK AS action = 'view' AND item = 'kindle',
         BK AS action = 'buy' AND item = 'kindle'
  MEASURES COUNT(*) AS funnels
  WITHIN INTERVAL 10 MINUTES) AS m"""
#: A statement whose two tasks sleep for five minutes each.
SLOW_STATEMENT = "SELECT max(s) AS n FROM (SELECT reflect('java.lang.Thread', 'sleep', 300000L) AS s FROM range(2))"
#: DEFINE with a trailing comma: the comma is at line 3, column 50.
TRAILING_COMMA = """SELECT * FROM clicks MATCH_AGGREGATE (
  PARTITION BY customer_id ORDER BY ts PATTERN SEQ(A, B) TYPE BY action
  DEFINE A AS item = 'kindle', B AS item = 'case',
  MEASURES COUNT(*) AS n) AS m"""


def write_clicks(path: Path, customers: int = 2000, per_customer: int = 8) -> None:
    rnd = random.Random(3)
    lines = ["customer_id,ts,action,item,price"]
    for customer in range(customers):
        for minute in range(per_customer):
            lines.append(f"{customer},2024-05-01 10:{minute:02d}:00,{rnd.choice(['view', 'buy'])},"
                         f"{rnd.choice(['kindle', 'case'])},{rnd.randint(1, 99)}.99")
    path.write_text("\n".join(lines) + "\n")


def command(*args: str) -> list[str]:
    return [sys.executable, "-m", "sparkseq", *args]


def stderr_lines(stderr: str) -> list[str]:
    """stderr's lines without the JVM's start-up notice and the progress bar."""
    return [line for line in stderr.replace("\r", "\n").splitlines()
            if line.strip() and "incubator modules" not in line and not line.startswith("[Stage")]


def started(args: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    """``python -m sparkseq *args`` running in a process group of its own, as in a terminal."""
    return subprocess.Popen(command(*args), cwd=ROOT, env=env, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)


def stream_args(folder: Path, files: int) -> list[str]:
    """A ``stream`` over ``files`` files of clicks in ``folder``, one per micro-batch."""
    write_json_files(folder / "src", files=files, keys=4, seconds_per_file=15)
    return ["stream", FUNNEL.format(source="events"), "--source-dir", str(folder / "src"), "--schema",
            STREAM_SCHEMA, "--watermark", "3 seconds", "--checkpoint", str(folder / "ck"), "--output",
            str(folder / "out"), "--max-files-per-trigger", "1", "--master", "local[2]"]


def ctrl_c_when(child: subprocess.Popen[str], ready: Callable[[list[str]], bool]) -> subprocess.CompletedProcess[str]:
    """Once the lines ``child`` printed satisfy ``ready``, what Ctrl-C at a terminal does:
    SIGINT to its process group. Then everything it printed."""
    printed: list[str] = []
    while not ready(printed):
        printed.append(child.stdout.readline())  # type: ignore[union-attr]
        if not printed[-1]:
            break
    time.sleep(2)
    os.killpg(child.pid, signal.SIGINT)
    out, err = child.communicate(timeout=300)
    return subprocess.CompletedProcess(child.args, child.returncode, "".join(printed) + out, err)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, subprocess.CompletedProcess[str]]:
    """Started together (each starts its own Spark): ``sql --limit 3`` over 2,000
    customers; a ``stream`` stopped by Ctrl-C after two micro-batches; ``sql`` stopped by
    Ctrl-C in a statement whose tasks sleep for minutes."""
    folder = tmp_path_factory.mktemp("console")
    write_clicks(folder / "clicks.csv")
    (folder / "funnel.sql").write_text(FUNNEL_SCRIPT)
    env = {**os.environ, "SPARKSEQ_SCRATCH": str(folder / "scratch")}
    running = {
        "limit": started(["sql", "--file", str(folder / "funnel.sql"), "--limit", "3", "--table",
                          f"clicks={folder / 'clicks.csv'}", "--schema", f"clicks={CLICKS_DDL}"], env),
        "stream": started(stream_args(folder / "stream", files=4), env),
        "sql stopped": started(["sql", f"SELECT 1 AS one; {SLOW_STATEMENT}"], env),
    }
    done: dict[str, subprocess.CompletedProcess[str]] = {}
    try:
        done["stream"] = ctrl_c_when(running["stream"], lambda lines: sum(s.startswith("batch ") for s in lines) >= 2)
        done["sql stopped"] = ctrl_c_when(running["sql stopped"], lambda lines: f"-- {SLOW_STATEMENT}\n" in lines)
        out, err = running["limit"].communicate(timeout=600)
        done["limit"] = subprocess.CompletedProcess(running["limit"].args, running["limit"].returncode, out, err)
    finally:
        for process in running.values():
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
    return done


def test_a_result_cut_by_limit_prints_no_worker_traceback(runs) -> None:  # noqa: ANN001
    done = runs["limit"]
    assert done.returncode == 0, done.stderr
    assert "only showing top 3 rows" in done.stdout
    assert stderr_lines(done.stderr) == [], done.stderr


def test_a_result_is_headed_by_its_first_line_of_code(runs) -> None:  # noqa: ANN001
    header = runs["limit"].stdout.splitlines()[0]
    assert header == "-- SELECT customer_id, funnels FROM clicks MATCH_AGGREGATE ("


def test_ctrl_c_stops_a_stream_with_one_line(runs) -> None:  # noqa: ANN001
    done = runs["stream"]
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "query stopped", done.stdout
    for noise in ("Traceback", "py4j", "ERROR", "Exception"):
        assert noise not in done.stderr, done.stderr
    assert stderr_lines(done.stderr) == [], done.stderr


def test_ctrl_c_cancels_a_statement_with_one_line(runs) -> None:  # noqa: ANN001
    done = runs["sql stopped"]
    assert done.returncode == cli.INTERRUPTED, done.stderr
    assert stderr_lines(done.stderr) == ["interrupted"], done.stderr


def test_python_workers_print_no_warnings(runs) -> None:  # noqa: ANN001
    """The live operator runs on PySpark's pandas-based stateful operator, whose code makes
    pandas warn about concatenating empty frames in every micro-batch."""
    for name in ("stream", "limit"):
        assert "Warning" not in runs[name].stderr, runs[name].stderr


# --- without Spark: explain ------------------------------------------------------------------


def test_explain_takes_the_schema_form_sql_takes(tmp_path: Path) -> None:
    """``--schema NAME=DDL``, the form ``sql`` takes with ``--table``, also alone: explain
    then reads the relation from it and starts no Spark."""
    done = subprocess.run(command("explain", "--schema", f"clicks={CLICKS_DDL}", FUNNEL_SCRIPT), cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "pattern       SEQ(VK, BK)" in done.stdout and "Spark SQL:" in done.stdout
    bad = subprocess.run(command("explain", "--schema", "clicks=customer_id INT, ts TIMESTAMPZ", FUNNEL_SCRIPT),
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert bad.returncode == 1 and bad.stderr.startswith("--schema clicks: column ts: not a Spark SQL type: "
                                                         "'TIMESTAMPZ'"), bad.stderr


def test_sql_and_explain_declare_the_same_relation_arguments() -> None:
    def relation_options(name: str) -> list[tuple[tuple[str, ...], str | None, str | None]]:
        import argparse

        parser = argparse.ArgumentParser()
        cli.COMMANDS[name][1](parser)
        return [(a.option_strings, a.metavar, a.help) for a in parser._actions if a.dest in ("table", "schema")]

    assert relation_options("sql") == relation_options("explain")
    assert len(relation_options("sql")) == 2


def test_a_trailing_comma_in_define_is_a_syntax_error_on_the_command_line() -> None:
    schema = json.dumps({"clicks": {"customer_id": "int", "ts": "timestamp", "action": "string", "item": "string"}})
    done = subprocess.run(command("explain", "--schema", schema, TRAILING_COMMA), cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 1
    first, excerpt, carets = done.stderr.splitlines()[:3]
    assert first == ("SqlParseError: Expecting a symbol definition (name AS condition) after ',' in DEFINE "
                     "at line 3, column 50")
    assert excerpt.endswith("DEFINE A AS item = 'kindle', B AS item = 'case',") and carets.endswith("^")
    assert "Traceback" not in done.stderr


# --- the same error on every surface -------------------------------------------------------


def test_a_trailing_comma_in_define_is_the_same_error_in_spark_sql(spark) -> None:  # noqa: ANN001
    spark.createDataFrame([(1, "2024-05-01 10:00:00", "view", "kindle")], "customer_id INT, ts STRING, action STRING, "
                          "item STRING").selectExpr("customer_id", "CAST(ts AS TIMESTAMP) AS ts", "action", "item") \
        .createOrReplaceTempView("clicks")
    message = "Expecting a symbol definition (name AS condition) after ',' in DEFINE at line 3, column 50"
    with pytest.raises(SqlParseError) as error:
        sparkseq.sql(spark, TRAILING_COMMA)
    assert str(error.value).startswith(message)
    with pytest.raises(PySparkException) as error:
        spark.sql(TRAILING_COMMA)
    assert message in str(error.value)
