"""The row mask as one CASE where the symbols exclude each other, else an OR of one CASE
per symbol (``sql_rewrites.clauses.exclusive_symbols``, ``sql_rewrites.clauses.exclusive_symbols.mask_expression``),
without Spark: which conditions, column types (collations, CHAR, numbers) and sources
prove exclusion, and the mask's shape in the generated SQL."""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from sqlglot import exp

from sql_rewrites import rewrite
from sql_rewrites.analysis.analyzer import analyze_sql
from sql_rewrites.clauses.exclusive_symbols import mask_expression
from sql_rewrites.generation.generate import engine_input
from sql_rewrites.generation.shared import Member, build_group
from sql_rewrites.syntax.dialect import SparkSeq

#: Column types, and whether distinct literals of the kind they compare are unequal under them.
STRING_TYPES = {"string": True, "STRING COLLATE UTF8_BINARY": True, "string collate UTF8_LCASE": False,
                "string collate UNICODE_CI": False, "string collate UTF8_BINARY_RTRIM": False, "char(3)": False,
                "double": False, "decimal(10,0)": False}
INT_TYPES = {"int": True, "bigint": True, "tinyint": True, "string": False, "double": False, "decimal(10,0)": False}
#: Spellings of literals, and the value they compare as (None: not proven distinct from others).
STRINGS = {"'a'": "a", "'A'": "A", "'a '": "a ", "'b'": "b", r"'\u0062'": "b", "'it''s'": "it's", "r'c'": "c"}
NUMBERS = {"1": 1, "01": 1, "2": 2, "-1": -1, "-(2)": -2, "1.0": None, "1e0": None, "1L": None, "'1'": None}


def mask_of(sql: str, schema: dict) -> exp.Expr:
    [query] = analyze_sql(sql, schema)
    return engine_input(query).mask


def is_single_case(mask: exp.Expr) -> bool:
    """``CAST(CASE WHEN ... END AS BIGINT)``: one CASE with a branch per symbol."""
    assert isinstance(mask, exp.Cast)
    return isinstance(mask.this, exp.Case)


def branches(mask: exp.Expr) -> list[tuple[str, int]]:
    """(condition, bit value) of every WHEN of the mask, in order, either form."""
    return [(w.this.sql(dialect=SparkSeq), int(w.args["true"].name)) for case in mask.find_all(exp.Case, bfs=False)
            for w in case.args["ifs"]]


def operator(define: str, source: str = "t") -> str:
    symbols = ", ".join(f"S{i}" for i in range(define.count(" AS ")))
    return (f"SELECT * FROM {source} MATCH_AGGREGATE (PARTITION BY k ORDER BY ts PATTERN SEQ({symbols}) "
            f"DEFINE {define} MEASURES COUNT(*) AS n) AS m")


@st.composite
def memberships(draw: st.DrawFn, literals: dict) -> tuple[str, frozenset | None, bool]:
    """A condition on column ``c``, the set of values it requires ``c`` to be in (None:
    a form that proves nothing), and whether it is that membership and nothing else."""
    chosen = draw(st.lists(st.sampled_from(sorted(literals)), min_size=1, max_size=3))
    values = [literals[spelled] for spelled in chosen]
    known = None if None in values else frozenset(values)
    form = draw(st.sampled_from(["eq", "eq reversed", "in", "and", "parenthesised", "greater", "or"]))
    if form == "eq":
        return f"c = {chosen[0]}", None if literals[chosen[0]] is None else frozenset(values[:1]), True
    if form == "eq reversed":
        return f"{chosen[0]} = c", None if literals[chosen[0]] is None else frozenset(values[:1]), True
    if form == "in":
        return f"c IN ({', '.join(chosen)})", known, True
    if form == "and":
        return f"x > 0 AND c IN ({', '.join(chosen)})", known, False
    if form == "parenthesised":
        return f"(c = {chosen[0]})", None if literals[chosen[0]] is None else frozenset(values[:1]), True
    if form == "greater":
        return f"c > {chosen[0]}", None, False
    return f"c = {chosen[0]} OR x > 0", None, False


def disjoint(sets: list[frozenset | None]) -> bool:
    seen: set = set()
    for values in sets:
        if values is None or seen & values:
            return False
        seen |= values
    return True


@settings(max_examples=150, deadline=None)
@given(data=st.data(), strings=st.booleans())
def test_one_case_exactly_when_the_conditions_exclude_each_other(data: st.DataObject, strings: bool) -> None:
    types, literals = (STRING_TYPES, STRINGS) if strings else (INT_TYPES, NUMBERS)
    column_type = data.draw(st.sampled_from(sorted(types)))
    conditions = data.draw(st.lists(memberships(literals), min_size=1, max_size=5))
    assume(len({text for text, _, _ in conditions}) == len(conditions))  # the same text twice shares one branch
    define = ", ".join(f"S{i} AS {text}" for i, (text, _, _) in enumerate(conditions))
    schema = {"t": {"k": "int", "ts": "timestamp", "c": column_type, "x": "int"}}
    mask = mask_of(operator(define), schema)
    sets = [values for _, values, _ in conditions]
    exclusive = len(conditions) == 1 or (types[column_type] and disjoint(sets))
    by_values = not exclusive and types[column_type] and all(
        values is not None and pure for _, values, pure in conditions)
    assert is_single_case(mask) == (exclusive or by_values), (column_type, define, mask.sql(dialect=SparkSeq))
    if by_values:  # a branch per set of bits: each value lands in the one branch of the sets holding it
        landed = [(value, bits) for condition, bits in _value_branches(mask) for value in condition]
        assert sorted(value for value, _ in landed) == sorted(set().union(*sets))
        for value, bits in landed:
            assert bits == sum(1 << i for i, values in enumerate(sets) if value in values), (define, value)
        return
    # the same conditions, the same bits, in symbol order: only the combination differs
    alternative = mask_expression([(i, w) for i, w in enumerate(w.this for w in _whens(mask))],
                                  exclusive=not exclusive)
    assert branches(mask) == branches(alternative) == [(b, 1 << i) for i, (b, _) in enumerate(branches(mask))]


def _value_branches(mask: exp.Expr) -> list[tuple[list[str | int], int]]:
    """Each WHEN of a branch-per-bits mask as (the values its ``c = v`` / ``c IN (...)`` holds, bits)."""
    def value(literal: exp.Expr) -> str | int:
        if isinstance(literal, exp.Neg):
            return -int(literal.this.unnest().this)
        return literal.this if literal.is_string else int(literal.this)

    out = []
    for w in _whens(mask):
        condition = w.this
        literals = [condition.expression] if isinstance(condition, exp.EQ) else condition.expressions
        out.append(([value(literal.unnest()) for literal in literals], int(w.args["true"].name)))
    return out


def _whens(mask: exp.Expr) -> list[exp.Expr]:
    return [w for case in mask.find_all(exp.Case, bfs=False) for w in case.args["ifs"]]


SCHEMA = {"t": {"k": "int", "ts": "timestamp", "type": "string", "x": "int", "s": "struct<type: string>"},
          "lcase": {"k": "int", "ts": "timestamp", "type": "string collate UTF8_LCASE"}}
TYPED = ("SELECT * FROM {} MATCH_AGGREGATE (PARTITION BY k ORDER BY ts PATTERN SEQ({}) TYPE BY type {} "
         "MEASURES COUNT(*) AS n) AS m")


def test_type_by_symbols_of_a_binary_string_are_one_case() -> None:
    mask = mask_of(TYPED.format("t", "A, B, C", ""), SCHEMA)
    assert mask.sql(dialect=SparkSeq) == (
        "CAST(CASE WHEN type = 'A' THEN 1 WHEN type = 'B' THEN 2 WHEN type = 'C' THEN 4 ELSE 0 END AS BIGINT)")


def test_a_collated_column_keeps_the_or() -> None:
    mask = mask_of(TYPED.format("lcase", "A, B", ""), SCHEMA)
    assert mask.sql(dialect=SparkSeq) == (
        "CAST((CASE WHEN type = 'A' THEN 1 ELSE 0 END) | (CASE WHEN type = 'B' THEN 2 ELSE 0 END) AS BIGINT)")


@pytest.mark.parametrize("source", [
    "(SELECT k, ts, type FROM t) AS d",  # a subquery: its types are derived by sqlglot, blind to collations
    "(SELECT k, ts, type FROM lcase) AS d",
    "d",  # a CTE
])
def test_derived_sources_keep_the_or(source: str) -> None:
    sql = TYPED.format(source, "A, B", "")
    if source == "d":
        sql = "WITH d AS (SELECT k, ts, type COLLATE UTF8_LCASE AS type FROM t) " + sql
    assert not is_single_case(mask_of(sql, SCHEMA))


@pytest.mark.parametrize(("define", "single"), [
    ("S0 AS type = 'a', S1 AS type = 'b'", True),
    ("S0 AS m.type = 'a', S1 AS S1.type = 'b'", True),  # qualified by the source's alias or the symbol
    ("S0 AS s.type = 'a', S1 AS s.type = 'b'", False),  # a struct's field, not the column
    ("S0 AS type = 'a', S1 AS type = 'a' AND x > 1", False),  # the same literal
    ("S0 AS type = 'a' AND x > 1, S1 AS x > 2 AND type IN ('b', 'c')", True),
    ("S0 AS type = 'a', S1 AS x = 1", False),  # different columns
    ("S0 AS type = 'a' AND x = 1, S1 AS type = 'b' AND x = 1", True),  # one column proves it
    ("S0 AS x = 1 AND type = 'a', S1 AS x = 2 AND type = 'a'", True),  # the other column proves it
    ("S0 AS type = 'a', S1 AS type = 'A' COLLATE UTF8_LCASE", False),  # a collated literal
    ("S0 AS type = 'a', S1 AS type <=> 'b'", False),
    ("S0 AS type = 'a', S1 AS NOT type = 'a'", False),
    ("S0 AS type IN ('a', 'b'), S1 AS type IN ('c')", True),
    ("S0 AS type IN ('a', 'b'), S1 AS type IN ('c', 'b')", True),  # plain memberships: a branch per set of bits
    ("S0 AS type IN ('a', 'b'), S1 AS type IN ('c', 'b') AND x > 1", False),
])
def test_which_conditions_prove_exclusion(define: str, single: bool) -> None:
    assert is_single_case(mask_of(operator(define, "t AS m"), SCHEMA)) is single


def test_hierarchy_concepts_are_one_case_per_symbol_when_disjoint_else_per_set_of_bits() -> None:
    lookup = {"places": [("Oak", "North"), ("Elm", "North"), ("Main", "South"), ("North", "City"),
                         ("South", "City")]}

    def mask(symbols: str) -> str:
        [query] = analyze_sql(TYPED.format("t", symbols, "HIERARCHY places"), SCHEMA, hierarchies=lookup)
        return engine_input(query).mask.sql(dialect=SparkSeq)

    assert mask("North, Main") == (  # Oak, Elm | Main
        "CAST(CASE WHEN type IN ('North', 'Elm', 'Oak') THEN 1 WHEN type IN ('Main') THEN 2 ELSE 0 END AS BIGINT)")
    assert mask("North, Oak") == (  # Oak is in North: its rows are both symbols
        "CAST(CASE WHEN type IN ('North', 'Elm') THEN 1 WHEN type = 'Oak' THEN 3 ELSE 0 END AS BIGINT)")
    assert mask("City, North, Oak") == ("CAST(CASE WHEN type IN ('City', 'Main', 'South') THEN 1 WHEN type IN "
                                        "('Elm', 'North') THEN 3 WHEN type = 'Oak' THEN 7 ELSE 0 END AS BIGINT)")
    lcase = {"places": lookup["places"]}
    [query] = analyze_sql(TYPED.format("lcase", "North, Oak", "HIERARCHY places"), SCHEMA, hierarchies=lcase)
    assert not is_single_case(engine_input(query).mask)  # a collated column keeps the OR


def test_a_shared_group_decides_over_the_union_of_its_symbols() -> None:
    def group(schema_type: str, patterns: list[str]) -> exp.Expr:
        schema = {"t": {"k": "int", "ts": "timestamp", "type": schema_type}}
        members = [Member(i, 0, analyze_sql(TYPED.format("t", p, ""), schema)[0]) for i, p in enumerate(patterns)]
        events, (_, mask, *_) = build_group(members).events()
        return next(s for s in events.find_all(exp.Alias) if s.alias == mask).this

    assert is_single_case(group("string", ["A, B", "B, C", "`a`, D"]))
    assert not is_single_case(group("string collate UTF8_LCASE", ["A, B", "B, C"]))
    # 'a' and 'A' are distinct TYPE BY values: under a binary string they exclude each other
    sql = rewrite(TYPED.format("t", "A, B", ""), {"t": {"k": "int", "ts": "timestamp", "type": "string"}},
                  lambda plan: "f")
    assert "CASE WHEN `type` = 'A' THEN 1 WHEN `type` = 'B' THEN 2 ELSE 0 END" in sql
