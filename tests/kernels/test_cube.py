"""E-Cube: the compiler's cuboids and the engine's numbers, every cuboid against the oracle.

Hypothesis draws a concept hierarchy, typed events (some typed by an inner node
itself), and an E-Cube statement (roll-up form with concept and pattern roll-ups, or
the list form built so that coarse cuboids are derived from their children). The
compiler's cuboids must be exactly the independently enumerated ones; each reported
cuboid's plan must print as its pattern; and ``evaluate_many`` (one sort, derived
cuboids summed from parts) must equal the brute-force oracle on each cuboid's plan.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st

from sql_rewrites.analysis.analyzer import analyze_sql
from sql_rewrites.errors import CubeError, EdgeNegationWithoutWindowError
from tests.kernels.test_kernel_oracle import assert_same
from tests.support import oracle
from tests.support.cube_cases import CubeCase, cube_cases, expected_cuboids, masks
from udafs.kernels import evaluate_group
from udafs.kernels.multiplan.many import evaluate_many
from udafs.multiplan import MultiPlan

SCHEMA = {"ev": {"k": "int", "ts": "bigint", "tp": "string", "v": "bigint"}}


def analysed(case: CubeCase):
    try:
        [q] = analyze_sql(case.sql(), SCHEMA, hierarchies={"h": case.pairs})
    except EdgeNegationWithoutWindowError:
        reject()  # a cuboid with an edge negation and no WITHIN: a documented error
    return q


def shape(plan) -> tuple:
    """Positive elements and the set of negated names per gap, by name."""
    names = plan.symbols
    gaps = [frozenset(names[k] for k in range(len(names)) if g >> k & 1) for g in plan.negations]
    return tuple((names[e.symbol], e.kleene) for e in plan.elements), tuple(gaps)


def text_shape(text: str) -> tuple:
    """The same from a cuboid's pattern text (``SEQ(a, !X, b+)``)."""
    elements, gaps = [], [set()]
    for item in text[4:-1].split(", "):
        if item.startswith("!"):
            gaps[-1].add(item[1:])
        else:
            elements.append((item.rstrip("+"), item.endswith("+")))
            gaps.append(set())
    return tuple(elements), tuple(frozenset(g) for g in gaps)


def check_against_oracle(case: CubeCase) -> int:
    q = analysed(case)
    mp = q.plan
    assert isinstance(mp, MultiPlan)
    reported = [q.cube.texts[i] for i in q.cube.reported]
    assert len(reported) == len(set(reported))
    assert set(reported) == expected_cuboids(case)
    m = masks(q.symbols, case.types)
    ev = oracle.Events(case.ts, m, [case.values])
    if not all(oracle.cheap(mp.plans[i], ev) for i in q.cube.reported):
        reject()
    cols = [(np.array([0 if v is None else v for v in case.values], dtype=np.int64),
             np.array([v is not None for v in case.values], dtype=bool))] if mp.columns else []
    results = evaluate_many(mp, np.array(case.ts, dtype=np.int64), np.array(m, dtype=np.int64), cols)
    derived = 0
    for i in q.cube.reported:
        plan = mp.plans[i]
        assert shape(plan) == text_shape(q.cube.texts[i])
        derived += mp.derived[i] is not None
        want = oracle.evaluate(ev, plan)
        if not any(x & plan.pattern_symbols_mask for x in m):  # no instance: no row, as alone
            assert len(results[i].values[0]) == 0
            continue
        assert_same(plan, results[i], want)
        assert_same(plan, evaluate_group(plan, np.array(case.ts, dtype=np.int64), np.array(m, dtype=np.int64),
                                         cols), want)
    return derived


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(cube_cases())
def test_rollup_cube_every_cuboid_equals_oracle(case: CubeCase) -> None:
    check_against_oracle(case)


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(cube_cases(listed=True))
def test_listed_cuboids_with_derivations_equal_oracle(case: CubeCase) -> None:
    derived = check_against_oracle(case)
    # the coarse pattern is listed with every child in its place: it is derived unless a
    # measure reads the coarse or a child symbol (then the parts would measure other positions)
    coarse = case.listed[0][0][0]
    split = {coarse, *case.hierarchy.children(coarse)}
    measured = {m[m.index("(") + 1:].split(".")[0].rstrip(")") for m in case.measures[1:]}
    assert derived == 1 or measured & split


def test_derivation_is_used_when_all_children_are_cuboids() -> None:
    case = CubeCase(
        pairs=(("a", "X"), ("b", "X"), ("c", "Y"), ("d", "Y")),
        ts=(1, 2, 3, 4, 5, 6), types=("a", "c", "X", "d", "b", "c"), values=(1, 2, 3, 4, 5, None),
        base=(), rollups=(),
        listed=((("X", False, False), ("Y", False, False)), (("a", False, False), ("Y", False, False)),
                (("b", False, False), ("Y", False, False))),
        within=None, slide=None, measures=("COUNT(*) AS n", "SUM(Y.v) AS s"))
    assert check_against_oracle(case) == 1
    q = analysed(case)
    # X = a | b | exactly X: the hidden self cuboid matches the row typed X itself
    hidden = [q.cube.texts[i] for i, c in enumerate(q.cube.cuboids) if c.hidden]
    assert hidden == ["SEQ(=X, Y)"]


def test_stock_workload_counts() -> None:
    """SEQ(DELL, Finance, !Education, ANAT) rolled up: hand-checked counts."""
    pairs = (("DELL", "Computer"), ("IBM", "Computer"), ("QQQ", "Finance"), ("GS", "Finance"),
             ("EFC", "Education"), ("ANAT", "Insurance"))
    case = CubeCase(pairs, ts=(1, 2, 3, 4, 5, 6, 7), types=("DELL", "IBM", "QQQ", "EFC", "GS", "ANAT", "QQQ"),
                    values=(None,) * 7, base=(("DELL", False, False), ("Finance", False, False),
                                               ("Education", True, False), ("ANAT", False, False)),
                    rollups=((0, "", False), (2, None, True)), listed=(), within=None, slide=None,
                    measures=("COUNT(*) AS n",))
    q = analysed(case)
    m = masks(q.symbols, case.types)
    res = evaluate_many(q.plan, np.array(case.ts), np.array(m))
    got = {q.cube.texts[i]: int(res[i].values[0][0]) for i in q.cube.reported}
    # DELL(1) then GS(5) then ANAT(6): QQQ(3) is followed by EFC(4) before ANAT
    assert got == {"SEQ(DELL, Finance, !Education, ANAT)": 1, "SEQ(Computer, Finance, !Education, ANAT)": 2,
                   "SEQ(DELL, Finance, ANAT)": 2, "SEQ(Computer, Finance, ANAT)": 4}


@pytest.mark.parametrize(
    "shape, message",
    [
        ("PATTERN SEQ(a, b) CUBE (CONCEPT ROLLUP 3)", "positions are 1..2"),
        ("PATTERN SEQ(a, b) CUBE (CONCEPT ROLLUP c)", "the symbol is not in SEQ(a, b)"),
        ("PATTERN SEQ(a, a) CUBE (CONCEPT ROLLUP a)", "appears 2 times"),
        ("PATTERN SEQ(a, b) CUBE (CONCEPT ROLLUP 1 TO Y)", "'Y' is not an ancestor of a"),
        ("PATTERN SEQ(a, b) CUBE (CONCEPT ROLLUP 1, CONCEPT ROLLUP 1 TO X)", "two CONCEPT ROLLUP"),
        ("PATTERN SEQ(R, b) CUBE (CONCEPT ROLLUP 1)", "R is a root of hierarchy h"),
        ("PATTERNS (SEQ(a, b), SEQ(a, b))", "lists SEQ(a, b) twice"),
        ("PATTERN SEQ(a, a) CUBE (CONCEPT ROLLUP 1) MEASURES SUM(a.v) AS s", "cuboid SEQ(X, a), which hold different "
         "concepts"),
    ],
)
def test_cube_errors_are_precise(shape: str, message: str) -> None:
    sql = (f"SELECT * FROM ev MATCH_AGGREGATE (PARTITION BY k ORDER BY ts {shape} TYPE BY tp HIERARCHY h) AS m")
    with pytest.raises(CubeError, match=re.escape(message)) as err:
        analyze_sql(sql, SCHEMA, hierarchies={"h": [("a", "X"), ("b", "X"), ("X", "R"), ("c", "R")]})
    assert err.value.position is not None


def test_edge_negation_in_a_cuboid_needs_within() -> None:
    sql = ("SELECT * FROM ev MATCH_AGGREGATE (PARTITION BY k ORDER BY ts PATTERN SEQ(a, !b, c) "
           "CUBE (PATTERN ROLLUP 1) TYPE BY tp HIERARCHY h) AS m")
    with pytest.raises(EdgeNegationWithoutWindowError, match=r"cuboid SEQ\(!b, c\) starts or ends"):
        analyze_sql(sql, SCHEMA, hierarchies={"h": [("a", "X"), ("b", "X"), ("c", "X")]})


def test_explain_lists_cuboids_levels_and_derivations() -> None:
    from sparkseq.statements.sql_api import explain

    sql = ("SELECT * FROM ev MATCH_AGGREGATE (PARTITION BY k ORDER BY ts PATTERNS (SEQ(X, c), SEQ(a, c), SEQ(b, c)) "
           "TYPE BY tp HIERARCHY h MEASURES COUNT(*) AS n) AS m")
    text = explain(SCHEMA, sql, hierarchies={"h": [("a", "X"), ("b", "X"), ("X", "R"), ("c", "R")]})
    assert "cuboids       #0   SEQ(X, c)" in text and "levels [1, 1]" in text
    assert "derived: sum of #1, #2, #3" in text and "#3   SEQ(=X, c)" in text and "hidden part" in text
    assert "pattern STRING, levels ARRAY<INT>, n BIGINT" in text


def test_explain_says_a_big_key_takes_the_cube_apart() -> None:
    from sparkseq.statements.sql_api import explain

    sql = ("SELECT * FROM ev MATCH_AGGREGATE (PARTITION BY k ORDER BY ts PATTERNS (SEQ(a, c), SEQ(b, c)) "
           "TYPE BY tp MEASURES COUNT(*) AS n WITHIN 10) AS m")
    path = [line for line in explain(SCHEMA, sql).splitlines() if line.strip().startswith("path ")]
    assert len(path) == 1 and path[0].split(None, 1)[1] == (
        "every cuboid in one engine call per key, and for the keys over 4,000,000 rows, counted when the statement "
        "runs, each cuboid its own statement, UNION ALL; only when Spark's size estimate of the source "
        "leaves room for such keys, else every key in the one grouped call (decided from Spark's size estimate of "
        "the source when the statement runs)")


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.one_of(cube_cases(), cube_cases(listed=True)))
def test_cube_clauses_round_trip(case: CubeCase) -> None:
    from sql_rewrites.syntax.dialect import SparkSeq, parse_statement

    tree = parse_statement(case.sql())
    printed = tree.sql(dialect=SparkSeq)
    assert parse_statement(printed).sql(dialect=SparkSeq) == printed
    assert parse_statement(printed) == tree
