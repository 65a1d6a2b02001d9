"""Time split without Spark: the generated SQL's shape and quoting (its choice: tests/test_sql_planner.py)."""

from __future__ import annotations

import pytest
import sqlglot
from sqlglot import exp

from sql_rewrites.analysis.analyzer import analyze_sql
from sql_rewrites.generation.generate import engine_input
from sql_rewrites.planning.timesplit import SplitKey, streaming_query, time_split_query

NASTY = "k`) x; DROP TABLE t --"
SCHEMA = {"t": {NASTY: "string", "ts": "bigint", "kind": "string", "v": "int"}}
TEXT = (f"SELECT * FROM t MATCH_AGGREGATE (PARTITION BY `{NASTY.replace('`', '``')}` ORDER BY ts "
        "PATTERN SEQ(!n, a, b, !n) TYPE BY kind MEASURES COUNT(*) AS c, SUM(b.v) AS s WITHIN 10) AS m")


def split_sql(split_rows: int = 7, chunk_rows: int = 3, partitions: int | None = 5) -> str:
    [query] = analyze_sql(TEXT, SCHEMA)
    return time_split_query(engine_input(query), "f_chunk", "f_combine", query.node.this.copy(),
                            split_rows, chunk_rows, partitions).sql(dialect="spark")


def test_keys_are_quoted_and_the_shape_is_two_aggregations() -> None:
    sql = split_sql()
    [tree] = sqlglot.parse(sql, read="spark")
    assert isinstance(tree, exp.Select)
    names = {c.name for c in tree.find_all(exp.Column)}
    assert NASTY in names
    calls = [f.name.lower() for f in tree.find_all(exp.Anonymous)]
    assert "f_chunk" in calls and "f_combine" in calls
    assert "HAVING COUNT(*) > 7" in sql and "/ 3" in sql
    assert "/*+ REPARTITION(5, `__sparkseq_split_chunk`) */" in sql
    assert "/*+ BROADCAST(`__sparkseq_split_sizes`) */" in sql
    assert "REPARTITION" not in split_sql(partitions=None)
    assert not list(tree.find_all(exp.Drop))  # the key stays a name (and a string literal in error messages)


def test_leading_negation_reaches_two_windows_and_trailing_one_back() -> None:
    sql = split_sql()
    assert "- 20" in sql  # the next chunk needs rows 2w before its start (leading negation)
    assert "+ 10" in sql  # the previous chunk needs rows w after this chunk's start (trailing)


@pytest.mark.parametrize("bad", [0, -1, True, 2.5])
def test_thresholds_must_be_positive_integers(bad: object) -> None:
    with pytest.raises(ValueError, match="positive integers"):
        split_sql(split_rows=bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="positive integers"):
        split_sql(partitions=bad)  # type: ignore[arg-type]


def test_function_names_are_checked() -> None:
    [query] = analyze_sql(TEXT, SCHEMA)
    with pytest.raises(ValueError, match="identifier"):
        time_split_query(engine_input(query), "f; DROP", "f_combine", query.node.this.copy())


def test_streaming_query_quotes_keys_and_passes_the_plan_as_a_literal() -> None:
    [query] = analyze_sql(TEXT.replace(" WITHIN 10", "").replace("!n, a, b, !n", "a, !n, b"), SCHEMA)
    sql = streaming_query(engine_input(query), "f_stream", query.node.this.copy()).sql(dialect="spark")
    [tree] = sqlglot.parse(sql, read="spark")
    assert NASTY in {c.name for c in tree.find_all(exp.Column)}
    assert "DISTRIBUTE BY" in sql and "SORT BY" in sql and "f_stream(TABLE(" in sql.replace("F_STREAM", "f_stream")
    assert not list(tree.find_all(exp.Drop))


def test_the_statistics_bound_the_chunks_as_literals() -> None:
    """The keys the statistics job measured (tests/test_sql_planner.py) reach the query as
    literals: no second read."""
    [query] = analyze_sql(TEXT, SCHEMA)
    sql = time_split_query(engine_input(query), "f_chunk", "f_combine", query.node.this.copy(),
                           split_keys=[SplitKey(-2**63, -5, 40, 3)]).sql(dialect="spark")
    assert "HAVING" not in sql and " JOIN " not in sql  # no second read, no join: bounds chosen by key hash
    assert "CASE `__sparkseq_split_hash` WHEN CAST(-9223372036854775808 AS BIGINT) THEN CAST(-5 AS BIGINT) END" in sql
    assert f"XXHASH64(`{NASTY.replace('`', '``')}`) AS `__sparkseq_split_hash`" in sql


@pytest.mark.parametrize("keys, message", [
    ([], "at least one"),
    ([SplitKey(None, 0, 40, 1)], "key hash"),
    ([SplitKey(1, 0, 19, 1)], "twice the WITHIN"),
    ([SplitKey(1, 0, 40, 0)], "positive number of chunks"),
    ([SplitKey("1; DROP", 0, 40, 1)], "integer"),  # type: ignore[arg-type]
])
def test_bad_split_keys_are_refused(keys: list, message: str) -> None:
    [query] = analyze_sql(TEXT, SCHEMA)
    with pytest.raises(ValueError, match=message):
        time_split_query(engine_input(query), "f_chunk", "f_combine", query.node.this.copy(), split_keys=keys)


def test_chunks_are_placed_one_per_task_by_task_keys() -> None:
    """With task keys the split keys' chunks are numbered one after the other (the second
    key's first task is the first key's chunk count) and spread by ``pmod`` over them."""
    [query] = analyze_sql(TEXT, SCHEMA)
    sql = time_split_query(engine_input(query), "f_chunk", "f_combine", query.node.this.copy(),
                           split_keys=[SplitKey(1, 0, 40, 3), SplitKey(2, 0, 40, 5)],
                           task_keys=[11, -12, 13]).sql(dialect="spark")
    assert ("WHEN CAST(1 AS BIGINT) THEN CAST(0 AS BIGINT) WHEN CAST(2 AS BIGINT) THEN CAST(3 AS BIGINT) "
            "END AS `__sparkseq_split_first_task`") in sql
    assert "ELEMENT_AT(ARRAY(CAST(11 AS BIGINT), CAST(-12 AS BIGINT), CAST(13 AS BIGINT)), CAST(PMOD(" in sql
    assert "/*+ REPARTITION(3, `__sparkseq_split_task`) */" in sql
    with pytest.raises(ValueError, match="task_keys"):
        time_split_query(engine_input(query), "f_chunk", "f_combine", query.node.this.copy(), task_keys=[1])
