"""MATCH_AGGREGATE WHERE / STRATEGY without Spark: parsing, printing, analysis, errors, SQL shape."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest
import sqlglot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sql_rewrites import rewrite
from sql_rewrites.analysis.analyzer import analyze_sql
from sql_rewrites.errors import PredicateError, SqlParseError, StrategyError
from sql_rewrites.syntax.dialect import SparkSeq, parse_statement
from tests.predicate_cases import COLUMNS, select_sql, sql_expressible
from tests.test_kernel_predicates import ext_plans
from tests.test_sql_generate import NASTY, quote_identifier, quote_string, shape
from udafs.kernels.predicates import compare
from udafs.plan import CmpOp, IteratorPredicate, Plan, Predicate, Strategy, ValueType

CASES = {"pcases": {"g": "int", "ts": "bigint", "mask": "bigint", "i": "bigint", "f": "double", "s": "double"}}
TICKS = {"ticks": {"sym": "string", "ts": "timestamp", "kind": "string", "name": "string", "price": "decimal(10,2)",
                   "qty": "int", "vol": "bigint", "px": "double", "big": "decimal(30,2)", "day": "date"}}


def q(body: str, where: str = "", strategy: str = "", schema: dict | None = None):
    """Analyse ``SEQ(...)`` over ``ticks`` (T-symbols are trades, G a gauge)."""
    used = dict.fromkeys(re.findall(r"[A-Z]", body.removeprefix("SEQ")))
    define = ", ".join(f"{s} AS kind = '{s.lower()}'" for s in used)
    text = (f"SELECT * FROM ticks MATCH_AGGREGATE (PARTITION BY sym ORDER BY ts PATTERN {body} DEFINE {define} "
            + (f"WHERE {where} " if where else "") + (f"STRATEGY {strategy} " if strategy else "")
            + "MEASURES COUNT(*) AS n WITHIN INTERVAL 1 HOUR) AS m")
    [query] = analyze_sql(text, schema or TICKS)
    return query


# --- syntax --------------------------------------------------------------------------

ROUND_TRIP = [
    "WHERE A.price >= G.price + 2 AND C.price < G.price AND A.name = C.name",
    "WHERE B[i].qty >= B[i - 1].qty + 1 STRATEGY SKIP TILL NEXT MATCH",
    "STRATEGY STRICT CONTIGUITY",
    "STRATEGY PARTITION CONTIGUITY",
    "WHERE (A.qty > 3 OR A.qty < -3) AND A.px <> C.px - 0.5",
]


@pytest.mark.parametrize("clauses", ROUND_TRIP)
def test_where_and_strategy_print_back_and_parse_again(clauses: str) -> None:
    text = (f"SELECT * FROM ticks MATCH_AGGREGATE (ORDER BY ts PATTERN SEQ(A, B+, C) DEFINE A AS kind = 'a' "
            f"{clauses} MEASURES COUNT(*) AS n) AS m")
    printed = parse_statement(text).sql(dialect=SparkSeq)
    assert parse_statement(printed).sql(dialect=SparkSeq) == printed
    assert clauses.split()[0] in printed


def test_strategy_words_are_case_insensitive_and_checked() -> None:
    assert q("SEQ(A, B)", strategy="skip till next match").plan.strategy is Strategy.SKIP_TILL_NEXT_MATCH
    with pytest.raises(SqlParseError, match="after STRATEGY") as info:
        q("SEQ(A, B)", strategy="SKIP TILL SOME MATCH")
    assert info.value.line == 1


@pytest.mark.parametrize("strategy", list(Strategy), ids=lambda s: s.name)
def test_each_strategy_is_parsed_from_its_sql_words(strategy: Strategy) -> None:
    """The enum's SQL words are what the parser reads, and they name that strategy."""
    assert q("SEQ(A, B)", strategy=strategy.sql.lower()).plan.strategy is strategy
    assert Strategy.from_sql(f" {strategy.sql.title()} ") is strategy


def test_unknown_strategy_words_list_the_strategies() -> None:
    from udafs.errors import PlanError

    with pytest.raises(PlanError, match="SKIP TILL ANY MATCH, SKIP TILL NEXT MATCH, STRICT CONTIGUITY, "
                                        "PARTITION CONTIGUITY"):
        Strategy.from_sql("skip till some match")


def test_empty_where_is_a_parse_error() -> None:
    with pytest.raises(SqlParseError, match="WHERE"):
        q("SEQ(A, B)", where=" ")


# --- analysis ------------------------------------------------------------------------

def test_seed_002_query_1_plan() -> None:
    query = q("SEQ(A, G, C)", "A.price >= G.price + 2 AND C.price < G.price AND A.name = C.name")
    p = query.plan
    names = [v.name for v in query.value_columns]
    price, rank = names.index("price"), names.index("name\x00rank")
    assert p.predicates == (Predicate(0, price, CmpOp.GE, 1, price, 200), Predicate(2, price, CmpOp.LT, 1, price, 0),
                            Predicate(0, rank, CmpOp.EQ, 2, rank, 0))
    assert p.columns == (ValueType.INT, ValueType.INT)
    ranked = query.value_columns[rank].expression.sql(dialect="spark")
    assert "DENSE_RANK() OVER (PARTITION BY sym ORDER BY name" in ranked and "name IS NULL THEN NULL" in ranked


def test_local_predicates_join_the_define() -> None:
    query = q("SEQ(A, B+)", "A.qty > 3 AND B.vol < B.qty")
    conditions = {s.name: s.condition.sql(dialect="spark") for s in query.symbols}
    assert conditions["A"] == "(kind = 'a') AND (qty > 3)"
    assert conditions["B"] == "(kind = 'b') AND (vol < qty)"
    with pytest.raises(PredicateError, match="Kleene"):  # the cross-event one still names B+
        q("SEQ(A, B+)", "A.qty < B.qty")


def test_iterator_predicates_in_both_orders() -> None:
    a = q("SEQ(A, B+, C)", "B[i].px >= B[i-1].px").plan.iterator_predicates
    b = q("SEQ(A, B+, C)", "B[i-1].px <= B[i].px").plan.iterator_predicates
    c = q("SEQ(A, B+, C)", "B[i - 1].qty + 2 < B[i].qty").plan.iterator_predicates
    assert a == b == (IteratorPredicate(1, 0, CmpOp.GE, 0.0),)
    assert c == (IteratorPredicate(1, 0, CmpOp.GT, 2),)


@pytest.mark.parametrize("where, op, offset", [
    ("A.price < C.price + 0.5", CmpOp.LT, 50),           # DECIMAL(10,2): constant scaled by 100
    ("A.price - 1.25 >= C.price", CmpOp.GE, 125),
    ("A.qty < C.qty + 0.5", CmpOp.LT, 1),                 # integers: x < y + 0.5  <=>  x < y + 1
    ("A.qty <= C.qty + 0.5", CmpOp.LE, 0),
    ("A.qty > C.qty - 0.5", CmpOp.GT, -1),
    ("A.qty >= C.qty + 1.5", CmpOp.GE, 2),
    ("A.px = C.px + 0.25", CmpOp.EQ, 0.25),
    ("A.px + 0.3 = C.px", CmpOp.EQ, 0.0),                 # doubles: the constant stays left (left_offset 0.3)
    ("A.qty = C.vol", CmpOp.EQ, 0),
])
def test_constants_stay_exact(where: str, op: CmpOp, offset: object) -> None:
    [p] = q("SEQ(A, C)", where).plan.predicates
    assert (p.op, p.offset, type(p.offset)) == (op, offset, type(offset))


def test_strategy_in_plan_and_contiguity_rank_in_sql() -> None:
    text = ("SELECT * FROM ticks MATCH_AGGREGATE (PARTITION BY sym ORDER BY ts PATTERN SEQ(A, B) "
            "DEFINE A AS kind = 'a', B AS kind = 'b' STRATEGY {}) AS m")
    strict = rewrite(text.format("STRICT CONTIGUITY"), TICKS, lambda plan: "f")
    partition = rewrite(text.format("PARTITION CONTIGUITY"), TICKS, lambda plan: "f")
    nxt = rewrite(text.format("SKIP TILL NEXT MATCH"), TICKS, lambda plan: "f")
    assert "dense_rank() OVER (ORDER BY `ts` NULLS LAST)" in strict
    assert "dense_rank() OVER (PARTITION BY `sym` ORDER BY `ts` NULLS LAST)" in partition
    assert "dense_rank" not in nxt.lower()
    assert "f(`__sparkseq_ts`, `__sparkseq_mask`, `__sparkseq_seq`)" in strict


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_written_plans_analyse_back_to_the_same_predicates(data: st.DataObject) -> None:
    """Random extended plans (predicates, strategies) written as SQL (varied forms) analyse to equivalent plans."""
    plan = sql_expressible(data.draw(ext_plans(sql=True)))
    seed = data.draw(st.integers(0, 1000))
    [query] = analyze_sql(select_sql(plan, seed), CASES)
    got = query.plan
    names = [v.name for v in query.value_columns]
    assert got.strategy is plan.strategy
    assert got.elements == tuple(dataclasses.replace(e, symbol=got.symbols.index(plan.symbols[e.symbol]))
                                 for e in plan.elements)

    def offsets(owner: Plan, p: Predicate | IteratorPredicate, columns: tuple, swap: bool = False) -> tuple:
        """(left, right) constants: integers as one net constant on the right (the compiler
        moves it there); doubles both, each on its side, as written."""
        lo, ro = (p.offset, p.left_offset) if swap else (p.left_offset, p.offset)
        if compare.is_float(owner, (p.offset, p.left_offset), *columns):
            return float(lo), float(ro)
        return 0, ro - lo

    def norm(owner: Plan, p: Predicate, column_name) -> tuple:
        swap = p.left > p.right
        left, lc, right, rc = p.left, column_name(p.left_column), p.right, column_name(p.right_column)
        if swap:
            left, lc, right, rc = right, rc, left, lc
        constants = offsets(owner, p, (p.left_column, p.right_column), swap)
        return left, lc, p.op.mirrored() if swap else p.op, right, rc, constants

    assert sorted(norm(got, p, lambda c: names[c]) for p in got.predicates) == \
        sorted(norm(plan, p, lambda c: COLUMNS[c]) for p in plan.predicates)
    assert sorted((q.element, names[q.column], q.op, offsets(got, q, (q.column,))) for q in got.iterator_predicates) \
        == sorted((q.element, COLUMNS[q.column], q.op, offsets(plan, q, (q.column,))) for q in plan.iterator_predicates)


# --- errors, each with a position, before anything runs ------------------------------

ERRORS = [
    ("SEQ(T, G, T)", "T.price > G.price", PredicateError, "stands at 2 positions"),
    ("SEQ(A, !B, C)", "A.price < B.price", PredicateError, "negated symbol B"),
    ("SEQ(A, !B, C)", "B.price > 3", PredicateError, "negated symbol B"),
    ("SEQ(A, B+, C)", "A.price < B.price", PredicateError, "Kleene symbol"),
    ("SEQ(A, B, C)", "A.price < B.price + C.price", PredicateError, "comparison of two"),
    ("SEQ(A, B, C)", "A.price < B.price OR A.qty < B.qty", PredicateError, "comparison of two"),
    ("SEQ(A, B)", "A.price * 2 < B.price", PredicateError, "symbol's column plus or minus"),
    ("SEQ(A, B)", "qty > 3", PredicateError, "names no pattern symbol"),
    ("SEQ(A, B)", "A.qty < qty", PredicateError, None),  # bare column read as A's own row: fine (local)
    ("SEQ(A, B)", "A.nope < B.qty", Exception, "unknown column 'nope'"),
    ("SEQ(A, B)", "A.name < B.kind", PredicateError, "non-numeric columns"),
    ("SEQ(A, B)", "A.name = B.name + 1", PredicateError, "constant offset needs numeric"),
    ("SEQ(A, B)", "A.name = B.qty", PredicateError, "cannot be compared exactly"),
    ("SEQ(A, B)", "A.px + 0.1 + 0.2 = B.px", PredicateError, "at most one constant per side with DOUBLE columns"),
    ("SEQ(A, B+)", "B[i].px - 0.1 - 0.2 < B[i-1].px", PredicateError, "at most one constant per side"),
    ("SEQ(A, B)", "A.qty + 1 + 2 = B.qty - 1", PredicateError, None),  # integers: exact, any number of constants
    ("SEQ(A, B)", "A.big < B.big", PredicateError, "inexact DOUBLE"),
    ("SEQ(A, B)", "A.price < B.qty", PredicateError, "different decimal scales"),
    ("SEQ(A, B)", "A.price < B.px", PredicateError, "different decimal scales"),
    ("SEQ(A, B)", "A.price = B.price + 0.001", PredicateError, "can never hold"),
    ("SEQ(A, B+)", "B[i].qty > B[i-2].qty", PredicateError, "only B\\[i\\], B\\[i-1\\] and B\\[1\\]"),
    ("SEQ(A, B+)", "B[i].qty > B[i-1].vol", PredicateError, "one column"),
    ("SEQ(A, B+)", "B[i].qty > A.qty", PredicateError, "compares B\\[i\\] with B\\[i-1\\]"),
    ("SEQ(A, B)", "B[i].qty > B[i-1].qty", PredicateError, "Kleene symbol"),
    ("SEQ(A, B+)", "B[i].qty > 3", PredicateError, "each side must be"),
    ("SEQ(A, B+)", "sum(B[i].qty) > B[i-1].qty", PredicateError, "each side must be"),
]


@pytest.mark.parametrize("pattern, where, error, message", ERRORS)
def test_where_errors(pattern: str, where: str, error: type, message: str | None) -> None:
    if message is None:
        q(pattern, where)
        return
    with pytest.raises(error, match=message) as info:
        q(pattern, where)
    if isinstance(info.value, PredicateError):
        assert info.value.position is not None and info.value.position.line == 1


def test_where_and_strategy_refused_with_cube() -> None:
    text = ("SELECT * FROM ticks MATCH_AGGREGATE (ORDER BY ts PATTERNS (SEQ(A, B), SEQ(A)) "
            "DEFINE A AS kind = 'a', B AS kind = 'b' STRATEGY SKIP TILL NEXT MATCH) AS m")
    with pytest.raises(StrategyError, match="not supported with CUBE or PATTERNS"):
        analyze_sql(text, TICKS)


# --- injection: hostile names and literals in WHERE cannot change the query shape ----

def _hostile(names: dict[str, str]) -> tuple[str, dict]:
    k, t, c, n, s = (quote_identifier(x + names[x]) for x in ("k", "t", "c", "n", "s"))
    value = quote_string(names["v"])
    text = (f"SELECT * FROM tbl MATCH_AGGREGATE (PARTITION BY {k} ORDER BY {t} PATTERN SEQ({s}, G, C) "
            f"DEFINE {s} AS {c} = {value}, G AS {c} <> {value}, C AS {c} LIKE {value} "
            f"WHERE {s}.{n} < G.{n} + 2 AND {s}.{c} = C.{c} AND G.{c} <> {value} "
            f"STRATEGY PARTITION CONTIGUITY) AS m")
    schema = {"tbl": {"k" + names["k"]: "string", "t" + names["t"]: "timestamp", "c" + names["c"]: "string",
                      "n" + names["n"]: "bigint"}}
    return text, schema


@settings(max_examples=60, deadline=None)
@given(st.fixed_dictionaries({role: NASTY for role in ("k", "t", "c", "n", "s", "v")}))
def test_hostile_text_in_where_never_changes_the_query_shape(names: dict[str, str]) -> None:
    nasty = rewrite(*_hostile(names), lambda plan: "f")
    benign = rewrite(*_hostile({r: "x" for r in names}), lambda plan: "f")
    assert len(sqlglot.parse(nasty, read="spark")) == 1
    assert shape(sqlglot.parse_one(nasty, read="spark")) == shape(sqlglot.parse_one(benign, read="spark"))


# --- running aggregates over a Kleene set: MAX / MIN(B[1..i-1]) and first-element forms ---------

RUNNING = {"runs": {"g": "int", "ts": "bigint", "kind": "string", "v": "bigint", "x": "double"}}


def _running(condition: str):
    [query] = analyze_sql(f"SELECT * FROM runs MATCH_AGGREGATE (PARTITION BY g ORDER BY ts PATTERN SEQ(B+) "
                          f"DEFINE B AS kind = 'b' WHERE {condition}) AS m", RUNNING)
    return query


def _literal_count(values: list[int | None], holds) -> int:
    """Sets (in time order) of distinct-time rows whose every later row satisfies ``holds``."""
    import itertools

    count = 0
    for k in range(1, len(values) + 1):
        for rows in itertools.combinations(range(len(values)), k):
            seq = [values[r] for r in rows]
            count += all(holds(seq[j], seq[:j]) for j in range(1, len(seq)))
    return count


def _sql_max(prefix: list) -> int | None:  # SQL MAX / MIN skip NULLs
    vals = [p for p in prefix if p is not None]
    return max(vals) if vals else None


def _sql_min(prefix: list) -> int | None:
    vals = [p for p in prefix if p is not None]
    return min(vals) if vals else None


_OPS = {">=": lambda a, b: a >= b, ">": lambda a, b: a > b, "<=": lambda a, b: a <= b, "<": lambda a, b: a < b,
        "=": lambda a, b: a == b}
REDUCIBLE = [("MAX", op, k) for op in (">=", ">", "=") for k in (0, 1, 3)] + \
            [("MIN", op, k) for op in ("<=", "<", "=") for k in (0, -1, -3)] + \
            [("MIN", op, k) for op in (">=", ">") for k in (0, 2)] + \
            [("MAX", op, k) for op in ("<=", "<") for k in (0, -2)]


@pytest.mark.parametrize("aggregate, op, k", REDUCIBLE)
@settings(max_examples=40, deadline=None)
@given(values=st.lists(st.one_of(st.none(), st.integers(-3, 3)), min_size=1, max_size=7))
def test_running_aggregates_equal_their_literal_meaning(aggregate: str, op: str, k: int, values: list) -> None:
    """B[i].v OP MAX|MIN(B[1..i-1].v) + k, reduced by the compiler (lag 1 or first element),
    counts exactly the sets whose every later row satisfies the literal condition (SQL NULL
    rules: MAX / MIN skip NULLs, a NULL comparison is not TRUE)."""
    from udafs.kernels import evaluate_group

    plan = _running(f"B[i].v {op} {aggregate}(B[1..i-1].v) {'+' if k >= 0 else '-'} {abs(k)}").plan
    extreme = _sql_max if aggregate == "MAX" else _sql_min

    def holds(cur: int | None, prefix: list) -> bool:
        agg = extreme(prefix)
        return cur is not None and agg is not None and _OPS[op](cur, agg + k)

    ts = np.arange(len(values))
    col = (np.array([0 if v is None else v for v in values]), np.array([v is not None for v in values]))
    got = evaluate_group(plan, ts, np.ones(len(values), dtype=np.int64), [col])
    assert int(got.values[0][0]) == _literal_count(values, holds)


def test_running_aggregates_reduce_to_lag_one_or_first_element() -> None:
    first = [_running(c).plan.iterator_predicates[0] for c in (
        "B[i].v >= MIN(B[1..i-1].v)", "B[i].v < MAX(B[1:i-1].v) - 1", "B[i].v > B[1].v + 2", "B[1].v <= B[i].v")]
    assert all(q.first for q in first) and [q.op for q in first] == [CmpOp.GE, CmpOp.LT, CmpOp.GT, CmpOp.GE]
    lag = [_running(c).plan.iterator_predicates[0] for c in ("B[i].v >= MAX(B[1..i-1].v)",
                                                              "MAX(B[1..i-1].v) + 2 < B[i].v")]
    assert [(q.first, q.op, q.offset) for q in lag] == [(False, CmpOp.GE, 0), (False, CmpOp.GT, 2)]


def test_double_constants_on_first_element_and_running_aggregates() -> None:
    """DOUBLE columns keep each side's constant (Spark rounds each side's sum), also against
    B[1] and for MAX / MIN that reduce to a lag-1 or first-element predicate; a running
    aggregate with a constant on both sides is refused (docs/predicates-and-strategies.md
    section 7: the reduction holds for one rounded sum)."""
    its = [q("SEQ(A, B+, C)", w).plan.iterator_predicates[0] for w in (
        "B[i].px + 0.1 >= B[1].px + 0.2", "MIN(B[1..i-1].px) + 0.25 < B[i].px", "B[i].px - 0.5 >= MAX(B[1..i-1].px)")]
    assert its == [IteratorPredicate(1, 0, CmpOp.GE, 0.2, 0.1, first=True),
                   IteratorPredicate(1, 0, CmpOp.GT, 0.25, 0.0, first=True),
                   IteratorPredicate(1, 0, CmpOp.GE, 0.0, -0.5)]
    assert q("SEQ(A, B+, C)", "B[i].qty + 1 > MAX(B[1..i-1].qty) + 3").plan.iterator_predicates == (
        IteratorPredicate(1, 0, CmpOp.GT, 2),)  # integers: one net constant, both sides allowed
    with pytest.raises(PredicateError, match="on one side only") as info:
        q("SEQ(A, B+, C)", "B[i].px + 0.1 >= MAX(B[1..i-1].px) + 0.2")
    assert "at line 1, column" in str(info.value)


@pytest.mark.parametrize("condition, message", [
    ("B[i].v <> MAX(B[1..i-1].v)", "equivalent neither to a comparison with B[i-1] nor with B[1]"),
    ("B[i].v >= MAX(B[1..i-1].v) - 1", "equivalent neither"),
    ("B[B.len].v > 2 * AVG(B[].v)", "compares with AVG over a Kleene set"),
    ("B[i].v > SUM(B[1..i-1].v)", "subset-sum condition"),
    ("B[i].v >= MAX(B.v)", "MAX must range over the rows before the current one"),
    ("B[i - 2].v < B[i].v", "only B[i], B[i-1] and B[1] are supported"),
])
def test_other_set_aggregates_are_refused_with_the_reason(condition: str, message: str) -> None:
    with pytest.raises(PredicateError, match=re.escape(message)) as info:
        _running(condition)
    assert "at line 1, column" in str(info.value)
