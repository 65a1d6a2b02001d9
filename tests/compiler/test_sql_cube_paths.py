"""An E-Cube as the UNION ALL of its cuboid statements (:mod:`sql_rewrites.planning.cube_paths`).

Hypothesis draws E-Cube statements with data (:mod:`tests.support.cube_cases`): every reported
cuboid's statement, evaluated alone on the rows its own mask keeps, must give exactly
what the cube's one engine call (``evaluate_many``, derivations included) gives for
that cuboid — so the union equals the grouped cube. The union's SQL must have the
cube's columns in the cube's order, and the path rule must split only for a big key.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st
from sqlglot import exp

from sql_rewrites.analysis.analyzer import analyze_sql
from sql_rewrites.errors import EdgeNegationWithoutWindowError
from sql_rewrites.generation.generate import engine_query
from sql_rewrites.planning.cube_paths import cube_union, cuboid_plans, cuboid_statements
from sql_rewrites.planning.planner import KeyStatistics, Path, PlanSettings, cube_path
from sql_rewrites.syntax.dialect import SparkSeq
from tests.kernels.test_kernel_oracle import as_rows, assert_same
from tests.support.cube_cases import CubeCase, cube_cases, masks
from udafs.kernels import evaluate_group
from udafs.kernels.multiplan.many import evaluate_many

SCHEMA = {"ev": {"k": "int", "ts": "bigint", "tp": "string", "v": "bigint"}}
HIERARCHY = {"h": [("a", "X"), ("b", "X"), ("X", "R"), ("c", "R")]}
ROLLUP = ("SELECT * FROM ev MATCH_AGGREGATE (PARTITION BY k ORDER BY ts PATTERN SEQ(a, !b, c) "
          "CUBE (CONCEPT ROLLUP 1, PATTERN ROLLUP 3) TYPE BY tp HIERARCHY h "
          "MEASURES COUNT(*) AS n, SUM(c.v) AS s WITHIN 10 SLIDE 5) AS m")
NO_WINDOW = ("SELECT * FROM ev MATCH_AGGREGATE (PARTITION BY k ORDER BY ts PATTERNS (SEQ(a, c), SEQ(X, c)) "
             "TYPE BY tp HIERARCHY h MEASURES COUNT(*) AS n) AS m")
BIG = [KeyStatistics(10_000_000, 0, 10**9, 7)]


def analysed(sql: str, hierarchies: dict = HIERARCHY):
    [q] = analyze_sql(sql, SCHEMA, hierarchies=hierarchies)
    return q


def mask_bits(mask: exp.Expr) -> int:
    """The bits a mask expression can set (the OR of its ``THEN`` literals, in any of its forms)."""
    bits = 0
    for case in mask.find_all(exp.Case):
        for branch in case.args["ifs"]:
            bits |= int(branch.args["true"].name)
    return bits


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.one_of(cube_cases(), cube_cases(listed=True)))
def test_each_cuboid_statement_alone_equals_the_cube(case: CubeCase) -> None:
    try:
        q = analysed(case.sql(), {"h": case.pairs})
    except EdgeNegationWithoutWindowError:
        reject()
    ts, m = np.array(case.ts, dtype=np.int64), np.array(masks(q.symbols, case.types), dtype=np.int64)
    values = np.array([0 if v is None else v for v in case.values], dtype=np.int64)
    present = np.array([v is not None for v in case.values], dtype=bool)
    cols = [(values, present)] if q.plan.columns else []
    cube = evaluate_many(q.plan, ts, m, cols)
    statements = cuboid_statements(q)
    assert [s.index for s in statements] == list(q.cube.reported)
    assert cuboid_plans(q) == ([s.text for s in statements], [s.plan for s in statements])  # what paths decide from
    for s in statements:
        assert s.text == q.cube.texts[s.index] and s.plan == q.plan.plans[s.index]
        assert [name for name, _ in s.spec.measures] == [q.measures[f].name for f in q.plan.slots[s.index]]
        own = mask_bits(s.spec.mask)
        assert own == s.plan.pattern_symbols_mask  # only the cuboid's symbols reach its engine call
        keep = (m & own) != 0
        if not keep.any():  # no group reaches the engine: no row, as in the cube
            assert len(cube[s.index].values[0]) == 0
            continue
        alone = evaluate_group(s.plan, ts[keep], m[keep] & own, [(v[keep], ok[keep]) for v, ok in cols])
        assert_same(s.plan, alone, as_rows(cube[s.index]))


def test_union_has_the_cube_columns_in_order() -> None:
    q = analysed(ROLLUP)
    statements = cuboid_statements(q)
    union = cube_union(q, [(s, engine_query(s.spec, "f", q.node.this.copy())) for s in statements])
    parts = branches(union.this)
    assert len(parts) == len(statements) == len(q.cube.reported) == 6
    names = [o.name for o in q.outputs]
    assert names == ["k", "window_start", "window_end", "pattern", "levels", "n", "s"]
    for part, s in zip(parts, statements):
        assert [e.alias_or_name for e in part.expressions] == names
        pattern, levels, total = part.expressions[3], part.expressions[4], part.expressions[6]
        assert pattern.this.name == s.text
        assert levels.sql(dialect=SparkSeq).startswith("CAST(ARRAY(")
        if "c" in s.text:
            assert isinstance(total, exp.Column)
        else:  # c deleted: SUM(c.v) is NULL of the measure's type
            assert total.sql(dialect=SparkSeq) == "CAST(NULL AS BIGINT) AS `s`"
    assert union.alias == "m"
    assert {s.text for s in statements} == {"SEQ(a, !b, c)", "SEQ(X, !b, c)", "SEQ(R, !b, c)",
                                                 "SEQ(a, !b)", "SEQ(X, !b)", "SEQ(R, !b)"}


def test_hidden_cuboids_are_not_run() -> None:
    q = analysed("SELECT * FROM ev MATCH_AGGREGATE (PARTITION BY k ORDER BY ts PATTERNS (SEQ(X, c), SEQ(a, c), "
                 "SEQ(b, c)) TYPE BY tp HIERARCHY h MEASURES COUNT(*) AS n WITHIN 5) AS m")
    assert any(c.hidden for c in q.cube.cuboids)
    assert [s.text for s in cuboid_statements(q)] == ["SEQ(X, c)", "SEQ(a, c)", "SEQ(b, c)"]


def branches(query: exp.Expr) -> list[exp.Expr]:
    """The SELECTs of a UNION ALL, in order."""
    if isinstance(query, exp.Union):
        assert not query.args.get("distinct")
        return branches(query.this) + branches(query.expression)
    return [query]


def paths(sql: str, keys: list[KeyStatistics] | None, forced: Path | None = None, *, chunk_multiple: int = 1,
          unmeasured: str | None = None):
    statements = cuboid_statements(analysed(sql))
    return cube_path([s.text for s in statements], [s.plan for s in statements],
                     PlanSettings(forced=forced, chunk_multiple=chunk_multiple), big_keys=keys, unmeasured=unmeasured)


def test_moderate_keys_keep_one_call_and_a_big_key_splits_every_cuboid() -> None:
    assert not paths(ROLLUP, []).split
    assert "no partition key holds more than 4,000,000 rows" in paths(ROLLUP, []).reason
    split = paths(ROLLUP, BIG, chunk_multiple=4)
    assert split.split and [c.path for c in split.cuboids] == [Path.TIME_SPLIT] * 6
    assert all(c.split_keys is not None and c.split_keys[0].chunks % 4 == 0 for c in split.cuboids)
    lines = split.describe()
    assert lines[0].startswith("each cuboid its own statement, UNION ALL (6 of 6 cuboids")
    assert lines[1].startswith("SEQ(a, !b, c)  time-split (1 partition key(s) over 4,000,000 rows")


def test_a_huge_key_without_window_streams_and_other_big_keys_change_nothing() -> None:
    streamed = paths(NO_WINDOW, BIG)
    assert [c.path for c in streamed.cuboids] == [Path.STREAMING] * 2
    between = paths(NO_WINDOW, [KeyStatistics(6_000_000, 0, 10**9, 7)])  # under the streaming threshold
    assert not between.split and between.reason == "no partition key holds more than 8,000,000 rows"
    short = paths(ROLLUP, [KeyStatistics(6_000_000, 0, 50, 7)])  # big, but its span holds no 4 chunks of 2 * WITHIN
    assert not short.split and "1 partition key(s) over 4,000,000 rows (largest 6,000,000) change no" in short.reason


def test_forced_paths_and_failed_statistics() -> None:
    assert not paths(ROLLUP, BIG, Path.GROUPED).split
    forced = paths(ROLLUP, None, Path.TIME_SPLIT)
    assert forced.split and forced.reason == "forced by sparkseq.path: each cuboid time-split"
    with pytest.raises(ValueError, match=r"cuboid SEQ\(a, c\): this statement cannot run time-split: .*WITHIN"):
        paths(NO_WINDOW, None, Path.TIME_SPLIT)
    failed = paths(ROLLUP, None, unmeasured="AnalysisException")
    assert not failed.split and "statistics unavailable (AnalysisException)" in failed.reason


def test_without_a_session_the_path_waits_for_the_estimate_and_says_both() -> None:
    statements = cuboid_statements(analysed(ROLLUP))
    texts, plans = [s.text for s in statements], [s.plan for s in statements]
    planned = cube_path(texts, plans, PlanSettings(split_rows=50, stream_rows=100))
    assert planned.pending and planned.by_key_size == 50
    assert planned.describe()[0].startswith(
        "every cuboid in one engine call per key, and for the keys over 50 rows, counted when the statement runs, "
        "each cuboid its own statement, UNION ALL; only when Spark's size estimate of the source leaves room "
        "for such keys, else every key in the one grouped call")
    assert cube_path(texts, plans, PlanSettings(forced=Path.STREAMING)).split
