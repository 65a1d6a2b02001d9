"""Persistent views over MATCH_AGGREGATE and ``seq_*``, stored in a Hive metastore.

Three processes, one after the other (Derby lets one process at a time open the
metastore; ``tests/servers/persistent_view_driver.py`` is each of them): a sparkseq session
creates a table and views — through ``spark.sql`` and ``sparkseq.sql`` — and reads them;
a new sparkseq process reads them again, from another current database too, and serves
them to a Spark Connect client and to a JDBC client of the Thrift server, each of which
creates one more; Spark without sparkseq fails on every one of them with an error naming
sparkseq. What Spark or sparkseq refuses to store is
recorded with its message.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sql_rewrites.statement_effects import view_query_span
from sql_rewrites.syntax.statements import split_statements
from tests.servers import persistent_view_driver as driver

ROOT = Path(__file__).resolve().parents[2]
STEP_TIMEOUT_S = 900  # one Spark process on a loaded 2-core machine
#: How a stored view's text starts: sparkseq's marker, the user's query after its first line.
MARKER = "SELECT * FROM needs_sparkseq(/* "


def run_step(step: str, folder: Path) -> dict[str, Any]:
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable,
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
           "SPARKSEQ_SCRATCH": str(folder / "scratch")}
    done = subprocess.run([sys.executable, str(Path(driver.__file__)), step, str(folder)], capture_output=True,
                          text=True, cwd=folder, env=env, timeout=STEP_TIMEOUT_S)
    lines = [line for line in done.stdout.splitlines() if line.startswith(driver.MARK)]
    assert done.returncode == 0 and lines, f"step {step} failed:\n{done.stdout[-3000:]}\n{done.stderr[-6000:]}"
    return json.loads(lines[-1][len(driver.MARK):])


@pytest.fixture(scope="module")
def steps(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    folder = tmp_path_factory.mktemp("metastore")
    return {step: run_step(step, folder) for step in ("create", "read", "plain")}


def value(outcome: dict[str, Any]) -> Any:
    assert "error" not in outcome, outcome
    return outcome["value"]


def error(outcome: dict[str, Any]) -> dict[str, Any]:
    assert "error" in outcome, f"expected an error, got {outcome}"
    return outcome


# --- where the query of a view statement is (no Spark) ------------------------------------


@pytest.mark.parametrize(("text", "query"), [
    ("CREATE VIEW v AS SELECT 1", "SELECT 1"),
    ("create or replace view db.v (a COMMENT 'as', b) COMMENT 'AS' TBLPROPERTIES ('x' = 'AS') AS\n"
     "  WITH w AS (SELECT 1 AS a, 2 AS b) SELECT * FROM w -- note",
     "WITH w AS (SELECT 1 AS a, 2 AS b) SELECT * FROM w"),
    ("CREATE VIEW IF NOT EXISTS v WITH SCHEMA EVOLUTION AS (SELECT 1 AS x)", "(SELECT 1 AS x)"),
    ("ALTER VIEW v AS SELECT 2 AS y", "SELECT 2 AS y"),
    ("CREATE TEMP VIEW v AS SELECT 1", None),
    ("CREATE OR REPLACE TEMPORARY VIEW v AS SELECT 1", None),
    ("CREATE GLOBAL TEMPORARY VIEW v AS SELECT 1", None),
    ("CREATE TABLE v AS SELECT 1", None),
    ("ALTER VIEW v SET TBLPROPERTIES ('a' = 'b')", None),
    ("SELECT 1 AS a", None),
])
def test_the_query_of_a_persistent_view_statement(text: str, query: str | None) -> None:
    span = view_query_span(split_statements(text)[0])
    assert (None if span is None else text[span[0]:span[1] + 1]) == query


# --- the creating session ---------------------------------------------------------------------


def test_views_are_created_through_spark_sql_and_sparkseq_sql(steps: dict[str, dict[str, Any]]) -> None:
    create = steps["create"]
    for name, outcome in create["created"].items():
        assert value(outcome) == [], name
    assert value(create["script"]) == driver.EXPECTED["funnel_sql"]  # sparkseq.sql: CREATE VIEW, then a query of it
    assert value(create["altered"]) == []
    assert create["tables"] == sorted(["t", *driver.EXPECTED])
    for name, rows in driver.EXPECTED.items():
        assert value(create["rows"][name]) == rows, name
    assert value(create["temp_view"]) == driver.EXPECTED["funnel_ma"]  # temporary views work as before


def test_describe_and_show_create_table_show_the_query_as_written(steps: dict[str, dict[str, Any]]) -> None:
    written = {"funnel_ma": driver.MA_WRITTEN, "funnel_seq": driver.SEQ, "funnel_mixed": driver.MIXED,
               "funnel_sql": driver.MA + " WHERE n > 2"}
    for name, query in written.items():
        texts = steps["create"]["texts"][name]
        stored = f"{texts['text']}"
        assert stored.startswith(MARKER) and stored.endswith(f"\n{query}\n*/)"), (name, stored)
        assert texts["original"] == stored
        assert stored in texts["show"] and f"CREATE VIEW default.{name} (" in texts["show"]
        assert "__sparkseq_" not in stored and "sparkseq_agg_" not in stored  # no generated SQL
    assert "k COMMENT 'customer'" in steps["create"]["texts"]["funnel_ma"]["show"]


def test_what_cannot_be_stored_is_refused_saying_why(steps: dict[str, dict[str, Any]]) -> None:
    refused = steps["create"]["refused"]
    hierarchy = error(refused["hierarchy_sparkseq_sql"])  # sparkseq: hierarchies live in one session
    assert hierarchy["error"] == "PersistentViewError"
    assert hierarchy["message"].startswith("a persistent view cannot use concept hierarchy acts: hierarchies are "
                                           "registered per session")
    assert "create a temporary view (CREATE TEMP VIEW)" in hierarchy["message"]
    assert "line 1, column 131" in hierarchy["message"]  # at the HIERARCHY name
    in_pattern = error(refused["hierarchy_spark_sql"])  # the same through spark.sql, in a seq_* pattern
    assert "PersistentViewError: a persistent view cannot use concept hierarchy acts" in in_pattern["message"]
    function = error(refused["function_ma"])
    assert "a permanent SQL function cannot hold MATCH_AGGREGATE" in function["message"]
    assert "create a persistent view of the query (CREATE VIEW name AS ...) and select from it" in function["message"]
    streaming = error(refused["forced_streaming"])
    assert "sparkseq.path=streaming cannot apply to the query of a persistent view" in streaming["message"]
    # Spark's own rules (CreateViewCommand.run, sql/core .../command/views.scala), as for any view
    temp = error(refused["temp_view_source"])
    assert temp["condition"] == "INVALID_TEMP_OBJ_REFERENCE" and "temporary object `temp_clicks`" in temp["message"]
    alias = error(refused["no_alias"])
    assert alias["condition"] == "CREATE_PERMANENT_VIEW_WITHOUT_ALIAS"
    assert "seq_count(ts, action, SEQ(view, buy))" in alias["message"]


def test_permanent_sql_functions_call_seq_functions_and_read_views(steps: dict[str, dict[str, Any]]) -> None:
    for name, outcome in steps["create"]["functions"].items():
        assert value(outcome) == [], name
    for step in ("create", "read"):
        for name, outcome in steps[step]["function_rows"].items():
            assert value(outcome) == driver.EXPECTED["funnel_ma"], (step, name)


# --- a new process ----------------------------------------------------------------------------


def test_a_new_process_reads_the_same_rows(steps: dict[str, dict[str, Any]]) -> None:
    read = steps["read"]
    for name, rows in driver.EXPECTED.items():
        assert value(read["rows"][name]) == rows, name
    assert value(read["spark_sql"]) == [["a", 30]]
    # Spark reads no permanent view as a stream (its analyzer's relation resolution), sparkseq's or not
    stream = error(read["stream"])
    assert ("default.funnel_ma is a permanent view, which is not supported by streaming reading API such as "
            "`DataStreamReader.table` yet") in stream["message"]


def test_names_in_a_view_resolve_where_it_was_created(steps: dict[str, dict[str, Any]]) -> None:
    read = steps["read"]
    # other.t holds a customer z: read from there, a view over `t` would count it
    for name, outcome in read["from_other_database"].items():
        assert value(outcome) == driver.EXPECTED[name], name
    assert value(read["temp_view_shadow"]) == driver.EXPECTED["funnel_ma"]  # a temporary `t` changes nothing


def test_jdbc_clients_read_and_create_views(steps: dict[str, dict[str, Any]]) -> None:
    jdbc = steps["read"]["jdbc"]
    assert value(jdbc["funnel_ma"]) == driver.EXPECTED["funnel_ma"]
    assert value(jdbc["funnel_seq"]) == driver.EXPECTED["funnel_seq"]
    value(jdbc["create"])
    assert value(jdbc["funnel_jdbc"]) == driver.EXPECTED["funnel_ma"]
    stored = value(steps["read"]["jdbc_view_text"])["text"]
    assert stored.startswith(MARKER) and stored.endswith(f"\n{driver.MA}\n*/)")
    assert "funnel_jdbc" in steps["plain"]["tables"]  # in the metastore, for every process


def test_spark_connect_clients_read_and_create_views(steps: dict[str, dict[str, Any]]) -> None:
    connect = steps["read"]["connect"]
    assert "failed" not in connect, connect
    for name in ("funnel_ma", "funnel_seq", "funnel_over"):
        assert value(connect[name]) == driver.EXPECTED[name], name
    value(connect["create"])  # sparkseq.sql on the client sends CREATE VIEW as written to the server
    assert value(connect["funnel_connect"]) == driver.EXPECTED["funnel_ma"]
    stored = value(steps["read"]["connect_view_text"])["text"]
    assert stored.startswith(MARKER) and stored.endswith(f"\n{driver.MA}\n*/)")


# --- Spark without sparkseq -------------------------------------------------------------------


def test_the_extension_without_sparkseqs_python_driver_says_what_to_do(steps: dict[str, dict[str, Any]]) -> None:
    failed = error(steps["read"]["no_rewriter"])
    assert failed["condition"] == "USER_RAISED_EXCEPTION"
    assert ("the view spark_catalog.default.funnel_ma needs sparkseq's rewriter, which runs in the Python driver, "
            "and none is installed in this Spark driver: read the view from a session built by sparkseq.session()"
            in failed["message"])



def test_spark_without_sparkseq_fails_naming_sparkseq(steps: dict[str, dict[str, Any]]) -> None:
    for name in driver.EXPECTED:  # funnel_over fails on the view it reads
        failed = error(steps["plain"]["rows"][name])
        assert failed["condition"] == "UNRESOLVABLE_TABLE_VALUED_FUNCTION", (name, failed)
        assert "Could not resolve `needs_sparkseq` to a table-valued function" in failed["message"]
        (fragment,) = failed["contexts"]  # the query context Spark reports: the marker, with what to do
        assert fragment.startswith("needs_sparkseq(/* This view is written in sparkseq's SQL"), fragment
        assert "Spark reads it in a session with sparkseq, e.g. sparkseq.session()" in fragment
    # a SQL function's body is stored as written: the seq_* function is unknown, the view fails as above
    unknown = error(steps["plain"]["function_rows"]["funnel_fn"])
    assert unknown["condition"] == "UNRESOLVED_ROUTINE" and "`seq_count`" in unknown["message"]
    over_view = error(steps["plain"]["function_rows"]["funnel_fn_view"])
    assert over_view["condition"] == "UNRESOLVABLE_TABLE_VALUED_FUNCTION"
