"""Hadoop cluster monitoring: the SASE++ case-study queries as MATCH_AGGREGATE.

SASE++ (seed 004, Tables 1 and 5) monitors a Hadoop cluster with Kleene+ pattern
queries over a merged log of job, task and metric events. The ones whose predicates
this engine supports run here over a synthetic cluster log (``cluster_log``: ``ts``
TIMESTAMP, ``event`` STRING, ``job_id`` / ``task_id`` BIGINT, ``period`` BIGINT
seconds, ``val`` DOUBLE):

* **Q1** mapper statistics — ``seq(JobStart a, Mapper+ b[], JobEnd c) where [job id]
  within 1 day return avg(b[].period), max(b[].period)``. ``[job id]`` (equality over
  every event) is ``PARTITION BY job_id``; SKIP TILL NEXT MATCH makes the Kleene set
  collect every mapper of the job greedily, so each job has one match and the measures
  are the job's mapper statistics.
* **Q2** the same for reducers.
* **Q4** data I/O after a job start — ``seq(JobStart a, DataIO+ b[]) where [job id]
  within 1 day``: the number of (start, non-empty I/O set) matches and the total bytes.
* **Q6** increasingly imbalanced load — ``seq(ReducerStart a, LoadStd+ b[], ReducerEnd c)
  where [task id] and b[i].val >= b[i-1].val within 10 minutes`` (option 1, the
  iterator predicate; option 2 compares with ``max(b[1..i-1])``, an aggregate, which is
  not supported), counted under the default SKIP TILL ANY MATCH: every non-decreasing
  run of load readings between a reducer's start and end.

Q3 (``b[b.len].period > 2 × avg(b[].period)``) needs an aggregate over the Kleene set in
a predicate and is left out. Run: ``python examples/hadoop_monitoring.py [--jobs N]``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable from a source checkout

import numpy as np  # noqa: E402
import sparkseq  # noqa: E402
from pyspark.sql import DataFrame, SparkSession  # noqa: E402

SCHEMA = "t bigint, event string, job_id bigint, task_id bigint, period bigint, val double"

Q1_MAPPERS = """
SELECT job_id, mappers_avg, mappers_max FROM cluster_log MATCH_AGGREGATE (
  PARTITION BY job_id ORDER BY ts
  PATTERN SEQ(JobStart, Mapper+, JobEnd)
  TYPE BY event
  MEASURES AVG(Mapper.period) AS mappers_avg, MAX(Mapper.period) AS mappers_max
  WITHIN INTERVAL 1 DAY
  STRATEGY SKIP TILL NEXT MATCH
) AS q1 ORDER BY job_id"""

Q2_REDUCERS = """
SELECT job_id, reducers_avg, reducers_max FROM cluster_log MATCH_AGGREGATE (
  PARTITION BY job_id ORDER BY ts
  PATTERN SEQ(JobStart, Reducer+, JobEnd)
  TYPE BY event
  MEASURES AVG(Reducer.period) AS reducers_avg, MAX(Reducer.period) AS reducers_max
  WITHIN INTERVAL 1 DAY
  STRATEGY SKIP TILL NEXT MATCH
) AS q2 ORDER BY job_id"""

Q4_DATA_IO = """
SELECT job_id, io_matches, io_bytes FROM cluster_log MATCH_AGGREGATE (
  PARTITION BY job_id ORDER BY ts
  PATTERN SEQ(JobStart, DataIO+)
  TYPE BY event
  MEASURES COUNT(*) AS io_matches, SUM(DataIO.period) AS io_bytes
  WITHIN INTERVAL 1 DAY
) AS q4 ORDER BY job_id"""

Q6_IMBALANCE = """
SELECT task_id, rising_runs FROM cluster_log MATCH_AGGREGATE (
  PARTITION BY task_id ORDER BY ts
  PATTERN SEQ(A, B+, C)
  DEFINE A AS event = 'ReducerStart', B AS event = 'LoadStd', C AS event = 'ReducerEnd'
  WHERE B[i].val >= B[i-1].val
  MEASURES COUNT(*) AS rising_runs
  WITHIN INTERVAL 10 MINUTES
) AS q6 ORDER BY task_id"""

QUERIES = {"q1": Q1_MAPPERS, "q2": Q2_REDUCERS, "q4": Q4_DATA_IO, "q6": Q6_IMBALANCE}


def log_rows(jobs: int, seed: int = 11, tasks_per_job: int = 2, max_events: int = 5) -> list[tuple]:
    """A synthetic merged log: per job a start, mappers, reducers, data I/O and an end;
    per reducer task a start, load readings and an end (times in seconds)."""
    rng = np.random.default_rng(seed)
    rows: list[tuple] = []
    clock = 0
    for job in range(jobs):
        start = clock
        rows.append((start, "JobStart", job, None, None, None))
        t = start
        for kind in ("Mapper", "DataIO", "Reducer"):
            for _ in range(int(rng.integers(1, max_events + 1))):
                t += int(rng.integers(1, 30))
                rows.append((t, kind, job, None, int(rng.integers(5, 120)), None))
        for k in range(tasks_per_job):
            task = job * tasks_per_job + k
            t += int(rng.integers(1, 20))
            rows.append((t, "ReducerStart", None, task, None, None))
            for _ in range(int(rng.integers(1, max_events + 1))):
                t += int(rng.integers(1, 40))
                rows.append((t, "LoadStd", None, task, None, float(rng.choice([0.1, 0.15, 0.2, 0.25]))))
            t += int(rng.integers(1, 40))
            rows.append((t, "ReducerEnd", None, task, None, None))
        t += int(rng.integers(1, 30))
        rows.append((t, "JobEnd", job, None, None, None))
        clock = t + int(rng.integers(1, 3600))
    return rows


def log_frame(spark: SparkSession, jobs: int, seed: int = 11, **sizes: int) -> DataFrame:
    """:func:`log_rows` as a DataFrame with a TIMESTAMP ``ts``."""
    frame = spark.createDataFrame(log_rows(jobs, seed, **sizes), SCHEMA)
    return frame.selectExpr("timestamp_seconds(t) AS ts", "event", "job_id", "task_id", "period", "val")


def run(spark: SparkSession, jobs: int = 50, seed: int = 11, **sizes: int) -> dict[str, list[tuple]]:
    """Every query over a synthetic log of ``jobs`` jobs; rows as tuples per query."""
    log_frame(spark, jobs, seed, **sizes).createOrReplaceTempView("cluster_log")
    return {name: [tuple(r) for r in sparkseq.sql(spark, text).collect()] for name, text in QUERIES.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=50)
    args = parser.parse_args()
    spark = sparkseq.session("local[2]", app_name="hadoop-monitoring")
    try:
        for name, rows in run(spark, args.jobs).items():
            print(f"{name}: {len(rows)} rows; first: {rows[:3]}")
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
