"""``python -m sparkseq sql`` and ``explain``, called in-process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparkseq import cli

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
    second = (QUERY.replace("SEQ(view, buy)", "SEQ(view, view, buy)").replace("customer_id, n FROM", "customer_id, n3 FROM")
              .replace("AS n WITHIN", "AS n3 WITHIN"))
    script.write_text(f"{QUERY};\n{second};")
    assert cli.main(["sql", "--share", "--file", str(script), "--table", f"clicks={clicks}"]) == 0
    out = capsys.readouterr().out.replace(" ", "")
    assert "|customer_id|n|\n" in out and "|1|2|" in out  # view 10:00 and 10:01, each then buy
    assert "|customer_id|n3|\n" in out and "|1|1|" in out
    assert cli.main(["explain", "--share", "--file", str(script), "--table", f"clicks={clicks}"]) == 0
    out = capsys.readouterr().out
    assert "1 sharing group(s)" in out and "member 1: statement 2, SEQ(view, view, buy)" in out
    assert "== Sharing plan ==" in out and "Spark SQL of the group's input" in out
