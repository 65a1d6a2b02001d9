"""Generation: the shape of the plain Spark SQL, pass-through, and injection safety."""

from __future__ import annotations

import pytest
import sqlglot
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlglot import exp

from sql_rewrites import explain, rewrite, rewrite_statements
from sql_rewrites.analysis.analyzer import analyze_sql
from sql_rewrites.engine_contract import PARTITION_SLOT
from sql_rewrites.errors import SqlParseError
from sql_rewrites.syntax.statements import split_statements
from udafs.plan import Plan

SCHEMA = {
    "clicks": {"customer_id": "bigint", "ts": "timestamp", "action": "string", "item": "string",
               "price": "decimal(10,2)", "qty": "int", "seq_no": "bigint", "local_ts": "timestamp_ntz"},
}
FUNNEL = """SELECT customer_id, window_start, funnels FROM clicks AS c MATCH_AGGREGATE (
  PARTITION BY customer_id ORDER BY ts
  PATTERN SEQ(VK, BK, !REC, VC+)
  DEFINE VK AS action = 'view' AND item = 'kindle', BK AS c.action = 'buy', REC AS action = 'rec',
         VC AS VC.action = 'view' AND item = 'case'
  MEASURES COUNT(*) AS funnels, SUM(VC.price) AS revenue, MAX(VK.qty) AS most
  WITHIN INTERVAL 10 MINUTES SLIDE INTERVAL 1 MINUTE
) AS m WHERE funnels > 0"""


def engine(plan: Plan) -> str:
    return "sparkseq_agg"


def parse_spark(sql: str) -> exp.Expr:
    [tree] = sqlglot.parse(sql, read="spark")
    assert tree is not None
    return tree


def layers(sql: str) -> tuple[exp.Select, exp.Select, exp.Select, exp.Select]:
    """(user query, typed output, groups, events) of a rewritten single-operator query."""
    user = parse_spark(sql)
    output = user.args["from_"].this.this
    groups = output.args["from_"].this.this
    events = groups.args["from_"].this.this
    return user, output, groups, events


def test_funnel_becomes_three_nested_selects() -> None:
    user, output, groups, events = layers(rewrite(FUNNEL, SCHEMA, engine))
    assert user.args["from_"].this.alias == "m" and user.args["where"].sql() == "WHERE funnels > 0"
    assert [s.alias_or_name for s in output.selects] == ["customer_id", "window_start", "window_end", "funnels",
                                                         "revenue", "most"]
    [lateral] = output.args["laterals"]
    assert lateral.args["view"] and isinstance(lateral.this, exp.Inline)
    assert "RAISE_ERROR(REPLACE(" in output.args["where"].sql(dialect="spark")
    assert [g.name for g in groups.args["group"].expressions] == ["customer_id"]
    assert events.args["from_"].this.sql(dialect="spark") == "`clicks` AS `c`"
    assert events.args.get("where") is None
    assert groups.args["where"].sql(dialect="spark") == (
        "WHERE `__sparkseq_mask` <> 0 AND NOT `__sparkseq_ts` IS NULL"
    )


def test_engine_call_is_the_function_of_the_analysed_plan() -> None:
    [query] = analyze_sql(FUNNEL, SCHEMA)
    asked: list[Plan] = []
    _, _, groups, _ = layers(rewrite(FUNNEL, SCHEMA, lambda plan: asked.append(plan) or "sparkseq_agg"))
    call = groups.selects[1].this
    assert call.name == "sparkseq_agg" and asked == [query.plan]  # the plan is bound into the function
    assert [c.name for c in call.expressions] == ["__sparkseq_ts", "__sparkseq_mask", "__sparkseq_v0", "__sparkseq_v1"]


def test_events_compute_time_mask_and_values() -> None:
    _, _, _, events = layers(rewrite(FUNNEL, SCHEMA, engine))
    sql = {s.alias: s.this.sql(dialect="spark") for s in events.selects}
    assert sql["customer_id"] == "`customer_id`"
    assert sql["__sparkseq_ts"] == "UNIX_MICROS(`ts`)"
    assert sql["__sparkseq_mask"] == (
        "CAST((CASE WHEN `action` = 'view' AND `item` = 'kindle' THEN 1 ELSE 0 END) "
        "| (CASE WHEN `c`.`action` = 'buy' THEN 2 ELSE 0 END) "
        "| (CASE WHEN `action` = 'rec' THEN 4 ELSE 0 END) "
        "| (CASE WHEN `action` = 'view' AND `item` = 'case' THEN 8 ELSE 0 END) AS BIGINT)"
    )
    assert sql["__sparkseq_v0"] == "CAST(`price` * 100 AS BIGINT)"  # a DECIMAL(10, 2): its unscaled integers
    assert sql["__sparkseq_v1"] == "CAST(`qty` AS BIGINT)"


def test_outputs_are_cast_to_their_declared_types() -> None:
    _, output, _, _ = layers(rewrite(FUNNEL, SCHEMA, engine))
    sql = {s.alias_or_name: s.this.sql(dialect="spark") for s in output.selects}
    assert sql["window_start"] == "TIMESTAMP_MICROS(`__sparkseq_r`.`__sparkseq_window_start`)"
    assert sql["funnels"] == "CAST(`__sparkseq_r`.`__sparkseq_m0` AS BIGINT)"
    # the exact unscaled sum read back as Spark's SUM type (dividing by 100 would lose digits past 38)
    assert sql["revenue"] == ("CAST(CONCAT(CAST(`__sparkseq_r`.`__sparkseq_m1` AS STRING), 'E-2') "
                              "AS DECIMAL(20, 2))")
    assert sql["most"] == "CAST(`__sparkseq_r`.`__sparkseq_m2` AS INT)"


@pytest.mark.parametrize(
    ("order", "window", "time", "bound"),
    [
        ("seq_no", "WITHIN 10 SLIDE 5", "CAST(`seq_no` AS BIGINT)",
         "CAST(`__sparkseq_r`.`__sparkseq_window_start` AS BIGINT)"),
        ("local_ts", "WITHIN INTERVAL 1 HOUR SLIDE INTERVAL 1 HOUR",
         "timestampdiff(MICROSECOND, CAST('1970-01-01 00:00:00' AS TIMESTAMP_NTZ), `local_ts`)",
         "timestampadd(MICROSECOND, `__sparkseq_r`.`__sparkseq_window_start`, "
         "CAST('1970-01-01 00:00:00' AS TIMESTAMP_NTZ))"),
    ],
)
def test_event_time_conversions(order: str, window: str, time: str, bound: str) -> None:
    sql = f"SELECT * FROM clicks MATCH_AGGREGATE (ORDER BY {order} PATTERN SEQ(A) TYPE BY action {window}) AS m"
    out = rewrite(sql, SCHEMA, engine)
    assert f"{time} AS `__sparkseq_ts`" in out
    assert f"{bound} AS `window_start`" in out


def test_without_partition_by_groups_by_a_constant() -> None:
    sql = "SELECT * FROM clicks MATCH_AGGREGATE (ORDER BY ts PATTERN SEQ(A) TYPE BY action) AS m"
    _, output, groups, events = layers(rewrite(sql, SCHEMA, engine))
    assert events.selects[0].sql(dialect="spark") == "0 AS `__sparkseq_all_rows`"
    assert [g.name for g in groups.args["group"].expressions] == ["__sparkseq_all_rows"]
    assert f"'{PARTITION_SLOT}', '(all rows)'" in output.args["where"].sql(dialect="spark")


def test_internal_names_avoid_partition_keys() -> None:
    schema = {"t": {"__sparkseq_ts": "bigint", "ts": "timestamp", "a": "string"}}
    sql = "SELECT * FROM t MATCH_AGGREGATE (PARTITION BY __sparkseq_ts ORDER BY ts PATTERN SEQ(X) TYPE BY a) m"
    _, _, _, events = layers(rewrite(sql, schema, engine))
    assert [s.alias for s in events.selects] == ["__sparkseq_ts", "___sparkseq_ts", "__sparkseq_mask"]


def test_statements_without_the_operator_pass_through_verbatim() -> None:
    plain = "select  a -- keep me\nfrom t where b = ';'"
    sql = f"{plain};\n{FUNNEL} ;  SET x = 1  ;"
    first, second, third = rewrite_statements(sql, SCHEMA, engine)
    assert first == plain and third == "SET x = 1"
    assert "MATCH_AGGREGATE" not in second and "sparkseq_agg(" in second
    assert rewrite(sql, SCHEMA, engine).count(";\n") == 2
    assert [s.text for s in split_statements("SELECT ';' ; ; SELECT 2")] == ["SELECT ';'", "SELECT 2"]


def test_statements_know_their_kind_by_their_first_token_and_their_place() -> None:
    """Comments before a statement are not its first token; EXPLAIN may be followed by
    another statement (sqlglot gives EXPLAIN's rest as one raw token, not a literal)."""
    text = ("-- SELECT first\nCREATE TEMP VIEW v AS SELECT 1;\n/* x */ explain select 'a''b' ; (SELECT 2); "
            "WITH t AS (SELECT 1) SELECT * FROM t")
    statements = split_statements(text)
    assert [(s.keyword, s.is_query) for s in statements] == [("CREATE", False), ("EXPLAIN", False), ("(", True),
                                                             ("WITH", True)]
    assert [text[s.start:s.start + len(s.text)] for s in statements] == [s.text for s in statements]
    assert statements[1].text == "/* x */ explain select 'a''b'" and statements[1].prefix == "EXPLAIN "


@pytest.mark.parametrize(
    ("prefix", "kind"),
    [("CREATE OR REPLACE TEMPORARY VIEW v AS ", exp.Create), ("INSERT INTO t2 ", exp.Insert),
     ("CACHE TABLE c AS ", exp.Cache)],
)
def test_operator_inside_other_statements(prefix: str, kind: type[exp.Expr]) -> None:
    out = rewrite(prefix + FUNNEL, SCHEMA, engine)
    assert isinstance(parse_spark(out), kind) and "MATCH_AGGREGATE" not in out


def test_explain_statements_are_rewritten_behind_their_prefix() -> None:
    out = rewrite(f"SELECT 1; explain formatted {FUNNEL}; EXPLAIN SELECT 2", SCHEMA, engine)
    first, second, third = out.split(";\n")
    assert second.startswith("EXPLAIN FORMATTED SELECT customer_id") and "MATCH_AGGREGATE" not in second
    assert third == "EXPLAIN SELECT 2"
    with pytest.raises(SqlParseError) as info:
        rewrite("EXPLAIN\n SELECT * FROM t MATCH_AGGREGATE (ORDER BY ts PATTERN SEQ(,))", SCHEMA, engine)
    assert (info.value.line, info.value.col) == (2, 59)


def test_operator_in_an_unsupported_statement_is_a_parse_error() -> None:
    with pytest.raises(SqlParseError, match="must follow a table, view or subquery") as info:
        rewrite("SELECT 1;\nSELECT match_aggregate (1) FROM t", SCHEMA, engine)
    assert (info.value.line, info.value.col) == (2, 8)


def test_nested_operators_are_rewritten_innermost_first() -> None:
    sql = (
        "WITH per_minute AS (SELECT * FROM clicks MATCH_AGGREGATE (PARTITION BY customer_id ORDER BY ts "
        "PATTERN SEQ(A, B) TYPE BY action MEASURES COUNT(*) AS n "
        "WITHIN INTERVAL 1 MINUTE SLIDE INTERVAL 1 MINUTE) m) "
        "SELECT * FROM per_minute MATCH_AGGREGATE (PARTITION BY customer_id ORDER BY window_start "
        "PATTERN SEQ(HOT, HOT) DEFINE HOT AS n > 3) AS h"
    )
    [statement] = explain(sql, SCHEMA, lambda plan: f"engine_{len(plan.symbols)}")
    assert [o.function_name for o in statement.operators] == ["engine_2", "engine_1"]
    tree = parse_spark(statement.rewritten)
    calls = {a.name for a in tree.find_all(exp.Anonymous) if a.name.startswith("engine_")}
    assert calls == {"engine_1", "engine_2"}


def test_explain_reports_plan_types_and_sql() -> None:
    [statement] = explain(FUNNEL, SCHEMA, engine, pretty=True)
    [operator] = statement.operators
    summary = operator.as_dict()
    assert summary["pattern"] == "SEQ(VK, BK, !REC, VC+)"
    assert summary["outputs"][:2] == [("customer_id", "BIGINT"), ("window_start", "TIMESTAMP")]
    assert summary["engine_result_type"].startswith(
        "ARRAY<STRUCT<window_start: BIGINT, window_end: BIGINT, m0: BIGINT"
    )
    assert "\n" in summary["sql"] and statement.original == FUNNEL


def test_comments_inside_the_operator_are_dropped() -> None:
    sql = ("SELECT * -- outer */ /*\nFROM clicks MATCH_AGGREGATE (ORDER BY ts -- in */ /*\n"
           "PATTERN SEQ(A) TYPE BY action) m")
    out = rewrite(sql, SCHEMA, engine)
    assert out.count("/*") == 1 and "/* in" not in out
    assert out.startswith("SELECT * /* outer * / / * */ FROM")


@pytest.mark.parametrize("name", ["f; DROP TABLE t", "f(1)", "", "`f`", "f--"])
def test_engine_function_name_must_be_an_identifier(name: str) -> None:
    with pytest.raises(ValueError, match="engine function name"):
        rewrite(FUNNEL, SCHEMA, lambda plan: name)


# --- injection: user text never changes the shape of the generated query ---------------

NASTY = st.lists(
    st.sampled_from(list("ab'\"`;-/*\\ \n)(,.") + ["--", "/*", "*/", "';", "`;", "\u00e9", "\\'"]),
    min_size=1,
    max_size=8,
).map("".join)


def quote_identifier(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def quote_string(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def user_query(names: dict[str, str]) -> tuple[str, dict[str, dict[str, str]]]:
    q = {role: quote_identifier(role + name) for role, name in names.items() if role != "value"}
    value = quote_string(names["value"])
    sql = (
        f"SELECT * FROM {q['tbl']} AS {q['src']} MATCH_AGGREGATE (PARTITION BY {q['key']} ORDER BY {q['time']} "
        f"PATTERN SEQ({q['sym']}, !{quote_string('t' + names['value'])}, {quote_string('u' + names['value'])}+) "
        f"DEFINE {q['sym']} AS {q['src']}.{q['col']} = {value} OR {q['sym']}.{q['col']} LIKE {value} "
        f"TYPE BY {q['col']} "
        f"MEASURES COUNT(*) AS {q['cnt']}, SUM({q['sym']}.{q['num']}) AS {q['sum']} "
        f"WITHIN INTERVAL 5 MINUTES SLIDE INTERVAL 1 MINUTE) AS {q['out']}"
    )
    columns = {"key" + names["key"]: "string", "time" + names["time"]: "timestamp", "col" + names["col"]: "string",
               "num" + names["num"]: "double"}
    return sql, {"tbl" + names["tbl"]: columns}


def shape(tree: exp.Expr) -> list[tuple[str, str | None]]:
    """The tree without the text of identifiers and literals."""
    return [(type(node).__name__, node.arg_key) for node in tree.walk()]


ROLES = ("tbl", "src", "key", "time", "sym", "col", "num", "cnt", "sum", "out", "value")


@settings(max_examples=120, deadline=None)
@given(st.fixed_dictionaries({role: NASTY for role in ROLES}))
def test_user_text_never_changes_the_query_shape(names: dict[str, str]) -> None:
    nasty_sql, nasty_schema = user_query(names)
    benign_sql, benign_schema = user_query({role: "x" for role in ROLES})
    nasty = rewrite(nasty_sql, nasty_schema, engine)
    benign = rewrite(benign_sql, benign_schema, engine)
    assert len(sqlglot.parse(nasty, read="spark")) == 1
    assert shape(parse_spark(nasty)) == shape(parse_spark(benign))
    for statement in split_statements(nasty):  # also as Spark's tokenizer sees it: one statement
        assert statement.text == nasty
