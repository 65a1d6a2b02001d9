"""Analysis: typed logical queries, plans, and one test per user error (SEMANTICS section 7)."""

from __future__ import annotations

import pytest

from sql_rewrites import errors as E
from sql_rewrites.analysis.analyzer import analyze_sql
from sql_rewrites.logical.query import MatchAggregateQuery, SymbolOrigin
from udafs.errors import SparkSeqError
from udafs.plan import CountType, Element, MeasureKind, ValueType

SCHEMA = {
    "clicks": {
        "customer_id": "bigint",
        "ts": "timestamp",
        "action": "string",
        "item": "string",
        "price": "decimal(10,2)",
        "qty": "int",
        "score": "double",
        "big": "decimal(30,4)",
        "day": "date",
        "local_ts": "timestamp_ntz",
        "tags": "array<string>",
        "seq_no": "bigint",
        "ok": "boolean",
    },
    "sales.orders": {"id": "int", "n": "int", "kind": "string"},
}
FUNNEL = """SELECT * FROM clicks MATCH_AGGREGATE (
  PARTITION BY customer_id ORDER BY ts
  PATTERN SEQ(VK, BK, !REC, VC+, BC)
  DEFINE VK AS action = 'view' AND item = 'kindle', BK AS BK.action = 'buy' AND item = 'kindle',
         REC AS action = 'rec', VC AS action = 'view' AND item = 'case', BC AS action = 'buy' AND item = 'case'
  MEASURES COUNT(*) AS funnels, SUM(BC.price) AS revenue, MAX(VC.qty) AS most, COUNT(VC) AS views,
           AVG(BC.price) AS avg_price
  WITHIN INTERVAL 10 MINUTES SLIDE INTERVAL 1 MINUTE
) AS m"""


def one(sql: str, schema: object = SCHEMA, **kwargs: object) -> MatchAggregateQuery:
    [query] = analyze_sql(sql, schema, **kwargs)  # type: ignore[arg-type]
    return query


def clause(body: str, source: str = "clicks") -> str:
    return f"SELECT * FROM {source} MATCH_AGGREGATE ({body}) AS m"


def outputs(query: MatchAggregateQuery) -> list[tuple[str, str]]:
    return [(o.name, o.type_text) for o in query.outputs]


# --- the logical query ----------------------------------------------------------------


def test_funnel_outputs_and_types_follow_semantics() -> None:
    query = one(FUNNEL)
    assert outputs(query) == [
        ("customer_id", "BIGINT"),
        ("window_start", "TIMESTAMP"),
        ("window_end", "TIMESTAMP"),
        ("funnels", "BIGINT"),
        ("revenue", "DECIMAL(20, 2)"),  # Spark's SUM of DECIMAL(10, 2)
        ("most", "INT"),
        ("views", "BIGINT"),
        ("avg_price", "DECIMAL(14, 6)"),  # Spark's AVG of DECIMAL(10, 2)
    ]
    assert query.alias == "m" and query.order.name == "ts"
    assert [k.name for k in query.partition_keys] == ["customer_id"]


def test_funnel_plan() -> None:
    plan = one(FUNNEL).plan
    assert plan.symbols == ("VK", "BK", "REC", "VC", "BC")
    assert plan.elements == (Element(0), Element(1), Element(3, kleene=True), Element(4))
    assert plan.negations == (0, 0, 1 << 2, 0, 0)
    assert (plan.within, plan.slide) == (600_000_000, 60_000_000)
    assert [(m.kind, m.symbol, m.column, m.name, m.places, m.digits) for m in plan.measures] == [
        (MeasureKind.COUNT_STAR, None, None, "funnels", 0, 0),
        (MeasureKind.SUM, 4, 0, "revenue", 0, 0),
        (MeasureKind.MAX, 3, 1, "most", 0, 0),
        (MeasureKind.COUNT, 3, None, "views", 0, 0),
        (MeasureKind.AVG, 4, 0, "avg_price", 4, 20),  # Spark's avg: sums into DECIMAL(20, 2), 6 places
    ]
    assert plan.columns == (ValueType.DECIMAL, ValueType.INT)  # price travels exactly: its unscaled cents
    assert plan.count_type is CountType.BIGINT
    assert plan.describe() == "SEQ(VK, BK, !REC, VC+, BC)"


def test_define_conditions_are_local_with_symbol_qualifiers_stripped() -> None:
    query = one(FUNNEL)
    conditions = {s.name: s.condition.sql(dialect="spark") for s in query.symbols}
    assert conditions["BK"] == "action = 'buy' AND item = 'kindle'"
    assert all(s.origin is SymbolOrigin.DEFINE for s in query.symbols)
    aliased = one(clause("ORDER BY c.ts PATTERN SEQ(A) DEFINE A AS c.action = 'x'", "clicks AS c"))
    assert aliased.symbols[0].condition.sql(dialect="spark") == "c.action = 'x'"


def test_without_slide_no_window_columns_and_numeric_order() -> None:
    query = one(clause("ORDER BY seq_no PATTERN SEQ(A, B) DEFINE A AS ok, B AS NOT ok WITHIN 100"))
    assert outputs(query) == [("count", "BIGINT")]  # default measure COUNT(*) AS count
    assert query.plan.within == 100 and query.plan.slide is None


def test_numeric_order_windows_have_its_type() -> None:
    query = one(clause("PARTITION BY item ORDER BY qty PATTERN SEQ(A) TYPE BY action WITHIN 10 SLIDE 5"))
    assert outputs(query)[:3] == [("item", "STRING"), ("window_start", "INT"), ("window_end", "INT")]


@pytest.mark.parametrize(
    ("count_type", "count", "int_sum"),
    [("BIGINT", "BIGINT", "BIGINT"), ("DECIMAL", "DECIMAL(38, 0)", "DECIMAL(38, 0)"), ("DOUBLE", "DOUBLE", "DOUBLE")],
)
def test_count_type_governs_counts_and_integer_sums(count_type: str, count: str, int_sum: str) -> None:
    query = one(clause(
        f"ORDER BY ts PATTERN SEQ(A, B) TYPE BY action MEASURES COUNT(*) AS n, COUNT(B) AS nb, "
        f"SUM(B.qty) AS s, SUM(B.score) AS f COUNT TYPE {count_type}"
    ))
    assert outputs(query) == [("n", count), ("nb", count), ("s", int_sum), ("f", "DOUBLE")]
    assert query.plan.count_type is CountType(count_type.lower())


def test_min_max_keep_the_column_type() -> None:
    query = one(clause(
        "ORDER BY ts PATTERN SEQ(A) TYPE BY action MEASURES MIN(A.ts) AS t0, MAX(A.day) AS d1, "
        "MIN(A.local_ts) AS l0, MAX(A.score) AS s1, MIN(A.price) AS p0"
    ))
    assert outputs(query) == [("t0", "TIMESTAMP"), ("d1", "DATE"), ("l0", "TIMESTAMP_NTZ"), ("s1", "DOUBLE"),
                              ("p0", "DECIMAL(10, 2)")]
    assert query.plan.columns == (ValueType.INT, ValueType.INT, ValueType.INT, ValueType.FLOAT, ValueType.DECIMAL)


def test_value_columns_are_shared_between_measures() -> None:
    query = one(clause("ORDER BY ts PATTERN SEQ(A, B) TYPE BY action MEASURES SUM(A.qty) AS s, MAX(B.QTY) AS m"))
    assert [v.name for v in query.value_columns] == ["qty"]


def test_type_by_symbols_compare_the_type_column() -> None:
    query = one(clause("ORDER BY ts PATTERN SEQ(view, 'Buy Now', !ret) TYPE BY action WITHIN INTERVAL 1 HOUR"))
    conditions = [s.condition.sql(dialect="spark") for s in query.symbols]
    assert conditions == ["action = 'view'", "action = 'Buy Now'", "action = 'ret'"]
    assert {s.origin for s in query.symbols} == {SymbolOrigin.TYPE_BY}


def test_define_and_type_by_mix_and_identifiers_are_case_insensitive() -> None:
    query = one(clause(
        "ORDER BY ts PATTERN SEQ(vk, other) DEFINE VK AS qty > 1 TYPE BY action MEASURES COUNT(VK) AS n"
    ))
    assert [s.origin for s in query.symbols] == [SymbolOrigin.DEFINE, SymbolOrigin.TYPE_BY]
    assert query.plan.measures[0].symbol == 0


def test_adjacent_negations_share_one_gap() -> None:
    query = one(clause("ORDER BY ts PATTERN SEQ(A, !B, !C, D) TYPE BY action"))
    assert query.plan.negations == (0, 0b110, 0)


def test_hierarchy_symbols_match_descendants() -> None:
    hierarchies = {"Products": [("kindle", "ereaders"), ("paperwhite", "kindle"), ("ereaders", "devices")]}
    query = one(clause("ORDER BY ts PATTERN SEQ(ereaders, kindle) TYPE BY item HIERARCHY products"),
                hierarchies=hierarchies)
    conditions = [s.condition.sql(dialect="spark") for s in query.symbols]
    assert conditions == ["item IN ('ereaders', 'kindle', 'paperwhite')", "item IN ('kindle', 'paperwhite')"]


def test_callable_provider_and_qualified_relation() -> None:
    asked: list[str] = []

    def provider(name: str) -> dict[str, str] | None:
        asked.append(name)
        return SCHEMA.get(name)

    query = one(clause("PARTITION BY id ORDER BY n PATTERN SEQ(A) TYPE BY kind", "sales.orders"), provider)
    assert asked == ["sales.orders"] and outputs(query) == [("id", "INT"), ("count", "BIGINT")]
    assert one(clause("ORDER BY TS PATTERN SEQ(A) TYPE BY ACTION", "CLICKS")).order.column.name == "ts"


def test_subquery_and_cte_sources_are_derived() -> None:
    sub = one(clause(
        "PARTITION BY who ORDER BY t PATTERN SEQ(A) TYPE BY action MEASURES SUM(A.cents) AS s",
        "(SELECT customer_id AS who, ts AS t, action, CAST(price * 100 AS BIGINT) AS cents FROM clicks) AS s",
    ))
    assert outputs(sub) == [("who", "BIGINT"), ("s", "BIGINT")]
    cte = one(
        "WITH e AS (SELECT * FROM clicks WHERE qty > 0), f AS (SELECT customer_id, ts, action FROM e) "
        "SELECT * FROM f MATCH_AGGREGATE (PARTITION BY customer_id ORDER BY ts PATTERN SEQ(A) TYPE BY action) m"
    )
    assert [c.name for c in cte.source_schema.columns] == ["customer_id", "ts", "action"]


def test_operator_over_operator_output() -> None:
    inner, outer = analyze_sql(
        "SELECT * FROM clicks MATCH_AGGREGATE (PARTITION BY customer_id ORDER BY ts PATTERN SEQ(A, B) "
        "TYPE BY action MEASURES COUNT(*) AS n WITHIN INTERVAL 1 MINUTE SLIDE INTERVAL 1 MINUTE) AS m "
        "MATCH_AGGREGATE (PARTITION BY customer_id ORDER BY window_start PATTERN SEQ(HOT) DEFINE HOT AS n > 3 "
        "MEASURES COUNT(*) AS hot) AS h",
        SCHEMA,
    )
    assert outputs(outer) == [("customer_id", "BIGINT"), ("hot", "BIGINT")]
    assert outer.order.column.type_text == "TIMESTAMP"


# --- errors: one class each, messages name the bad thing and the allowed values ---------


def expect(
    error: type[Exception], sql: str, *phrases: str, schema: object = SCHEMA, **kwargs: object
) -> E.SqlRewriteError:
    with pytest.raises(error) as info:
        analyze_sql(sql, schema, **kwargs)  # type: ignore[arg-type]
    for phrase in phrases:
        assert phrase in str(info.value), str(info.value)
    assert isinstance(info.value, SparkSeqError) and isinstance(info.value, ValueError)
    return info.value  # type: ignore[return-value]


def test_schema_provider_error() -> None:
    expect(E.SchemaProviderError, clause("ORDER BY ts PATTERN SEQ(A) TYPE BY a", "t"), "'t'", "column 'ts'",
           "not a Spark SQL type", schema={"t": {"ts": "timestampish", "a": "string"}})


def test_unknown_table() -> None:
    expect(E.UnknownTableError, clause("ORDER BY ts PATTERN SEQ(A) TYPE BY action", "clickz"),
           "relation 'clickz'", "known relations: clicks, sales.orders")


def test_unresolved_source_star_over_unknown_relation() -> None:
    expect(E.UnresolvedSourceError, clause("ORDER BY ts PATTERN SEQ(A) TYPE BY a", "(SELECT * FROM nowhere) AS s"),
           "cannot expand *", "'s'")


@pytest.mark.parametrize(("source", "kind"), [("range(10)", "a table-valued function"),
                                              ("VALUES (1, 'v') AS v(ts, action)", "a VALUES list")])
def test_a_source_that_is_no_relation_is_named_as_written(source: str, kind: str) -> None:
    error = expect(E.UnresolvedSourceError, clause("ORDER BY ts PATTERN SEQ(A) TYPE BY action", source),
                   f"MATCH_AGGREGATE cannot read from {kind} ({source}); use a table, view, CTE or subquery")
    assert error.position is not None and error.position.column == len("SELECT * FROM ") + 1
    assert error.position.excerpt.splitlines()[1].count("^") == len(source)


def test_unresolved_source_type() -> None:
    error = expect(E.UnresolvedSourceError,
                   clause("ORDER BY t PATTERN SEQ(A) TYPE BY action",
                          "(SELECT my_udf(ts) AS t, action FROM clicks) s"),
                   "ORDER BY", "type of column t", "CAST(")
    assert error.position is not None


def test_unknown_column_suggests_and_points_at_it() -> None:
    sql = "SELECT *\nFROM clicks MATCH_AGGREGATE (ORDER BY ts PATTERN SEQ(VK)\n  DEFINE VK AS actoin = 'view') m"
    error = expect(E.UnknownColumnError, sql, "unknown column 'actoin' in DEFINE of VK", "did you mean 'action'?",
                   "columns of clicks: customer_id, ts, action")
    assert error.position is not None and (error.position.line, error.position.column) == (3, 16)
    source_line, carets = error.position.excerpt.splitlines()
    start = carets.index("^")
    assert source_line[start : start + carets.count("^")] == "actoin"


def test_an_unknown_column_named_like_a_clause_says_the_expression_before_it_may_be_incomplete() -> None:
    """``x = 1 AND UNCERTAIN BETWEEN lo AND hi`` is a valid expression over a column named
    uncertain: the parser cannot tell, the error says what it read."""
    error = expect(E.UnknownColumnError, clause("ORDER BY ts PATTERN SEQ(A) DEFINE A AS action = 'v' AND "
                                                "UNCERTAIN BETWEEN ts AND ts"),
                   "unknown column 'UNCERTAIN' in DEFINE of A",
                   "UNCERTAIN is read as a column here: if it begins the UNCERTAIN clause, the expression before "
                   "it is incomplete")
    assert error.position is not None and error.position.excerpt.splitlines()[1].count("^") == len("UNCERTAIN")
    other = expect(E.UnknownColumnError, clause("ORDER BY ts PATTERN SEQ(A) DEFINE A AS actoin = 'v'"), "actoin")
    assert "is read as a column here" not in str(other)


@pytest.mark.parametrize(
    ("body", "phrase"),
    [
        ("PARTITION BY cust ORDER BY ts PATTERN SEQ(A) TYPE BY action", "in PARTITION BY"),
        ("ORDER BY tss PATTERN SEQ(A) TYPE BY action", "in ORDER BY"),
        ("ORDER BY ts PATTERN SEQ(A) TYPE BY kind", "in TYPE BY"),
        ("ORDER BY ts PATTERN SEQ(A) TYPE BY action MEASURES SUM(A.cost) AS c", "in measure c"),
        ("ORDER BY ts PATTERN SEQ(A) DEFINE A AS x.action = 'v'", "qualifier x"),
    ],
)
def test_unknown_column_everywhere(body: str, phrase: str) -> None:
    expect(E.UnknownColumnError, clause(body), phrase)


def test_unknown_symbol_in_pattern() -> None:
    expect(E.UnknownSymbolError, clause("ORDER BY ts PATTERN SEQ(A, B) DEFINE A AS qty > 1"),
           "symbol B is used in PATTERN but not defined", "DEFINE", "TYPE BY")


def test_unknown_symbol_in_measure() -> None:
    expect(E.UnknownSymbolError, clause("ORDER BY ts PATTERN SEQ(A) TYPE BY action MEASURES COUNT(Z) AS z"),
           "measure z references symbol Z", "symbols of the pattern: A")


def test_unused_symbol() -> None:
    expect(E.UnusedSymbolError, clause("ORDER BY ts PATTERN SEQ(A) DEFINE A AS qty > 1, B AS qty < 1"),
           "symbol B is defined but not used in PATTERN SEQ(A)")


def test_duplicate_symbol() -> None:
    expect(E.DuplicateSymbolError, clause("ORDER BY ts PATTERN SEQ(A) DEFINE A AS qty > 1, a AS qty < 1"),
           "symbol a is defined twice")


def test_ambiguous_type_by_spelling() -> None:
    expect(E.AmbiguousSymbolError, clause("ORDER BY ts PATTERN SEQ(view, VIEW) TYPE BY action"),
           "'view' and 'VIEW'", "quote the type value")


def test_too_many_symbols() -> None:
    names = ", ".join(f"S{i}" for i in range(64))
    expect(E.TooManySymbolsError, clause(f"ORDER BY ts PATTERN SEQ({names}) TYPE BY action"),
           "64 distinct symbols", "at most 63")


@pytest.mark.parametrize(
    ("define", "phrase"),
    [
        ("A AS qty > AVG(qty)", "AVG(qty) is not a predicate on one row"),
        ("A AS qty > (SELECT 1)", "is not a predicate on one row"),
        ("A AS qty > 1, B AS B.qty > A.qty", "A.qty refers to another symbol's row"),
    ],
)
def test_non_local_define(define: str, phrase: str) -> None:
    expect(E.NonLocalDefineError, clause(f"ORDER BY ts PATTERN SEQ(A, B) DEFINE {define} TYPE BY action"), phrase)


def test_negated_measure() -> None:
    expect(E.NegatedMeasureError,
           clause("ORDER BY ts PATTERN SEQ(A, !B, C) TYPE BY action MEASURES SUM(B.qty) AS s"),
           "measure s references B, which appears only negated (!B)")


@pytest.mark.parametrize(("pattern", "edge"), [("SEQ(!N, A)", "leading"), ("SEQ(A, !N)", "trailing")])
def test_edge_negation_without_within(pattern: str, edge: str) -> None:
    expect(E.EdgeNegationWithoutWindowError, clause(f"ORDER BY ts PATTERN {pattern} TYPE BY action"),
           f"has a {edge} negation", "add WITHIN")


def test_only_negation() -> None:
    expect(E.OnlyNegationError, clause("ORDER BY ts PATTERN SEQ(!A, !B) TYPE BY action WITHIN INTERVAL 1 SECOND"),
           "only negated symbols", "at least one positive symbol")


@pytest.mark.parametrize(
    ("window", "phrase"),
    [
        ("WITHIN INTERVAL 1 MONTH", "unit MONTH is not supported; use one of MICROSECOND(S)"),
        ("WITHIN INTERVAL '0.5' MICROSECONDS", "not a whole number of microseconds"),
        ("WITHIN INTERVAL 10 MINUTES SLIDE INTERVAL 2 YEARS", "SLIDE interval unit YEARS"),
    ],
)
def test_bad_interval(window: str, phrase: str) -> None:
    expect(E.BadIntervalError, clause(f"ORDER BY ts PATTERN SEQ(A) TYPE BY action {window}"), phrase)


def test_bad_number_window() -> None:
    expect(E.BadIntervalError, clause("ORDER BY seq_no PATTERN SEQ(A) TYPE BY action WITHIN 1.5"),
           "WITHIN 1.5 is not a whole number of units of seq_no at line")
    expect(E.BadIntervalError, clause("ORDER BY seq_no PATTERN SEQ(A) TYPE BY action WITHIN qty"),
           "takes a number literal")


@pytest.mark.parametrize(
    ("order", "window", "phrase"),
    [
        ("ts", "WITHIN INTERVAL 0 SECONDS", "WITHIN must be positive"),
        ("ts", "WITHIN INTERVAL -5 MINUTES", "WITHIN must be positive"),
        ("seq_no", "WITHIN 10 SLIDE -1", "SLIDE must be positive, got -1"),
    ],
)
def test_non_positive_window(order: str, window: str, phrase: str) -> None:
    expect(E.NonPositiveWindowError, clause(f"ORDER BY {order} PATTERN SEQ(A) TYPE BY action {window}"), phrase)


@pytest.mark.parametrize(("order", "window", "phrase"), [
    ("ts", "WITHIN INTERVAL 1 MINUTE SLIDE INTERVAL 61 SECONDS",
     "SLIDE INTERVAL '61' SECONDS is longer than WITHIN INTERVAL '1' MINUTE; the slide must be at most the window "
     "length, as in Spark's window()"),
    ("seq_no", "WITHIN 10 SLIDE 11", "SLIDE 11 is longer than WITHIN 10"),
])
def test_slide_longer_than_within(order: str, window: str, phrase: str) -> None:
    expect(E.SlideLongerThanWithinError, clause(f"ORDER BY {order} PATTERN SEQ(A) TYPE BY action {window}"), phrase)
    one(clause(f"ORDER BY {order} PATTERN SEQ(A) TYPE BY action {window.replace('61', '60').replace('11', '10')}"))


def test_slide_without_within() -> None:
    expect(E.SlideWithoutWithinError, clause("ORDER BY ts PATTERN SEQ(A) TYPE BY action SLIDE INTERVAL 1 MINUTE"),
           "SLIDE needs WITHIN")


@pytest.mark.parametrize(
    ("order", "window", "phrase"),
    [
        ("seq_no", "WITHIN INTERVAL 10 MINUTES", "seq_no is numeric, so WITHIN takes a plain number"),
        ("ts", "WITHIN 600", "ts is a TIMESTAMP, so WITHIN takes an interval"),
        ("ts", "WITHIN INTERVAL 1 HOUR SLIDE 60", "so SLIDE takes an interval"),
    ],
)
def test_window_type_mismatch(order: str, window: str, phrase: str) -> None:
    expect(E.WindowTypeMismatchError, clause(f"ORDER BY {order} PATTERN SEQ(A) TYPE BY action {window}"), phrase)


@pytest.mark.parametrize(
    ("order", "phrase"),
    [
        ("ts DESC", "exactly one ascending column"),
        ("ts, seq_no", "exactly one ascending column"),
        ("action", "action is STRING; the event time must be TIMESTAMP, TIMESTAMP_NTZ, TINYINT"),
        ("score", "score is DOUBLE"),
        ("big", "big is DECIMAL(30, 4)"),
    ],
)
def test_order_by(order: str, phrase: str) -> None:
    expect(E.OrderByError, clause(f"ORDER BY {order} PATTERN SEQ(A) TYPE BY action"), phrase)


def test_partition_by_expression() -> None:
    expect(E.PartitionByError, clause("PARTITION BY customer_id % 10 ORDER BY ts PATTERN SEQ(A) TYPE BY action"),
           "PARTITION BY takes source columns, got customer_id % 10")


@pytest.mark.parametrize(
    ("measure", "phrase"),
    [
        ("STDDEV(A.qty) AS s", "not supported; use one of COUNT(*), COUNT(X), SUM(X.col)"),
        ("COUNT(DISTINCT A) AS s", "COUNT takes * or a symbol"),
        ("COUNT(A.qty) AS s", "COUNT takes * or a symbol"),
        ("SUM(qty) AS s", "SUM takes a symbol's column, e.g. SUM(X.price)"),
    ],
)
def test_unknown_measure(measure: str, phrase: str) -> None:
    expect(E.UnknownMeasureError, clause(f"ORDER BY ts PATTERN SEQ(A) TYPE BY action MEASURES {measure}"), phrase)


def test_missing_measure_alias() -> None:
    expect(E.MissingMeasureAliasError, clause("ORDER BY ts PATTERN SEQ(A) TYPE BY action MEASURES COUNT(*)"),
           "measure COUNT(*) needs a name", "AS name")


@pytest.mark.parametrize("column", ["action", "ts", "ok", "day"])
def test_non_numeric_measure(column: str) -> None:
    expect(E.NonNumericMeasureError,
           clause(f"ORDER BY ts PATTERN SEQ(A) TYPE BY action MEASURES AVG(A.{column}) AS x"),
           f"column {column} is", "not numeric", "AVG accepts TINYINT, SMALLINT, INT, BIGINT, FLOAT, DOUBLE, DECIMAL")


@pytest.mark.parametrize(("measure", "want"), [
    ("SUM(A.big)", "DECIMAL(38, 4)"), ("AVG(A.big)", "DECIMAL(34, 8)"), ("MIN(A.big)", "DECIMAL(30, 4)"),
    ("MAX(A.price)", "DECIMAL(10, 2)"), ("SUM(A.price)", "DECIMAL(20, 2)"), ("AVG(A.price)", "DECIMAL(14, 6)"),
])
def test_decimal_measures_have_sparks_types(measure: str, want: str) -> None:
    """Spark's sum / avg / min / max of DECIMAL(p, s): DECIMAL(min(38, p + 10), s),
    DECIMAL(min(38, p + 4), min(38, s + 4)), DECIMAL(p, s) (tests/test_spark_sql_decimals.py
    checks them against Spark itself)."""
    [(_, dtype)] = outputs(one(clause(f"ORDER BY ts PATTERN SEQ(A) TYPE BY action MEASURES {measure} AS x")))
    assert dtype == want


@pytest.mark.parametrize("column", ["action", "tags", "ok"])
def test_unsupported_min_max_type(column: str) -> None:
    expect(E.UnsupportedMeasureTypeError,
           clause(f"ORDER BY ts PATTERN SEQ(A) TYPE BY action MEASURES MIN(A.{column}) AS x"),
           "MIN over", "is not supported; supported types: TINYINT")


def test_duplicate_output_column() -> None:
    expect(E.DuplicateOutputColumnError,
           clause("PARTITION BY customer_id ORDER BY ts PATTERN SEQ(A) TYPE BY action "
                  "MEASURES COUNT(*) AS Customer_ID"),
           "two columns named Customer_ID")
    expect(E.DuplicateOutputColumnError,
           clause("ORDER BY ts PATTERN SEQ(A) TYPE BY action MEASURES COUNT(*) AS window_start "
                  "WITHIN INTERVAL 1 HOUR SLIDE INTERVAL 1 HOUR"), "window_start")


def test_unknown_hierarchy() -> None:
    expect(E.UnknownHierarchyError, clause("ORDER BY ts PATTERN SEQ(A) DEFINE A AS qty > 1 TYPE BY item HIERARCHY h"),
           "HIERARCHY h: no concept hierarchies are registered")
    expect(E.UnknownHierarchyError, clause("ORDER BY ts PATTERN SEQ(A) TYPE BY item HIERARCHY h"),
           "unknown hierarchy h; known hierarchies: products", hierarchies={"products": []})


@pytest.mark.parametrize(
    ("pairs", "pattern", "phrase"),
    [
        ([("a", "b"), ("b", "a")], "SEQ(a)", "has a cycle: a -> b -> a"),
        ([("a", "b"), ("a", "c")], "SEQ(a)", "'a' has two parents, 'b' and 'c'"),
        ([("a", "b")], "SEQ(zzz)", "'zzz' is not a node of hierarchy h"),
    ],
)
def test_malformed_hierarchy(pairs: list[tuple[str, str]], pattern: str, phrase: str) -> None:
    expect(E.HierarchyError, clause(f"ORDER BY ts PATTERN {pattern} TYPE BY item HIERARCHY h"), phrase,
           hierarchies={"h": pairs})


def test_hierarchy_needs_type_by() -> None:
    expect(E.HierarchyError, clause("ORDER BY ts PATTERN SEQ(A) DEFINE A AS qty > 1 HIERARCHY h"),
           "HIERARCHY h needs TYPE BY", hierarchies={"h": []})


def test_parse_errors_surface_from_analysis_entry_point() -> None:
    expect(E.SqlParseError, "SELECT * FROM clicks MATCH_AGGREGATE (ORDER BY ts PATTERN SEQ(A,))",
           "Expecting a symbol")


def test_reads_table_names_only_a_table_source() -> None:
    """An operator reads a table when its source is that table itself, not a subquery or an operator."""
    assert one(FUNNEL).reads_table("CLICKS") and not one(FUNNEL).reads_table("orders")
    inner, outer = analyze_sql(
        "SELECT * FROM clicks MATCH_AGGREGATE (PARTITION BY customer_id ORDER BY ts PATTERN SEQ(A, B) "
        "TYPE BY action MEASURES COUNT(*) AS n WITHIN INTERVAL 1 MINUTE SLIDE INTERVAL 1 MINUTE) AS m "
        "MATCH_AGGREGATE (PARTITION BY customer_id ORDER BY window_start PATTERN SEQ(HOT) DEFINE HOT AS n > 3 "
        "MEASURES COUNT(*) AS hot) AS h", SCHEMA)
    assert inner.reads_table("clicks") and not outer.reads_table("clicks")
