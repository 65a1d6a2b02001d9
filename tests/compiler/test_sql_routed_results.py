"""Which statements a sharing group's pass can route rows to, and the routed select
(``sql_rewrites.generation.routed_results``), without Spark."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sql_rewrites.analysis.analyzer import analyze_sql
from sql_rewrites.generation.routed_results import Route, routed_select, selected_columns
from sql_rewrites.generation.shared import Member, build_group
from sql_rewrites.rewriter import explain_statement
from sql_rewrites.syntax.dialect import SparkSeq
from sql_rewrites.syntax.statements import split_statements

SCHEMA = {"clicks": {"k": "INT", "ts": "TIMESTAMP", "type": "STRING"}, "other": {"k": "INT"}}
OPERATOR = ("clicks MATCH_AGGREGATE (PARTITION BY k ORDER BY ts PATTERN {} TYPE BY type MEASURES COUNT(*) AS n "
            "WITHIN INTERVAL 10 MINUTES SLIDE INTERVAL 1 MINUTE) AS m")
OUTPUTS = ("k", "window_start", "window_end", "n")


def columns_of(sql: str) -> tuple[str, ...] | None:
    [query] = analyze_sql(sql, SCHEMA)
    return selected_columns(query)


@pytest.mark.parametrize(("head", "tail", "columns"), [
    ("SELECT *", "", OUTPUTS),
    ("SELECT m.*", "", OUTPUTS),
    ("SELECT N AS count, m.Window_End, k", "", ("n", "window_end", "k")),
    ("SELECT n, n", "", ("n", "n")),
    ("SELECT *, n", "", (*OUTPUTS, "n")),
    ("SELECT n + 1 AS n", "", None),  # an expression
    ("SELECT 1 AS one", "", None),
    ("SELECT DISTINCT k", "", None),
    ("SELECT k", "WHERE n > 1", None),
    ("SELECT k", "ORDER BY k", None),
    ("SELECT k", "LIMIT 3", None),
    ("SELECT k, count(*) AS c", "GROUP BY k", None),
    ("SELECT m.k", "JOIN other o ON o.k = m.k", None),
    ("SELECT x.k", "", None),  # another relation's name
])
def test_only_plain_selections_of_the_operator_are_recognised(head: str, tail: str,
                                                               columns: tuple[str, ...] | None) -> None:
    assert columns_of(f"{head} FROM {OPERATOR.format('SEQ(a, b)')} {tail}") == columns


def test_an_operator_inside_a_larger_query_is_not_recognised() -> None:
    operator = OPERATOR.format("SEQ(a, b)")
    assert columns_of(f"SELECT * FROM (SELECT * FROM {operator}) AS s") is None
    assert columns_of(f"WITH c AS (SELECT 1 AS x) SELECT * FROM {operator}") is None
    union = analyze_sql(f"SELECT * FROM {operator} UNION ALL SELECT * FROM {operator}", SCHEMA)
    assert [selected_columns(query) for query in union] == [None, None]


def test_the_rewritten_statement_is_recognised_at_the_replacement() -> None:
    sql = f"SELECT n AS c, k FROM {OPERATOR.format('SEQ(a, b)')}"
    [statement] = split_statements(sql)
    explained = explain_statement(statement, sql, SCHEMA, lambda plan: "seq_engine")
    [operator] = explained.operators
    assert selected_columns(operator.query, operator.replacement) == ("n", "k")


@settings(max_examples=200, deadline=None)
@given(picks=st.lists(st.tuples(st.sampled_from(OUTPUTS), st.sampled_from(["", "m."]), st.booleans(),
                                st.sampled_from([None, "x", "n"])), min_size=1, max_size=6))
def test_any_selection_of_columns_comes_back_in_order(picks: list[tuple[str, str, bool, str | None]]) -> None:
    """Names as written (qualified or not, any case, renamed or not) are the operator's columns."""
    projections = []
    for name, qualifier, upper, alias in picks:
        written = f"{qualifier}{name.upper() if upper else name}"
        projections.append(written if alias is None else f"{written} AS {alias}")
    sql = f"SELECT {', '.join(projections)} FROM {OPERATOR.format('SEQ(a, b)')}"
    assert columns_of(sql) == tuple(name for name, *_ in picks)


def test_the_routed_select_sends_each_member_to_its_statement() -> None:
    members = [Member(s, 0, query) for s, pattern in ((4, "SEQ(a, b)"), (7, "SEQ(b, c)"))
               for query in analyze_sql(f"SELECT * FROM {OPERATOR.format(pattern)}", SCHEMA)]
    group = build_group(members)
    sql = routed_select(group, "shared", [Route(0, 4, ("n", "k"), ("r0", "r1")), Route(1, 7, ("k",), ("r2",))],
                        "statement")
    expected = ("SELECT ELEMENT_AT(ARRAY(4, 7), CAST(`__sparkseq_plan` AS INT) + 1) AS `statement`, "
                "CASE `__sparkseq_plan` WHEN 0 THEN CAST(`__sparkseq_f0` AS BIGINT) END AS `r0`, "
                "CASE `__sparkseq_plan` WHEN 0 THEN `k` END AS `r1`, "
                "CASE `__sparkseq_plan` WHEN 1 THEN `k` END AS `r2` FROM `shared` WHERE `__sparkseq_plan` IN (0, 1)")
    assert sql == expected
    # each member's values are those of its own replacement
    own = dict(group.output_columns(1))
    assert own["k"].sql(dialect=SparkSeq) == "k"
    with pytest.raises(ValueError, match="one statement only"):
        routed_select(group, "shared", [Route(0, 4, ("k",), ("r0",)), Route(0, 5, ("k",), ("r1",))], "statement")
    with pytest.raises(ValueError, match="2 columns for 1 targets"):
        routed_select(group, "shared", [Route(0, 4, ("k", "n"), ("r0",))], "statement")


def test_a_column_every_routed_member_gives_alike_needs_no_case() -> None:
    """Statements of one layout over members of one kind fill each target column with the
    same value in every row: the routed select reads it without a CASE per row."""
    members = [Member(s, 0, query) for s, pattern in ((4, "SEQ(a, b)"), (7, "SEQ(b, c)"), (9, "SEQ(c)"))
               for query in analyze_sql(f"SELECT * FROM {OPERATOR.format(pattern)}", SCHEMA)]
    group = build_group(members)
    alike = [Route(0, 4, ("k", "n"), ("r0", "r1")), Route(1, 7, ("k", "n"), ("r0", "r1"))]
    sql = routed_select(group, "shared", alike, "statement")
    assert sql == ("SELECT ELEMENT_AT(ARRAY(4, 7), CAST(`__sparkseq_plan` AS INT) + 1) AS `statement`, `k` AS `r0`, "
                   "CAST(`__sparkseq_f0` AS BIGINT) AS `r1` FROM `shared` WHERE `__sparkseq_plan` IN (0, 1)")
    # a member not routed: no statement number at its index, and its rows are left out
    sql = routed_select(group, "shared", [alike[0], Route(2, 9, ("k", "n"), ("r0", "r1"))], "statement")
    assert sql.startswith("SELECT ELEMENT_AT(ARRAY(4, NULL, 9), CAST(`__sparkseq_plan` AS INT) + 1) AS `statement`")
    assert sql.endswith("WHERE `__sparkseq_plan` IN (0, 2)")
    # another routed member not filling r1: a CASE again, NULL in its rows
    sql = routed_select(group, "shared", [*alike, Route(2, 9, ("k",), ("r0",))], "statement")
    assert "`k` AS `r0`" in sql and "CASE `__sparkseq_plan` WHEN 0 THEN CAST(`__sparkseq_f0` AS BIGINT) " \
        "WHEN 1 THEN CAST(`__sparkseq_f0` AS BIGINT) END AS `r1`" in sql
