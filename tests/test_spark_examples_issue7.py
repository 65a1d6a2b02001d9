"""The issue-7 examples end to end, checked against plain Spark SQL self-joins.

The self-joins state each query's match definition directly (one row per binding,
strictly increasing time, span < WITHIN), so they are an independent oracle for the
exact counts and sums.
"""

from __future__ import annotations

from decimal import Decimal

from tests.test_spark_sql_examples import example


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


def test_hadoop_monitoring_equals_hand_computed_statistics(spark) -> None:
    """Q1/Q2 under skip-till-next-match: one match per job (every mapper / reducer), so
    AVG/MAX are the job's own statistics; Q4: k I/O events give 2^k - 1 matches, each
    event in 2^(k-1) of them; Q6: the non-decreasing subsequences of each task's loads."""
    module = example("hadoop_monitoring")
    got = module.run(spark, jobs=4, seed=5)
    rows = module.log_rows(4, 5)
    by_job: dict[int, dict[str, list[int]]] = {}
    loads: dict[int, list[float]] = {}
    for t, event, job, task, period, val in sorted(rows):
        if job is not None:
            by_job.setdefault(job, {}).setdefault(event, []).append(period)
        if event == "LoadStd":
            loads.setdefault(task, []).append(val)
    q1 = [(j, sum(e["Mapper"]) / len(e["Mapper"]), max(e["Mapper"])) for j, e in sorted(by_job.items())]
    q2 = [(j, sum(e["Reducer"]) / len(e["Reducer"]), max(e["Reducer"])) for j, e in sorted(by_job.items())]
    q4 = [(j, 2 ** len(e["DataIO"]) - 1, 2 ** (len(e["DataIO"]) - 1) * sum(e["DataIO"]))
          for j, e in sorted(by_job.items())]

    def rising(values: list[float]) -> int:
        ends: list[int] = []
        for i, v in enumerate(values):
            ends.append(1 + sum(c for u, c in zip(values, ends) if u <= v))
        return sum(ends)

    q6 = [(task, rising(v)) for task, v in sorted(loads.items())]
    assert [(j, round(a, 9), m) for j, a, m in got["q1"]] == [(j, round(a, 9), m) for j, a, m in q1]
    assert [(j, round(a, 9), m) for j, a, m in got["q2"]] == [(j, round(a, 9), m) for j, a, m in q2]
    assert got["q4"] == q4
    assert got["q6"] == q6 and any(n > len(v) for (_, n), v in zip(q6, loads.values()))
