"""Scripts are all or nothing (sparkseq.statements.scripts): every statement, plain Spark SQL too, is
checked before the first runs; Spark's own errors are placed in the user's text."""

from __future__ import annotations

import pytest

import sparkseq
from sparkseq.statements.scripts import compile_statement
from sparkseq.statements.sql_api import run_statements, sql
from sql_rewrites import errors as E
from tests.support.sql_cases import jobs_started

pytestmark = pytest.mark.usefixtures("isolated_hierarchies")

MARK = "CREATE OR REPLACE TEMP VIEW script_first AS SELECT 1 AS x;\n"  # must never be created
OPERATOR = ("SELECT customer_id, n FROM {source} MATCH_AGGREGATE (PARTITION BY customer_id ORDER BY ts\n"
            "  PATTERN SEQ(A, B) DEFINE A AS {condition}, B AS action = 'buy'\n"
            "  MEASURES COUNT(*) AS n WITHIN INTERVAL 10 MINUTES) AS m")


def operator(condition: str = "action = 'view'", source: str = "script_clicks") -> str:
    return OPERATOR.format(source=source, condition=condition)


@pytest.fixture(scope="module")
def clicks(spark) -> str:
    spark.sql("""CREATE OR REPLACE TEMP VIEW script_clicks AS SELECT * FROM VALUES
                 (1, TIMESTAMP'2024-05-01 10:00:00', 'view', 99.99BD),
                 (1, TIMESTAMP'2024-05-01 10:01:00', 'buy', 99.99BD),
                 (2, TIMESTAMP'2024-05-01 10:00:00', 'view', 5.00BD)
                 AS t(customer_id, ts, action, price)""")
    return "script_clicks"


CASES = [  # (id, second statement (line 2 of the script), error, message, (line, column), underlined text)
    ("plain-unknown-column", "SELECT nosuchcol FROM script_clicks", E.SparkAnalysisError,
     r"^\[UNRESOLVED_COLUMN.WITH_SUGGESTION\] .*`nosuchcol`", (2, 8), "nosuchcol"),
    ("plain-unknown-function", "SELECT customer_id,\n  no_such_fn(ts) FROM script_clicks", E.SparkAnalysisError,
     r"^\[UNRESOLVED_ROUTINE\] .*`no_such_fn`", (3, 3), "no_such_fn(ts)"),
    ("plain-syntax", "SELECT * FROM script_clicks WHERE customer_id >", E.SqlParseError,
     r"^\[PARSE_SYNTAX_ERROR\] Syntax error at or near end of input", (2, 48), ""),
    ("create-table-then-read", "CREATE TABLE script_never USING parquet AS SELECT * FROM script_clicks;\n"
     "SELECT amount FROM script_never", E.SparkAnalysisError, r"`amount`", (3, 8), "amount"),
    ("view-then-operator", "CREATE OR REPLACE TEMP VIEW script_v AS SELECT * FROM script_clicks;\n"
     + operator("actoin = 'view'", "script_v"), E.UnknownColumnError, r"unknown column 'actoin'", (4, 33), "actoin"),
    ("comment-before-create", "-- a view first\nCREATE OR REPLACE TEMP VIEW script_v AS SELECT * FROM script_clicks;\n"
     + operator("actoin = 'view'", "script_v"), E.UnknownColumnError, r"unknown column 'actoin'", (5, 33), "actoin"),
    ("define-unknown-function", operator("no_such_fn(A.action) = 'view'"), E.SparkAnalysisError,
     r"^DEFINE of A: \[UNRESOLVED_ROUTINE\] .*`no_such_fn`", (3, 33), "no_such_fn(A.action)"),
    ("define-argument-count", operator("substr(action, 1, 2, 3) = 'v'"), E.SparkAnalysisError,
     r"^DEFINE of A: \[WRONG_NUM_ARGS", (3, 33), "substr(action, 1, 2, 3)"),
    ("define-not-boolean", operator("price + 1"), E.SparkAnalysisError,
     r"^DEFINE of A: \[DATATYPE_MISMATCH", (3, 33), "price + 1"),
    ("outer-query", operator().replace("customer_id, n FROM", "customer_id, nn FROM"), E.SparkAnalysisError,
     r"^\[UNRESOLVED_COLUMN.WITH_SUGGESTION\] .*`nn`", (2, 21), "nn"),
    ("source-subquery", operator(source="(SELECT *, no_fn(price) AS p FROM script_clicks) AS s"),
     E.SparkAnalysisError, r"^the source of MATCH_AGGREGATE: \[UNRESOLVED_ROUTINE\] .*`no_fn`", (2, 39),
     "no_fn(price)"),
]


@pytest.mark.parametrize(("second", "error", "message", "where", "underlined"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_a_mistake_anywhere_runs_nothing_and_points_into_the_script(spark, clicks: str, second: str, error: type,
                                                                    message: str, where: tuple[int, int],
                                                                    underlined: str) -> None:
    before = jobs_started(spark)
    with pytest.raises(error, match=message) as caught:
        sql(spark, MARK + second)
    position = caught.value.position
    assert (position.line, position.column) == where, str(caught.value)
    source_line, carets = position.excerpt.splitlines()
    assert source_line.endswith((MARK + second).splitlines()[where[0] - 1])
    start = carets.index("^")
    assert source_line[start:start + len(carets) - start] == underlined or not underlined
    assert jobs_started(spark) == before
    for name in ("script_first", "script_v", "script_never"):
        assert not spark.catalog.tableExists(name)


def test_one_statement_is_left_to_spark_analysis_with_the_same_errors(spark, clicks: str) -> None:
    """No scratch copy for one statement: spark.sql's own analysis, before anything runs."""
    before = jobs_started(spark)
    with pytest.raises(E.SparkAnalysisError, match=r"^DEFINE of A: \[UNRESOLVED_ROUTINE\]") as caught:
        sql(spark, "CREATE OR REPLACE TEMP VIEW script_first AS " + operator("no_such_fn(action) = 'v'"))
    assert (caught.value.position.line, caught.value.position.column) == (2, 33)
    assert jobs_started(spark) == before and not spark.catalog.tableExists("script_first")


@pytest.mark.parametrize(("path", "compiles"), [("grouped", 1), ("jvm", 2)])
def test_one_statement_is_compiled_once_unless_its_path_replaces_the_operator(spark, clicks: str, monkeypatch,
                                                                              path: str, compiles: int) -> None:
    """A script of one statement is checked against the session itself: running it reuses that
    compile (registering its engine function), unless the operator goes another path."""
    compiled = []

    def counted(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        compiled.append(args[1])
        return compile_statement(*args, **kwargs)

    monkeypatch.setattr(sparkseq.statements.scripts, "compile_statement", counted)
    spark.conf.set("sparkseq.path", path)
    try:
        rows = sorted(sql(spark, operator()).collect())
    finally:
        spark.conf.unset("sparkseq.path")
    assert len(compiled) == compiles
    assert [tuple(r) for r in rows] == [(1, 1), (2, 0)]


@pytest.mark.parametrize("first_fails", [True, False])
def test_the_first_mistake_in_the_script_is_the_one_raised(spark, clicks: str, first_fails: bool) -> None:
    """A query Spark's analysis refuses, before an operator the compiler refuses: the error
    raised is the first statement's; checked statements keep their order and result columns."""
    first = "SELECT nosuchcol FROM script_clicks" if first_fails else "SELECT action FROM script_clicks"
    script = f"{first};\n{operator('nosuch_column = 1')};\n{operator()}"
    error = E.SparkAnalysisError if first_fails else E.SqlRewriteError
    with pytest.raises(error) as caught:
        sql(spark, script)
    assert caught.value.position.line == (1 if first_fails else 3), str(caught.value)  # 3: its DEFINE
    if not first_fails:
        assert not isinstance(caught.value, E.SparkAnalysisError)
    checked = sparkseq.statements.scripts.check_script(
        spark, f"{first if not first_fails else 'SELECT 1'};\n{operator()};\nSELECT 2 AS two")
    assert [c.number for c in checked] == [0, 1, 2]
    assert [c.result_schema.names if c.result_schema else None for c in checked] == [
        ["action"] if not first_fails else ["1"], ["customer_id", "n"], ["two"]]


def test_consecutive_queries_analysed_together_keep_each_ones_columns_and_errors(spark, clicks: str,  # noqa: ANN001
                                                                                 monkeypatch) -> None:
    """Consecutive queries are analysed by Spark in one go (sparkseq.statements.scripts): each keeps
    the result columns its own analysis gives, and an error is the first failing query's,
    placed in its own text."""
    queries = ["SELECT customer_id, customer_id, price FROM script_clicks -- a comment at the end\n",
               operator(), "VALUES (1, 'a'), (2, NULL)",
               "WITH w AS (SELECT action FROM script_clicks) SELECT action, NULL AS nothing FROM w ORDER BY 1"]
    together = []

    def analysed(scratch, texts):  # noqa: ANN001, ANN202
        together.append(len(texts))
        return sparkseq.statements.scratch.analyse_together(scratch, texts)

    with monkeypatch.context() as patched:
        patched.setattr(sparkseq.statements.scripts, "analyse_together", analysed)
        checked = sparkseq.statements.scripts.check_script(spark, ";\n".join(queries))
    assert together == [4]
    with monkeypatch.context() as patched:  # each query analysed alone
        patched.setattr(sparkseq.statements.scripts._Checker, "_analysable_together", lambda self, statement: False)
        alone = sparkseq.statements.scripts.check_script(spark, ";\n".join(queries))
    assert [c.result_schema for c in checked] == [c.result_schema for c in alone]
    assert all(c.result_schema for c in checked)
    broken = [queries[0], "SELECT action,\n  nosuchcol FROM script_clicks", queries[1],
              "SELECT nosuchcol2 FROM script_clicks"]
    before = jobs_started(spark)
    with pytest.raises(E.SparkAnalysisError, match="`nosuchcol`") as caught:
        sql(spark, ";\n".join(broken))
    assert (caught.value.position.line, caught.value.position.column) == (4, 3)
    assert jobs_started(spark) == before


def test_statements_reading_what_earlier_ones_create_are_checked_against_it(spark, clicks: str) -> None:
    """Tables created, filled, altered, read and dropped in one script: no false error ahead,
    each statement taking effect in turn."""
    rows = []
    for statement, frame in run_statements(spark, """
            CREATE TABLE script_t (x INT) USING parquet;
            INSERT INTO script_t VALUES (1), (2);
            ALTER TABLE script_t ADD COLUMNS (y STRING);
            INSERT INTO script_t VALUES (3, 'c');
            CREATE OR REPLACE TEMP VIEW script_sum AS SELECT sum(x) AS s, max(y) AS y FROM script_t;
            SELECT * FROM script_sum;
            DROP TABLE script_t"""):
        if statement.startswith("SELECT"):
            rows = [tuple(r) for r in frame.collect()]  # before the next statement drops the table
    assert rows == [(6, "c")]
    assert not spark.catalog.tableExists("script_t")
    spark.catalog.dropTempView("script_sum")


def test_what_cannot_be_checked_ahead_is_checked_when_it_runs(spark, clicks: str) -> None:
    """A global temporary view the script creates: the statement reading it is analysed
    right before it runs, still with its position in the script."""
    text = ("CREATE OR REPLACE GLOBAL TEMP VIEW script_g AS SELECT 1 AS x;\n"
            "SELECT x FROM global_temp.script_g;\n"
            "SELECT y FROM global_temp.script_g")
    statements = run_statements(spark, text)
    try:
        next(statements)
        assert [r.x for r in next(statements)[1].collect()] == [1]
        with pytest.raises(E.SparkAnalysisError, match="`y`") as caught:
            next(statements)
        assert (caught.value.position.line, caught.value.position.column) == (3, 8)
    finally:
        spark.sql("DROP VIEW IF EXISTS global_temp.script_g")


def test_parameter_markers_and_placeholders(spark, clicks: str) -> None:
    frame = spark.table("script_clicks").where("customer_id = 1")
    out = sql(spark, "SELECT count(*) AS n, '{{braces}}' AS b, {word} AS w, {k} AS k FROM {c} WHERE action = :a",
              args={"a": "buy"}, c=frame, word="it's", k=7)
    assert [tuple(r) for r in out.collect()] == [(1, "{braces}", "it's", 7)]
    assert not [t for t in spark.catalog.listTables() if t.name.startswith("_pyspark_")]


def test_placeholder_errors_point_into_the_text_as_written(spark, clicks: str) -> None:
    text = "SELECT * FROM {events} MATCH_AGGREGATE (PARTITION BY customer_id ORDER BY ts\n" \
           "  PATTERN SEQ(A) DEFINE A AS actoin = 'view') AS m"
    with pytest.raises(E.UnknownColumnError, match=r"columns of \{events\}") as caught:
        sql(spark, text, events=spark.table("script_clicks"))
    assert (caught.value.position.line, caught.value.position.column) == (2, 30)
    with pytest.raises(E.SparkAnalysisError) as caught:
        sql(spark, "SELECT {v}, nope FROM {events}", v="x", events=spark.table("script_clicks"))
    assert (caught.value.position.line, caught.value.position.column) == (1, 13)


def test_placeholders_give_the_same_result_as_a_view(spark, clicks: str) -> None:
    frame = spark.table("script_clicks")
    by_view = sql(spark, operator()).orderBy("customer_id").collect()
    by_placeholder = sql(spark, operator(source="{c}"), c=frame).orderBy("customer_id").collect()
    assert by_view == by_placeholder == [(1, 1), (2, 0)]


def test_a_workload_is_all_or_nothing_too(spark, clicks: str) -> None:
    before = jobs_started(spark)
    with pytest.raises(E.SparkAnalysisError, match="DEFINE of A"):
        sparkseq.workload(spark, MARK + operator() + ";\n" + operator("no_fn(action)"))
    assert jobs_started(spark) == before and not spark.catalog.tableExists("script_first")
