"""``seq_*`` functions beside Spark's own aggregates, with FILTER, in HAVING / ORDER BY and
as global aggregates, through ``sparkseq.sql`` on local Spark.

Each split query is checked against the same answer put together from queries Spark
runs as written: the Python aggregates alone per group, and Spark's aggregates alone
(JDBC clients through the parser extension: tests/test_thrift_server.py).
"""

from __future__ import annotations

import pytest
from sqlglot import exp

import sparkseq
from sql_rewrites.errors import AggregatePlacementError
from sql_rewrites.generation.aggregates import is_spark_aggregate
from sql_rewrites.syntax.column_names import spark_column_name
from sql_rewrites.syntax.dialect import parse_statement
from tests.sql_cases import jobs_started
from udafs.plan import Element, Plan

#: k = 1: view, view, buy (10), buy (20, 15 min later); k = 2: view, buy (5); k = NULL: view, buy (7);
#: k = 3: only a buy; k = 4: a row with a NULL time.
ROWS = """(1, TIMESTAMP'2024-05-01 10:00:00', 'view', 1.0D, 'a'),
  (1, TIMESTAMP'2024-05-01 10:01:00', 'view', 2.0D, 'b'),
  (1, TIMESTAMP'2024-05-01 10:02:00', 'buy', 10.0D, 'a'), (1, TIMESTAMP'2024-05-01 10:17:00', 'buy', 20.0D, 'a'),
  (2, TIMESTAMP'2024-05-01 10:00:00', 'view', 3.0D, 'a'), (2, TIMESTAMP'2024-05-01 10:05:00', 'buy', 5.0D, 'b'),
  (CAST(NULL AS INT), TIMESTAMP'2024-05-01 10:00:00', 'view', 4.0D, 'b'),
  (CAST(NULL AS INT), TIMESTAMP'2024-05-01 10:03:00', 'buy', 7.0D, 'b'),
  (3, TIMESTAMP'2024-05-01 10:00:00', 'buy', 1.0D, 'a'), (4, CAST(NULL AS TIMESTAMP), 'view', 1.0D, 'a')"""
COUNT = "seq_count(ts, t, 'SEQ(view, buy)', INTERVAL 10 MINUTES)"
SUM = "seq_sum(ts, t, 'SEQ(view, buy)', NULL, 'buy', f)"
VIEWS = Plan(symbols=("view",), elements=(Element(0),), negations=(0, 0))


@pytest.fixture(scope="module")
def clicks(spark) -> str:
    spark.sql(f"CREATE OR REPLACE TEMP VIEW agg_clicks AS SELECT * FROM VALUES {ROWS} AS v(k, ts, t, f, c)")
    return "agg_clicks"


def rows(frame) -> list[tuple]:
    return sorted((tuple(r) for r in frame.collect()), key=repr)


def by_key(spark, sql: str) -> dict[object, tuple]:
    return {r[0]: tuple(r[1:]) for r in spark.sql(sql).collect()}


def test_the_issue_query_mixes_count_and_seq_count(spark, clicks: str) -> None:
    frame = sparkseq.sql(spark, f"SELECT k, count(*), {COUNT} FROM agg_clicks GROUP BY k")
    native = by_key(spark, "SELECT k, count(*) FROM agg_clicks GROUP BY k")
    python = by_key(spark, f"SELECT k, {COUNT} FROM agg_clicks GROUP BY k")
    assert frame.columns == ["k", "count(1)", "seq_count(ts, t, SEQ(view, buy), INTERVAL '10' MINUTE)"]
    assert rows(frame) == sorted(((k, *native[k], *python[k]) for k in native), key=repr)
    assert {k: v for k, (v,) in python.items()} == {1: 2, 2: 1, None: 1, 3: 0, 4: 0}  # NULL key: its own group


def test_having_order_by_aliases_ordinals_and_expressions(spark, clicks: str) -> None:
    frame = sparkseq.sql(spark, f"""
        SELECT upper(c) AS grp, {COUNT} AS n, n * 100 / count(*) AS per_row, sum(f) AS total,
               {SUM} - sum(f) AS diff, count(DISTINCT t) AS types
        FROM agg_clicks WHERE ts IS NOT NULL GROUP BY 1
        HAVING n > 0 AND count(*) >= 2 ORDER BY n DESC, grp LIMIT 5""")
    assert frame.columns == ["grp", "n", "per_row", "total", "diff", "types"]
    native = by_key(spark, "SELECT upper(c), count(*), sum(f), count(DISTINCT t) FROM agg_clicks "
                           "WHERE ts IS NOT NULL GROUP BY 1")
    python = by_key(spark, f"SELECT upper(c), {COUNT}, {SUM} FROM agg_clicks WHERE ts IS NOT NULL GROUP BY 1")
    want = [(g, n, n * 100 / c, s, ps - s, d) for g, (c, s, d) in native.items() for n, ps in [python[g]]
            if n > 0 and c >= 2]
    assert [tuple(r) for r in frame.collect()] == sorted(want, key=lambda r: (-r[1], r[0]))[:5]
    assert want  # the data exercise HAVING


def test_group_by_expression_alias_and_seq_in_having_only(spark, clicks: str) -> None:
    frame = sparkseq.sql(spark, f"SELECT k % 2 AS parity, max(f) FROM agg_clicks GROUP BY parity "
                                f"HAVING {COUNT} > 0 ORDER BY {COUNT}, parity")
    python = by_key(spark, f"SELECT k % 2 AS parity, {COUNT} FROM agg_clicks GROUP BY parity")
    native = by_key(spark, "SELECT k % 2 AS parity, max(f) FROM agg_clicks GROUP BY parity")
    nulls_first = lambda r: (python[r[0]], r[0] is not None, r[0] or 0)  # noqa: E731 - Spark's ascending order
    want = sorted(((p, *native[p]) for p, (n,) in python.items() if n > 0), key=nulls_first)
    assert [tuple(r) for r in frame.collect()] == want


def test_filter_is_a_masked_input(spark, clicks: str) -> None:
    frame = sparkseq.sql(spark, f"SELECT k, {COUNT} FILTER (WHERE c = 'a') AS a_only, count(*) FILTER (WHERE c = 'a')"
                                " AS a_rows FROM agg_clicks GROUP BY k")
    matches = by_key(spark, f"SELECT k, {COUNT} FROM agg_clicks WHERE c = 'a' GROUP BY k")
    counts = by_key(spark, "SELECT k, count(*) FROM agg_clicks WHERE c = 'a' GROUP BY k")
    groups = by_key(spark, "SELECT k, count(*) FROM agg_clicks GROUP BY k")
    assert rows(frame) == sorted(((k, *matches.get(k, (0,)), *counts.get(k, (0,))) for k in groups), key=repr)
    assert matches[1] == (1,) and None not in matches  # k = 1 loses the view at 10:01 (c = 'b'); NULL: no 'a' row


def test_global_aggregates_return_one_row_also_over_no_rows(spark, clicks: str) -> None:
    empty = sparkseq.sql(spark, f"SELECT {COUNT} AS n, {SUM} AS s, count(*) AS c, seq_count_windows(ts, t, "
                                "'SEQ(view, buy)', INTERVAL 10 MINUTES, INTERVAL 5 MINUTES) AS w, "
                                f"sparkseq_count('{VIEWS.to_json()}', ts, 1) AS p FROM agg_clicks WHERE k > 100")
    assert [tuple(r) for r in empty.collect()] == [(0, None, 0, [], 0)]
    only = sparkseq.sql(spark, f"SELECT {COUNT} FROM agg_clicks WHERE k > 100")
    assert [tuple(r) for r in only.collect()] == [(0,)]
    whole = sparkseq.sql(spark, f"SELECT {COUNT} AS n, count(*) AS c FROM agg_clicks")
    [(n,)] = spark.sql(f"SELECT {COUNT} FROM agg_clicks GROUP BY 'one group'").collect()
    assert [tuple(r) for r in whole.collect()] == [(n, 10)]


def test_joins_ctes_and_subqueries(spark, clicks: str) -> None:
    frame = sparkseq.sql(spark, f"""
        WITH names AS (SELECT * FROM VALUES (1, 'one'), (2, 'two') AS n(id, name))
        SELECT name, count(*) AS c, {COUNT} AS n
        FROM agg_clicks JOIN names ON agg_clicks.k = names.id
        WHERE k IN (SELECT k FROM agg_clicks GROUP BY k HAVING {COUNT} > 0 AND count(*) > 0)
        GROUP BY name""")
    assert rows(frame) == [("one", 4, 2), ("two", 2, 1)]


def test_refusals_come_before_any_job(spark, clicks: str) -> None:
    started = jobs_started(spark)
    with pytest.raises(AggregatePlacementError, match=r"seq_count\(DISTINCT"):
        sparkseq.sql(spark, "SELECT k, seq_count(DISTINCT ts, t, 'SEQ(a)'), count(*) FROM agg_clicks GROUP BY k")
    with pytest.raises(AggregatePlacementError, match="ROLLUP"):
        sparkseq.sql(spark, f"SELECT k, {COUNT}, count(*) FROM agg_clicks GROUP BY ROLLUP(k)")
    assert jobs_started(spark) == started


def test_explain_shows_the_split(spark, clicks: str) -> None:
    text = sparkseq.explain(spark, f"SELECT k, count(*), {COUNT} FROM agg_clicks GROUP BY k")
    assert "seq_* functions computed in a grouped query of their own" in text and "__sparkseq_python" in text


def test_unaliased_names_are_the_ones_spark_gives(spark, clicks: str) -> None:
    items = ["k", "agg_clicks.k", "COUNT(*)", "Sum(f)", "k+1", "count(DISTINCT t)", "sum(f) / count(*)",
             "CASE WHEN k IS NULL THEN 1 ELSE 2 END", "max(ts) > TIMESTAMP'2024-01-01 00:00:00'", "upper('x')",
             "-k", "NOT k > 1", "k BETWEEN 1 AND 2", "k IN (1, 2)", "'lit'", "NULL", "INTERVAL 1 DAY",
             "sum(f) FILTER (WHERE k > 1)", "min(t) LIKE 'v%'", "k = 1 AND k <> 2 OR k != 3",
             "SEQ_COUNT(ts, t, 'SEQ(view)')", COUNT, SUM]
    natives, pythons = items[:-3], items[-3:]
    for group in (natives, pythons):
        sql = f"SELECT {', '.join(group)} FROM agg_clicks GROUP BY k"
        assert spark.sql(sql).columns == [spark_column_name(e) for e in parse_statement(sql).expressions]


def test_every_spark_aggregate_function_is_recognised(spark) -> None:
    """Each of Spark's built-in aggregate functions (its registry, class under
    ``expressions.aggregate``) written beside a ``seq_*`` call triggers the split."""
    registry = spark._jsparkSession.sessionState().functionRegistry()
    ids = registry.listFunction()
    aggregates = []
    for i in range(ids.size()):
        info = registry.lookupFunction(ids.apply(i))
        if info.isDefined() and ".expressions.aggregate." in info.get().getClassName():
            aggregates.append(ids.apply(i).funcName())
    assert len(aggregates) > 40 and "count" in aggregates and "collect_list" in aggregates
    missed = []
    for name in aggregates:
        try:
            [item] = parse_statement(f"SELECT {name}(x) FROM t").expressions
        except Exception:  # noqa: BLE001 - special syntax (e.g. WITHIN GROUP) sqlglot spells otherwise
            continue
        call = item.this if isinstance(item, exp.Alias) else item
        if not is_spark_aggregate(call):
            missed.append(name)
    assert missed == [], ", ".join(missed)
