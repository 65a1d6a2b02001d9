"""The plan-time decision of a sharing group's shared timelines (``sql_rewrites.timeline_plan``),
without Spark: statistics in, the group's multi-plan with its decision out, and EXPLAIN's
text of it."""

from __future__ import annotations

import pytest

from sql_rewrites.analysis import analyze_sql
from sql_rewrites.shared import Member, SharedGroup, build_group, symbol_keys
from sql_rewrites.sharing import Statistics
from sql_rewrites.timeline_plan import SymbolRows, describe_timelines, needs_statistics, plan_timelines
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


def statistics(g: SharedGroup, rows: dict[str, int], partitions: int = 200) -> Statistics:
    """Statistics as ``sparkseq.statistics.collect`` builds them: ``rows`` per TYPE BY value."""
    counts = {key: rows[name] for key, (name, _) in zip(symbol_keys(g), g.symbols)}
    return Statistics.from_counts(counts, span=3_600, partitions=partitions)


def test_rows_per_symbol_come_back_from_the_rates() -> None:
    g = group("SEQ(a, b)", "SEQ(a, c)")
    rows = SymbolRows(g, statistics(g, {"a": 1_000, "b": 50, "c": 7}))
    assert [round(r) for r in rows.per_symbol] == [1_000, 50, 7] and rows.calls == 200
    assert round(rows(0b101)) == 1_007


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
