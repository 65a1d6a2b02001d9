"""The predicate and strategy examples end to end, checked against plain Spark SQL self-joins.

The self-joins state each query's match definition directly (one row per binding,
strictly increasing time, span < WITHIN), so they are an independent oracle for the
exact counts and sums.
"""

from __future__ import annotations

from decimal import Decimal

from tests.spark.test_spark_sql_examples import example

Q1_JOIN = """
SELECT COUNT(*) AS n, SUM(t1.price) AS total
FROM ticks t1 JOIN ticks t2 ON t2.ts > t1.ts AND t2.ts - t1.ts < {w} AND t2.name = 'Google'
                             AND t1.price >= t2.price + 2.0
JOIN ticks t3 ON t3.ts > t2.ts AND t3.ts - t1.ts < {w} AND t3.name = t1.name AND t3.price < t2.price"""

Q3_JOIN = """
SELECT COUNT(*) AS n
FROM ticks t1 JOIN ticks t2 ON t2.ts > t1.ts AND t2.ts - t1.ts < {w} AND t2.name = '600210'
                             AND t1.price < t2.price - 0.02
JOIN ticks t3 ON t3.ts > t2.ts AND t3.ts - t1.ts < {w} AND t3.name = t1.name
JOIN ticks t4 ON t4.ts > t3.ts AND t4.ts - t1.ts < {w} AND t4.name = '600210' AND t3.price > t4.price + 0.02"""


def test_stock_crossing_equals_self_joins(spark) -> None:
    got = example("stock_crossing").run(spark, events=240, within=40, seed=3)
    [q1] = spark.sql(Q1_JOIN.format(w=40)).collect()
    [q3] = spark.sql(Q3_JOIN.format(w=40)).collect()
    assert got["query1_crossings"] == q1.n > 0
    assert Decimal(got["query1_entry_total"]) == Decimal(q1.total)
    assert got["query3_reversals"] == q3.n > 0
