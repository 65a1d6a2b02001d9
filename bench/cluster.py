"""sparkseq on a local cluster: the workload pass with a cluster's 200 shuffle partitions,
with and without adaptive coalescing of the cached plan, and the worker check's cost.

One ``local-cluster[2,1,1024]`` session (two executor JVMs with their own Python
workers) with ``spark.sql.shuffle.partitions=200``, Spark's default on a cluster. A
workload of three MATCH_AGGREGATE statements over one source (one shared, cached pass:
:mod:`sparkseq.statements.workloads`) runs ``--repeat`` times with
``spark.sql.optimizer.canChangeCachedPlanOutputPartitioning`` off (Spark's default) and
on (sparkseq's), alternating; each run reports its time and the tasks of its jobs.
Then :func:`sparkseq.spark.cluster.check_workers` runs ``--repeat`` times on warm workers.
Medians are printed, with the ratio off/on (the machine is shared: single timings are
noise). The session's start, including the first (cold) check, is printed once.

Run: ``.venv/bin/python bench/cluster.py [--repeat 3] [--events 400000] [--keys 1000]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import sparkseq  # noqa: E402
from sparkseq.spark import cluster  # noqa: E402
from sparkseq.spark.session import CACHED_PLAN_COALESCING  # noqa: E402

MASTER = "local-cluster[2,1,1024]"
WORKLOAD = ";\n".join(
    f"CREATE OR REPLACE TEMP VIEW bench_wl{i} AS SELECT k, n FROM bench_events MATCH_AGGREGATE (PARTITION BY k "
    f"ORDER BY ts PATTERN {pattern} TYPE BY tp MEASURES COUNT(*) AS n WITHIN 500) AS m{i}"
    for i, pattern in enumerate(["SEQ(view, cart, buy)", "SEQ(view, buy)", "SEQ(cart, !view, buy)"]))


def tasks_of_group(spark, group: str) -> int:  # noqa: ANN001
    """Tasks of every stage the jobs of ``group`` ran (skipped stages excluded)."""
    tracker = spark.sparkContext.statusTracker()
    total = 0
    for job in tracker.getJobIdsForGroup(group):
        info = tracker.getJobInfo(job)
        for stage in info.stageIds if info else ():
            stage_info = tracker.getStageInfo(stage)
            if stage_info is not None and stage_info.numCompletedTasks:
                total += stage_info.numTasks
    return total


def run_workload(spark, coalesce: bool, run: int) -> tuple[float, int, list]:  # noqa: ANN001
    spark.conf.set(CACHED_PLAN_COALESCING, str(coalesce).lower())
    group = f"bench-{coalesce}-{run}"
    spark.sparkContext.setJobGroup(group, group)
    started = time.perf_counter()
    sparkseq.workload(spark, WORKLOAD)
    rows = sorted(tuple(r) for i in range(3) for r in spark.table(f"bench_wl{i}").collect())
    seconds = time.perf_counter() - started
    sparkseq.release_workload(spark, WORKLOAD)
    return seconds, tasks_of_group(spark, group), rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--events", type=int, default=400_000)
    parser.add_argument("--keys", type=int, default=1000)
    args = parser.parse_args()
    started = time.perf_counter()
    spark = sparkseq.session(MASTER, app_name="bench-cluster", conf={"spark.sql.shuffle.partitions": "200"})
    print(f"session start (2 executors, cold worker check included): {time.perf_counter() - started:.1f} s")
    spark.range(args.events).selectExpr(
        f"CAST(id % {args.keys} AS INT) AS k", "CAST(id DIV 10 AS BIGINT) AS ts",
        "element_at(array('view', 'cart', 'buy', 'other'), CAST(hash(id) % 4 + 5 AS INT) % 4 + 1) AS tp",
    ).createOrReplaceTempView("bench_events")
    times: dict[bool, list[float]] = {False: [], True: []}
    tasks: dict[bool, list[int]] = {False: [], True: []}
    answers = set()
    for run in range(args.repeat):
        for coalesce in (False, True):
            seconds, n_tasks, rows = run_workload(spark, coalesce, run)
            times[coalesce].append(seconds)
            tasks[coalesce].append(n_tasks)
            answers.add(hash(tuple(rows)))
            print(f"run {run} coalescing {'on ' if coalesce else 'off'}: {seconds:6.1f} s, {n_tasks} tasks", flush=True)
    assert len(answers) == 1, "the two settings gave different answers"
    checks = []
    for _ in range(args.repeat):
        started = time.perf_counter()
        cluster.check_workers(spark, again=True)
        checks.append(time.perf_counter() - started)
    off, on = statistics.median(times[False]), statistics.median(times[True])
    print(f"\n{args.events:,} events, {args.keys:,} keys, 3 statements, spark.sql.shuffle.partitions=200, "
          f"median of {args.repeat}:")
    print(f"  cached pass without coalescing: {off:6.1f} s, {statistics.median(tasks[False]):.0f} tasks")
    print(f"  cached pass with coalescing:    {on:6.1f} s, {statistics.median(tasks[True]):.0f} tasks")
    print(f"  ratio without/with: {off / on:.2f}x (same answers)")
    print(f"  worker check on warm workers: {statistics.median(checks):.2f} s")
    spark.stop()


if __name__ == "__main__":
    main()
