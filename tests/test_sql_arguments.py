"""The operator built from Python arguments (the DataFrame API's compiler side) is the
tree the SQL parser builds, each argument parsed as exactly one thing, errors placed
in the argument; and the pieces of a statement's text that errors are placed by."""

from __future__ import annotations

import pytest
import sqlglot
from hypothesis import given, settings
from hypothesis import strategies as st

from sql_rewrites import errors as E
from sql_rewrites.analysis.arguments import operator_statement
from sql_rewrites.analysis.user_text import define_conditions, named_reference, operator_span, quoted_identifier
from sql_rewrites.syntax.dialect import SparkSeq
from sql_rewrites.syntax.expressions import MatchAggregate

VIEW = "_sparkseq_view"  # as the DataFrame API names it: a name no message holds by chance
CLAUSES = ("partition_by", "order_by", "pattern", "cube", "patterns", "define", "type_by", "hierarchy", "measures",
           "within", "slide", "count_type", "where", "strategy")


def given_args(**args: object) -> dict[str, object]:
    return {name: args.get(name) for name in CLAUSES}


def test_same_tree_as_the_sql_form() -> None:
    built = operator_statement(VIEW, given_args(
        partition_by=["k", "j"], order_by="ts", pattern="SEQ(A, B+, !C)",
        define={"A": "x = 'a'", "B": "x > 1", "C": "A.x IS NULL"}, measures={"n": "COUNT(*)", "s": "SUM(B.x)"},
        within="10 minutes", slide="INTERVAL 5 MINUTES", count_type="decimal", strategy="skip till next match"))
    written = ("SELECT * FROM `_sparkseq_view` MATCH_AGGREGATE (PARTITION BY k, j ORDER BY ts PATTERN SEQ(A, B+, !C) "
               "DEFINE A AS x = 'a', B AS x > 1, C AS A.x IS NULL MEASURES COUNT(*) AS n, SUM(B.x) AS s "
               "WITHIN INTERVAL '10' MINUTES SLIDE INTERVAL '5' MINUTES COUNT TYPE DECIMAL "
               "STRATEGY SKIP TILL NEXT MATCH)")
    assert built.tree.sql(dialect=SparkSeq) == sqlglot.parse_one(written, read=SparkSeq).sql(dialect=SparkSeq)
    assert built.document.text.splitlines()[:3] == ["k", "j", "ts"]


@pytest.mark.parametrize(("changed", "error", "argument", "column"), [
    ({"pattern": "SEQ(A,, B)"}, E.SqlParseError, "pattern", 7),
    ({"define": {"A": "x = 'a') AS m; DROP TABLE t; --"}}, E.SqlParseError, "define['A']", 14),
    ({"order_by": "ts, k"}, E.SqlParseError, "order_by", 3),
    ({"count_type": "long"}, E.SqlParseError, "count_type", 1),
])
def test_an_argument_is_one_thing_and_errors_point_into_it(changed: dict, error: type, argument: str,
                                                           column: int) -> None:
    with pytest.raises(error) as caught:
        operator_statement(VIEW, given_args(**{"order_by": "ts", "pattern": "SEQ(A, B)", "define": {"A": "x = 1"},
                                              **changed}))
    position = caught.value.position
    assert (position.origin, position.column) == (argument, column), str(caught.value)


def test_a_short_view_name_is_replaced_only_where_it_is_the_name() -> None:
    document = operator_statement("t", given_args(order_by="ts", pattern="SEQ(A)")).document
    relocated = document.relocate(E.SqlRewriteError("column ts of t not found (t_1 and `t` searched)"), "t")
    assert relocated.message == "column ts of the DataFrame not found (t_1 and `the DataFrame` searched)"


def test_pattern_is_required_once() -> None:
    with pytest.raises(TypeError, match="needs pattern"):
        operator_statement(VIEW, given_args(order_by="ts"))
    with pytest.raises(TypeError, match="not both"):
        operator_statement(VIEW, given_args(order_by="ts", pattern="SEQ(A)", patterns=["SEQ(A)"]))


@settings(max_examples=60, deadline=None)
@given(st.text(min_size=1, max_size=30))
def test_no_argument_text_escapes_its_clause(text: str) -> None:
    """Whatever a DEFINE condition holds, it parses into that condition or is refused."""
    try:
        built = operator_statement(VIEW, given_args(order_by="ts", pattern="SEQ(A)", define={"A": text}))
    except (E.SqlRewriteError, ValueError):
        return
    node = built.tree.find(MatchAggregate)
    assert node is not None and node.this.name == VIEW
    assert [d.alias for d in node.args["define"]] == ["A"] and node.args["pattern"].sql(dialect=SparkSeq) == "SEQ(A)"
    assert set(node.args) - {"this", "order", "pattern", "define"} == {k for k, v in node.args.items() if v is None}


TEXT = "SELECT * FROM clicks MATCH_AGGREGATE (ORDER BY ts PATTERN SEQ(VK, BK)\n" \
       "  DEFINE VK AS VK.action = 'view', BK AS no_fn(price) > 1 MEASURES COUNT(*) AS n) AS m"


def parsed_operator() -> MatchAggregate:
    node = sqlglot.parse_one(TEXT, read=SparkSeq).find(MatchAggregate)
    assert node is not None
    return node


def test_pieces_of_the_user_text() -> None:
    node = parsed_operator()
    start, end = operator_span(node)  # type: ignore[misc]
    assert TEXT[start:end + 1].startswith("clicks MATCH_AGGREGATE (") and TEXT[end] == ")"
    conditions = define_conditions(node, TEXT)
    assert [(symbol, condition) for symbol, _, condition in conditions] == [
        ("VK", "   action = 'view'"), ("BK", "no_fn(price) > 1")]  # the symbol's own qualifier blanked
    assert all(TEXT[offset:offset + len(c)].endswith(c.strip()) for _, offset, c in conditions)
    start, end, part = named_reference(node, {"no_fn"})  # type: ignore[misc]
    assert (TEXT[start:end + 1], part) == ("no_fn", "DEFINE")
    assert named_reference(node, {"nothing"}) is None
    assert quoted_identifier("a`b") == "`a``b`"
