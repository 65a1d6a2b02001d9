"""The plan-time decision of a sharing group's shared timelines (``sql_rewrites.planning.timeline_plan``),
without Spark: statistics in, the group's multi-plan with its decision out, and EXPLAIN's
text of it."""

from __future__ import annotations

import pytest

from sql_rewrites.analysis.analyzer import analyze_sql
from sql_rewrites.generation.shared import Member, SharedGroup, build_group, statistics_sql, symbol_keys
from sql_rewrites.planning.symbol_statistics import (
    DENSE_ROW_BYTES,
    SAMPLE_EVERY,
    SAMPLE_FROM_ROWS,
    UNKNOWN_BYTES,
    SymbolStatistics,
    sample_every,
)
from sql_rewrites.planning.timeline_plan import (
    SymbolRows,
    describe_statistics,
    describe_timelines,
    needs_statistics,
    plan_timelines,
)
from udafs.multiplan import MultiPlan

SCHEMA = {"clicks": {"k": "INT", "ts": "BIGINT", "type": "STRING"}}


def group(*patterns: str, measure: str = "COUNT(*)", window: str = "WITHIN 600 SLIDE 60") -> SharedGroup:
    members = []
    for i, pattern in enumerate(patterns):
        sql = (f"SELECT * FROM clicks MATCH_AGGREGATE (PARTITION BY k ORDER BY ts PATTERN {pattern} TYPE BY type "
               f"MEASURES {measure} AS n {window}) AS m")
        [query] = analyze_sql(sql, SCHEMA)
        members.append(Member(i, 0, query))
    return build_group(members)


def statistics(g: SharedGroup, rows: dict[str, int], partitions: int = 200) -> SymbolStatistics:
    """Statistics as ``sparkseq.running.statistics.collect`` builds them: ``rows`` per TYPE BY value."""
    counts = {key: rows[name] for key, (name, _) in zip(symbol_keys(g), g.symbols)}
    return SymbolStatistics.of(counts, partitions)


def test_rows_per_symbol_are_read_by_the_symbols_condition() -> None:
    g = group("SEQ(a, b)", "SEQ(a, c)")
    rows = SymbolRows(g, statistics(g, {"a": 1_000, "b": 50, "c": 7}))
    assert rows.per_symbol == (1_000, 50, 7) and rows.calls == 200
    assert rows(0b101) == 1_007
    assert SymbolRows(g, SymbolStatistics.of({}, 3)).per_symbol == (0, 0, 0)  # a symbol no row has


def test_statistics_refuse_what_cannot_be_counted() -> None:
    for bad in ({"rows": (("a", -1),)}, {"rows": (("a", 1), ("a", 2))}, {"partitions": 0}, {"sampled": 0.0},
                {"sampled": 1.5}):
        with pytest.raises(ValueError):
            SymbolStatistics(**bad)  # type: ignore[arg-type]


def test_the_decision_follows_the_data() -> None:
    """The same two members: on one timeline when their rows are few per partition (the
    fixed costs of evaluating each alone dominate); one by one when each has many rows of
    symbols the other does not use."""
    g = group("SEQ(a, b, c)", "SEQ(d, e, f)")
    few = plan_timelines(g, statistics(g, dict.fromkeys("abcdef", 1_000)))
    assert few.plan.timelines is not None and [t.members for t in few.plan.timelines] == [(0, 1)]
    many = plan_timelines(g, statistics(g, dict.fromkeys("abcdef", 10_000_000)))
    assert many.plan.timelines == ()
    assert MultiPlan.from_json(few.plan.to_json()) == few.plan  # travels with the pass


def test_no_statistics_needed_when_no_two_members_share_a_window_shape() -> None:
    g = build_group([*group("SEQ(a, b)").members, *group("SEQ(a, c)", window="WITHIN 600").members])
    assert not needs_statistics(g)
    assert plan_timelines(g, None).plan.timelines == ()
    two = group("SEQ(a, b)", "SEQ(a, c)")
    assert needs_statistics(two)
    with pytest.raises(ValueError, match="needs its statistics"):
        plan_timelines(two, None)


def test_explain_lines_name_the_executed_decision() -> None:
    g = group("SEQ(a, b, c)", "SEQ(a, b, d)", "SEQ(x, y)")
    stats = statistics(g, {**dict.fromkeys("abcd", 1_000), "x": 10_000_000, "y": 10_000_000})
    decided = plan_timelines(g, stats)
    lines = describe_timelines(decided, stats, (3, 4, 5))
    assert lines[0].startswith("timeline 1: members 3, 4 on one timeline; estimated ")
    assert "  prefix counted once: SEQ(a, b, ...) for members 3, 4" in lines
    assert lines[-1] == "members 5: counted one by one (a shared timeline would cost more here)"


def test_explain_lines_say_which_members_run_by_time_blocks() -> None:
    """WITHIN without SLIDE shares no pass but one block timeline (udafs.kernels.multiplan.many); other
    measures than COUNT(*) run alone."""
    g = build_group([*group("SEQ(a, b)", "SEQ(a, c)", window="WITHIN 600").members,
                     *group("SEQ(a, d)", measure="COUNT(a)").members])
    lines = describe_timelines(plan_timelines(g, None), None)
    assert lines == ["members 0, 1: counted one by one (WITHIN without SLIDE: by time blocks), on one block "
                     "timeline per WITHIN length in each partition where their rows add up to at least the "
                     "partition's",
                     "members 2: counted one by one (measures other than COUNT(*), strategies or predicates)"]


def test_large_sources_are_sampled_by_spark_s_estimate() -> None:
    assert sample_every(None, None) == 1  # nothing known: all rows
    assert sample_every(UNKNOWN_BYTES, None) == 1  # Spark's default for what it cannot size
    assert sample_every(10_000_000, 48) == 1  # the row count decides when known
    assert sample_every(None, SAMPLE_FROM_ROWS + 1) == SAMPLE_EVERY
    assert sample_every(SAMPLE_FROM_ROWS * DENSE_ROW_BYTES, None) == 1
    assert sample_every(SAMPLE_FROM_ROWS * DENSE_ROW_BYTES + DENSE_ROW_BYTES, None) == SAMPLE_EVERY


def test_a_sample_s_counts_are_scaled_up_and_its_keys_kept() -> None:
    stats = SymbolStatistics.from_sample({"a": 3, "b": 0}, 7, 16)
    assert stats.rows_of("a") == 48 and stats.rows_of("b") == 0 and stats.partitions == 7
    assert stats.sampled == 1 / 16 and describe_statistics(stats) == (
        "rows per symbol from the statistics job (a sample of about one row in 16), 7 partitions")
    assert SymbolStatistics.from_sample({"a": 0}, 0, 16).partitions == 1  # an empty sample: one call
    assert describe_statistics(SymbolStatistics.from_sample({"a": 5}, 2, 1)).endswith("(all rows), 2 partitions")
    assert describe_statistics(SymbolStatistics.from_sample({"a": 5}, 1, 1)).endswith("(all rows), 1 partition")


def test_the_statistics_query_samples_by_a_hash_of_keys_and_time() -> None:
    g = group("SEQ(a, b)", "SEQ(a, c)")
    whole = statistics_sql(g)
    assert "HASH(" not in whole and "GROUP BY `k`" in whole and "COUNT(*) AS `partitions`" in whole
    assert "WHERE PMOD(HASH(`k`, `ts`), 16) = 0 GROUP BY `k`" in statistics_sql(g, sample_every=16)
    both = statistics_sql(g, sample_every=16, big_key_rows=50)  # the big keys from the same scan: every row read
    assert "WHERE" not in both and "CASE WHEN PMOD(HASH(`k`, `ts`), 16) = 0 AND" in both
    assert "COLLECT_LIST(CASE WHEN `n` > 50 THEN NAMED_STRUCT('n', `n`, 't0', `t0`, 't1', `t1`, 'h', `h`) END)" \
        in both and "MAX(XXHASH64(`k`)) AS `h`" in both
