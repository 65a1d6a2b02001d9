"""MATCH_AGGREGATE parsing: round trips, placements, canonical form, parse errors."""

from __future__ import annotations

import pytest
import sqlglot
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlglot import exp

from sql_rewrites.errors import SqlParseError
from sql_rewrites.syntax.dialect import SparkSeq, parse_statement
from sql_rewrites.syntax.expressions import MatchAggregate, MatchPattern, MatchPatternElement

FULL = (
    "SELECT customer_id, funnels FROM clicks MATCH_AGGREGATE (PARTITION BY customer_id ORDER BY ts "
    "PATTERN SEQ(VK, BK, !REC, VC+, 'View Case') "
    "DEFINE VK AS action = 'view' AND item = 'kindle', BK AS action = 'buy', REC AS action = 'rec', "
    "VC AS action = 'view' "
    "TYPE BY action HIERARCHY products "
    "MEASURES COUNT(*) AS funnels, SUM(VC.price) AS revenue "
    "WITHIN INTERVAL '10' MINUTES SLIDE INTERVAL '1' MINUTE COUNT TYPE DECIMAL) AS m"
)


def validate_identity(sql: str, write: str | None = None) -> exp.Expr:
    """sqlglot's test idiom: ``sql`` parses and prints back as ``write`` (default: itself)."""
    tree = parse_statement(sql)
    printed = tree.sql(dialect=SparkSeq)
    assert printed == (write or sql)
    assert parse_statement(printed) == tree
    return tree


def operators(tree: exp.Expr) -> list[MatchAggregate]:
    return list(tree.find_all(MatchAggregate))


def test_full_clause_round_trips_and_builds_typed_nodes() -> None:
    tree = validate_identity(FULL)
    [node] = operators(tree)
    assert isinstance(node.this, exp.Table) and node.this.name == "clicks"
    assert [c.name for c in node.args["partition_by"]] == ["customer_id"]
    pattern = node.args["pattern"]
    assert isinstance(pattern, MatchPattern)
    flags = [(e.this.name, e.negated, e.kleene, e.is_quoted_value) for e in pattern.expressions]
    assert flags == [
        ("VK", False, False, False),
        ("BK", False, False, False),
        ("REC", True, False, False),
        ("VC", False, True, False),
        ("View Case", False, False, True),
    ]
    assert [d.alias for d in node.args["define"]] == ["VK", "BK", "REC", "VC"]
    assert [m.alias for m in node.args["measures"]] == ["funnels", "revenue"]
    assert isinstance(node.args["within"], exp.Interval)
    assert node.args["count_type"].name == "DECIMAL"
    assert node.args["type_by"].name == "action" and node.args["hierarchy"].name == "products"
    assert node.alias == "m"


@pytest.mark.parametrize(
    "sql",
    [
        pytest.param("SELECT * FROM t MATCH_AGGREGATE (ORDER BY ts PATTERN SEQ(A)) AS m", id="table"),
        pytest.param("SELECT * FROM t MATCH_AGGREGATE (ORDER BY ts PATTERN SEQ(A))", id="no-alias"),
        pytest.param("SELECT * FROM db.t AS c MATCH_AGGREGATE (ORDER BY ts PATTERN SEQ(A)) AS m", id="qualified"),
        pytest.param(
            "SELECT * FROM (SELECT * FROM t WHERE x > 1) AS s MATCH_AGGREGATE (ORDER BY ts PATTERN SEQ(A)) AS m",
            id="subquery",
        ),
        pytest.param(
            "WITH c AS (SELECT * FROM t MATCH_AGGREGATE (ORDER BY ts PATTERN SEQ(A)) AS m) SELECT * FROM c",
            id="in-cte",
        ),
        pytest.param(
            "WITH s AS (SELECT * FROM t) SELECT * FROM s MATCH_AGGREGATE (ORDER BY ts PATTERN SEQ(A)) AS m",
            id="over-cte",
        ),
        pytest.param(
            "SELECT * FROM a JOIN b MATCH_AGGREGATE (PARTITION BY x ORDER BY ts PATTERN SEQ(A)) AS m ON a.x = m.x",
            id="join",
        ),
        pytest.param(
            "SELECT * FROM t MATCH_AGGREGATE (ORDER BY ts PATTERN SEQ(A)) AS m "
            "JOIN u MATCH_AGGREGATE (ORDER BY ts PATTERN SEQ(B)) AS n ON m.x = n.x",
            id="two-joined",
        ),
        pytest.param(
            "SELECT * FROM (t MATCH_AGGREGATE (ORDER BY ts PATTERN SEQ(A)) AS m JOIN u ON m.a = u.a)",
            id="parenthesized-join",
        ),
        pytest.param(
            "SELECT x FROM t WHERE x IN (SELECT x FROM u MATCH_AGGREGATE (PARTITION BY x ORDER BY ts "
            "PATTERN SEQ(A)) AS m)",
            id="in-subquery",
        ),
        pytest.param(
            "CREATE TEMPORARY VIEW v AS SELECT * FROM t MATCH_AGGREGATE (ORDER BY ts PATTERN SEQ(A)) AS m",
            id="create-view",
        ),
        pytest.param(
            "INSERT INTO x SELECT * FROM t MATCH_AGGREGATE (ORDER BY ts PATTERN SEQ(A)) AS m", id="insert"
        ),
        pytest.param(
            "SELECT * FROM t MATCH_AGGREGATE (ORDER BY ts PATTERN SEQ(A)) AS m "
            "MATCH_AGGREGATE (ORDER BY window_start PATTERN SEQ(B)) AS n",
            id="chained",
        ),
        pytest.param(
            "SELECT * FROM t MATCH_AGGREGATE (ORDER BY ts PATTERN SEQ(A, B) WITHIN 600 SLIDE 60) AS m",
            id="numeric-window",
        ),
        pytest.param(
            "SELECT * FROM t MATCH_AGGREGATE (ORDER BY ts PATTERN SEQ(`my sym`, !`x'y`) TYPE BY t.kind) AS m",
            id="quoted-symbols",
        ),
    ],
)
def test_placements_round_trip(sql: str) -> None:
    assert operators(validate_identity(sql))


def test_several_operators_in_one_statement() -> None:
    sql = (
        "WITH a AS (SELECT * FROM t MATCH_AGGREGATE (ORDER BY ts PATTERN SEQ(A)) AS m) "
        "SELECT * FROM a JOIN u MATCH_AGGREGATE (PARTITION BY x ORDER BY ts PATTERN SEQ(B)) AS n ON a.x = n.x"
    )
    assert len(operators(validate_identity(sql))) == 2


def test_clauses_in_any_order_print_canonically() -> None:
    validate_identity(
        "SELECT * FROM t match_aggregate (within interval 1 hour pattern seq(a, !b, c+) order by ts "
        "measures count(*) n partition by k define a as x = 1) m",
        "SELECT * FROM t MATCH_AGGREGATE (PARTITION BY k ORDER BY ts PATTERN SEQ(a, !b, c+) DEFINE a AS x = 1 "
        "MEASURES COUNT(*) AS n WITHIN INTERVAL '1' HOUR) AS m",
    )


def test_not_keyword_is_negation_and_multi_unit_interval() -> None:
    validate_identity(
        "SELECT * FROM t MATCH_AGGREGATE (ORDER BY ts PATTERN SEQ(A, NOT B, C) WITHIN INTERVAL 1 HOUR 30 MINUTES) m",
        "SELECT * FROM t MATCH_AGGREGATE (ORDER BY ts PATTERN SEQ(A, !B, C) "
        "WITHIN INTERVAL '1' HOUR + INTERVAL '30' MINUTES) AS m",
    )


def test_columns_and_symbols_named_like_clauses_are_names() -> None:
    """A clause keyword followed by ``,``, ``)``, ``AS``, ``.`` or the next clause names a
    column or symbol: only a comma followed by a clause is a trailing comma."""
    node = parse_statement("SELECT * FROM t MATCH_AGGREGATE (PARTITION BY pattern, cube.id ORDER BY ts "
                           "PATTERN SEQ(A, within) DEFINE A AS x = 1, within AS x = 2 "
                           "MEASURES COUNT(*) AS n, SUM(within.strategy) AS s) m").find(MatchAggregate)
    assert node is not None
    assert [p.sql() for p in node.args["partition_by"]] == ["pattern", "cube.id"]
    assert [d.alias for d in node.args["define"]] == ["A", "within"]
    assert [m.alias for m in node.args["measures"]] == ["n", "s"]


def test_columns_named_like_clauses_stay_columns_inside_conditions() -> None:
    """In an expression, a one-word clause keyword followed by what may follow a column (an
    operator, ``)``, ``,``, a function's ``(``) is that column; followed by anything else it
    starts the next clause (and the expression before it lacks an operand)."""
    node = parse_statement("SELECT * FROM t MATCH_AGGREGATE (ORDER BY ts PATTERN SEQ(A, B) "
                           "DEFINE A AS x = 1 AND measures = 2 OR within(pattern) IS NULL, B AS slide "
                           "MEASURES COUNT(*) AS n) m").find(MatchAggregate)
    assert node is not None
    assert [d.this.sql() for d in node.args["define"]] == ["x = 1 AND measures = 2 OR WITHIN(pattern) IS NULL",
                                                           "slide"]
    assert [m.alias for m in node.args["measures"]] == ["n"]


def test_pretty_output_reparses() -> None:
    pretty = parse_statement(FULL).sql(dialect=SparkSeq, pretty=True)
    assert "\nMATCH_AGGREGATE (\n  PARTITION BY customer_id" in pretty
    assert parse_statement(pretty) == parse_statement(FULL)


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT match_aggregate FROM t AS match_aggregate",
        "SELECT a.b, COUNT(*) FROM t AS a GROUP BY a.b HAVING COUNT(*) > 1",
        "WITH c AS (SELECT 1 AS x) SELECT x FROM c UNION ALL SELECT 2",
        "SELECT * FROM t LATERAL VIEW EXPLODE(arr) e AS v",
    ],
)
def test_plain_spark_sql_parses_as_spark_does(sql: str) -> None:
    assert parse_statement(sql).sql(dialect=SparkSeq) == sqlglot.parse_one(sql, read="spark").sql(dialect="spark")


def test_node_prints_with_sparkseq_by_default() -> None:
    element = MatchPatternElement(this=exp.to_identifier("X"), negated=True)
    assert MatchPattern(expressions=[element]).sql() == "SEQ(!X)"


# --- parse errors ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sql", "message", "line", "col", "underlined"),
    [
        pytest.param("SELECT * FROM t MATCH_AGGREGATE (ORDER BY ts PATTERN SEQ(A, , B))",
                     "Expecting a symbol", 1, 61, ",", id="empty-element"),
        pytest.param("SELECT *\nFROM t MATCH_AGGREGATE (ORDER BY ts\n  PATTERN SEQ(A, !B+))",
                     "cannot be Kleene plus", 3, 20, "+", id="negated-kleene"),
        pytest.param("SELECT * FROM t MATCH_AGGREGATE (ORDER BY ts PATTERN SEQ())",
                     "at least one symbol", 1, 58, ")", id="empty-seq"),
        pytest.param("SELECT * FROM t MATCH_AGGREGATE (ORDER BY ts PATTERN (A B))",
                     "Expecting SEQ(", 1, 54, "(", id="no-seq"),
        pytest.param("SELECT * FROM t MATCH_AGGREGATE (PATTERN SEQ(A))",
                     "needs ORDER BY", 1, 17, "MATCH_AGGREGATE", id="no-order"),
        pytest.param("SELECT * FROM t MATCH_AGGREGATE (ORDER BY ts)",
                     "needs PATTERN", 1, 17, "MATCH_AGGREGATE", id="no-pattern"),
        pytest.param("SELECT * FROM t MATCH_AGGREGATE (ORDER BY ts PATTERN SEQ(A) FOO)",
                     "Expecting one of PARTITION BY, ORDER BY", 1, 61, "FOO", id="unknown-clause"),
        pytest.param("SELECT * FROM t MATCH_AGGREGATE (ORDER BY ts PATTERN SEQ(A) PATTERN SEQ(B))",
                     "multiple PATTERN", 1, 61, "PATTERN", id="duplicate-clause"),
        pytest.param("SELECT * FROM t MATCH_AGGREGATE (ORDER BY ts PATTERN SEQ(A) COUNT TYPE INT)",
                     "BIGINT, DECIMAL, DOUBLE", 1, 72, "INT", id="count-type"),
        pytest.param("SELECT * FROM t MATCH_AGGREGATE (ORDER BY ts PATTERN SEQ(A) DEFINE A x = 1)",
                     "Expecting AS", 1, 70, "x", id="define-without-as"),
        pytest.param("SELECT * FROM t MATCH_AGGREGATE (ORDER BY ts PATTERN SEQ(A, B)\n"
                     "  DEFINE A AS x = 1, B AS x = 2,\n  MEASURES COUNT(*) AS n)",
                     "Expecting a symbol definition (name AS condition) after ',' in DEFINE", 2, 32, ",",
                     id="define-trailing-comma"),
        pytest.param("SELECT * FROM t MATCH_AGGREGATE (ORDER BY ts PATTERN SEQ(A) DEFINE A AS x = 1,)",
                     "after ',' in DEFINE", 1, 78, ",", id="define-trailing-comma-before-paren"),
        pytest.param("SELECT * FROM t MATCH_AGGREGATE (ORDER BY ts PATTERN SEQ(A) DEFINE MEASURES COUNT(*))",
                     "Expecting a symbol definition (name AS condition) after DEFINE", 1, 68, "MEASURES",
                     id="define-empty"),
        pytest.param("SELECT * FROM t MATCH_AGGREGATE (ORDER BY ts PATTERN SEQ(A) DEFINE A AS x = 1 AND "
                     "MEASURES COUNT(*) AS n)", "Expecting an expression after AND", 1, 83, "MEASURES",
                     id="define-ends-in-and-before-measures"),
        pytest.param("SELECT * FROM t MATCH_AGGREGATE (ORDER BY ts PATTERN SEQ(A) DEFINE A AS x = 1 OR\n"
                     "  WITHIN 10)", "Expecting an expression after OR", 2, 3, "WITHIN",
                     id="define-ends-in-or-before-within"),
        pytest.param("SELECT * FROM t MATCH_AGGREGATE (ORDER BY ts PATTERN SEQ(A) DEFINE A AS NOT "
                     "HIERARCHY h)", "Expecting an expression after NOT", 1, 77, "HIERARCHY",
                     id="define-ends-in-not-before-hierarchy"),
        pytest.param("SELECT * FROM t MATCH_AGGREGATE (ORDER BY ts PATTERN SEQ(A) DEFINE A AS x = 1 AND "
                     "TYPE BY x)", "Expecting an expression after AND", 1, 83, "TYPE",
                     id="define-ends-in-and-before-type-by"),
        pytest.param("SELECT * FROM t MATCH_AGGREGATE (ORDER BY ts PATTERN SEQ(A) WHERE A.x > 1 AND "
                     "STRATEGY SKIP TILL NEXT MATCH)", "Expecting an expression after AND", 1, 79, "STRATEGY",
                     id="where-ends-in-and-before-strategy"),
        pytest.param("SELECT * FROM t MATCH_AGGREGATE (ORDER BY ts PATTERN SEQ(A)) AS m JOIN ON",
                     "Expecting a table name after JOIN, found ON", 1, 72, "ON", id="join-without-relation"),
        pytest.param("SELECT * FROM t MATCH_AGGREGATE (ORDER BY ts PATTERN SEQ(A)) AS m JOIN",
                     "Expecting a table name after JOIN", 1, 67, "JOIN", id="join-at-the-end"),
        pytest.param("SELECT * FROM t MATCH_AGGREGATE (PARTITION BY k, ORDER BY ts PATTERN SEQ(A))",
                     "Expecting an expression after ',' in PARTITION BY", 1, 48, ",",
                     id="partition-by-trailing-comma"),
        pytest.param("SELECT * FROM t MATCH_AGGREGATE (ORDER BY ts PATTERN SEQ(A) MEASURES COUNT(*) AS n, "
                     "WITHIN 10)", "after ',' in MEASURES", 1, 83, ",", id="measures-trailing-comma"),
        pytest.param("SELECT * FROM t MATCH_AGGREGATE (ORDER BY ts PATTERN SEQ(A) WITHIN)",
                     "INTERVAL or a number", 1, 67, ")", id="empty-within"),
        pytest.param("SELECT *\n  FROM t WHERE a = 'oops",
                     "missing closing '", 2, 20, "'", id="unterminated-string"),
    ],
)
def test_parse_errors_name_line_column_and_underline(sql: str, message: str, line: int, col: int,
                                                     underlined: str) -> None:
    with pytest.raises(SqlParseError) as info:
        parse_statement(sql)
    error = info.value
    assert message in error.description
    assert "Token" not in error.description and "<" not in error.description  # no Python object printed
    assert (error.line, error.col) == (line, col)
    source_line, carets = error.excerpt.splitlines()
    assert source_line.endswith(sql.splitlines()[line - 1])
    start = carets.index("^")
    assert source_line[start : start + len(underlined)] == underlined
    assert carets.count("^") == len(underlined)
    assert f"at line {line}, column {col}" in str(error)


# --- hypothesis: generated clauses round-trip ------------------------------------------

KEYWORDS = {"as", "by", "in", "is", "on", "or", "to", "and", "not", "seq", "all", "any", "end", "for"}
names = st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True).filter(lambda n: n not in KEYWORDS)
quoted_names = st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=6).map(
    lambda s: "`" + s.replace("`", "``") + "`"
)
symbols = st.one_of(names.map(lambda n: f"s_{n}"), quoted_names)


def quote_string(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


strings = st.text(st.characters(blacklist_categories=("Cs",)), max_size=8).map(quote_string)
type_values = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=8).map(quote_string)


@st.composite
def clauses(draw: st.DrawFn) -> str:
    bound = st.integers(0, 12).map(str)
    quantifiers = st.one_of(st.sampled_from(["", "+", "?", "*"]), bound.map(lambda n: f"{{{n}}}"),
                            bound.map(lambda n: f"{{{n},}}"),
                            st.tuples(bound, bound).map(lambda b: f"{{{b[0]},{b[1]}}}"))
    marks = st.one_of(st.just("!"), quantifiers, quantifiers.filter(lambda q: q != "+").map(lambda q: "!" + q))
    elements = draw(st.lists(st.tuples(symbols | type_values, marks), min_size=1, max_size=6))
    pattern = ", ".join(f"!{s}{m[1:]}" if m.startswith("!") else f"{s}{m}" for s, m in elements)
    parts = {"PATTERN": f"PATTERN SEQ({pattern})", "ORDER BY": f"ORDER BY c_{draw(names)}"}
    if draw(st.booleans()):
        keys = draw(st.lists(names, min_size=1, max_size=3))
        parts["PARTITION BY"] = "PARTITION BY " + ", ".join(f"k_{n}" for n in keys)
    defined = draw(st.lists(st.tuples(symbols, strings), max_size=3))
    if defined:
        parts["DEFINE"] = "DEFINE " + ", ".join(f"{s} AS col = {v}" for s, v in defined)
    if draw(st.booleans()):
        parts["TYPE BY"] = f"TYPE BY c_{draw(names)}"
    if draw(st.booleans()):
        parts["HIERARCHY"] = f"HIERARCHY h_{draw(names)}"
    forms = st.sampled_from(["COUNT(*)", "SUM(s_a.x)", "MIN(s_b.y)", "COUNT(s_a)"])
    measures = draw(st.lists(forms, max_size=3))
    if measures:
        parts["MEASURES"] = "MEASURES " + ", ".join(f"{m} AS o_{i}" for i, m in enumerate(measures))
    if draw(st.booleans()):
        amount = draw(st.integers(-5, 10**6))
        parts["WITHIN"] = draw(st.sampled_from([f"WITHIN {amount}", f"WITHIN INTERVAL {amount} SECONDS"]))
        if draw(st.booleans()):
            parts["SLIDE"] = f"SLIDE {draw(st.integers(1, 100))}"
    if draw(st.booleans()):
        parts["COUNT TYPE"] = "COUNT TYPE " + draw(st.sampled_from(["BIGINT", "DECIMAL", "DOUBLE"]))
    order = draw(st.permutations(list(parts)))
    return " ".join(parts[k] for k in order)


@settings(max_examples=150, deadline=None)
@given(clauses(), st.sampled_from(["t", "db.t AS c", "(SELECT * FROM t) AS s"]))
def test_generated_clauses_round_trip(body: str, source: str) -> None:
    sql = f"SELECT * FROM {source} MATCH_AGGREGATE ({body}) AS m"
    tree = parse_statement(sql)
    printed = tree.sql(dialect=SparkSeq)
    again = parse_statement(printed)
    assert again == tree
    assert again.sql(dialect=SparkSeq) == printed
    assert tree.find(MatchPattern).sql() in sql  # quantifiers print exactly as written
    assert parse_statement(tree.sql(dialect=SparkSeq, pretty=True)) == tree
