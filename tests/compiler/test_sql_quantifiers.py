"""Quantified and optional pattern elements in the compiler (SEMANTICS section 10):
``X{n}``, ``X{n,}``, ``X{n,m}``, ``X?``, ``X*`` — grammar and round trip, the plan's
elements, every error with its position, and each surface that compiles a pattern."""

from __future__ import annotations

import pytest

from sql_rewrites import errors as E
from sql_rewrites.analysis.analyzer import analyze_sql
from sql_rewrites.analysis.arguments import operator_statement
from sql_rewrites.analysis.seq_functions import check_statement_calls
from sql_rewrites.clauses.pattern import compile_type_pattern, parse_pattern
from sql_rewrites.clauses.symbols import MAX_QUANTIFIER_ROWS, written_element
from sql_rewrites.generation.cube_navigation import single_pattern_statement
from sql_rewrites.generation.jvm_path import jvm_shape
from sql_rewrites.generation.live import check_live
from sql_rewrites.generation.shared import Member, build_group
from sql_rewrites.logical.cube import CubeElement
from sql_rewrites.syntax.dialect import SparkSeq, parse_statement
from udafs.plan import Element, Plan

SCHEMA = {"clicks": {"k": "bigint", "ts": "timestamp", "lo": "timestamp", "hi": "timestamp", "ty": "string",
                     "x": "double", "n": "bigint"}}


def one(body: str, **kwargs: object):  # noqa: ANN201 - the analysed query
    [query] = analyze_sql(f"SELECT * FROM clicks MATCH_AGGREGATE ({body}) AS m", SCHEMA, **kwargs)  # type: ignore[arg-type]
    return query


def placed(error: E.SqlRewriteError, text: str, line: int, underlined: str) -> None:
    """``error`` points at ``underlined`` on ``line`` of ``text``, the excerpt underlining exactly it."""
    position = error.position
    assert position is not None and position.line == line, str(error)
    assert text.splitlines()[line - 1][position.column - 1:].startswith(underlined), str(error)
    source, carets = position.excerpt.splitlines()
    start = carets.index("^")
    assert source[start:start + len(underlined)] == underlined and carets.count("^") == len(underlined), str(error)


# --- grammar ------------------------------------------------------------------------------

@pytest.mark.parametrize(("written", "bounds"), [
    ("X", (1, 1)), ("X+", (1, None)), ("X?", (0, 1)), ("X*", (0, None)), ("X{3}", (3, 3)),
    ("X{2,}", (2, None)), ("X{2,4}", (2, 4)), ("'a b'{1,1}", (1, 1)), ("X{007,10}", (7, 10)),
])
def test_each_quantifier_parses_to_its_bounds_and_prints_back_exactly(written: str, bounds: tuple) -> None:
    pattern = parse_pattern(f"SEQ(A, {written}, !N, B)")
    assert pattern.expressions[1].row_bounds == bounds
    assert pattern.sql() == f"SEQ(A, {written}, !N, B)"
    assert parse_pattern(pattern.sql()) == pattern


def test_quantifiers_round_trip_in_the_operator_and_in_patterns_lists() -> None:
    sql = ("SELECT * FROM t MATCH_AGGREGATE (PARTITION BY k ORDER BY ts PATTERNS (SEQ(A, B{2,4}, C?), "
           "SEQ(A, B*, C{3}, D{2,})) TYPE BY ty MEASURES COUNT(*) AS n) AS m")
    tree = parse_statement(sql)
    assert tree.sql(dialect=SparkSeq) == sql and parse_statement(tree.sql(dialect=SparkSeq, pretty=True)) == tree


def test_spaces_inside_braces_print_canonically() -> None:
    assert parse_pattern("SEQ(A, B{ 2 ,\n 4 }, C{ 3 , })").sql() == "SEQ(A, B{2,4}, C{3,})"


@pytest.mark.parametrize(("text", "phrase", "underlined"), [
    ("SEQ(A, X{})", "Expecting the least number of rows", "}"),
    ("SEQ(A, X{,3})", "written X? or X*", ","),
    ("SEQ(A, X{2.5})", "Expecting the least number of rows", "2.5"),
    ("SEQ(A, X{-1})", "Expecting the least number of rows", "-"),
    ("SEQ(A, X{2,b})", "Expecting the most number of rows", "b"),
    ("SEQ(A, X{2,4)", "Expecting } to close the quantifier", ")"),
    ("SEQ(A, X+?)", "reluctant quantifier", "?"),
    ("SEQ(A, X??)", "reluctant quantifier", "?"),
    ("SEQ(A, X{2,3}?)", "means the same as its greedy form", "?"),
])
def test_malformed_quantifiers_are_parse_errors_in_place(text: str, phrase: str, underlined: str) -> None:
    with pytest.raises(E.SqlParseError) as info:
        parse_pattern(text)
    assert phrase in info.value.description
    source, carets = info.value.excerpt.splitlines()
    start = carets.index("^")
    assert source[start:start + len(underlined)] == underlined


# --- the plan's elements ------------------------------------------------------------------

def test_plan_elements_follow_the_contract_and_normalise_one_row_forms() -> None:
    plan = compile_type_pattern("SEQ(a, b?, c*, d{3}, e{2,}, f{2,5}, g{1}, h{1,1}, i{1,}, j+)").plan
    assert plan.elements == (
        Element(0), Element(1, False, 0), Element(2, True, 0), Element(3, True, 3, 3), Element(4, True, 2),
        Element(5, True, 2, 5), Element(6), Element(7), Element(8, True), Element(9, True))
    assert Plan.from_json(plan.to_json()) == plan
    assert plan.describe() == "SEQ(a, b?, c*, d{3}, e{2,}, f{2,5}, g, h, i+, j+)"


def test_plans_without_quantifiers_are_written_as_before() -> None:
    assert compile_type_pattern("SEQ(a, b{1}, c{1,}, !d, e)", within=5).plan == \
        compile_type_pattern("SEQ(a, b, c+, !d, e)", within=5).plan


@pytest.mark.parametrize("written", ["X", "X+", "X?", "X*", "X{3}", "X{2,}", "X{2,4}"])
def test_written_element_is_the_inverse_of_the_plan_element(written: str) -> None:
    element = parse_pattern(f"SEQ(A, {written})").expressions[1]
    plan_element = compile_type_pattern(f"SEQ(A, {written})").plan.elements[1]
    assert written_element(element.this.copy(), plan_element).sql() == written


def test_measures_over_optional_and_quantified_elements_are_allowed() -> None:
    q = one("PARTITION BY k ORDER BY ts PATTERN SEQ(A, B?, C{2,3}) TYPE BY ty "
            "MEASURES COUNT(*) AS n, COUNT(B) AS nb, SUM(B.x) AS sb, AVG(C.x) AS ac, MIN(B.n) AS lo, MAX(C.n) AS hi "
            "WITHIN INTERVAL 1 HOUR SLIDE INTERVAL 30 MINUTES")
    assert q.plan.elements == (Element(0), Element(1, False, 0), Element(2, True, 2, 3))
    assert [m.name for m in q.measures] == ["n", "nb", "sb", "ac", "lo", "hi"]


def test_negation_beside_an_optional_element_keeps_its_gap() -> None:
    plan = one("ORDER BY ts PATTERN SEQ(A, !N, B?, C) TYPE BY ty").plan
    assert plan.negations == (0, 0b10, 0, 0) and plan.elements[1] == Element(2, False, 0)


# --- errors, at the user's line and column ------------------------------------------------

STATEMENT = """SELECT * FROM clicks MATCH_AGGREGATE (
  PARTITION BY k ORDER BY ts
  PATTERN SEQ(A, {element}, C)
  TYPE BY ty
) AS m"""


@pytest.mark.parametrize(("element", "phrase"), [
    ("B{0}", "B{0} binds no row: remove it from the pattern (B? binds zero or one row)"),
    ("B{0,1}", "the least number of rows must be at least 1; a symbol that may bind no row is written B? (zero"),
    ("B{0,3}", "written B? (zero or one row) or B* (zero or more rows)"),
    ("B{0,}", "written B* (zero or more rows)"),
    ("B{3,2}", "the most number of rows (2) is less than the least (3); write B{2,3}"),
    (f"B{{2,{MAX_QUANTIFIER_ROWS + 1}}}", f"a quantifier's bounds may be at most {MAX_QUANTIFIER_ROWS}"),
    ("B{99999999999999999999999}", f"at most {MAX_QUANTIFIER_ROWS}"),
    ("!B{2}", "!B{2}: a negated symbol takes no quantifier; a negation forbids every instance of the symbol in "
              "its gap, so write !B"),
    ("!B?", "a negated symbol takes no quantifier"),
    ("!'b c'*", "so write !'b c'"),
])
def test_bad_quantifiers_are_placed_on_the_element(element: str, phrase: str) -> None:
    sql = STATEMENT.format(element=element)
    with pytest.raises(E.QuantifierError) as info:
        analyze_sql(sql, SCHEMA)
    assert phrase in str(info.value)
    placed(info.value, sql, 3, element)


@pytest.mark.parametrize("pattern", ["SEQ(A?, B*)", "SEQ(A?)", "SEQ(!N, A*, !M, B?)"])
def test_an_all_optional_pattern_is_refused(pattern: str) -> None:
    sql = STATEMENT.replace("SEQ(A, {element}, C)", pattern) + ""
    with pytest.raises(E.AllOptionalPatternError) as info:
        analyze_sql(sql.replace("ORDER BY ts", "ORDER BY ts WITHIN INTERVAL 1 HOUR"), SCHEMA)
    assert "has only optional elements (X?, X*), so a match could bind no row at all" in str(info.value)
    placed(info.value, sql, 3, pattern)


def test_only_negations_is_still_its_own_error() -> None:
    with pytest.raises(E.OnlyNegationError):
        parse_and_compile("SEQ(!A, !B)")


def parse_and_compile(text: str) -> Plan:
    return compile_type_pattern(text, within=10).plan


# --- combinations the engine does not count -----------------------------------------------

def expect_combination(body: str, underlined: str, *phrases: str) -> None:
    sql = f"SELECT * FROM clicks MATCH_AGGREGATE ({body}) AS m"
    with pytest.raises(E.QuantifierCombinationError) as info:
        analyze_sql(sql, SCHEMA)
    for phrase in phrases:
        assert phrase in str(info.value)
    placed(info.value, sql, 1, underlined)


def test_a_strategy_other_than_skip_till_any_match_is_refused() -> None:
    expect_combination("ORDER BY ts PATTERN SEQ(A, B{2,4}) TYPE BY ty STRATEGY SKIP TILL NEXT MATCH", "SKIP",
                       "STRATEGY SKIP TILL NEXT MATCH with B{2,4}", "counted under SKIP TILL ANY MATCH only")
    expect_combination("ORDER BY ts PATTERN SEQ(A, B?) TYPE BY ty STRATEGY PARTITION CONTIGUITY", "PARTITION",
                       "with B?")
    assert one("ORDER BY ts PATTERN SEQ(A, B*) TYPE BY ty STRATEGY SKIP TILL ANY MATCH").plan.elements[1] == \
        Element(1, True, 0)


def test_a_cross_event_comparison_with_an_optional_element_is_refused() -> None:
    expect_combination("ORDER BY ts PATTERN SEQ(A, B?) TYPE BY ty WHERE A.x < B.x", "B.x",
                       "WHERE condition A.x < B.x: B? is optional and may bind no row")


def test_a_cross_event_comparison_with_a_quantified_element_names_it() -> None:
    sql = "SELECT * FROM clicks MATCH_AGGREGATE (ORDER BY ts PATTERN SEQ(A, B{2,}) TYPE BY ty WHERE A.x < B.x) AS m"
    with pytest.raises(E.PredicateError, match=r"B\{2,\} is a Kleene symbol; it takes part only in iterator"):
        analyze_sql(sql, SCHEMA)


def test_an_iterator_predicate_on_a_quantified_element_is_refused() -> None:
    expect_combination("ORDER BY ts PATTERN SEQ(A, B{2,3}) TYPE BY ty WHERE B[i].x > B[i-1].x", "B[i].x > B[i-1].x",
                       "iterator predicates are counted for B+ only, not for B{2,3}")


@pytest.mark.parametrize(("where", "what"), [("A.x < B.x", "cross-event comparisons"),
                                             ("D[i].x > D[i-1].x", "iterator predicates")])
def test_predicates_between_plain_elements_of_a_quantified_pattern_are_refused(where: str, what: str) -> None:
    expect_combination(f"ORDER BY ts PATTERN SEQ(A, B, C?, D+) TYPE BY ty WHERE {where}", where,
                       f"WHERE with {what} in a pattern with C?", "union of plain patterns")


def test_a_pattern_standing_for_too_many_plain_patterns_is_refused() -> None:
    from udafs.kernels.counting.quantifiers import MAX_CLASSES

    text = "SEQ(a{1,64}, b{1,64}, c?)"
    assert 64 * 64 * 2 > MAX_CLASSES >= 64 * 64
    compile_type_pattern("SEQ(a{1,64}, b{1,64})")
    with pytest.raises(E.QuantifierError, match=f"stands for 8192 plain patterns .* at most {MAX_CLASSES}") as info:
        compile_type_pattern(text)
    placed(info.value, text, 1, text)


def test_local_conditions_on_an_optional_symbol_are_row_conditions() -> None:
    q = one("ORDER BY ts PATTERN SEQ(A, B?) TYPE BY ty WHERE B.x > 1")
    assert q.plan.elements[1] == Element(1, False, 0) and not q.plan.predicates


def test_imprecise_timestamps_are_refused() -> None:
    expect_combination("ORDER BY ts UNCERTAIN BETWEEN lo AND hi PATTERN SEQ(A, B*) TYPE BY ty COUNT TYPE DOUBLE",
                       "BETWEEN lo AND hi", "UNCERTAIN with B*")


def test_a_stream_takes_quantified_elements() -> None:
    sql = ("SELECT * FROM clicks MATCH_AGGREGATE (PARTITION BY k ORDER BY ts PATTERN SEQ(A, B?, C{2,3}) TYPE BY ty "
           "WITHIN INTERVAL 1 HOUR SLIDE INTERVAL 1 HOUR) AS m")
    [query] = analyze_sql(sql, SCHEMA)
    check_live(query, sql)


def test_the_jvm_path_leaves_quantified_plans_to_the_python_engine() -> None:
    assert jvm_shape(one("ORDER BY ts PATTERN SEQ(A, B?) TYPE BY ty").plan) is not None
    assert jvm_shape(one("ORDER BY ts PATTERN SEQ(A, B{1}) TYPE BY ty").plan) is None


# --- E-Cube ---------------------------------------------------------------------------------

def test_patterns_carry_their_quantifiers_into_each_cuboid() -> None:
    q = one("PARTITION BY k ORDER BY ts PATTERNS (SEQ(A, B{2,4}), SEQ(A, B?, C*), SEQ(A, B)) TYPE BY ty "
            "MEASURES COUNT(*) AS n, SUM(B.x) AS s")
    assert q.cube.texts == ("SEQ(A, B{2,4})", "SEQ(A, B?, C*)", "SEQ(A, B)")
    assert [p.elements for p in q.plan.plans] == [
        (Element(0), Element(1, True, 2, 4)), (Element(0), Element(1, False, 0), Element(2, True, 0)),
        (Element(0), Element(1))]


def test_a_listed_all_optional_cuboid_is_refused_in_place() -> None:
    sql = ("SELECT * FROM clicks MATCH_AGGREGATE (ORDER BY ts PATTERNS (SEQ(A, B{2}), SEQ(A?, B*)) "
           "TYPE BY ty) AS m")
    with pytest.raises(E.AllOptionalPatternError) as info:
        analyze_sql(sql, SCHEMA)
    placed(info.value, sql, 1, "SEQ(A?, B*)")


def test_pattern_rollup_drops_cuboids_left_with_optional_elements_only() -> None:
    q = one("ORDER BY ts PATTERN SEQ(A?, B{2,}, C) CUBE (PATTERN ROLLUP 2, PATTERN ROLLUP 3) TYPE BY ty")
    assert q.cube.texts == ("SEQ(A?, B{2,}, C)", "SEQ(A?, B{2,})", "SEQ(A?, C)")


@pytest.mark.parametrize(("mark", "derived"), [("", True), ("?", False), ("{2}", False)])
def test_only_a_plain_concept_position_is_derived_from_its_children(mark: str, derived: bool) -> None:
    hierarchies = {"h": [("dell", "computer"), ("hp", "computer"), ("b", "other")]}
    q = one(f"ORDER BY ts PATTERNS (SEQ(computer{mark}, b), SEQ(dell{mark}, b), SEQ(hp{mark}, b)) "
            "TYPE BY ty HIERARCHY h", hierarchies=hierarchies)
    assert (q.cube.cuboids[0].derived_from is not None) is derived


def test_a_pattern_outside_the_cube_keeps_its_quantifiers() -> None:
    base = "SELECT * FROM clicks MATCH_AGGREGATE (ORDER BY ts PATTERNS (SEQ(A, B)) TYPE BY ty) AS m"
    elements = (CubeElement("A", (False, "a")), CubeElement("B", (False, "b"), kleene=True, min_rows=2, max_rows=4),
                CubeElement("C", (False, "c"), min_rows=0))
    text = single_pattern_statement(base, elements)
    assert "PATTERNS (SEQ(A, B{2,4}, C?))" in text
    [q] = analyze_sql(text, SCHEMA)
    assert q.cube is not None and q.cube.texts == ("SEQ(A, B{2,4}, C?)",)


# --- the other surfaces ---------------------------------------------------------------------

def test_seq_functions_take_quantified_patterns_and_place_their_errors() -> None:
    check_statement_calls("SELECT seq_count(ts, ty, 'SEQ(a, b{2,3}, c?, d*)') FROM t", written=True)
    sql = "SELECT seq_count(ts, ty, 'SEQ(a, b{3,2})') FROM t"
    with pytest.raises(E.QuantifierError, match=r"write b\{2,3\}") as info:
        check_statement_calls(sql, written=True)
    placed(info.value, sql, 1, "b{3,2}")
    sql = "SELECT seq_count(ts, ty, 'SEQ(a, b?) STRATEGY SKIP TILL NEXT MATCH') FROM t"
    with pytest.raises(E.QuantifierCombinationError, match=r"with b\?"):
        check_statement_calls(sql, written=True)


DATAFRAME_CLAUSES = ("partition_by", "order_by", "pattern", "cube", "patterns", "define", "type_by", "hierarchy",
                     "measures", "within", "slide", "count_type", "where", "strategy")


def test_the_dataframe_api_builds_the_same_tree_and_places_errors_in_the_pattern_argument() -> None:
    given = dict.fromkeys(DATAFRAME_CLAUSES) | {"order_by": "ts", "pattern": "SEQ(A, B{2,4}, C?, D*)", "type_by": "ty"}
    built = operator_statement("v", given)
    assert built.tree.sql(dialect=SparkSeq) == \
        "SELECT * FROM `v` MATCH_AGGREGATE (ORDER BY ts PATTERN SEQ(A, B{2,4}, C?, D*) TYPE BY ty)"
    with pytest.raises(E.SqlParseError) as info:
        operator_statement("v", given | {"pattern": "SEQ(A, B{2,4)"})
    assert info.value.position is not None and info.value.position.origin == "pattern"


def test_a_workload_group_keeps_each_members_quantifiers() -> None:
    first = one("PARTITION BY k ORDER BY ts PATTERN SEQ(A, B{2,4}) TYPE BY ty WITHIN INTERVAL 1 HOUR")
    second = one("PARTITION BY k ORDER BY ts PATTERN SEQ(C?, B*, A) TYPE BY ty WITHIN INTERVAL 1 HOUR")
    group = build_group([Member(0, 0, first), Member(1, 0, second)])
    [one_plan, other] = group.plan.plans
    assert one_plan.describe() == "SEQ(A, B{2,4})" and other.describe() == "SEQ(C?, B*, A)"


def test_a_quantified_member_of_a_workload_group_never_shares_a_timeline() -> None:
    from sql_rewrites.planning.timeline_plan import plan_timelines
    from tests.compiler.test_sql_timeline_plan import group, statistics

    plain = group("SEQ(a, b, c)", "SEQ(d, e, f)", "SEQ(a, b, d)")
    few = dict.fromkeys("abcdef", 1_000)
    assert [t.members for t in plan_timelines(plain, statistics(plain, few)).plan.timelines or ()] == [(0, 1, 2)]
    quantified = group("SEQ(a, b, c)", "SEQ(d, e?, f)", "SEQ(a, b, d)")
    assert [t.members for t in plan_timelines(quantified, statistics(quantified, few)).plan.timelines or ()] == [(0, 2)]
