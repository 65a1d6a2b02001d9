"""The split of SELECTs mixing ``seq_*`` (grouped-aggregate Python UDFs) with Spark's own
aggregates, FILTER, HAVING / ORDER BY calls and global aggregates — without Spark:
shapes, the statements left alone, refusals with positions, and Spark's column names.
End to end on Spark: tests/test_spark_aggregates.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from sqlglot import exp

from sql_rewrites import rewrite
from sql_rewrites.errors import AggregatePlacementError
from sql_rewrites.generation.aggregates import OnEmpty, PythonAggregate, split_python_aggregates
from sql_rewrites.syntax.column_names import spark_column_name
from sql_rewrites.syntax.dialect import SparkSeq, parse_statement

FUNCTIONS = {
    "seq_count": PythonAggregate("seq_count", 0, OnEmpty.ZERO),
    "seq_sum": PythonAggregate("seq_sum", 0, OnEmpty.NULL),
    "seq_count_windows": PythonAggregate("seq_count_windows", 0, OnEmpty.EMPTY),
}
SCHEMA = {"clicks": {"k": "int", "ts": "timestamp", "t": "string", "f": "double"}}
COUNT = "seq_count(ts, t, 'SEQ(view, buy)')"


def split(sql: str) -> str:
    return rewrite(sql, SCHEMA, lambda plan: "sparkseq_agg", python_aggregates=FUNCTIONS)


def tree(sql: str) -> exp.Select:
    parsed = parse_statement(sql)
    assert isinstance(parsed, exp.Select)
    return parsed


@pytest.mark.parametrize("sql", [
    f"SELECT k, {COUNT} AS n FROM clicks GROUP BY k",  # Spark runs it as written
    f"SELECT k, {COUNT} AS n FROM clicks GROUP BY k ORDER BY n",  # an alias in ORDER BY is fine too
    "SELECT k, count(*) FROM clicks GROUP BY k",  # no Python aggregate
    "SELECT 'seq_count(ts, t, x)', count(*) FROM clicks",  # the name only in a string
    "SELECT k, seq_count FROM clicks",  # a column named like the function
    "INSERT INTO x VALUES (1)",
], ids=["python-only", "order-by-alias", "native-only", "in-a-string", "a-column", "other-statement"])
def test_statements_that_need_no_change_come_back_verbatim(sql: str) -> None:
    assert split(sql) == sql


def test_mixed_aggregates_become_two_grouped_queries_joined_null_safely() -> None:
    out = tree(split(f"SELECT k, count(*), {COUNT} FROM clicks WHERE f > 0 GROUP BY k"))
    python, native = (j.this for j in [out.args["from_"], *out.args["joins"]])
    assert python.alias == "__sparkseq_python" and native.alias == "__sparkseq_native"
    for side in (python.this, native.this):
        assert side.args["where"].sql() == "WHERE f > 0" and [g.sql() for g in side.args["group"].expressions] == ["k"]
    assert [s.sql(dialect=SparkSeq, normalize_functions=False) for s in python.this.selects][-1] == \
        f"{COUNT} AS `__sparkseq_p0`"
    assert any(isinstance(s.this, exp.Count) for s in native.this.selects)
    assert not any(n.name == "seq_count" for n in native.this.find_all(exp.Anonymous))
    assert isinstance(out.args["joins"][0].args["on"], exp.NullSafeEQ)
    assert [s.alias for s in out.selects] == ["k", "count(1)", "seq_count(ts, t, SEQ(view, buy))"]


def test_having_order_by_expressions_aliases_and_lateral_aliases() -> None:
    out = tree(split(f"SELECT k % 2 AS m, {COUNT} AS n, n + 1 AS n1, sum(f) / count(*) AS avg FROM clicks "
                     f"GROUP BY m HAVING n > 0 AND count(*) > 1 ORDER BY n DESC, m LIMIT 10"))
    python, native = (j.this.this for j in [out.args["from_"], *out.args["joins"]])
    assert [g.sql() for g in python.args["group"].expressions] == ["m"]  # Spark resolves the alias, as before
    assert "k % 2 AS m" in python.sql()  # ... because each side keeps the aliased items
    having = out.args["where"].this  # HAVING n > 0 AND count(*) > 1: n is the Python side's value
    assert [c.table for c in having.find_all(exp.Column)] == ["__sparkseq_native", "__sparkseq_python"]
    assert [o.sql() for o in out.args["order"].expressions] == ["n DESC", "m"]  # output names, kept
    assert out.args["limit"].sql() == "LIMIT 10"
    n1 = out.selects[2]
    assert n1.alias == "n1" and n1.find(exp.Column).table == "__sparkseq_python"


def test_group_by_ordinal_and_all() -> None:
    for group in ("1", "ALL"):
        out = tree(split(f"SELECT upper(t) AS u, count(*), {COUNT} FROM clicks GROUP BY {group}"))
        python = out.args["from_"].this.this
        assert [g.sql() for g in python.args["group"].expressions] == ["UPPER(t)"]


def test_filter_becomes_a_masked_event_time() -> None:
    out = split(f"SELECT k, {COUNT} FILTER (WHERE f > 1) AS n FROM clicks GROUP BY k")
    assert "seq_count(CASE WHEN f > 1 THEN ts END, t, 'SEQ(view, buy)')" in out
    assert "FILTER" not in out and "JOIN" not in out  # no split needed for FILTER alone


def test_global_aggregate_left_joins_to_one_row() -> None:
    out = tree(split(f"SELECT {COUNT} AS n, seq_sum(ts, t, 'SEQ(a)', NULL, 'a', f) AS s, "
                     "seq_count_windows(ts, t, 'SEQ(a)', INTERVAL 1 MINUTE, INTERVAL 1 MINUTE) AS w FROM clicks"))
    native, python = (j.this.this for j in [out.args["from_"], *out.args["joins"]])
    assert native.sql(dialect=SparkSeq) == "SELECT 1 AS `__sparkseq_one`"  # one row whatever the input
    assert out.args["joins"][0].args["side"] == "LEFT"
    assert [g.sql() for g in python.args["group"].expressions] == ["'all rows'"]  # see _global_python_side
    n, s, w = out.selects
    assert isinstance(n.this, exp.Coalesce) and n.this.expressions[0].sql() == "0"
    assert isinstance(s.this, exp.Column)  # NULL over no rows, as SUM
    assert isinstance(w.this, exp.Coalesce) and isinstance(w.this.expressions[0], exp.Array)


def test_nested_selects_are_split_innermost_first() -> None:
    out = split(f"WITH g AS (SELECT k, count(*) AS c, {COUNT} AS n FROM clicks GROUP BY k) "
                f"SELECT * FROM g WHERE k IN (SELECT k FROM clicks GROUP BY k HAVING {COUNT} > 0)")
    assert out.count("__sparkseq_python") >= 4 and out.startswith("WITH g AS (SELECT")


@pytest.mark.parametrize(("sql", "message", "column"), [
    ("SELECT k, seq_count(DISTINCT ts, t, 'SEQ(a)') FROM clicks GROUP BY k",
     r"seq_count\(DISTINCT \.\.\.\) is not supported", 11),
    (f"SELECT k, sum({COUNT}) FROM clicks GROUP BY k", r"cannot stand inside another aggregate \(sum\(", 15),
    (f"SELECT k, count(*), {COUNT} FROM clicks GROUP BY ROLLUP (k)",
     r"GROUPING SETS, ROLLUP and CUBE cannot be used", 85),
    (f"SELECT *, {COUNT} FROM clicks", r"SELECT \* cannot be combined", 8),
    (f"SELECT count(*), {COUNT} FROM clicks GROUP BY 2", r"GROUP BY position 2 refers to an aggregate", 74),
], ids=["distinct", "nested", "rollup", "star", "ordinal-aggregate"])
def test_refusals_name_the_place(sql: str, message: str, column: int) -> None:
    with pytest.raises(AggregatePlacementError, match=message) as caught:
        split(sql)
    assert caught.value.position is not None and caught.value.position.column == column


def test_split_reports_whether_it_changed_anything() -> None:
    same = parse_statement(f"SELECT k, {COUNT} FROM clicks GROUP BY k")
    assert split_python_aggregates(same, FUNCTIONS)[1] is False
    assert split_python_aggregates(parse_statement(f"SELECT {COUNT} FROM clicks"), FUNCTIONS)[1] is True
    assert split_python_aggregates(parse_statement(f"SELECT {COUNT} FROM clicks"), {})[1] is False


def test_jvm_routing_matches_every_python_aggregate_name() -> None:
    """The parser extension's regex (Java) sends statements calling any registered
    grouped-aggregate Python function to the rewriter, and only those."""
    from sparkseq.spark.registration import PYTHON_AGGREGATES

    source = (Path(__file__).resolve().parent.parent / "sparkseq" / "jvm" / "SparkSeqExtension.java").read_text()
    java = re.search(r'NEEDS_REWRITER = Pattern.compile\(\s*"(.*)"\);', source).group(1)
    pattern = re.compile(java.replace("\\\\", "\\").replace("(?i)", ""), re.IGNORECASE)
    for name in PYTHON_AGGREGATES:
        assert pattern.search(f"SELECT {name.upper()} (ts, t, 'x') FROM t"), name
    assert pattern.search("SELECT * FROM t MATCH_AGGREGATE (ORDER BY ts PATTERN SEQ(a))")
    for other in ("SELECT seq_counter(x) FROM t", "SELECT my_seq_count(x) FROM t", "SELECT seq_count FROM t"):
        assert not pattern.search(other), other


# Spark's own names for unaliased items, read from Spark 4.x (`spark.sql(...).columns`);
# tests/test_spark_aggregates.py checks a sample of them live.
SPARK_NAMES = [
    ("k", "k"), ("c.k", "k"), ("COUNT(*)", "count(1)"), ("Sum(f)", "sum(f)"), ("k+1", "(k + 1)"),
    ("CAST(k AS BIGINT)", "k"), ("count(DISTINCT k)", "count(DISTINCT k)"),
    ("sum(f) / count(*)", "(sum(f) / count(1))"),
    ("CASE WHEN k IS NULL THEN 1 ELSE 2 END", "CASE WHEN (k IS NULL) THEN 1 ELSE 2 END"),
    ("max(ts) > TIMESTAMP'2024-01-01 00:00:00'", "(max(ts) > TIMESTAMP '2024-01-01 00:00:00')"),
    ("upper('x')", "upper(x)"), ("-k", "(- k)"), ("NOT k > 1", "(NOT (k > 1))"),
    ("k BETWEEN 1 AND 2", "between(k, 1, 2)"), ("k IN (1, 2)", "(k IN (1, 2))"), ("'lit'", "lit"), ("NULL", "NULL"),
    ("INTERVAL 1 DAY", "INTERVAL '1' DAY"), ("sum(f) FILTER (WHERE k > 1)", "sum(f) FILTER (WHERE (k > 1))"),
    ("k || 'a'", "concat(k, a)"), ("min(t) LIKE 'v%'", "min(t) LIKE v%"), ("approx_count_distinct(k)",
                                                                         "approx_count_distinct(k)"),
    ("DATE'2024-01-01'", "DATE '2024-01-01'"), ("k = 1 AND k <> 2 OR k != 3",
                                                "(((k = 1) AND (NOT (k = 2))) OR (NOT (k = 3)))"),
    ("SEQ_COUNT(ts, t, 'SEQ(view)')", "seq_count(ts, t, SEQ(view))"),
    ("seq_count(ts, t, 'SEQ(''a b'')', INTERVAL 10 MINUTES)", "seq_count(ts, t, SEQ('a b'), INTERVAL '10' MINUTE)"),
    ("seq_sum(ts, t, 'SEQ(view)', NULL, 'view', f)", "seq_sum(ts, t, SEQ(view), NULL, view, f)"),
]


@pytest.mark.parametrize(("written", "name"), SPARK_NAMES, ids=[w for w, _ in SPARK_NAMES])
def test_column_names_are_sparks(written: str, name: str) -> None:
    [item] = tree(f"SELECT {written} FROM clicks AS c").expressions
    assert spark_column_name(item) == name
