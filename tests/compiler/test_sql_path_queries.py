"""The SQL of the execution paths and of their statistics (:mod:`sql_rewrites.planning.path_queries`),
and the statement a cube navigation runs (:mod:`sql_rewrites.generation.cube_navigation`): pure, no Spark."""

from __future__ import annotations

import pytest
from sqlglot import exp

from sql_rewrites.analysis.analyzer import analyze_sql
from sql_rewrites.generation.cube_navigation import single_pattern_statement
from sql_rewrites.generation.generate import engine_input
from sql_rewrites.generation.jvm_path import JVM_FUNCTION
from sql_rewrites.logical.cube import CubeElement
from sql_rewrites.planning.cube_paths import cuboid_statements
from sql_rewrites.planning.path_queries import (
    PathFunctions,
    cube_on_paths,
    key_types_sql,
    operator_on_path,
    path_output,
)
from sql_rewrites.planning.planner import Path, PathChoice, PlanSettings, SourceSize, cube_path, sized_path
from sql_rewrites.planning.timesplit import SplitKey
from sql_rewrites.syntax.dialect import SparkSeq, parse_statement
from sql_rewrites.syntax.expressions import MatchAggregate
from sql_rewrites.syntax.markers import positional_markers
from tests.compiler.test_sql_cube_paths import HIERARCHY, ROLLUP, SCHEMA, branches

SMALL = PlanSettings(split_rows=50, chunk_rows=40, stream_rows=100, session=True)

KEYED = ("SELECT * FROM ev MATCH_AGGREGATE (PARTITION BY k ORDER BY ts PATTERN SEQ(a, b) TYPE BY tp "
         "MEASURES COUNT(*) AS n WITHIN 10) AS m")
WHOLE = KEYED.replace("PARTITION BY k ", "")


def analysed(sql: str):
    [q] = analyze_sql(sql, SCHEMA, hierarchies=HIERARCHY)
    return q


def test_key_types_query_selects_the_keys() -> None:
    assert key_types_sql(analysed(WHOLE)) is None
    tree = parse_statement(key_types_sql(analysed(KEYED)))
    assert [e.alias_or_name for e in tree.expressions] == ["k"]


def test_each_path_needs_its_functions() -> None:
    q = analysed(KEYED)
    for path in (Path.GROUPED, Path.STREAMING, Path.TIME_SPLIT):
        with pytest.raises(ValueError, match="needs"):
            operator_on_path(q, PathChoice(path, ""), PathFunctions())
    _, name = operator_on_path(q, PathChoice(Path.JVM, ""), PathFunctions())  # a session function of its own
    assert name == JVM_FUNCTION
    _, name = operator_on_path(q, PathChoice(Path.STREAMING, ""), PathFunctions(stream="my_stream"))
    assert name == "my_stream"


def test_time_split_places_its_chunks_by_the_task_keys() -> None:
    q = analysed(KEYED)
    choice = PathChoice(Path.TIME_SPLIT, "", split_keys=(SplitKey(7, 0, 40, 3),))
    placed, name = operator_on_path(q, choice, PathFunctions(split=("f_chunk", "f_combine"), chunk_tasks=8,
                                                             task_keys=(11, 12, 13)))
    text = placed.sql(dialect=SparkSeq).lower()
    assert name == "f_chunk" and "f_combine(" in text and "array(cast(11 as bigint)" in text
    hashed, _ = operator_on_path(q, PathChoice(Path.TIME_SPLIT, ""), PathFunctions(split=("f_chunk", "f_combine"),
                                                                                   chunk_tasks=8))
    assert "repartition(8" in hashed.sql(dialect=SparkSeq).lower()


def test_a_cube_on_mixed_paths() -> None:
    q = analysed(ROLLUP)
    n = len(q.cube.reported)
    choices = [PathChoice(Path.GROUPED, ""), PathChoice(Path.STREAMING, "")] * (n // 2)
    functions = [PathFunctions(engine="g"), PathFunctions(stream="s")] * (n // 2)
    union, names = cube_on_paths(q, choices, functions)
    assert names == "g, s" and len(branches(union.this)) == n
    with pytest.raises(ValueError, match="need as many"):
        cube_on_paths(q, choices[:1], functions[:1])
    with pytest.raises(ValueError, match="grouped path needs"):
        path_output(engine_input(analysed(KEYED)), exp.to_table("ev"), PathChoice(Path.GROUPED, ""), PathFunctions())


def test_keys_counted_as_it_runs_split_the_rows_between_two_branches() -> None:
    """One counting CTE over the source; the small keys' rows (ANTI JOIN) on the grouped
    path, the big keys' (SEMI JOIN) on theirs, each standing where the source stood: same
    alias, so the operator's qualified columns still resolve."""
    q = analysed(KEYED.replace("ev MATCH_AGGREGATE (PARTITION BY k", "ev AS e MATCH_AGGREGATE (PARTITION BY e.k"))
    choice = sized_path(q.single_plan, SMALL)
    with pytest.raises(ValueError, match="grouped path needs"):
        operator_on_path(q, choice, PathFunctions(split=("f_chunk", "f_combine"), chunk_tasks=4))
    replaced, name = operator_on_path(q, choice, PathFunctions(engine="g", split=("f_chunk", "f_combine"),
                                                               chunk_tasks=4))
    assert name == "g, f_chunk" and replaced.alias == "m"
    body = replaced.this
    sized, counted = (cte.this.sql(dialect=SparkSeq) for cte in body.args["with_"].expressions)
    assert sized == "SELECT *, XXHASH64(`e`.`k`) AS `__sparkseq_key_hash` FROM `ev` AS `e`"
    assert counted.endswith("GROUP BY `__sparkseq_key_hash` HAVING COUNT(*) > 50")
    small, big = branches(body)
    joins = [next(j for j in b.find_all(exp.Join) if j.this.name == "__sparkseq_big_keys") for b in (small, big)]
    assert [(j.side, j.kind) for j in joins] == [("LEFT", "ANTI"), ("LEFT", "SEMI")]
    assert all(j.parent_select.parent.alias == "e" for j in joins)
    assert "g(" in small.sql(dialect=SparkSeq).lower() and "f_chunk(" not in small.sql(dialect=SparkSeq).lower()
    assert "f_combine(" in big.sql(dialect=SparkSeq).lower()
    alone = operator_on_path(analysed(WHOLE), sized_path(analysed(WHOLE).single_plan, SMALL),
                             PathFunctions(engine="g", split=("c", "d"), chunk_tasks=4))[0]
    assert "CAST(0 AS BIGINT) AS `__sparkseq_key_hash`" in alone.sql(dialect=SparkSeq)


def test_a_cube_counted_as_it_runs_keeps_one_grouped_call_for_small_keys() -> None:
    q = analysed(ROLLUP)
    statements = cuboid_statements(q)
    sized = cube_path([s.text for s in statements], [s.plan for s in statements], SMALL, SourceSize())
    assert sized.by_key_size == 50 and {c.path for c in sized.cuboids} == {Path.TIME_SPLIT}
    functions = [PathFunctions(split=("c", "d"), chunk_tasks=4)] * len(statements)
    with pytest.raises(ValueError, match="grouped engine function"):
        cube_on_paths(q, sized.cuboids, functions, by_size=50)
    replaced, name = cube_on_paths(q, sized.cuboids, functions, by_size=50, engine="g")
    assert name == "g, c"
    small, *big = branches(replaced.this)
    assert len(big) == len(statements) and "g(" in small.sql(dialect=SparkSeq).lower()
    assert [e.alias_or_name for e in small.expressions] == [e.alias_or_name for e in big[0].expressions]


def test_positional_markers_are_found() -> None:
    assert positional_markers(parse_statement("SELECT * FROM t WHERE a = ?"))
    assert not positional_markers(parse_statement("SELECT * FROM t WHERE a = :a"))


def test_a_pattern_outside_the_cube_is_the_cube_statement_with_one_pattern() -> None:
    elements = (CubeElement("X", (True, "X"), node=True), CubeElement("b", (True, "b"), negated=True, node=True))
    text = single_pattern_statement(ROLLUP, elements)
    node = next(parse_statement(text).find_all(MatchAggregate))
    assert node.args.get("cube") is None and node.args.get("pattern") is None
    assert "PATTERNS (SEQ(X, !b))" in text
    assert [m.alias for m in node.args["measures"]] == ["n"]  # SUM(c.v): c is not in the pattern
    q = analysed(text)
    assert q.cube.texts == ("SEQ(X, !b)",) and [m.name for m in q.measures] == ["n"]
