"""``python -m sparkseq sql`` and ``explain``: in-process, and as a SQL shell in subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sparkseq.commands import cli

ROOT = Path(__file__).resolve().parent.parent

CSV = "customer_id,ts,action\n1,2024-05-01 10:00:00,view\n1,2024-05-01 10:01:00,view\n1,2024-05-01 10:02:00,buy\n"
QUERY = ("SELECT customer_id, n FROM clicks MATCH_AGGREGATE (PARTITION BY customer_id ORDER BY ts "
         "PATTERN SEQ(view, buy) TYPE BY action MEASURES COUNT(*) AS n WITHIN INTERVAL 10 MINUTES) AS m")
SCHEMA = {"clicks": {"customer_id": "int", "ts": "timestamp", "action": "string"}}


def test_explain_without_spark(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    schema_file = tmp_path / "schema.json"
    schema_file.write_text(json.dumps(SCHEMA))
    assert cli.main(["explain", "--schema", f"@{schema_file}", QUERY]) == 0
    out = capsys.readouterr().out
    assert "pattern       SEQ(view, buy)" in out and "Spark SQL:" in out


def test_explain_reports_errors_with_their_position(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        cli.main(["explain", "--schema", json.dumps(SCHEMA), QUERY.replace("SEQ(view, buy)", "SEQ(view,, buy)")])
    assert exit_.value.code == 1
    err = capsys.readouterr().err
    assert err.startswith("SqlParseError: Expecting a symbol") and "^" in err


def test_sql_runs_a_script_over_a_csv_file(spark, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    clicks, script = tmp_path / "clicks.csv", tmp_path / "script.sql"
    clicks.write_text(CSV)
    script.write_text(f"CREATE OR REPLACE TEMP VIEW pairs AS {QUERY};\n"
                      "SELECT count(*) AS customers, sum(n) AS pairs FROM pairs WHERE n > 0;")
    assert cli.main(["sql", "--file", str(script), "--table", f"clicks={clicks}", "--limit", "5"]) == 0
    out = capsys.readouterr().out.replace(" ", "")
    assert "--SELECTcount(*)AScustomers" in out and "|customers|pairs|\n+" in out and "|1|2|" in out


def test_sql_share_runs_a_workload_and_explain_share_shows_the_plan(spark, capsys: pytest.CaptureFixture[str],
                                                                    tmp_path: Path) -> None:
    clicks, script = tmp_path / "clicks.csv", tmp_path / "workload.sql"
    clicks.write_text(CSV)
    second = (QUERY.replace("SEQ(view, buy)", "SEQ(view, view, buy)")
              .replace("customer_id, n FROM", "customer_id, n3 FROM").replace("AS n WITHIN", "AS n3 WITHIN"))
    script.write_text(f"{QUERY};\n{second};")
    assert cli.main(["sql", "--share", "--file", str(script), "--table", f"clicks={clicks}"]) == 0
    out = capsys.readouterr().out.replace(" ", "")
    assert "|customer_id|n|\n" in out and "|1|2|" in out  # view 10:00 and 10:01, each then buy
    assert "|customer_id|n3|\n" in out and "|1|1|" in out
    assert cli.main(["explain", "--share", "--file", str(script), "--table", f"clicks={clicks}"]) == 0
    out = capsys.readouterr().out
    assert "1 sharing group(s)" in out and "member 1: statement 2, SEQ(view, view, buy)" in out
    assert "in the engine call, as collect_workload and workload(output=...) execute it" in out
    assert "Spark SQL of the group's input" in out


# --- the command as a SQL shell, in subprocesses (started together: each starts its own Spark) --------

PRICES = "customer_id,ts,action,price\n1,2024-05-01 10:00:00,view,10.50\n1,2024-05-01 10:01:00,buy,10.50\n"
SCHEMA_DDL = "clicks=customer_id INT, ts TIMESTAMP, action STRING, price DECIMAL(10,2)"
SHELL_SCRIPT = """DROP TABLE IF EXISTS cli_counts;
CREATE TABLE cli_counts (x INT) USING parquet;
INSERT INTO cli_counts VALUES (1);
SELECT count(*) AS first_count FROM cli_counts;
INSERT INTO cli_counts VALUES (2);
SELECT count(*) AS second_count FROM cli_counts;
SELECT typeof(price) AS price_type, price FROM clicks WHERE action = 'buy';
DROP TABLE cli_counts;
SELECT 1 / 0 AS boom"""


@pytest.fixture(scope="module")
def shell(tmp_path_factory: pytest.TempPathFactory) -> dict[str, subprocess.CompletedProcess[str]]:
    """Four commands run at once; the third's reader stops after three lines (``| head -3``)."""
    folder = tmp_path_factory.mktemp("cli")
    (folder / "clicks.csv").write_text(PRICES)
    (folder / "shell.sql").write_text(SHELL_SCRIPT)
    sliding = QUERY.replace("WITHIN INTERVAL 10 MINUTES", "WITHIN INTERVAL 10 MINUTES SLIDE INTERVAL 1 MINUTE")
    (folder / "workload.sql").write_text(f"{sliding};\n{sliding.replace('SEQ(view, buy)', 'SEQ(view, view, buy)')}")
    table = ["--table", f"clicks={folder / 'clicks.csv'}", "--schema", SCHEMA_DDL]
    commands = {
        "shell": ["sql", "--file", str(folder / "shell.sql"), *table],
        "invalid": ["sql", "SELECT 1 AS one;\nSELECT nosuch FROM range(3)"],
        "pipe": ["sql", "SELECT id FROM range(100000)", "--limit", "100000"],
        "explain": ["explain", "--share", "--file", str(folder / "workload.sql"), *table],
    }
    env = {**os.environ, "SPARKSEQ_SCRATCH": str(folder / "scratch")}
    running = {name: subprocess.Popen([sys.executable, "-m", "sparkseq", *args], cwd=ROOT, env=env, text=True,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE)
               for name, args in commands.items()}
    done = {}
    try:
        pipe = running["pipe"]
        head = [pipe.stdout.readline() for _ in range(3)]  # type: ignore[union-attr]
        pipe.stdout.close()  # type: ignore[union-attr]
        done["pipe"] = subprocess.CompletedProcess(pipe.args, pipe.wait(timeout=600), "".join(head),
                                                   pipe.stderr.read())  # type: ignore[union-attr]
        for name, process in running.items():
            if name != "pipe":
                out, err = process.communicate(timeout=600)
                done[name] = subprocess.CompletedProcess(process.args, process.returncode, out, err)
    finally:
        for process in running.values():
            if process.poll() is None:
                process.kill()
    return done


def clean(stderr: str) -> str:
    """stderr without the progress bar and the JVM's start-up notice."""
    lines = [line for line in stderr.replace("\r", "\n").splitlines()
             if line.strip() and not line.startswith("[Stage") and "incubator modules" not in line]
    return "\n".join(lines)


def assert_no_noise(stderr: str) -> None:
    for noise in ("Traceback", "SQLQueryContextLogger", "py4j", "BrokenPipe", '"logger"'):
        assert noise not in stderr, stderr


def test_results_come_statement_by_statement_and_a_run_time_error_is_one_line(shell) -> None:  # noqa: ANN001
    done = shell["shell"]
    out = done.stdout.replace(" ", "")
    assert done.returncode == 1, done.stderr
    first, second, prices = out.index("|first_count|"), out.index("|second_count|"), out.index("|price_type|")
    assert first < second < prices
    assert out[first:second].count("|1|") == 1 and "|2|" in out[second:prices]  # each count as of its turn
    assert "|decimal(10,2)|10.50|" in out[prices:]  # --schema: the CSV's prices are DECIMAL, not DOUBLE
    assert "|boom|" not in out  # the statement is echoed, then its error ends the script
    assert clean(done.stderr).startswith("ArithmeticException: [DIVIDE_BY_ZERO] Division by zero.")
    assert len(clean(done.stderr).splitlines()) == 1
    assert_no_noise(done.stderr)


def test_a_mistake_runs_nothing_and_is_reported_once_with_its_place(shell) -> None:  # noqa: ANN001
    done = shell["invalid"]
    assert done.returncode == 1 and done.stdout == ""
    error = clean(done.stderr)
    assert error.startswith("SparkAnalysisError: [UNRESOLVED_COLUMN.WITH_SUGGESTION]")
    assert "at line 2, column 8" in error and error.endswith("^^^^^^")
    assert_no_noise(done.stderr)


def test_a_closed_pipe_ends_quietly(shell) -> None:  # noqa: ANN001
    done = shell["pipe"]
    assert done.stdout.splitlines()[0] == "-- SELECT id FROM range(100000)"
    assert done.returncode == cli.BROKEN_PIPE
    assert clean(done.stderr) == "", done.stderr


def test_explain_share_speaks_in_time_units(shell) -> None:  # noqa: ANN001
    done = shell["explain"]
    assert done.returncode == 0, done.stderr
    assert "SEQ(view, buy) WITHIN 10 minutes SLIDE 1 minute" in done.stdout
    assert "rows per symbol from the statistics job (all rows), 1 partition):" in done.stdout
    assert "timeline 1: members 0, 1 on one timeline; estimated " in done.stdout
