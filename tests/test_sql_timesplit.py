"""Time split without Spark: the path decision and the generated SQL's shape and quoting."""

from __future__ import annotations

import pytest
import sqlglot
from sqlglot import exp

from sql_rewrites.analysis import analyze_sql
from sql_rewrites.generate import engine_input
from sql_rewrites.timesplit import (
    CHUNK_ROWS,
    MAX_SPLIT_LITERALS,
    MIN_CHUNKS,
    MIN_ROW_BYTES,
    SPLIT_ROWS,
    STREAM_ROWS,
    KeyStatistics,
    Path,
    SplitKey,
    big_key_path,
    choose_path,
    planned_path,
    sized_path,
    statistics_needed,
    statistics_threshold,
    streaming_query,
    time_split_query,
)
from udafs.plan import Element, Measure, MeasureKind, Plan, Strategy, ValueType

#: A MAX measure under WITHIN keeps these plans off the JVM path.
KERNEL_ONLY = dict(measures=(Measure(MeasureKind.MAX, 1, 0, "x"),), columns=(ValueType.INT,))
PLAN = Plan(symbols=("A", "B"), elements=(Element(0), Element(1)), negations=(0, 0, 0), within=10, **KERNEL_ONLY)
NO_WINDOW = Plan(symbols=("A", "B"), elements=(Element(0), Element(1)), negations=(0, 0, 0), **KERNEL_ONLY)
BIG = KeyStatistics(rows=SPLIT_ROWS + 1, first=0, last=10_000)
CONTIGUOUS = Plan(symbols=("A", "B"), elements=(Element(0), Element(1)), negations=(0, 0, 0), within=10,
                  strategy=Strategy.STRICT_CONTIGUITY)


def test_no_big_key_stays_grouped() -> None:
    choice = choose_path(PLAN, [])
    assert choice.path is Path.GROUPED and f"{SPLIT_ROWS:,}" in choice.reason


def test_a_big_key_is_split() -> None:
    choice = choose_path(PLAN, [BIG, KeyStatistics(SPLIT_ROWS + 5, 0, 100_000)])
    assert choice.path is Path.TIME_SPLIT
    assert "2 partition key(s)" in choice.reason and f"{SPLIT_ROWS + 5:,}" in choice.reason
    assert (choice.split_rows, choice.chunk_rows) == (SPLIT_ROWS, CHUNK_ROWS)


def test_a_window_too_long_for_the_span_stays_grouped() -> None:
    short = KeyStatistics(SPLIT_ROWS + 1, 0, MIN_CHUNKS * 2 * PLAN.within - 1)
    assert choose_path(PLAN, [short]).path is Path.GROUPED


def test_unsplittable_plans_stay_grouped_and_cannot_be_forced() -> None:
    choice = choose_path(NO_WINDOW, [BIG])
    assert choice.path is Path.GROUPED and "no WITHIN" in choice.reason
    with pytest.raises(ValueError, match="no WITHIN"):
        choose_path(NO_WINDOW, None, Path.TIME_SPLIT)
    assert choose_path(PLAN, None, Path.TIME_SPLIT).path is Path.TIME_SPLIT
    assert choose_path(PLAN, [BIG], Path.GROUPED).path is Path.GROUPED


def test_statistics_only_when_a_big_key_is_possible() -> None:
    assert statistics_needed(PLAN, None)
    assert not statistics_needed(PLAN, SPLIT_ROWS * MIN_ROW_BYTES)
    assert statistics_needed(PLAN, SPLIT_ROWS * MIN_ROW_BYTES + 1)
    assert statistics_threshold(NO_WINDOW) == STREAM_ROWS  # cannot split, can stream
    assert not statistics_needed(NO_WINDOW, STREAM_ROWS * MIN_ROW_BYTES)
    assert statistics_needed(NO_WINDOW, None)
    assert statistics_threshold(CONTIGUOUS) is None and not statistics_needed(CONTIGUOUS, None)
    # a known row count decides: no key holds more rows than the source
    assert not statistics_needed(PLAN, None, source_rows=SPLIT_ROWS)
    assert not statistics_needed(PLAN, 10**12, source_rows=SPLIT_ROWS)
    assert statistics_needed(PLAN, 1, source_rows=SPLIT_ROWS + 1)


def test_a_huge_key_of_an_unsplittable_plan_streams() -> None:
    huge = KeyStatistics(STREAM_ROWS + 1, 0, 10)
    choice = choose_path(NO_WINDOW, [huge])
    assert choice.path is Path.STREAMING and "no WITHIN" in choice.reason
    assert choose_path(PLAN, [huge]).path is Path.STREAMING  # a window too long for the span
    assert choose_path(PLAN, [KeyStatistics(STREAM_ROWS + 1, 0, 10**9)]).path is Path.TIME_SPLIT
    assert choose_path(NO_WINDOW, [KeyStatistics(STREAM_ROWS, 0, 10)]).path is Path.GROUPED
    assert choose_path(CONTIGUOUS, [huge]).path is Path.GROUPED  # the streaming evaluator refuses strategies
    with pytest.raises(ValueError, match="streaming path"):
        choose_path(CONTIGUOUS, None, Path.STREAMING)
    assert choose_path(NO_WINDOW, None, Path.STREAMING).path is Path.STREAMING


def test_keys_counted_as_the_statement_runs_take_the_big_key_path() -> None:
    """Without statistics: the keys over the plan's threshold take its big-key path, the
    others the grouped path; a plan that neither splits nor streams has no such choice."""
    split = sized_path(PLAN, 50, 40, 100, "an estimate")
    assert (split.path, split.by_key_size, split.split_keys) == (Path.TIME_SPLIT, 50, None)
    assert split.reason == ("keys over 50 rows, counted when the statement runs, cut into time chunks of about 40 "
                            "rows; the other keys grouped: an estimate")
    streamed = sized_path(NO_WINDOW, 50, 40, 100)
    assert (streamed.path, streamed.by_key_size) == (Path.STREAMING, 100)
    assert big_key_path(CONTIGUOUS).path is Path.GROUPED
    with pytest.raises(ValueError, match="no key size changes"):
        sized_path(CONTIGUOUS)
    planned = planned_path(PLAN, split_rows=50, stream_rows=100)
    assert planned.path is Path.GROUPED and planned.by_key_size is None
    assert "unless it rules out keys over 50 rows, time-split for such keys, counted when the statement runs" \
        in planned.reason


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
    """The keys the statistics job measured reach the query as literals: no second read."""
    hashed = KeyStatistics(rows=3 * CHUNK_ROWS + 1, first=-50, last=10_000, key_hash=-7)
    choice = choose_path(PLAN, [hashed, KeyStatistics(SPLIT_ROWS + 1, 0, 10, key_hash=3)])
    assert choice.split_keys == (SplitKey(-7, -50, 10_050 // 4 + 1, 4),)  # the short key stays whole
    assert choose_path(PLAN, [BIG]).split_keys == (SplitKey(None, 0, 10_000 // 3 + 1, 3),)  # no PARTITION BY
    assert choose_path(PLAN, [BIG], chunk_multiple=4).split_keys == (SplitKey(None, 0, 10_000 // 4 + 1, 4),)
    many = [KeyStatistics(SPLIT_ROWS + 1, 0, 10_000, key_hash=h) for h in range(MAX_SPLIT_LITERALS + 1)]
    assert choose_path(PLAN, many).split_keys is None  # more big keys than literals: the query finds them
    assert choose_path(PLAN, None, Path.TIME_SPLIT).split_keys is None
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
